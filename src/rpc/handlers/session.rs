//! `ping`, `init`.

use std::path::{Path, PathBuf};

use actix_web::web;
use serde::{Deserialize, Serialize};

use crate::access::AccessError;
use crate::config::RunCommands;
use crate::db::models::ProjectInsertForm;
use crate::db::queries::projects::{self, Opening, RootRules};
use crate::error::AppError;
use crate::hub::notifications::{Client, ClientKind};
use crate::plugins::events::Event;
use crate::project::{confine, roots, ProjectDirs, ProjectError};
use crate::rpc::call::{CallContext, ProjectBinding, Reply};
use crate::rpc::params::{NoParams, Required};
use crate::sandbox::policy::ProjectChoice;

/// `ping`: `{}`.
pub(crate) async fn ping(_: CallContext, _: NoParams) -> Result<Reply, AppError> {
    Reply::of(serde_json::json!({}))
}

/// `init` params. A `configPath`, which the reference server stored and nothing read, is
/// not taken (like any param no method names).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitParams {
    name: Required,
    project_root: Required,
    /// What the client is, as other clients of a run it is in see it; `{name: "api", kind:
    /// "api"}` when not given.
    #[serde(default)]
    client: Option<ClientParams>,
}

/// `init`'s `client`: a name (`rummy acp`, `nvim`, …) and a kind.
#[derive(Debug, Deserialize)]
pub(crate) struct ClientParams {
    name: Required,
    #[serde(default)]
    kind: ClientKind,
}

/// The longest client name `init` takes, in characters.
const CLIENT_NAME_MAX: usize = 100;

impl ClientParams {
    /// The client named, or the default: refused when its name is too long.
    fn client(given: Option<ClientParams>) -> Result<Client, AppError> {
        let Some(given) = given else {
            return Ok(Client {
                name: ClientKind::Api.as_str().to_owned(),
                kind: ClientKind::Api,
            });
        };
        if given.name.chars().count() > CLIENT_NAME_MAX {
            return Err(AppError::InvalidParam(format!(
                "client.name is longer than {CLIENT_NAME_MAX} characters"
            )));
        }
        Ok(Client {
            name: given.name.0,
            kind: given.kind,
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitResult {
    project_id: i64,
    /// Where the project's accepted commands run: `client` (the client runs them and
    /// resolves with their output) or `server` (accept only; the server runs them).
    commands: RunCommands,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectItem {
    name: String,
    project_root: Option<String>,
    created: String,
}

/// `getProjects`: the projects the caller may open, by name, with the root `init` takes.
pub(crate) async fn projects(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let grant = context.grant()?;
    let rows = context.agent.db.read(projects::all_projects).await?;
    let items: Vec<ProjectItem> = rows
        .into_iter()
        .filter(|row| grant.open(&row.name).is_ok())
        .map(|row| ProjectItem {
            name: row.name,
            project_root: row.project_root,
            created: row.created_at,
        })
        .collect();
    Reply::of(items)
}

/// `init`: open the project by name (created at its root the first time, by a member or
/// more; found at that root afterwards) and bind this connection to it. The caller must
/// be given the project's name. The root is stored with its symlinks resolved; with
/// `RUMMY_PROJECTS_DIR` set it must lie inside one of its directories. No project's root
/// is, holds or lies inside another's, whoever asks. A refusal stores and binds nothing.
pub(crate) async fn init(context: CallContext, params: InitParams) -> Result<Reply, AppError> {
    let grant = context.grant()?;
    grant.open(&params.name)?;
    let client = ClientParams::client(params.client)?;
    let create_refusal = grant.create(&params.name).err();
    let named = PathBuf::from(&*params.project_root);
    if !named.is_absolute() {
        return Err(AppError::InvalidParam(
            "projectRoot must be an absolute path".into(),
        ));
    }
    let named = lexically_normal(&named);
    context.agent.plugins.emit(Event::ProjectInitStarted {
        name: &params.name,
        root: &named,
    });
    let root = admitted_root(&context, named).await?;
    let shown = params.project_root.0.clone();
    let opening = open(&context, &params.name, &root, create_refusal.is_none()).await?;
    let project = match opening {
        Opening::Opened(project) => project,
        Opening::OtherRoot => {
            return Err(AccessError::RootTaken {
                project: params.name.0,
            }
            .into())
        }
        Opening::Overlaps => return Err(ProjectError::RootOverlaps(shown).into()),
        Opening::Absent => {
            return Err(create_refusal.map_or_else(
                || AppError::Internal("a project the caller may create was not".into()),
                AppError::from,
            ))
        }
    };
    context.agent.plugins.emit(Event::ProjectInitCompleted {
        project: project.id,
        name: &project.name,
        root: &root,
    });
    let binding = ProjectBinding {
        id: project.id,
        name: project.name,
        root,
        client,
    };
    let commands = ProjectChoice::load(&context.agent.db, project.id)
        .await?
        .policy(&context.agent.settings.commands)
        .commands;
    let mut reply = Reply::of(InitResult {
        project_id: project.id.0,
        commands,
    })?;
    reply.bind = Some(binding);
    Ok(reply)
}

/// The root `named` resolves to, refused unless it lies where projects may (inside one of
/// the `projects_dir` directories when set); checked off the executor.
pub(super) async fn admitted_root(
    context: &CallContext,
    named: PathBuf,
) -> Result<PathBuf, AppError> {
    let dirs = context.agent.settings.server.projects_dir.clone();
    web::block(move || {
        if dirs.is_empty() {
            confine::resolve(&named)
        } else {
            ProjectDirs::new(&dirs).admit(&named)
        }
    })
    .await
    .map_err(|error| AppError::Internal(format!("the root check stopped: {error}")))?
    .map_err(AppError::from)
}

/// Opens the project `name` at `root` ([`projects::open_project`]), found on a reader
/// first when it is already stored at that root.
pub(super) async fn open(
    context: &CallContext,
    name: &str,
    root: &Path,
    may_create: bool,
) -> Result<Opening, AppError> {
    let form = ProjectInsertForm {
        name: name.to_owned(),
        project_root: Some(root.display().to_string()),
    };
    let rules = RootRules {
        resolve: |stored: &Path| confine::resolve(stored).ok(),
        overlap: roots::overlap,
    };
    let (name, stored) = (form.name.clone(), root.display().to_string());
    let known = context
        .agent
        .db
        .read(move |conn| projects::opened_at(conn, &name, &stored))
        .await?;
    Ok(match known {
        Some(project) => Opening::Opened(project),
        None => {
            context
                .agent
                .db
                .call(move |conn| projects::open_project(conn, &form, may_create, &rules))
                .await?
        }
    })
}

/// Removes `.` and resolves `..` without touching the disk (the root may not exist here).
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}
