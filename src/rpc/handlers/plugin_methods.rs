//! The methods plugins add: the registry's method, given the caller's project and person,
//! the store and the clients, its params decoded like any method's.

use serde_json::Value;

use crate::error::AppError;
use crate::plugins::method::MethodCall;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params;

/// Serves a call of the plugin method `name`.
pub(crate) async fn call(
    context: CallContext,
    name: &str,
    params: Value,
) -> Result<Reply, AppError> {
    let method = context
        .agent
        .plugins
        .method(name)
        .ok_or_else(|| AppError::MethodNotFound(name.to_owned()))?;
    let call = MethodCall {
        project: context.project.as_ref().map(|project| project.id),
        person: context.person(),
        db: context.agent.db.clone(),
        clients: context.agent.plugins.clients().clone(),
    };
    let answer = method.call(call, params).map_err(params::invalid)?;
    Ok(Reply {
        result: answer.await?,
        bind: None,
    })
}
