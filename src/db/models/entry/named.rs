//! The store's rows read by name, as fixed statements read them (`SELECT *`, `RETURNING *`):
//! each column by its name, and `attributes` beside its row's id, so that a corrupt
//! `attributes` names its row as it does when the row is read by position.

use diesel::deserialize::{self, QueryableByName};
use diesel::row::NamedRow;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use super::{EntryRow, ModelContextRow, UnresolvedRow};
use crate::db::json::Attributes;
use crate::db::MultiBackend;

impl QueryableByName<MultiBackend> for EntryRow {
    fn build<'a>(row: &impl NamedRow<'a, MultiBackend>) -> deserialize::Result<Self> {
        Ok(EntryRow {
            id: NamedRow::get::<BigInt, _>(row, "id")?,
            run_id: NamedRow::get::<BigInt, _>(row, "run_id")?,
            loop_id: NamedRow::get::<Nullable<BigInt>, _>(row, "loop_id")?,
            turn: NamedRow::get::<Integer, _>(row, "turn")?,
            path: NamedRow::get::<Text, _>(row, "path")?,
            body: NamedRow::get::<Text, _>(row, "body")?,
            scheme: NamedRow::get::<Nullable<Text>, _>(row, "scheme")?,
            status: NamedRow::get::<Integer, _>(row, "status")?,
            fidelity: NamedRow::get::<Text, _>(row, "fidelity")?,
            hash: NamedRow::get::<Nullable<Text>, _>(row, "hash")?,
            attributes: Attributes::by_name(row, "id")?,
            tokens: NamedRow::get::<Integer, _>(row, "tokens")?,
            tokens_full: NamedRow::get::<Integer, _>(row, "tokens_full")?,
            refs: NamedRow::get::<Integer, _>(row, "refs")?,
            write_count: NamedRow::get::<Integer, _>(row, "write_count")?,
            created_at: NamedRow::get::<Text, _>(row, "created_at")?,
            updated_at: NamedRow::get::<Text, _>(row, "updated_at")?,
        })
    }
}

impl QueryableByName<MultiBackend> for UnresolvedRow {
    fn build<'a>(row: &impl NamedRow<'a, MultiBackend>) -> deserialize::Result<Self> {
        Ok(UnresolvedRow {
            id: NamedRow::get::<BigInt, _>(row, "id")?,
            run_id: NamedRow::get::<BigInt, _>(row, "run_id")?,
            path: NamedRow::get::<Text, _>(row, "path")?,
            body: NamedRow::get::<Text, _>(row, "body")?,
            attributes: Attributes::by_name(row, "id")?,
            turn: NamedRow::get::<Integer, _>(row, "turn")?,
        })
    }
}

impl QueryableByName<MultiBackend> for ModelContextRow {
    fn build<'a>(row: &impl NamedRow<'a, MultiBackend>) -> deserialize::Result<Self> {
        Ok(ModelContextRow {
            entry_id: NamedRow::get::<BigInt, _>(row, "entry_id")?,
            run_id: NamedRow::get::<BigInt, _>(row, "run_id")?,
            path: NamedRow::get::<Text, _>(row, "path")?,
            scheme: NamedRow::get::<Nullable<Text>, _>(row, "scheme")?,
            fidelity: NamedRow::get::<Text, _>(row, "fidelity")?,
            status: NamedRow::get::<Integer, _>(row, "status")?,
            body: NamedRow::get::<Text, _>(row, "body")?,
            attributes: Attributes::by_name(row, "entry_id")?,
            category: NamedRow::get::<Text, _>(row, "category")?,
            turn: NamedRow::get::<Integer, _>(row, "turn")?,
            ordinal: NamedRow::get::<BigInt, _>(row, "ordinal")?,
            tokens: NamedRow::get::<Integer, _>(row, "tokens")?,
        })
    }
}
