//! `plugins/restart {name}` (admin): a plugin process started afresh without restarting
//! rummy, enabled again when repeated failures disabled it. The process running is shut
//! down first (its whole tree gone); the answer is the plugin's state after the new
//! handshake, as `plugins/status` shows it. A plugin that never started with rummy (the
//! configuration disables it, or its first handshake failed) registered nothing, so it
//! cannot be restarted.

use std::sync::Arc;

use serde::Deserialize;

use super::status::{Status, StatusView};
use crate::access::Role;
use crate::plugins::method::{MethodCall, MethodError, TypedMethod};

/// `plugins/restart`.
pub(super) struct RestartMethod(pub(super) Arc<Vec<Status>>);

/// Its params.
#[derive(Debug, Deserialize)]
pub(super) struct RestartParams {
    /// The plugin's configured name.
    name: String,
}

impl TypedMethod for RestartMethod {
    type Params = RestartParams;
    type Output = StatusView;

    fn name(&self) -> &'static str {
        "plugins/restart"
    }

    fn description(&self) -> &'static str {
        "Starts a plugin process afresh, enabling it again when failures disabled it."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[("name", "string: the plugin's configured name")]
    }

    fn role(&self) -> Role {
        Role::Admin
    }

    fn needs_init(&self) -> bool {
        false
    }

    fn call(
        &self,
        _call: MethodCall,
        params: RestartParams,
    ) -> impl std::future::Future<Output = Result<StatusView, MethodError>> + Send + 'static {
        let statuses = Arc::clone(&self.0);
        async move {
            let status = statuses
                .iter()
                .find(|status| status.name == params.name)
                .ok_or_else(|| {
                    MethodError::InvalidParams(format!("no plugin process named {}", params.name))
                })?;
            let link = match (&status.link, &status.manifest) {
                (Some(link), Ok(_)) => Arc::clone(link),
                _ => {
                    return Err(MethodError::InvalidParams(format!(
                        "plugin {} did not start with rummy, so it added nothing to restart",
                        params.name
                    )))
                }
            };
            if let Err(error) = link.restart().await {
                tracing::warn!(plugin = status.name, %error, "a plugin restarted by an admin did not start");
            }
            Ok(status.view())
        }
    }
}
