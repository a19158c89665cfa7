//! `startRun`, `getRuns`, `getRun`, `run/config`, `run/rename`, `run/abort`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::loop_config::LoopConfig;
use crate::agent::verbs::{abort, VerbError};
use crate::db::enums::{EntryStatus, LoopMode, RunAction, RunStatus};
use crate::db::ids::RunId;
use crate::db::models::entry::EntryRow;
use crate::db::models::run::{
    LoopRow, PurposeUsage, RunActionRow, RunConfigUpdateForm, RunCreateForm, RunRow,
};
use crate::db::queries::paused_loops::{self, PausedRow};
use crate::db::queries::{entries, models, run_actions, run_events, run_titles, runs, usage};
use crate::db::{Conn, DbError};
use crate::error::AppError;
use crate::hub::notifications::{Cost, Present, UsageTotals};
use crate::plugins::events::Event;
use crate::presence::Presence;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::run_settings::{filtered, settings_only};
use crate::rpc::held_calls;
use crate::rpc::held_calls::HeldMethod;
use crate::rpc::params::{Page, Required};

/// Lowest accepted `contextLimit`.
const MIN_CONTEXT_LIMIT: i64 = 1024;

/// `startRun` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartRunParams {
    model: Required,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    persona: Option<String>,
    #[serde(default)]
    context_limit: Option<i64>,
}

#[derive(Serialize)]
struct StartRunResult {
    run: String,
    id: i64,
}

/// Checks the settings a client may give a run.
pub(crate) fn validate_settings(
    temperature: Option<f64>,
    context_limit: Option<i64>,
) -> Result<Option<i32>, AppError> {
    if let Some(temperature) = temperature {
        if !(0.0..=2.0).contains(&temperature) {
            return Err(AppError::InvalidParam(format!(
                "temperature must be between 0 and 2, not {temperature}"
            )));
        }
    }
    context_limit
        .map(|limit| {
            if limit < MIN_CONTEXT_LIMIT {
                return Err(AppError::InvalidParam(format!(
                    "contextLimit must be at least {MIN_CONTEXT_LIMIT}, not {limit}"
                )));
            }
            Ok(i32::try_from(limit).unwrap_or(i32::MAX))
        })
        .transpose()
}

/// `startRun`: an idle run (status 100) with a unique alias, its settings past the
/// `run.config` filters.
pub(crate) async fn start(context: CallContext, params: StartRunParams) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let given = settings_only(
        params.model.0,
        params.temperature,
        params.context_limit,
        params.persona,
    );
    let settings = filtered(&context, "startRun", given).await?;
    let context_limit = validate_settings(settings.temperature, settings.context_limit)?;
    let create = RunCreateForm {
        project_id: project,
        model: settings.model,
        temperature: settings.temperature,
        persona: settings.persona,
        context_limit,
        created_by: context.person(),
    };
    let model = create.model.clone();
    // `None`: the model is not in the catalogue and no run was created.
    let run = context
        .agent
        .db
        .call(move |conn| {
            if models::find_model(conn, &create.model)?.is_none() {
                return Ok(None);
            }
            runs::create_run(conn, &create, now_ms()).map(Some)
        })
        .await?
        .ok_or(AppError::UnknownModel(model))?;
    context.agent.plugins.emit(Event::RunCreated {
        run: run.id,
        alias: &run.alias,
        project,
        forked_from: None,
    });
    Reply::of(StartRunResult {
        run: run.alias,
        id: run.id.0,
    })
}

pub(crate) use crate::db::queries::runs::now_ms;

#[derive(Serialize)]
struct RunListItem {
    run: String,
    /// What people read it as (`None`: no prompt reached it yet).
    title: Option<String>,
    /// Its first prompt, cut to `runs::ASKED_CHARS` characters (`None`: none yet).
    asked: Option<String>,
    status: RunStatus,
    turn: i64,
    summary: Option<String>,
    created: String,
    /// When its latest notification was sent, ms since the epoch (`None`: none kept): with
    /// `created`, how long it has taken.
    last_event_ms: Option<i64>,
    /// The run whose sub-task this run carries out.
    delegated_by: Option<String>,
    /// The model alias it runs on.
    model: Option<String>,
    /// Who started it (`None`: the operator, or a run started by another run).
    created_by: Option<String>,
    /// What its own calls cost so far, as `getRun`'s telemetry counts it.
    #[serde(flatten)]
    cost: Cost,
}

/// `getRuns`: the project's runs, newest first.
pub(crate) async fn list(context: CallContext, page: Page) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let rows = context
        .agent
        .db
        .read(move |conn| {
            let listed = runs::list_runs(
                conn,
                project,
                page.limit.map(i64::from),
                page.offset.map(i64::from),
            )?;
            listed
                .into_iter()
                .map(|summary| {
                    let cost = UsageTotals::of(&usage::by_purpose(conn, summary.run.id)?).cost;
                    Ok((summary, cost))
                })
                .collect::<Result<Vec<_>, DbError>>()
        })
        .await?;
    let items: Vec<RunListItem> = rows
        .into_iter()
        .map(|(summary, cost)| RunListItem {
            run: summary.run.alias,
            title: summary.run.title,
            asked: summary.asked,
            status: summary.run.status,
            turn: summary.turns,
            summary: summary.summary,
            created: summary.run.created_at,
            last_event_ms: summary.last_event_ms,
            delegated_by: summary.delegated_by,
            model: summary.run.model,
            created_by: summary.run.created_by,
            cost,
        })
        .collect();
    Reply::of(items)
}

/// Params of the methods that name only a run.
#[derive(Debug, Deserialize)]
pub(crate) struct RunParams {
    pub(super) run: Required,
}

#[derive(Serialize)]
struct Telemetry {
    /// What the run's requests are sent with: its latest loop's effective temperature.
    temperature: Option<f64>,
    #[serde(flatten)]
    usage: UsageTotals,
}

#[derive(Serialize)]
struct AuditItem {
    path: String,
    body: String,
    turn: i32,
}

/// One entry of `getRun`'s `context.history` (`rummy acp` replays a run's log from these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HistoryItem {
    /// Its scheme (an entry without one, a bare file, is not listed).
    pub scheme: Option<String>,
    pub path: String,
    pub status: EntryStatus,
    pub body: String,
    pub attributes: Value,
    pub turn: i32,
}

#[derive(Serialize)]
struct RunContext {
    telemetry: Telemetry,
    reasoning: Vec<AuditItem>,
    content: Vec<AuditItem>,
    history: Vec<HistoryItem>,
}

/// One loop of a run, and who queued it.
#[derive(Serialize)]
struct LoopItem {
    /// Its number within the run.
    sequence: i32,
    mode: LoopMode,
    status: RunStatus,
    requested_by: Option<String>,
    created_at: String,
}

/// A resolution or an abort, and who did it.
#[derive(Serialize)]
struct ActionItem {
    action: RunAction,
    person: Option<String>,
    /// The resolved proposal.
    path: Option<String>,
    /// The loop's number within the run: whose proposal was resolved, or which was
    /// aborted.
    #[serde(rename = "loop")]
    sequence: Option<i32>,
    created_at: String,
}

/// `getRun`'s result: the reference's fields, then who did what (`null`: the operator).
#[derive(Serialize)]
struct RunDetail {
    run: String,
    /// What people read it as (`None`: no prompt reached it yet).
    title: Option<String>,
    /// When it was created, `YYYY-MM-DD HH:MM:SS` UTC.
    created: String,
    /// When its latest notification was sent, ms since the epoch (`None`: none kept).
    last_event_ms: Option<i64>,
    turn: i64,
    status: RunStatus,
    model: Option<String>,
    temperature: Option<f64>,
    persona: Option<String>,
    context_limit: Option<i32>,
    last_user_prompt: Option<String>,
    last_summary: Option<String>,
    context: RunContext,
    created_by: Option<String>,
    /// The run whose sub-task this run carries out.
    delegated_by: Option<String>,
    loops: Vec<LoopItem>,
    actions: Vec<ActionItem>,
    /// The run's latest notification seq when this was read (0: none yet): a client that
    /// resynced after `run/replay`'s `-32009` follows from it.
    seq: u64,
    /// Who is in the run now (`run/presence` tells each change).
    present: Vec<Present>,
    /// Where a run paused at a spend cap (402) stopped: `null` for any other run.
    paused: Option<PausedItem>,
}

/// The cap a paused run's loop waits on, as `run/outcome` told it.
#[derive(Serialize)]
struct PausedItem {
    error: String,
    /// The cap (`usage::StandingView`): scope, subject, period, unit, limit, spent, left,
    /// resets.
    cap: Value,
}

/// `getRun`: settings, usage totals, reasoning, content and history of one run.
pub(crate) async fn detail(context: CallContext, params: RunParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let (run_id, delegator) = (run.id, run.delegated_by);
    let paused = run.status == RunStatus::CapReached;
    let records = context
        .agent
        .db
        .read(move |conn| RunRecords::read(conn, run_id, delegator, paused))
        .await?;
    let temperature = records
        .loops
        .last()
        .map(|lp| LoopConfig::of(&lp.config))
        .unwrap_or_default()
        .effective_temperature(run.temperature, context.agent.settings.agent.temperature);
    let actions = action_items(records.actions, &records.loops);
    let usage = UsageTotals::of(&records.usage);
    Reply::of(RunDetail {
        run: run.alias,
        title: run.title,
        created: run.created_at,
        last_event_ms: records.last_event_ms,
        turn: usage.turns(),
        status: run.status,
        model: run.model,
        temperature: run.temperature,
        persona: run.persona,
        context_limit: run.context_limit,
        last_user_prompt: records.last_prompt.map(|row| row.body),
        last_summary: records.last_summary.map(|row| row.body),
        context: RunContext {
            telemetry: Telemetry { temperature, usage },
            reasoning: records.reasoning.into_iter().map(AuditItem::from).collect(),
            content: records.content.into_iter().map(AuditItem::from).collect(),
            history: records
                .history
                .into_iter()
                .filter_map(HistoryItem::of)
                .collect(),
        },
        created_by: run.created_by,
        delegated_by: records.delegated_by,
        loops: records.loops.into_iter().map(LoopItem::from).collect(),
        actions,
        seq: records.seq,
        present: records.present,
        paused: records.paused.map(|row| PausedItem {
            cap: serde_json::from_str(&row.cap).unwrap_or(Value::Null),
            error: row.error,
        }),
    })
}

/// What `getRun` reads of a run besides its row, in one read.
struct RunRecords {
    usage: Vec<PurposeUsage>,
    reasoning: Vec<EntryRow>,
    content: Vec<EntryRow>,
    history: Vec<EntryRow>,
    last_prompt: Option<EntryRow>,
    last_summary: Option<EntryRow>,
    loops: Vec<LoopRow>,
    actions: Vec<RunActionRow>,
    last_event_ms: Option<i64>,
    /// The alias of the run that delegated this one.
    delegated_by: Option<String>,
    /// The run's latest notification seq (0: none yet).
    seq: u64,
    present: Vec<Present>,
    /// The paused loop's row, read only for a paused run.
    paused: Option<PausedRow>,
}

impl RunRecords {
    fn read(
        conn: &mut Conn,
        run: RunId,
        delegator: Option<RunId>,
        paused: bool,
    ) -> Result<Self, DbError> {
        Ok(RunRecords {
            usage: usage::by_purpose(conn, run)?,
            reasoning: entries::entries_of_scheme(conn, run, "reasoning")?,
            content: entries::entries_of_scheme(conn, run, "content")?,
            history: entries::run_history(conn, run)?,
            last_prompt: entries::latest_entry_of_scheme(conn, run, "prompt")?,
            last_summary: entries::latest_entry_of_scheme(conn, run, "summarize")?,
            loops: run_actions::loops_of_run(conn, run)?,
            actions: run_actions::of_run(conn, run)?,
            last_event_ms: run_events::last_event_ms(conn, run)?,
            delegated_by: match delegator {
                Some(parent) => runs::alias_of(conn, parent)?,
                None => None,
            },
            seq: run_events::seqs(conn, run)?
                .and_then(|seqs| u64::try_from(seqs.last_seq).ok())
                .unwrap_or_default(),
            present: Presence::read(conn, run)?,
            paused: if paused {
                paused_loops::of_run(conn, run)?
            } else {
                None
            },
        })
    }
}

/// The run's actions, each with the number of the loop it concerns.
fn action_items(actions: Vec<RunActionRow>, loops: &[LoopRow]) -> Vec<ActionItem> {
    let sequence_of = |id| {
        loops
            .iter()
            .find(|lp| Some(lp.id) == id)
            .map(|lp| lp.sequence)
    };
    actions
        .into_iter()
        .map(|row| ActionItem {
            action: row.action,
            sequence: sequence_of(row.loop_id),
            person: row.person,
            path: row.path,
            created_at: row.created_at,
        })
        .collect()
}

impl From<EntryRow> for AuditItem {
    fn from(row: EntryRow) -> Self {
        AuditItem {
            path: row.path,
            body: row.body,
            turn: row.turn,
        }
    }
}

impl HistoryItem {
    /// The history item of an entry with a scheme (`None` for a bare file).
    fn of(row: EntryRow) -> Option<HistoryItem> {
        row.scheme.is_some().then(|| HistoryItem {
            attributes: row.attributes.into(),
            scheme: row.scheme,
            path: row.path,
            status: row.status,
            body: row.body,
            turn: row.turn,
        })
    }
}

impl From<LoopRow> for LoopItem {
    fn from(lp: LoopRow) -> Self {
        LoopItem {
            sequence: lp.sequence,
            mode: lp.mode,
            status: lp.status,
            requested_by: lp.requested_by,
            created_at: lp.created_at,
        }
    }
}

/// `run/config` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunConfigParams {
    run: Required,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    persona: Option<String>,
    #[serde(default)]
    context_limit: Option<i64>,
    #[serde(default)]
    model: Option<String>,
}

/// `run/config`: change only the settings given, past the `run.config` filters (a setting a
/// filter takes away stays as it was); a model must be in the catalogue, since later loops
/// of the run (inject, resume) would otherwise fail on it.
pub(crate) async fn configure(
    context: CallContext,
    params: RunConfigParams,
) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let current = run.model.clone().unwrap_or_default();
    let given = settings_only(
        params.model.unwrap_or_else(|| current.clone()),
        params.temperature,
        params.context_limit,
        params.persona,
    );
    let settings = filtered(&context, "run/config", given).await?;
    let context_limit = validate_settings(settings.temperature, settings.context_limit)?;
    let form = RunConfigUpdateForm {
        temperature: settings.temperature,
        persona: settings.persona,
        context_limit,
        model: Some(settings.model).filter(|model| *model != current),
    };
    let unknown_model = context
        .agent
        .db
        .call(move |conn| {
            if let Some(model) = form.model.as_ref() {
                if models::find_model(conn, model)?.is_none() {
                    return Ok(Some(model.clone()));
                }
            }
            runs::update_run_config(conn, run.id, &form)?;
            Ok(None)
        })
        .await?;
    if let Some(model) = unknown_model {
        return Err(AppError::UnknownModel(model));
    }
    Reply::of(serde_json::json!({"status": "ok"}))
}

/// `run/rename` params: a new alias, a title, or both.
#[derive(Debug, Deserialize)]
pub(crate) struct RenameParams {
    run: Required,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

/// `run/rename`: a new alias matching `[A-Za-z0-9_]+`, unique server-wide, and/or a title
/// (one line of at most `run_titles::MAX_TITLE_CHARS` characters). Either is a person's
/// name for the run: its title becomes the title given, or else the new alias, and no
/// automatic title (its prompt's, its session notes') replaces it.
pub(crate) async fn rename(context: CallContext, params: RenameParams) -> Result<Reply, AppError> {
    let title = params.title.as_deref().map(person_title).transpose()?;
    let name = match (params.name, &title) {
        (None, Some(_)) => None,
        (name, _) => {
            let name = name.unwrap_or_default();
            if !runs::is_valid_alias(&name) {
                return Err(AppError::BadRunName);
            }
            Some(name)
        }
    };
    let run = find_run(&context, &params.run).await?;
    let taken = name.clone().unwrap_or_default();
    let renamed = context
        .agent
        .db
        .call(move |conn| {
            let alias = match name {
                Some(name) => runs::rename_run(conn, run.id, &name)?.alias,
                None => run.alias,
            };
            let title = title.unwrap_or_else(|| alias.clone());
            run_titles::by_person(conn, run.id, &title)?;
            Ok((alias, title))
        })
        .await
        .map_err(|error| match error {
            DbError::Conflict(_) => AppError::NameTaken(taken),
            other => AppError::Db(other),
        })?;
    Reply::of(serde_json::json!({"run": renamed.0, "title": renamed.1}))
}

/// A person's title: one line with text, of at most `run_titles::MAX_TITLE_CHARS`
/// characters, trimmed.
fn person_title(title: &str) -> Result<String, AppError> {
    let trimmed = title.trim();
    if trimmed.is_empty() || trimmed.chars().any(char::is_control) {
        return Err(AppError::InvalidParam(
            "title must be one line with text".to_owned(),
        ));
    }
    if trimmed.chars().count() > run_titles::MAX_TITLE_CHARS {
        return Err(AppError::InvalidParam(format!(
            "title must be at most {} characters",
            run_titles::MAX_TITLE_CHARS
        )));
    }
    Ok(trimmed.to_owned())
}

/// `run/abort`: its run found here, executed by the instance holding the run's lease (the
/// `abort` verb); asked of that instance once more when the run's loop turns out to run
/// there after all (it was claimed meanwhile).
pub(crate) async fn abort(context: CallContext, params: RunParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    context.agent.presence.acted(&context.someone()?, run.id);
    let mut tries = 0;
    loop {
        if let Some(answer) = held_calls::ask(&context, run.id, HeldMethod::Abort).await {
            return answer;
        }
        tries += 1;
        match abort::abort(&context.agent, &run, context.person()).await {
            Err(VerbError::Elsewhere) if tries < ABORT_TRIES => continue,
            answer => return Reply::of(answer?),
        }
    }
}

/// How many times `run/abort` (and `run/cancel`) looks for where the run's loop runs.
pub(crate) const ABORT_TRIES: usize = 3;

/// The run with this alias in the caller's project (a run of another project is not found).
pub(crate) async fn find_run(context: &CallContext, alias: &str) -> Result<RunRow, AppError> {
    find_run_or(context, alias, AppError::RunNotFound).await
}

/// As [`find_run`], with the caller's choice of not-found wording.
pub(crate) async fn find_run_or(
    context: &CallContext,
    alias: &str,
    not_found: fn(String) -> AppError,
) -> Result<RunRow, AppError> {
    let project = context.project()?.id;
    let lookup = alias.to_string();
    let run = context
        .agent
        .db
        .read(move |conn| runs::find_run(conn, project, &lookup))
        .await?;
    run.ok_or_else(|| not_found(alias.to_string()))
}
