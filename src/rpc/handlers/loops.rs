//! `ask`, `act`, `run/resolve`, `run/inject`: the long-running methods that drive loops,
//! translated to the run's verbs (`agent::verbs`).

use serde::Deserialize;

use crate::agent::allow::Always;
use crate::agent::loop_config::LoopConfig;
use crate::agent::verbs::inject;
use crate::agent::verbs::resolve::{self, Resolving};
use crate::agent::verbs::start::{self, Start};
use crate::agent::AgentContext;
use crate::db::enums::LoopMode;
use crate::db::models::run::RunConfigUpdateForm;
use crate::db::queries::models;
use crate::error::AppError;
use crate::plugins::engine::resolve::Resolution;
use crate::plugins::events::Event;
use crate::plugins::filters::RunRequest;
use crate::plugins::gather::RunPlace;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::run_settings;
use crate::rpc::handlers::runs::{find_run, validate_settings};
use crate::rpc::held_calls;
use crate::rpc::held_calls::HeldMethod;
use crate::rpc::params::{truthy, Required};
use crate::usage::{Amount, CapLimits, Limits};

/// `ask` / `act` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AskParams {
    model: Required,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default, deserialize_with = "truthy")]
    fork: bool,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    persona: Option<String>,
    #[serde(default)]
    context_limit: Option<i64>,
    #[serde(default, deserialize_with = "truthy")]
    no_repo: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_interaction: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_web: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_proposals: bool,
    /// The run's own spend caps (replacing those it had), never above the caller's.
    #[serde(default)]
    caps: Option<CapLimits>,
}

/// `ask`: a loop that may not change files.
pub(crate) async fn ask(context: CallContext, params: AskParams) -> Result<Reply, AppError> {
    ask_or_act(context, LoopMode::Ask, params).await
}

/// `act`: a loop that may propose file changes.
pub(crate) async fn act(context: CallContext, params: AskParams) -> Result<Reply, AppError> {
    ask_or_act(context, LoopMode::Act, params).await
}

/// `ask` / `act`: the `start` verb of the run it names (or of a new one, or a fork), its
/// params passed through the `run.config` filters and checked first.
async fn ask_or_act(
    context: CallContext,
    mode: LoopMode,
    params: AskParams,
) -> Result<Reply, AppError> {
    let binding = context.project()?;
    let project = binding.id;
    let (mode, params) = configured(&context, mode, params).await?;
    let context_limit = validate_settings(params.temperature, params.context_limit)?;
    let model = params.model.0.clone();
    require_known_model(&context.agent, &model).await?;
    context.agent.plugins.emit(Event::AskStarted {
        mode,
        project,
        model: &model,
        prompt: params.prompt.as_deref().unwrap_or_default(),
        run: params.run.as_deref(),
    });
    let existing = match &params.run {
        Some(alias) if !alias.is_empty() => Some(find_run(&context, alias).await?),
        _ => None,
    };
    let caps = run_caps(&context, params.caps.as_ref())?;
    let (presence, someone) = (context.agent.presence.clone(), context.someone()?);
    let start = Start {
        project,
        project_name: binding.name.clone(),
        limit_key: context.limit_key(),
        person: context.person(),
        connection: Some(context.connection()),
        mode,
        model: model.clone(),
        prompt: params.prompt.clone().unwrap_or_default(),
        existing,
        fork: params.fork,
        settings: RunConfigUpdateForm {
            temperature: params.temperature,
            persona: params.persona.clone(),
            context_limit,
            model: Some(model),
        },
        caps,
        stored_caps: params
            .caps
            .as_ref()
            .and_then(|caps| serde_json::to_string(caps).ok()),
        config: params.loop_config(),
        queued: Box::new(move |run| presence.acted(&someone, run)),
    };
    Reply::of(start::start(&context.agent, start).await?)
}

/// The run's own caps an `ask`/`act` gives, checked: none above the caller's own caps
/// (refused, naming the first, rather than lowered without a word).
fn run_caps(context: &CallContext, given: Option<&CapLimits>) -> Result<Option<Limits>, AppError> {
    let Some(given) = given else {
        return Ok(None);
    };
    let limits = given
        .checked()
        .map_err(|error| AppError::InvalidParam(format!("caps.{error}")))?;
    let Some(person) = context.person() else {
        return Ok(Some(limits));
    };
    let own = context.agent.llm.spending().book().person(&person);
    match limits.above(&own) {
        Some((limit, allowed)) => Err(AppError::InvalidParam(format!(
            "caps.{}_{}: a run's cap may not be above its starter's own ({} per {})",
            limit.period.as_str(),
            limit.unit.as_str(),
            Amount::of(limit.unit, allowed),
            limit.period.as_str()
        ))),
        None => Ok(Some(limits)),
    }
}

/// `mode` and `params` after the `run.config` filters: clamped, or refused.
async fn configured(
    context: &CallContext,
    mode: LoopMode,
    params: AskParams,
) -> Result<(LoopMode, AskParams), AppError> {
    let request = RunRequest {
        mode: Some(mode),
        model: params.model.0.clone(),
        temperature: params.temperature,
        context_limit: params.context_limit,
        persona: params.persona.clone(),
        no_repo: params.no_repo,
        no_interaction: params.no_interaction,
        no_web: params.no_web,
        no_proposals: params.no_proposals,
        refusal: None,
    };
    let request = run_settings::filtered(context, mode.as_str(), request).await?;
    let mode = match request.mode {
        Some(LoopMode::Ask) => LoopMode::Ask,
        _ => mode,
    };
    let params = AskParams {
        model: Required(request.model),
        temperature: request.temperature,
        context_limit: request.context_limit,
        persona: request.persona,
        no_repo: request.no_repo,
        no_interaction: request.no_interaction,
        no_web: request.no_web,
        no_proposals: request.no_proposals,
        ..params
    };
    Ok((mode, params))
}

/// An unknown model alias is refused before anything is admitted or written.
async fn require_known_model(agent: &AgentContext, model: &str) -> Result<(), AppError> {
    let alias = model.to_owned();
    let known = agent
        .db
        .read(move |conn| models::find_model(conn, &alias))
        .await?;
    match known {
        Some(_) => Ok(()),
        None => Err(AppError::UnknownModel(model.to_owned())),
    }
}

impl AskParams {
    /// The flags of the loop the call queues.
    fn loop_config(&self) -> LoopConfig {
        LoopConfig {
            no_repo: self.no_repo,
            no_interaction: self.no_interaction,
            no_web: self.no_web,
            no_proposals: self.no_proposals,
            temperature: self.temperature,
            panic_attempted: false,
            max_turns: None,
            delegation_depth: 0,
        }
    }
}

/// `run/resolve` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ResolveParams {
    run: Required,
    #[serde(default)]
    resolution: Option<ResolutionParams>,
}

/// One resolution: which proposal, what the client did, and its output.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResolutionParams {
    path: Required,
    action: Required,
    #[serde(default)]
    output: Option<String>,
    /// An accepted command allowed always: `true` (its default pattern) or a pattern.
    #[serde(default)]
    always: Option<Always>,
}

/// `run/resolve`: its params checked and its run found here, executed by the instance
/// holding the run's lease (the `resolve` verb).
pub(crate) async fn resolve(
    context: CallContext,
    params: ResolveParams,
) -> Result<Reply, AppError> {
    let resolution = params
        .resolution
        .ok_or_else(|| AppError::MissingParam("resolution".into()))?;
    let action = Resolution::parse(&resolution.action).map_err(|_| {
        AppError::InvalidParam(format!(
            "Invalid resolution action: {}. Use 'accept' or 'reject'.",
            &*resolution.action
        ))
    })?;
    let run = find_run(&context, &params.run).await?;
    let resolving = Resolving {
        path: resolution.path.0,
        action,
        output: resolution.output,
        always: resolution.always,
    };
    context.agent.presence.acted(&context.someone()?, run.id);
    let held = HeldMethod::Resolve(resolving.clone());
    if let Some(answer) = held_calls::ask(&context, run.id, held).await {
        return answer;
    }
    let binding = context.project()?;
    let place = RunPlace {
        alias: run.alias.clone(),
        project: binding.name.clone(),
        root: binding.root.clone(),
    };
    let (person, connection) = (context.person(), Some(context.connection()));
    let answer =
        resolve::resolve(&context.agent, run, resolving, person, connection, &place).await?;
    Reply::of(answer)
}

/// `run/inject` params.
#[derive(Debug, Deserialize)]
pub(crate) struct InjectParams {
    run: Required,
    message: Required,
}

/// `run/inject`: its run found here, executed by the instance holding the run's lease (the
/// `inject` verb).
pub(crate) async fn inject(context: CallContext, params: InjectParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let message = params.message.0;
    context.agent.presence.acted(&context.someone()?, run.id);
    let held = HeldMethod::Inject {
        message: message.clone(),
    };
    if let Some(answer) = held_calls::ask(&context, run.id, held).await {
        return answer;
    }
    let (person, connection) = (context.person(), Some(context.connection()));
    Reply::of(inject::inject(&context.agent, run, person, connection, message).await?)
}
