//! Skills and personas: markdown files under `$RUMMY_HOME`, loaded into runs.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::blocking::blocking;
use crate::db::enums::EntryStatus;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::run::RunConfigUpdateForm;
use crate::db::queries::{entries, runs};
use crate::error::AppError;
use crate::project::{DocumentKind, HomeDocument, RummyHome};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run_or;
use crate::rpc::params::NoParams;

/// Scheme of skill entries.
const SKILL_SCHEME: &str = "skill://";

/// `skill/add` and `skill/remove` params; checked in the reference's order.
#[derive(Debug, Deserialize)]
pub struct SkillParams {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

impl SkillParams {
    fn checked(self) -> Result<(String, String), AppError> {
        let name = self
            .name
            .filter(|name| !name.is_empty())
            .ok_or_else(|| AppError::MissingParam("name".into()))?;
        let run = self
            .run
            .filter(|run| !run.is_empty())
            .ok_or_else(|| AppError::MissingParam("run".into()))?;
        Ok((run, name))
    }
}

#[derive(Serialize)]
struct DocumentView {
    name: String,
    path: String,
}

fn home(context: &CallContext) -> RummyHome {
    RummyHome::new(context.agent.settings.storage.home.clone())
}

/// `skill/add`: load `skills/<name>.md` into the run as `skill://<name>`.
pub async fn add(context: CallContext, params: SkillParams) -> Result<Reply, AppError> {
    let (alias, name) = params.checked()?;
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let home = home(&context);
    let document = blocking(move || Ok(home.read(DocumentKind::Skill, &name)?)).await?;
    let path = format!("{SKILL_SCHEME}{}", document.name);
    let upsert = EntryUpsertForm {
        attributes: Some(json!({
            "name": document.name,
            "source": document.path.display().to_string(),
        })),
        ..EntryUpsertForm::new(run.id, None, 0, path, document.body)
    };
    context
        .agent
        .db
        .call(move |conn| entries::upsert_entry(conn, &upsert))
        .await?;
    Reply::of(json!({"status": "ok", "skill": document.name}))
}

/// `skill/remove`: drop `skill://<name>` from the run (ok when absent).
pub async fn remove(context: CallContext, params: SkillParams) -> Result<Reply, AppError> {
    let (alias, name) = params.checked()?;
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let selector = Selector::Path(format!("{SKILL_SCHEME}{name}"));
    context
        .agent
        .db
        .call(move |conn| entries::delete_entries(conn, run.id, &selector))
        .await?;
    Reply::of(json!({"status": "ok"}))
}

/// `getSkills` params.
#[derive(Debug, Deserialize)]
pub struct RunOnlyParams {
    #[serde(default)]
    run: Option<String>,
}

#[derive(Serialize)]
struct SkillStatus {
    name: String,
    status: EntryStatus,
}

/// `getSkills`: the skills loaded in a run.
pub async fn of_run(context: CallContext, params: RunOnlyParams) -> Result<Reply, AppError> {
    let alias = params
        .run
        .filter(|run| !run.is_empty())
        .ok_or_else(|| AppError::MissingParam("run".into()))?;
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let rows = context
        .agent
        .db
        .read(move |conn| entries::entries_of_scheme(conn, run.id, "skill"))
        .await?;
    let skills: Vec<SkillStatus> = rows
        .into_iter()
        .map(|row| SkillStatus {
            name: row
                .path
                .strip_prefix(SKILL_SCHEME)
                .unwrap_or(&row.path)
                .to_string(),
            status: row.status,
        })
        .collect();
    Reply::of(skills)
}

async fn list_documents(context: &CallContext, kind: DocumentKind) -> Result<Reply, AppError> {
    let home = home(context);
    let documents: Vec<HomeDocument> = blocking(move || Ok(home.list(kind)?)).await?;
    let views: Vec<DocumentView> = documents
        .into_iter()
        .map(|document| DocumentView {
            name: document.name,
            path: document.path.display().to_string(),
        })
        .collect();
    Reply::of(views)
}

/// `listSkills`: the skill files in `$RUMMY_HOME/skills`.
pub async fn list_skills(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    list_documents(&context, DocumentKind::Skill).await
}

/// `listPersonas`: the persona files in `$RUMMY_HOME/personas`.
pub async fn list_personas(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    list_documents(&context, DocumentKind::Persona).await
}

/// `persona/set` params.
#[derive(Debug, Deserialize)]
pub struct PersonaParams {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// `persona/set`: literal text wins over a named file; neither clears the persona.
pub async fn set_persona(context: CallContext, params: PersonaParams) -> Result<Reply, AppError> {
    let alias = params
        .run
        .filter(|run| !run.is_empty())
        .ok_or_else(|| AppError::MissingParam("run".into()))?;
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let persona = match (params.text.filter(|text| !text.is_empty()), params.name) {
        (Some(text), _) => Some(text),
        (None, Some(name)) if !name.is_empty() => {
            let home = home(&context);
            let document = blocking(move || Ok(home.read(DocumentKind::Persona, &name)?)).await?;
            Some(document.body)
        }
        _ => None,
    };
    context
        .agent
        .db
        .call(move |conn| match persona {
            Some(persona) => runs::update_run_config(
                conn,
                run.id,
                &RunConfigUpdateForm {
                    persona: Some(persona),
                    ..RunConfigUpdateForm::default()
                },
            )
            .map(drop),
            None => runs::clear_persona(conn, run.id),
        })
        .await?;
    Reply::of(json!({"status": "ok"}))
}
