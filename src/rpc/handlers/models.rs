//! `getModels`, `addModel`, `removeModel`. An `addModel` naming a provider may set its base
//! URL and API key too (stored, and in effect for the calls after it); no answer carries a
//! key, only whether one is set. Each `addModel` (a price set or changed with it) is in the
//! audit of admins' changes (`admin/changes`) with who made it, the key only as whether one
//! was given.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::Secret;
use crate::db::models::ModelInsertForm;
use crate::db::queries::models;
use crate::db::queries::provider_endpoints::{self, EndpointRow};
use crate::db::queries::secrets;
use crate::error::AppError;
use crate::llm::{ProviderEndpoint, ProviderKind, Route};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::admin_changes::record;
use crate::rpc::params::{Page, Required};
use crate::secrets::{PROVIDER_KEY, SERVER};
use crate::usage::Price;

#[derive(Serialize)]
struct ModelView {
    alias: String,
    actual: String,
    /// The provider's slug (`openai`, `ollama`, `openrouter`, `xai`).
    provider: &'static str,
    /// Whether calls to its provider carry an API key.
    #[serde(rename = "keySet")]
    key_set: bool,
    context_length: Option<i32>,
    price: PriceView,
}

/// A model's price as `getModels` shows it: US dollars per million tokens, each field
/// spelt as `addModel` takes it ([`PriceParams`]).
#[derive(Serialize)]
struct PriceView {
    input: f64,
    cached_input: f64,
    output: f64,
}

impl PriceView {
    fn of(price: Price) -> PriceView {
        PriceView {
            input: price.input.dollars(),
            cached_input: price.cached_input.dollars(),
            output: price.output.dollars(),
        }
    }
}

/// `addModel`'s `price`: US dollars per million tokens, spelt as `getModels` shows it
/// ([`PriceView`]), as the settings' `[models.<alias>.price]` and every key of `caps`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceParams {
    input: f64,
    /// The input price when not given.
    #[serde(default)]
    cached_input: Option<f64>,
    output: f64,
}

/// `getModels`: the catalogue, by alias.
pub(crate) async fn list(context: CallContext, page: Page) -> Result<Reply, AppError> {
    let rows = context
        .agent
        .db
        .read(move |conn| {
            models::list_models(conn, page.limit.map(i64::from), page.offset.map(i64::from))
        })
        .await?;
    let views: Vec<ModelView> = rows
        .into_iter()
        .map(|row| {
            let provider = Route::from_actual(&row.actual).provider;
            ModelView {
                provider: provider.slug(),
                key_set: context.agent.llm.key_set(provider),
                price: PriceView::of(row.price()),
                alias: row.alias,
                actual: row.actual,
                context_length: row.context_length,
            }
        })
        .collect();
    Reply::of(views)
}

/// `addModel` params (`Debug` shows no key).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AddModelParams {
    alias: Required,
    actual: Required,
    #[serde(default)]
    context_length: Option<u32>,
    /// None keeps the stored price (zero for a new model).
    #[serde(default)]
    price: Option<PriceParams>,
    /// With it, `actual` is the model's name in the provider's terms (the provider's prefix
    /// is added).
    #[serde(default)]
    provider: Option<String>,
    /// The provider's base URL (with `provider`).
    #[serde(default)]
    base_url: Option<String>,
    /// The provider's API key (with `provider`); never answered back nor shown by `Debug`.
    #[serde(default)]
    api_key: Option<Secret>,
}

/// The provider, base URL and key `params` name, checked; the actual string they make.
fn endpoint_of(params: &AddModelParams) -> Result<(String, Option<ProviderEndpoint>), AppError> {
    let Some(slug) = params.provider.as_deref() else {
        if params.base_url.is_some() || params.api_key.is_some() {
            return Err(AppError::InvalidParam(
                "baseUrl and apiKey are a provider's: name the provider".into(),
            ));
        }
        return Ok((params.actual.0.clone(), None));
    };
    let provider = ProviderKind::from_slug(slug).ok_or_else(|| {
        AppError::InvalidParam(format!(
            "unknown provider '{slug}': openai (OpenAI-compatible), ollama, openrouter or xai"
        ))
    })?;
    let base_url = params
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(checked_url)
        .transpose()?;
    let api_key = params
        .api_key
        .as_ref()
        .map(|key| key.expose().trim())
        .filter(|key| !key.is_empty())
        .map(str::to_owned);
    if provider == ProviderKind::Ollama && api_key.is_some() {
        return Err(AppError::InvalidParam("Ollama takes no API key".into()));
    }
    let actual = format!("{}{}", provider.prefix(), params.actual.0);
    let endpoint = (base_url.is_some() || api_key.is_some()).then_some(ProviderEndpoint {
        provider,
        base_url,
        api_key,
    });
    Ok((actual, endpoint))
}

/// `url` when it is an http or https URL with a host and no user or password in it.
fn checked_url(url: &str) -> Result<String, AppError> {
    let bad = |why: &str| AppError::InvalidParam(format!("baseUrl: {why}"));
    let parsed = url::Url::parse(url).map_err(|error| bad(&format!("not a URL ({error})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(bad("not an http or https URL"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("no user or password in it (the key goes in apiKey)"));
    }
    Ok(url.to_owned())
}

#[derive(Serialize)]
struct AddModelResult {
    id: i64,
    alias: String,
}

/// `addModel`: insert or update an alias; the context length is kept when not given.
pub(crate) async fn add(context: CallContext, params: AddModelParams) -> Result<Reply, AppError> {
    if params.alias.chars().any(char::is_whitespace) {
        return Err(AppError::InvalidParam(
            "alias must not contain whitespace".into(),
        ));
    }
    let (actual, endpoint) = endpoint_of(&params)?;
    let price = params
        .price
        .map(|price| Price::from_dollars(price.input, price.cached_input, price.output))
        .transpose()
        .map_err(|error| AppError::InvalidParam(format!("price: {error}")))?;
    let context_length = params
        .context_length
        .map(|length| i32::try_from(length).unwrap_or(i32::MAX));
    let stored = endpoint.as_ref().map(|endpoint| EndpointRow {
        provider: endpoint.provider.slug().to_owned(),
        base_url: endpoint.base_url.clone(),
        api_key: None,
    });
    let sealed_key = endpoint
        .as_ref()
        .and_then(|endpoint| endpoint.sealed_key(context.agent.secrets.keyring()))
        .transpose()
        .map_err(|error| AppError::Internal(error.to_string()))?;
    let by = context.person();
    let mut detail = json!({
        "actual": actual,
        "contextLength": context_length,
        "price": price.map(PriceView::of),
    });
    if let Some(endpoint) = &endpoint {
        detail["provider"] = json!(endpoint.provider.slug());
        detail["keySet"] = json!(endpoint.api_key.is_some());
    }
    let row = context
        .agent
        .db
        .call(move |conn| {
            if let Some(stored) = &stored {
                provider_endpoints::set(conn, stored)?;
                if let Some(sealed) = &sealed_key {
                    secrets::put(
                        conn,
                        SERVER,
                        PROVIDER_KEY,
                        &stored.provider,
                        &sealed.bytes,
                        &sealed.key_id,
                    )?;
                }
            }
            let row = models::upsert_model(
                conn,
                &ModelInsertForm {
                    alias: params.alias.0,
                    actual,
                    context_length,
                    price,
                },
            )?;
            record(conn, by.as_deref(), "addModel", &row.alias, &detail)?;
            Ok(row)
        })
        .await?;
    if let Some(endpoint) = &endpoint {
        context.agent.llm.set_endpoint(endpoint);
    }
    Reply::of(AddModelResult {
        id: row.id.0,
        alias: row.alias,
    })
}

/// `removeModel` params.
#[derive(Debug, Deserialize)]
pub(crate) struct RemoveModelParams {
    alias: Required,
}

/// `removeModel`: ok whether or not the alias existed; a removal is audited.
pub(crate) async fn remove(
    context: CallContext,
    params: RemoveModelParams,
) -> Result<Reply, AppError> {
    let by = context.person();
    context
        .agent
        .db
        .call(move |conn| {
            if models::remove_model(conn, &params.alias)? {
                record(
                    conn,
                    by.as_deref(),
                    "removeModel",
                    &params.alias,
                    &json!({}),
                )?;
            }
            Ok(())
        })
        .await?;
    Reply::of(json!({"status": "ok"}))
}
