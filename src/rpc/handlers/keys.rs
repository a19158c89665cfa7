//! `keys/set`, `keys/list`, `keys/remove`: a person's own provider keys, sealed in the store
//! (`crate::secrets`, kind `provider`, named by the provider's slug), carried by the model
//! calls of the runs they start (`llm::paying`); never returned. `keys/required`: whether the
//! bound project requires them (admins set it). Each change is in the audit
//! (`admin/changes`: who, when, which provider; never the key), as is each use. A key set or
//! a requirement set is noted before it is written (`llm::personal_keys`): until then a
//! call's admission reads none.

use serde::Deserialize;
use serde_json::json;

use super::admin_changes::record;
use super::own_secrets::{self, detail, secret, Audit};
use crate::access::Role;
use crate::db::queries::key_policy;
use crate::error::AppError;
use crate::llm::ProviderKind;
use crate::rpc::call::{CallContext, Reply};
use crate::secrets::{SecretString, PROVIDER_KEY};

/// The longest key taken.
const KEY_MAX_CHARS: usize = 4096;

/// `keys/set` params.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetParams {
    provider: String,
    #[serde(deserialize_with = "secret")]
    key: SecretString,
}

impl std::fmt::Debug for SetParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SetParams({}, <the key>)", self.provider)
    }
}

/// `keys/remove` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveParams {
    provider: String,
}

/// `keys/required` params: none to read; `required` to set (admins).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequiredParams {
    #[serde(default)]
    required: Option<bool>,
}

/// The calling person: keys are a person's own, the operator has the server's.
fn person(context: &CallContext) -> Result<String, AppError> {
    own_secrets::person(
        context,
        "personal keys belong to a person of the users file; the operator's runs use the \
         server's keys",
    )
}

/// The provider `slug` names, when it takes a key.
fn keyed_provider(slug: &str) -> Result<ProviderKind, AppError> {
    match ProviderKind::from_slug(slug) {
        Some(ProviderKind::Ollama) => Err(AppError::InvalidParam(
            "provider: ollama takes no key".into(),
        )),
        Some(provider) => Ok(provider),
        None => Err(AppError::InvalidParam(format!(
            "provider: one of openai, openrouter, xai (got {slug:?})"
        ))),
    }
}

/// `keys/set`: seals and stores the caller's key for a provider, replacing theirs.
pub(crate) async fn set(context: CallContext, params: SetParams) -> Result<Reply, AppError> {
    use crate::secrets::ExposeSecret;
    let person = person(&context)?;
    let provider = keyed_provider(&params.provider)?;
    let key = params.key.expose_secret();
    if key.is_empty()
        || key.chars().count() > KEY_MAX_CHARS
        || key.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(AppError::InvalidParam(format!(
            "key: 1 to {KEY_MAX_CHARS} characters, no spaces or control characters"
        )));
    }
    let slug = provider.slug();
    context.agent.llm.spending().personal_keys().note();
    let audit = Audit {
        action: "keys/set",
        detail: detail("provider", slug),
    };
    own_secrets::store(&context, &person, (PROVIDER_KEY, slug), &params.key, audit).await?;
    Reply::of(json!({"provider": slug}))
}

/// `keys/list`: which providers the caller has a key for, when set and last used.
pub(crate) async fn list(
    context: CallContext,
    _params: crate::rpc::params::NoParams,
) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let keys = own_secrets::listed(&context, &person, PROVIDER_KEY, "provider").await?;
    Reply::of(json!({ "keys": keys }))
}

/// `keys/remove`: forgets the caller's key for a provider; whether there was one.
pub(crate) async fn remove(context: CallContext, params: RemoveParams) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let slug = keyed_provider(&params.provider)?.slug();
    let audit = Audit {
        action: "keys/remove",
        detail: detail("provider", slug),
    };
    let removed = own_secrets::forget(&context, &person, (PROVIDER_KEY, slug), audit).await?;
    Reply::of(json!({"provider": slug, "removed": removed}))
}

/// `keys/required`: whether the bound project requires people's own keys; admins set it.
pub(crate) async fn required(
    context: CallContext,
    params: RequiredParams,
) -> Result<Reply, AppError> {
    let project = context.project()?.clone();
    let id = project.id;
    let required = match params.required {
        Some(required) => {
            context.grant()?.require(Role::Admin, "keys/required")?;
            let by = context.person();
            if required {
                context.agent.llm.spending().personal_keys().note();
            }
            context
                .agent
                .db
                .call(move |conn| {
                    key_policy::set_required(conn, id, required)?;
                    let detail = json!({"required": required});
                    record(conn, by.as_deref(), "keys/required", &project.name, &detail)?;
                    Ok(required)
                })
                .await?
        }
        None => {
            context
                .agent
                .db
                .read(move |conn| key_policy::required(conn, id))
                .await?
        }
    };
    Reply::of(json!({ "required": required }))
}
