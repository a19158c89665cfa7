//! Newtype ids, one per table, so a run id can never be passed where a loop id belongs.

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::BigInt;
use diesel::sqlite::{Sqlite, SqliteValue};

macro_rules! id_type {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            AsExpression, FromSqlRow, serde::Serialize, serde::Deserialize,
        )]
        #[diesel(sql_type = BigInt)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl ToSql<BigInt, Sqlite> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
                <i64 as ToSql<BigInt, Sqlite>>::to_sql(&self.0, out)
            }
        }

        impl FromSql<BigInt, Sqlite> for $name {
            fn from_sql(value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
                <i64 as FromSql<BigInt, Sqlite>>::from_sql(value).map($name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

id_type! {
    /// A row of `projects`.
    ProjectId,
    /// A row of `models`.
    ModelId,
    /// A row of `runs`.
    RunId,
    /// A row of `loops`.
    LoopId,
    /// A row of `turns`.
    TurnId,
    /// A row of `file_constraints`.
    ConstraintId,
    /// A row of `known_entries`.
    EntryId,
    /// A row of `memory_facts`.
    MemoryFactId,
    /// A row of `memory_history`.
    MemoryHistoryId,
}
