//! The clients' control of memory, as plugin methods (listed by `discover`): list, search,
//! write and erase the project's facts and their history, the same for the server-wide
//! layer (writing and erasing it takes an admin), and the project's switch. Every method
//! works on the connection's project only; erasing works whether memory is on or not.

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::access::Role;
use crate::db::ids::{MemoryFactId, MemoryHistoryId, ProjectId};
use crate::db::models::memory::{MemoryFactForm, MemoryFactRow, MemoryHistoryRow, MemoryLayer};
use crate::db::queries::memory::{self, HistoryBounds, Written};
use crate::plugins::method::{MethodCall, MethodError, TypedMethod};
use crate::plugins::tool::ToolSettings;
use crate::plugins::Registrar;

use super::recalled::candidates;

/// Adds every method.
pub(super) fn register(registrar: &mut Registrar<'_>, tools: ToolSettings, history: HistoryBounds) {
    registrar.method(List);
    registrar.method(Search);
    registrar.method(Set {
        layer: Layer::Project,
        tools,
        history,
    });
    registrar.method(Delete(Layer::Project));
    registrar.method(Set {
        layer: Layer::Server,
        tools,
        history,
    });
    registrar.method(Delete(Layer::Server));
    registrar.method(Switch);
}

/// Which facts a method works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// The connection's project's.
    Project,
    /// The server-wide ones.
    Server,
}

impl Layer {
    /// The store's name of the layer for the call's project.
    fn of(self, call: &MethodCall) -> Result<Option<ProjectId>, MethodError> {
        match self {
            Layer::Server => Ok(None),
            Layer::Project => project(call).map(Some),
        }
    }
}

/// The connection's project (a method that needs `init` always has one).
pub(super) fn project(call: &MethodCall) -> Result<ProjectId, MethodError> {
    call.project
        .ok_or_else(|| MethodError::Failed("no project is bound".to_owned()))
}

/// A fact or a replaced one, as clients see it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemoryItem {
    pub id: i64,
    pub topic: String,
    pub body: String,
    /// When it was written (`YYYY-MM-DD HH:MM:SS` UTC).
    pub written_at: String,
    /// Who wrote it through a method (absent: a run, or the operator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
    /// When it entered the history (history items only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_at: Option<String>,
    /// Why it is in the history (history items only): `replaced`, or `narrative` (a run's
    /// session narrative).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A fact that holds only while the work at hand lasts (facts only; absent: lasting).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub transient: bool,
    /// How many older items of its topic were folded into this one, their text dropped
    /// (history items only; absent: none).
    #[serde(skip_serializing_if = "is_zero")]
    pub folded: i32,
}

fn is_zero(count: &i32) -> bool {
    *count == 0
}

impl From<MemoryFactRow> for MemoryItem {
    fn from(row: MemoryFactRow) -> MemoryItem {
        MemoryItem {
            id: row.id.0,
            topic: row.topic,
            body: row.body,
            written_at: row.updated_at,
            written_by: row.person,
            replaced_at: None,
            reason: None,
            transient: row.transient,
            folded: 0,
        }
    }
}

impl From<MemoryHistoryRow> for MemoryItem {
    fn from(row: MemoryHistoryRow) -> MemoryItem {
        MemoryItem {
            id: row.id.0,
            topic: row.topic,
            body: row.body,
            written_at: row.written_at,
            written_by: None,
            replaced_at: Some(row.archived_at),
            reason: Some(row.reason),
            transient: false,
            folded: row.folded,
        }
    }
}

/// `memory/list` params.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct ListParams {
    server: bool,
    history: bool,
}

/// What `memory/list` answers.
#[derive(Debug, Serialize)]
pub(super) struct Listing {
    /// Whether memory is on for the project.
    enabled: bool,
    items: Vec<MemoryItem>,
}

struct List;

impl TypedMethod for List {
    type Params = ListParams;
    type Output = Listing;

    fn name(&self) -> &'static str {
        "memory/list"
    }

    fn description(&self) -> &'static str {
        "The project's remembered facts (or the server-wide ones, or the facts they replaced), and whether memory is on."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "server",
                "boolean? — the server-wide facts instead of the project's",
            ),
            (
                "history",
                "boolean? — the facts newer ones replaced, newest first",
            ),
        ]
    }

    fn role(&self) -> Role {
        Role::Viewer
    }

    fn call(
        &self,
        call: MethodCall,
        params: ListParams,
    ) -> impl Future<Output = Result<Listing, MethodError>> + Send + 'static {
        let project = project(&call);
        async move {
            let project = project?;
            let layer = if params.server {
                Layer::Server
            } else {
                Layer::Project
            }
            .of(&call)?;
            let listing = call
                .db
                .read(move |conn| {
                    let enabled = memory::is_enabled(conn, project)?;
                    let items = match params.history {
                        true => memory::list_history(conn, layer)?
                            .into_iter()
                            .map(MemoryItem::from)
                            .collect(),
                        false => memory::list_facts(conn, layer)?
                            .into_iter()
                            .map(MemoryItem::from)
                            .collect(),
                    };
                    Ok(Listing { enabled, items })
                })
                .await?;
            Ok(listing)
        }
    }
}

/// `memory/search` params.
#[derive(Debug, Deserialize)]
pub(super) struct SearchParams {
    query: String,
}

/// One item a search found.
#[derive(Debug, Serialize)]
pub(super) struct Found {
    /// `project`, `server`, `history` or `narrative`.
    layer: &'static str,
    topic: String,
    body: String,
}

struct Search;

impl TypedMethod for Search {
    type Params = SearchParams;
    type Output = Vec<Found>;

    fn name(&self) -> &'static str {
        "memory/search"
    }

    fn description(&self) -> &'static str {
        "What a prompt of these words would recall, in recall order (nothing when memory is off)."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[("query", "string — the words to look for")]
    }

    fn role(&self) -> Role {
        Role::Viewer
    }

    fn call(
        &self,
        call: MethodCall,
        params: SearchParams,
    ) -> impl Future<Output = Result<Vec<Found>, MethodError>> + Send + 'static {
        let project = project(&call);
        async move {
            let project = project?;
            if memory::query_words(&params.query).is_empty() {
                return Err(MethodError::InvalidParams(
                    "query has no word of at least three letters, nor two Chinese, Japanese or Korean ones".to_owned(),
                ));
            }
            let items = call
                .db
                .read(move |conn| match memory::is_enabled(conn, project)? {
                    true => candidates(conn, project, &params.query),
                    false => Ok(Vec::new()),
                })
                .await?;
            Ok(items
                .into_iter()
                .map(|item| Found {
                    layer: match item.layer {
                        MemoryLayer::Project => "project",
                        MemoryLayer::Server => "server",
                        MemoryLayer::History => "history",
                        MemoryLayer::Narrative => "narrative",
                    },
                    topic: item.topic,
                    body: item.body,
                })
                .collect())
        }
    }
}

/// `memory/set` and `memory/server/set` params.
#[derive(Debug, Deserialize)]
pub(super) struct SetParams {
    topic: String,
    body: String,
}

/// What writing a fact did.
#[derive(Debug, Serialize)]
pub(super) struct Stored {
    /// `created`, `replaced` (the older fact is in the history) or `unchanged`.
    written: &'static str,
    fact: MemoryItem,
}

/// Writes a fact of its layer.
struct Set {
    layer: Layer,
    tools: ToolSettings,
    history: HistoryBounds,
}

impl TypedMethod for Set {
    type Params = SetParams;
    type Output = Stored;

    fn name(&self) -> &'static str {
        match self.layer {
            Layer::Project => "memory/set",
            Layer::Server => "memory/server/set",
        }
    }

    fn description(&self) -> &'static str {
        match self.layer {
            Layer::Project => "Remembers a fact for the project; a fact on a remembered topic replaces it (the older one goes to the history).",
            Layer::Server => "Remembers a fact for every project; a fact on a remembered topic replaces it (the older one goes to the history).",
        }
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "topic",
                "string — what the fact is about (its key, case and spacing ignored)",
            ),
            ("body", "string — the fact"),
        ]
    }

    fn role(&self) -> Role {
        match self.layer {
            Layer::Project => Role::Member,
            Layer::Server => Role::Admin,
        }
    }

    fn call(
        &self,
        call: MethodCall,
        params: SetParams,
    ) -> impl Future<Output = Result<Stored, MethodError>> + Send + 'static {
        let (layer, tools, history) = (self.layer, self.tools, self.history);
        async move {
            let project = project(&call)?;
            if let Some(problem) = super::fact_problem(&params.topic, &params.body, tools) {
                return Err(MethodError::InvalidParams(problem));
            }
            let form = MemoryFactForm {
                project_id: layer.of(&call)?,
                topic: params.topic,
                body: params.body.trim().to_owned(),
                run_id: None,
                person: call.person.clone(),
                by_person: true,
                transient: false,
            };
            let stored = call
                .db
                .call(move |conn| match memory::is_enabled(conn, project)? {
                    true => memory::write_fact(conn, &form, history).map(Some),
                    false => Ok(None),
                })
                .await?;
            let Some((fact, written)) = stored else {
                return Err(MethodError::InvalidParams(
                    "memory is off for this project (memory/switch turns it on)".to_owned(),
                ));
            };
            Ok(Stored {
                written: match written {
                    Written::Created => "created",
                    Written::Replaced => "replaced",
                    // A person's fact is never kept out by another's.
                    Written::Unchanged | Written::KeptPersons => "unchanged",
                },
                fact: fact.into(),
            })
        }
    }
}

/// `memory/delete` and `memory/server/delete` params.
#[derive(Debug, Deserialize)]
pub(super) struct DeleteParams {
    id: i64,
    #[serde(default)]
    history: bool,
}

/// What erasing answered.
#[derive(Debug, Serialize)]
pub(super) struct Deleted {
    deleted: i64,
}

/// Erases a fact (or a replaced one) of its layer.
struct Delete(Layer);

impl TypedMethod for Delete {
    type Params = DeleteParams;
    type Output = Deleted;

    fn name(&self) -> &'static str {
        match self.0 {
            Layer::Project => "memory/delete",
            Layer::Server => "memory/server/delete",
        }
    }

    fn description(&self) -> &'static str {
        match self.0 {
            Layer::Project => "Erases one of the project's facts, or of the facts they replaced; nothing of it is kept.",
            Layer::Server => "Erases one server-wide fact, or one they replaced; nothing of it is kept.",
        }
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("id", "integer — the item's id, as memory/list gives it"),
            ("history", "boolean? — the id is of a replaced fact"),
        ]
    }

    fn role(&self) -> Role {
        match self.0 {
            Layer::Project => Role::Member,
            Layer::Server => Role::Admin,
        }
    }

    fn call(
        &self,
        call: MethodCall,
        params: DeleteParams,
    ) -> impl Future<Output = Result<Deleted, MethodError>> + Send + 'static {
        let layer = self.0;
        async move {
            let owner = layer.of(&call)?;
            let id = params.id;
            let deleted = call
                .db
                .call(move |conn| match params.history {
                    true => memory::delete_history(conn, owner, MemoryHistoryId(id)),
                    false => memory::delete_fact(conn, owner, MemoryFactId(id)),
                })
                .await?;
            match deleted {
                true => Ok(Deleted { deleted: id }),
                false => Err(MethodError::InvalidParams(format!(
                    "no memory item {id} here"
                ))),
            }
        }
    }
}

/// `memory/switch` params.
#[derive(Debug, Deserialize)]
pub(super) struct SwitchParams {
    enabled: bool,
}

/// The switch as it now is.
#[derive(Debug, Serialize)]
pub(super) struct Switched {
    enabled: bool,
}

struct Switch;

impl TypedMethod for Switch {
    type Params = SwitchParams;
    type Output = Switched;

    fn name(&self) -> &'static str {
        "memory/switch"
    }

    fn description(&self) -> &'static str {
        "Turns the project's memory on or off (off: nothing is recalled or remembered; what is kept stays until erased)."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[("enabled", "boolean — on or off")]
    }

    fn call(
        &self,
        call: MethodCall,
        params: SwitchParams,
    ) -> impl Future<Output = Result<Switched, MethodError>> + Send + 'static {
        let project = project(&call);
        async move {
            let project = project?;
            let enabled = params.enabled;
            let person = call.person.clone();
            call.db
                .call(move |conn| memory::set_enabled(conn, project, enabled, person.as_deref()))
                .await?;
            Ok(Switched { enabled })
        }
    }
}
