//! RPC methods from plugins. A plugin's method is a [`TypedMethod`] (its name, role,
//! description and params for `discover`, typed params in and a serializable result out),
//! held by the registry as the erased [`PluginMethod`]. `rpc::dispatch` serves it like a
//! built-in method: the same role check, init gate and project right, the same RPC
//! timeout, its params decoded there (a bad one names the param, `-32602`), its
//! [`MethodError`] mapped once in `error.rs`. A built-in method of the same name wins. A
//! method that names a run finds it with [`MethodCall::run`], so an unknown run, or another
//! project's, is `-32002` as for every built-in method.

use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::access::Role;
use crate::db::ids::ProjectId;
use crate::db::models::run::RunRow;
use crate::db::queries::runs;
use crate::db::{DbError, DbHandle};
use crate::plugins::clients::Clients;

/// Why a plugin's method failed.
#[derive(Debug, thiserror::Error)]
pub enum MethodError {
    /// The params decoded but say something the method cannot do (`-32602`).
    #[error("{0}")]
    InvalidParams(String),
    /// No run of that alias in the caller's project (`-32002`, the built-in methods' wording).
    #[error("Run '{0}' not found.")]
    RunNotFound(String),
    #[error(transparent)]
    Db(#[from] DbError),
    /// Anything else (`-32603`, with this message).
    #[error("{0}")]
    Failed(String),
}

/// What a plugin's method is given beside its params.
#[derive(Clone)]
pub struct MethodCall {
    /// The connection's project, once `init` bound it (always, for a method that needs init).
    pub project: Option<ProjectId>,
    /// Who calls (`None`: the operator).
    pub person: Option<String>,
    /// The store.
    pub db: DbHandle,
    /// The clients of every project (`ui/render`, `ui/notify`).
    pub clients: Clients,
}

impl MethodCall {
    /// The run `alias` of the caller's project, read on a reader; [`MethodError::RunNotFound`]
    /// when there is none (another project's run included, and any run before `init`).
    pub async fn run(&self, alias: &str) -> Result<RunRow, MethodError> {
        let Some(project) = self.project else {
            return Err(MethodError::RunNotFound(alias.to_owned()));
        };
        let wanted = alias.to_owned();
        self.db
            .read(move |conn| runs::find_run(conn, project, &wanted))
            .await?
            .ok_or_else(|| MethodError::RunNotFound(alias.to_owned()))
    }
}

/// The params of a method that takes none: whatever was sent is ignored.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoParams;

impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(NoParams)
    }
}

/// An RPC method a plugin adds, with its own params type.
pub trait TypedMethod: Send + Sync + 'static {
    /// What its params decode into ([`NoParams`] for none).
    type Params: DeserializeOwned + Send + 'static;
    /// What it answers.
    type Output: Serialize + 'static;

    /// The wire name (`myplugin/do`).
    fn name(&self) -> &'static str;

    /// One line for `discover`.
    fn description(&self) -> &'static str;

    /// Parameter name (as on the wire) → informal type and meaning, for `discover`.
    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The least role that may call it.
    fn role(&self) -> Role {
        Role::Member
    }

    /// The connection must have called `init` (and the caller may open its project).
    fn needs_init(&self) -> bool {
        true
    }

    /// Serves one call. The future must not borrow the method.
    fn call(
        &self,
        call: MethodCall,
        params: Self::Params,
    ) -> impl Future<Output = Result<Self::Output, MethodError>> + Send + 'static;
}

/// A call under way.
pub type MethodFuture = Pin<Box<dyn Future<Output = Result<Value, MethodError>> + Send>>;

/// Params that did not decode, with the path of the offending one.
pub type ParamsError = serde_path_to_error::Error<serde_json::Error>;

/// A [`TypedMethod`] as the registry holds it.
pub trait PluginMethod: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    fn params(&self) -> &'static [(&'static str, &'static str)];
    fn role(&self) -> Role;
    fn needs_init(&self) -> bool;

    /// Decodes `params` and starts the call.
    fn call(&self, call: MethodCall, params: Value) -> Result<MethodFuture, ParamsError>;
}

impl<M: TypedMethod> PluginMethod for M {
    fn name(&self) -> &'static str {
        TypedMethod::name(self)
    }

    fn description(&self) -> &'static str {
        TypedMethod::description(self)
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        TypedMethod::params(self)
    }

    fn role(&self) -> Role {
        TypedMethod::role(self)
    }

    fn needs_init(&self) -> bool {
        TypedMethod::needs_init(self)
    }

    fn call(&self, call: MethodCall, params: Value) -> Result<MethodFuture, ParamsError> {
        let params: M::Params = serde_path_to_error::deserialize(params)?;
        let answer = TypedMethod::call(self, call, params);
        Ok(Box::pin(async move {
            let output = answer.await?;
            serde_json::to_value(output)
                .map_err(|error| MethodError::Failed(format!("cannot encode result: {error}")))
        }))
    }
}
