//! The one way a call's settings for a run pass the `run.config` filters: `ask`, `act`,
//! `startRun`, `run/config` and `persona/set` all hand theirs to [`filtered`] before
//! anything is admitted or written, so no call sets what a filter would clamp or refuse.

use crate::error::AppError;
use crate::plugins::filters::{RunAsked, RunConfig, RunRequest};
use crate::rpc::call::CallContext;

/// `request` after the `run.config` filters of the caller's project, for `method`; a
/// refusal is `-32602` "A plugin refused the run: …".
pub(crate) async fn filtered(
    context: &CallContext,
    method: &'static str,
    mut request: RunRequest,
) -> Result<RunRequest, AppError> {
    let plugins = &context.agent.plugins;
    if !plugins.has_filters::<RunConfig>() {
        return Ok(request);
    }
    let asked = RunAsked {
        project: context.project()?.id,
        method,
    };
    plugins.filter::<RunConfig>(&mut request, &asked).await;
    match request.refusal.take() {
        Some(refusal) => Err(AppError::InvalidParam(format!(
            "A plugin refused the run: {refusal}"
        ))),
        None => Ok(request),
    }
}

/// The settings of a call that queues no loop (`startRun`, `run/config`, `persona/set`):
/// the model and whichever of the others it gives.
pub(crate) fn settings_only(
    model: String,
    temperature: Option<f64>,
    context_limit: Option<i64>,
    persona: Option<String>,
) -> RunRequest {
    RunRequest {
        mode: None,
        model,
        temperature,
        context_limit,
        persona,
        no_repo: false,
        no_interaction: false,
        no_web: false,
        no_proposals: false,
        refusal: None,
    }
}
