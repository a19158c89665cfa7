//! Newtype ids, one per table, so a run id can never be passed where a loop id belongs.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::BigInt;

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

        impl<DB: Backend> ToSql<BigInt, DB> for $name
        where
            i64: ToSql<BigInt, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                <i64 as ToSql<BigInt, DB>>::to_sql(&self.0, out)
            }
        }

        impl<DB: Backend> FromSql<BigInt, DB> for $name
        where
            i64: FromSql<BigInt, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                <i64 as FromSql<BigInt, DB>>::from_sql(value).map($name)
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
