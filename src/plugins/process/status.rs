//! `plugins/status`: how each plugin process is (running, restarting after failures,
//! disabled, or stopped), for any client.

use std::sync::Arc;

use serde::Serialize;

use super::link::{Health, Link};
use super::protocol::Manifest;
use crate::access::Role;
use crate::plugins::method::{MethodCall, MethodError, NoParams, TypedMethod};

/// What `plugins/status` reads of one plugin process.
pub(super) struct Status {
    pub(super) name: &'static str,
    pub(super) link: Option<Arc<Link>>,
    pub(super) manifest: Result<Manifest, String>,
}

/// `plugins/status`.
pub(super) struct StatusMethod(pub(super) Arc<Vec<Status>>);

/// One plugin process as `plugins/status` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatusView {
    name: &'static str,
    /// `running`, `restarting`, `disabled`, or `stopped` (never started: disabled by
    /// configuration, or its handshake failed; or stopped with the server).
    state: &'static str,
    /// What it calls itself and its version, from its handshake.
    plugin: Option<String>,
    version: Option<String>,
    failures: u32,
    restarts: u32,
    error: Option<String>,
}

impl TypedMethod for StatusMethod {
    type Params = NoParams;
    type Output = Vec<StatusView>;

    fn name(&self) -> &'static str {
        "plugins/status"
    }

    fn description(&self) -> &'static str {
        "The plugin processes: whether each runs, restarts after failures or is disabled."
    }

    fn role(&self) -> Role {
        Role::Viewer
    }

    fn needs_init(&self) -> bool {
        false
    }

    fn call(
        &self,
        _call: MethodCall,
        _params: NoParams,
    ) -> impl std::future::Future<Output = Result<Vec<StatusView>, MethodError>> + Send + 'static
    {
        let views = self.0.iter().map(Status::view).collect();
        async move { Ok(views) }
    }
}

impl Status {
    /// How it is now.
    pub(super) fn view(&self) -> StatusView {
        let (state, failures, restarts, error) = match (&self.link, &self.manifest) {
            (Some(link), Ok(_)) => {
                let (health, failures, restarts, error) = link.health();
                let state = match health {
                    Health::Running => "running",
                    Health::Restarting => "restarting",
                    Health::Disabled => "disabled",
                    Health::Stopped => "stopped",
                };
                (state, failures, restarts, error)
            }
            (_, Err(error)) => ("stopped", 0, 0, Some(error.clone())),
            (None, Ok(_)) => ("stopped", 0, 0, None),
        };
        let manifest = self.manifest.as_ref().ok();
        StatusView {
            name: self.name,
            state,
            plugin: manifest.map(|manifest| manifest.name.clone()),
            version: manifest.map(|manifest| manifest.version.clone()),
            failures,
            restarts,
            error,
        }
    }
}
