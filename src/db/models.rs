//! Row structs (what a query reads) and forms (what an insert or update writes), one set per
//! table, Lemmy style. Rows are database types, not wire types: the RPC layer builds its
//! results from them.
//!
//! The small configuration tables live here; runs, loops and turns in [`run`]; the store,
//! its views and the per-turn context in [`entry`]; memory across runs in [`memory`].

pub(crate) mod entry;
pub(crate) mod memory;
pub(crate) mod run;

use diesel::prelude::*;

use super::enums::{Category, Visibility};
use super::ids::{ConstraintId, ModelId, ProjectId};
use super::schema::{file_constraints, models, projects, rpc_log, schemes};
use crate::usage::{Micros, Price};

/// A registered entry scheme.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = schemes, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct SchemeRow {
    /// The scheme name (`file` stands for bare paths).
    pub name: String,
    /// Whether entries of this scheme can appear in the model's context.
    pub model_visible: bool,
    /// The context section the scheme renders in.
    pub category: Category,
}

/// A project: a client-chosen name bound to a source root.
#[derive(Debug, Clone, PartialEq, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = projects, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ProjectRow {
    pub id: ProjectId,
    /// Unique project name.
    pub name: String,
    /// Absolute source root, symlinks resolved.
    pub project_root: Option<String>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// How many command rules its people have (`queries::command_rules`).
    pub command_rules: i32,
}

/// What [`upsert_project`](super::queries::projects::upsert_project) writes; `None` fields keep the stored value.
#[derive(Debug, Clone)]
pub(crate) struct ProjectInsertForm {
    /// Unique project name.
    pub name: String,
    /// Absolute source root.
    pub project_root: Option<String>,
}

/// A model alias and the provider model it stands for.
#[derive(Debug, Clone, PartialEq, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = models, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ModelRow {
    pub id: ModelId,
    /// What clients pass as `model`.
    pub alias: String,
    /// Provider-prefixed model id (`openai/x`, `ollama/x`, ...).
    pub actual: String,
    /// Context window in tokens, when known.
    pub context_length: Option<i32>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// Micro-dollars per million uncached prompt tokens (`Price::input`).
    pub input_price: i64,
    /// Micro-dollars per million cached prompt tokens.
    pub cached_price: i64,
    /// Micro-dollars per million completion tokens.
    pub output_price: i64,
}

impl ModelRow {
    /// Its price per million tokens.
    pub(crate) fn price(&self) -> Price {
        Price {
            input: Micros(self.input_price),
            cached_input: Micros(self.cached_price),
            output: Micros(self.output_price),
        }
    }
}

/// What [`upsert_model`](super::queries::models::upsert_model) writes; `None` fields keep the stored value.
#[derive(Debug, Clone)]
pub(crate) struct ModelInsertForm {
    /// Unique alias.
    pub alias: String,
    /// Provider-prefixed model id.
    pub actual: String,
    /// Context window in tokens; `None` keeps a known value on update.
    pub context_length: Option<i32>,
    /// Its price; `None` keeps the stored one on update (a new model's is zero).
    pub price: Option<Price>,
}

/// A project-level file constraint.
#[derive(Debug, Clone, PartialEq, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = file_constraints, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct ConstraintRow {
    pub id: ConstraintId,
    pub project_id: ProjectId,
    /// Path or glob relative to the project root.
    pub pattern: String,
    /// How matching files are treated.
    pub visibility: Visibility,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
}

/// One audited RPC call. The texts are `None` when the log keeps only the facts
/// (`RUMMY_RPC_LOG=meta`).
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = rpc_log)]
pub struct RpcLogInsertForm {
    /// The connection's project, when initialised.
    pub project_id: Option<ProjectId>,
    pub method: String,
    /// The request id as JSON text.
    pub rpc_id: Option<String>,
    /// The params as JSON text.
    pub params: Option<String>,
    /// The result as JSON text.
    pub result: Option<String>,
    /// The error message of a failed call.
    pub error: Option<String>,
    /// From the request read to its reply ready.
    pub duration_ms: i64,
    /// The JSON-RPC error code of a failed call; `None` for a success.
    pub status: Option<i64>,
    /// Bytes of the params JSON text, before any cut.
    pub params_bytes: i64,
    /// Bytes of the result JSON text, before any cut; `None` for a failed call.
    pub result_bytes: Option<i64>,
    /// The run alias the call named in its `run` string param.
    pub run: Option<String>,
    /// Who made the call.
    pub person: Option<String>,
}
