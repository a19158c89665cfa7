//! Handlers, one file per method group; [`route`] only routes.

mod blocking;
mod entries;
mod loops;
mod models;
mod runs;
mod session;
mod skills;
mod tools;

use serde_json::Value;

use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::methods::Method;
use crate::rpc::params::decode;

/// Decodes the params of `method` and runs its handler.
pub async fn route(context: CallContext, method: Method, params: Value) -> Result<Reply, AppError> {
    match method {
        Method::Ping => session::ping(),
        Method::Discover => session::discover(&context),
        Method::Init => session::init(context, decode(params)?).await,
        Method::GetModels => models::list(context, decode(params)?).await,
        Method::AddModel => models::add(context, decode(params)?).await,
        Method::RemoveModel => models::remove(context, decode(params)?).await,
        Method::Get => entries::get(context, decode(params)?).await,
        Method::Store => entries::store(context, decode(params)?).await,
        Method::GetEntries => entries::list(context, decode(params)?).await,
        Method::StartRun => runs::start(context, decode(params)?).await,
        Method::GetRuns => runs::list(context, decode(params)?).await,
        Method::GetRun => runs::detail(context, decode(params)?).await,
        Method::RunConfig => runs::configure(context, decode(params)?).await,
        Method::RunRename => runs::rename(context, decode(params)?).await,
        Method::RunAbort => runs::abort(context, decode(params)?).await,
        Method::Ask | Method::Act => loops::ask_or_act(context, method, decode(params)?).await,
        Method::RunResolve => loops::resolve(context, decode(params)?).await,
        Method::RunInject => loops::inject(context, decode(params)?).await,
        Method::SkillAdd => skills::add(context, decode(params)?).await,
        Method::SkillRemove => skills::remove(context, decode(params)?).await,
        Method::GetSkills => skills::of_run(context, decode(params)?).await,
        Method::ListSkills => skills::list_skills(context).await,
        Method::PersonaSet => skills::set_persona(context, decode(params)?).await,
        Method::ListPersonas => skills::list_personas(context).await,
        Method::Tool(tool) => tools::dispatch(context, tool, decode(params)?).await,
    }
}
