//! Messages for the configuration tables: schemes, projects, models, file constraints and
//! the RPC log.

use crate::db::enums::Visibility;
use crate::db::ids::{ProjectId, RpcLogId};
use crate::db::models::{
    ConstraintRow, ModelInsertForm, ModelRow, ProjectInsertForm, ProjectRow, RpcLogInsertForm,
    SchemeRow,
};
use crate::db::queries::{constraints, models, projects, rpc_log, schemes};

db_messages! {
    /// Registers a scheme or changes a registered one.
    RegisterScheme { scheme: SchemeRow } -> () =
        |conn, message| schemes::register_scheme(conn, &message.scheme);
    /// Every registered scheme, by name.
    ListSchemes {} -> Vec<SchemeRow> = |conn, message| schemes::list_schemes(conn);

    /// Upserts a project by name (`init`); `None` root/config keep the stored values.
    UpsertProject { form: ProjectInsertForm } -> ProjectRow =
        |conn, message| projects::upsert_project(conn, &message.form);
    /// The project with this id.
    GetProject { id: ProjectId } -> Option<ProjectRow> =
        |conn, message| projects::get_project(conn, message.id);
    /// The project with this name.
    FindProject { name: String } -> Option<ProjectRow> =
        |conn, message| projects::find_project(conn, &message.name);

    /// Models by alias, paged (`getModels`).
    ListModels { limit: Option<i64>, offset: Option<i64> } -> Vec<ModelRow> =
        |conn, message| models::list_models(conn, message.limit, message.offset);
    /// The model with this alias.
    FindModel { alias: String } -> Option<ModelRow> =
        |conn, message| models::find_model(conn, &message.alias);
    /// Inserts or updates a model (`addModel`); `None` context length keeps the stored one.
    UpsertModel { form: ModelInsertForm } -> ModelRow =
        |conn, message| models::upsert_model(conn, &message.form);
    /// Removes a model (`removeModel`); `false` when there was none.
    RemoveModel { alias: String } -> bool =
        |conn, message| models::remove_model(conn, &message.alias);
    /// Records a context length discovered from the provider.
    SetContextLength { alias: String, context_length: i32 } -> ModelRow =
        |conn, message| models::set_context_length(conn, &message.alias, message.context_length);

    /// Sets a file constraint (`get`/`store` with `persist`); absolute patterns under the
    /// root are stored relative.
    SetConstraint { project_id: ProjectId, pattern: String, visibility: Visibility } -> ConstraintRow =
        |conn, message| constraints::set_constraint(conn, message.project_id, &message.pattern, message.visibility);
    /// The project's constraints.
    ListConstraints { project_id: ProjectId } -> Vec<ConstraintRow> =
        |conn, message| constraints::list_constraints(conn, message.project_id);
    /// Drops a constraint (`store` with `clear`); `false` when there was none.
    DeleteConstraint { project_id: ProjectId, pattern: String } -> bool =
        |conn, message| constraints::delete_constraint(conn, message.project_id, &message.pattern);

    /// Audits one RPC call (result cut to 4096 characters).
    LogRpc { form: RpcLogInsertForm } -> RpcLogId =
        |conn, message| rpc_log::insert_rpc_log(conn, &message.form);
}
