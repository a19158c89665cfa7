//! JSON kept as text in a column (`attributes`, `loops.config`, `loops.result`), parsed once
//! as the row is read: a row carries the parsed value, and a column whose text is not the
//! JSON it should hold is [`DbError::Corrupt`](super::DbError::Corrupt), never an empty
//! value.
//!
//! Read with the row's id beside it (`(table::id, table::column)` as the field's select
//! expression, or [`Attributes::by_name`] in a row read by name), a corrupt column names its
//! row; read by name alone (`FromSql`), its column.

use std::fmt;
use std::ops::Deref;

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, Queryable};
use diesel::row::NamedRow;
use diesel::sql_types::{BigInt, Text};
use serde_json::{Map, Value};

/// A column's text that is not the JSON it should hold.
#[derive(Debug)]
pub struct CorruptJson {
    /// The column.
    pub column: &'static str,
    /// The row's id, when it was read beside the column.
    pub row: Option<i64>,
    /// What the parser said.
    pub reason: String,
}

impl fmt::Display for CorruptJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.row {
            Some(row) => write!(
                f,
                "column {} of row {row} holds {}",
                self.column, self.reason
            ),
            None => write!(f, "column {} of a row holds {}", self.column, self.reason),
        }
    }
}

impl std::error::Error for CorruptJson {}

/// `text` as a JSON object, or why it is none.
fn object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(format!("{}, not a JSON object", kind(&other))),
        Err(error) => Err(format!("malformed JSON ({error})")),
    }
}

/// `text` as a JSON value, or why it is none.
fn value(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|error| format!("malformed JSON ({error})"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Declares a newtype over the JSON a column holds, read from its text by name
/// (`FromSql`, `Queryable<Text>`) or beside its row's id (`Queryable<(BigInt, Text)>`).
macro_rules! json_column {
    ($(#[$doc:meta])* $name:ident($inner:ty) = $column:literal by $parse:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            fn read(text: &str, row: Option<i64>) -> deserialize::Result<Self> {
                $parse(text).map($name).map_err(|reason| {
                    CorruptJson { column: $column, row, reason }.into()
                })
            }
        }

        impl $name {
            /// The value, as JSON.
            pub fn to_value(&self) -> Value {
                Value::from(self.0.clone())
            }
        }

        impl Deref for $name {
            type Target = $inner;

            fn deref(&self) -> &$inner {
                &self.0
            }
        }

        impl<DB: Backend> FromSql<Text, DB> for $name
        where
            String: FromSql<Text, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                $name::read(&<String as FromSql<Text, DB>>::from_sql(value)?, None)
            }
        }

        impl<DB: Backend> Queryable<Text, DB> for $name
        where
            String: FromSql<Text, DB>,
        {
            type Row = Self;

            fn build(read: Self) -> deserialize::Result<Self> {
                Ok(read)
            }
        }

        impl<DB: Backend> Queryable<(BigInt, Text), DB> for $name
        where
            (i64, String): deserialize::FromStaticSqlRow<(BigInt, Text), DB>,
        {
            type Row = (i64, String);

            fn build((row, text): (i64, String)) -> deserialize::Result<Self> {
                $name::read(&text, Some(row))
            }
        }
    };
}

json_column! {
    /// An entry's `attributes`: the handler's workspace, a JSON object.
    Attributes(Map<String, Value>) = "attributes" by object
}

json_column! {
    /// A loop's `config`: its options, a JSON object.
    LoopOptions(Map<String, Value>) = "config" by object
}

json_column! {
    /// A loop's `result`: its outcome.
    LoopResult(Value) = "result" by value
}

impl Attributes {
    /// The `attributes` column of a row read by name, whose id is its column `id_column`.
    pub(crate) fn by_name<'a, DB: Backend>(
        row: &impl NamedRow<'a, DB>,
        id_column: &str,
    ) -> deserialize::Result<Attributes>
    where
        String: FromSql<Text, DB>,
        i64: FromSql<BigInt, DB>,
    {
        let id = NamedRow::get::<BigInt, i64>(row, id_column)?;
        let text = NamedRow::get::<Text, String>(row, "attributes")?;
        Attributes::read(&text, Some(id))
    }

    /// The string at `key`, if it holds one.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
}

impl From<Attributes> for Value {
    fn from(attributes: Attributes) -> Value {
        Value::Object(attributes.0)
    }
}
