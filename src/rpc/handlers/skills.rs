//! Skills and personas: markdown files under `$RUMMY_HOME`, loaded into runs.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::blocking::blocking;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::run::RunConfigUpdateForm;
use crate::db::queries::{entries, runs};
use crate::error::AppError;
use crate::project::{DocumentKind, HomeDocument, RummyHome, Skill};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::run_settings::{filtered, settings_only};
use crate::rpc::handlers::runs::find_run_or;
use crate::rpc::params::NoParams;

/// Scheme of skill entries.
const SKILL_SCHEME: &str = "skill://";

/// `skill/add` and `skill/remove` params; checked in the reference's order.
#[derive(Debug, Deserialize)]
pub(crate) struct SkillParams {
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

/// `skill/add`: load `skills/<name>.md` into the run as `skill://<name>`, at summary
/// fidelity: the model reads its description (and when to use it) until it loads the body
/// with `<get path="skill://<name>"/>`.
pub(crate) async fn add(context: CallContext, params: SkillParams) -> Result<Reply, AppError> {
    let (alias, name) = params.checked()?;
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let home = home(&context);
    let document = blocking(move || Ok(home.read(DocumentKind::Skill, &name)?)).await?;
    let skill = Skill::parse(&document.name, &document.body);
    let path = format!("{SKILL_SCHEME}{}", document.name);
    let upsert = EntryUpsertForm {
        fidelity: Some(Fidelity::Summary),
        attributes: Some(json!({
            "name": skill.title,
            "description": skill.description,
            "whenToUse": skill.when_to_use,
            "summary": skill.summary(),
            "source": document.path.display().to_string(),
        })),
        ..EntryUpsertForm::new(run.id, None, 0, path, skill.body)
    };
    context
        .agent
        .db
        .call(move |conn| entries::upsert_entry(conn, &upsert))
        .await?;
    Reply::of(json!({"status": "ok", "skill": document.name}))
}

/// `skill/remove`: drop `skill://<name>` from the run (ok when absent).
pub(crate) async fn remove(context: CallContext, params: SkillParams) -> Result<Reply, AppError> {
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
pub(crate) struct RunOnlyParams {
    #[serde(default)]
    run: Option<String>,
}

/// A skill of a run as `getSkills` shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SkillStatus {
    /// Its file name, as `skill/add` and `skill/remove` take it.
    name: String,
    status: EntryStatus,
    /// The front matter's `name`, else the file name.
    title: Option<String>,
    description: Option<String>,
    when_to_use: Option<String>,
    /// The model has loaded its body (the entry is at full fidelity).
    loaded: bool,
}

/// `getSkills`: the skills loaded in a run, with their metadata.
pub(crate) async fn of_run(context: CallContext, params: RunOnlyParams) -> Result<Reply, AppError> {
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
        .map(|row| {
            let attributes = &row.attributes;
            let text = |name: &str| {
                attributes
                    .get(name)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            SkillStatus {
                title: text("name"),
                description: text("description"),
                when_to_use: text("whenToUse"),
                loaded: row.fidelity == Fidelity::Full,
                name: row
                    .path
                    .strip_prefix(SKILL_SCHEME)
                    .unwrap_or(&row.path)
                    .to_string(),
                status: row.status,
            }
        })
        .collect();
    Reply::of(skills)
}

/// A skill file as `listSkills` shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SkillFileView {
    name: String,
    path: String,
    title: String,
    description: String,
    when_to_use: Option<String>,
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

/// `listSkills`: the skill files in `$RUMMY_HOME/skills`, with their metadata.
pub(crate) async fn list_skills(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let home = home(&context);
    let views = blocking(move || {
        let mut views = Vec::new();
        for document in home.list(DocumentKind::Skill)? {
            let loaded = home.read(DocumentKind::Skill, &document.name)?;
            let skill = Skill::parse(&loaded.name, &loaded.body);
            views.push(SkillFileView {
                name: document.name,
                path: document.path.display().to_string(),
                title: skill.title,
                description: skill.description,
                when_to_use: skill.when_to_use,
            });
        }
        Ok(views)
    })
    .await?;
    Reply::of(views)
}

/// `listPersonas`: the persona files in `$RUMMY_HOME/personas`.
pub(crate) async fn list_personas(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    list_documents(&context, DocumentKind::Persona).await
}

/// `persona/set` params.
#[derive(Debug, Deserialize)]
pub(crate) struct PersonaParams {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// `persona/set`: literal text wins over a named file; neither clears the persona; what is
/// set passes the `run.config` filters first.
pub(crate) async fn set_persona(
    context: CallContext,
    params: PersonaParams,
) -> Result<Reply, AppError> {
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
    let model = run.model.clone().unwrap_or_default();
    let given = settings_only(model, None, None, persona);
    let persona = filtered(&context, "persona/set", given).await?.persona;
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
