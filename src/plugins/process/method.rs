//! A plugin process's RPC methods: erased `PluginMethod`s (its params are its own JSON),
//! served behind the same role check, init gate and RPC timeout as the built-in methods,
//! each a `method/call` request; refused on a connection bound to a project the plugin does
//! not serve.

use std::sync::Arc;

use serde_json::Value;

use super::protocol::{MethodDecl, MethodRequest, METHOD_CALL};
use super::reach::Reach;
use super::running::CallError;
use crate::access::Role;
use crate::plugins::method::{MethodCall, MethodError, MethodFuture, ParamsError, PluginMethod};

/// An RPC method of a plugin process.
pub(super) struct ProcessMethod {
    pub reach: Arc<Reach>,
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub role: Role,
}

impl ProcessMethod {
    pub(super) fn new(reach: Arc<Reach>, declared: MethodDecl) -> ProcessMethod {
        let params: Vec<(&'static str, &'static str)> = declared
            .params
            .into_iter()
            .map(|(name, meaning)| (&*name.leak(), &*meaning.leak()))
            .collect();
        ProcessMethod {
            reach,
            name: declared.name.leak(),
            description: declared.description.leak(),
            params: params.leak(),
            role: declared.role,
        }
    }
}

impl PluginMethod for ProcessMethod {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        self.params
    }

    fn role(&self) -> Role {
        self.role
    }

    fn needs_init(&self) -> bool {
        true
    }

    fn call(&self, call: MethodCall, params: Value) -> Result<MethodFuture, ParamsError> {
        let reach = Arc::clone(&self.reach);
        let method = self.name;
        Ok(Box::pin(async move {
            let place = call
                .project
                .filter(|project| reach.project(*project))
                .and_then(|project| reach.project_place(project));
            let Some(place) = place else {
                return Err(MethodError::Failed(format!(
                    "plugin {} does not serve this project",
                    reach.link.name()
                )));
            };
            let request = MethodRequest {
                method,
                params,
                place: &place,
                person: call.person.as_deref(),
            };
            let params = serde_json::to_value(request)
                .map_err(|error| MethodError::Failed(error.to_string()))?;
            reach
                .link
                .call(METHOD_CALL, params)
                .await
                .map_err(|error| match error {
                    CallError::Answered {
                        code: -32602,
                        message,
                    } => MethodError::InvalidParams(message),
                    error => MethodError::Failed(error.to_string()),
                })
        }))
    }
}
