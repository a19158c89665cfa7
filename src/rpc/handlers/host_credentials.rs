//! `hostCredentials/set`, `hostCredentials/list`, `hostCredentials/remove`: a person's own
//! credentials for hosts their runs' sandboxed commands reach through the egress proxy
//! (`crate::egress`): a header the proxy adds to each request to that host, sealed in the
//! store (`crate::secrets`, kind `host`, named by the host); never returned. Each change is
//! in the audit (`admin/changes`: who, when, which host and header; never the value), as is
//! each command's first use.

use http::{HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{json, Value};

use super::own_secrets::{self, detail, secret, Audit};
use crate::egress::destination::host_name;
use crate::egress::sealed_value;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::secrets::{ExposeSecret, SecretString, HOST_CREDENTIAL};

/// The longest value taken.
const VALUE_MAX_CHARS: usize = 4096;
/// Headers the proxy sets or strips itself, which a credential may not name.
const RESERVED: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "proxy-connection",
];

/// `hostCredentials/set` params.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetParams {
    host: String,
    header: String,
    #[serde(deserialize_with = "secret")]
    value: SecretString,
}

impl std::fmt::Debug for SetParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SetParams({}, {}: <the value>)", self.host, self.header)
    }
}

/// `hostCredentials/remove` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveParams {
    host: String,
}

/// The calling person: host credentials are a person's own; the operator's runs have none.
fn person(context: &CallContext) -> Result<String, AppError> {
    own_secrets::person(
        context,
        "host credentials belong to a person of the users file; the operator's runs' \
         commands reach hosts without one",
    )
}

/// The host `text` names (one name, no port or wildcard), lower case.
fn host(text: &str) -> Result<String, AppError> {
    host_name(text).ok_or_else(|| {
        AppError::InvalidParam(format!(
            "host: one host name, without port or wildcard (got {text:?})"
        ))
    })
}

/// `hostCredentials/set`: seals and stores the caller's credential for a host, replacing
/// theirs.
pub(crate) async fn set(context: CallContext, params: SetParams) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let host = host(&params.host)?;
    let header = HeaderName::from_bytes(params.header.as_bytes())
        .ok()
        .filter(|name| !RESERVED.contains(&name.as_str()))
        .ok_or_else(|| {
            AppError::InvalidParam(format!(
                "header: a header name the proxy does not set itself (got {:?})",
                params.header
            ))
        })?;
    let value = params.value.expose_secret();
    if value.is_empty()
        || value.chars().count() > VALUE_MAX_CHARS
        || HeaderValue::from_str(value).is_err()
    {
        return Err(AppError::InvalidParam(format!(
            "value: 1 to {VALUE_MAX_CHARS} visible characters of a header value"
        )));
    }
    let sealed_text = SecretString::from(sealed_value(&header, value));
    let mut audited = detail("host", &host);
    audited.insert("header".into(), Value::String(header.as_str().to_owned()));
    let audit = Audit {
        action: "hostCredentials/set",
        detail: audited,
    };
    own_secrets::store(
        &context,
        &person,
        (HOST_CREDENTIAL, &host),
        &sealed_text,
        audit,
    )
    .await?;
    Reply::of(json!({ "host": host }))
}

/// `hostCredentials/list`: which hosts the caller has a credential for, when set and last
/// used.
pub(crate) async fn list(
    context: CallContext,
    _params: crate::rpc::params::NoParams,
) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let credentials = own_secrets::listed(&context, &person, HOST_CREDENTIAL, "host").await?;
    Reply::of(json!({ "credentials": credentials }))
}

/// `hostCredentials/remove`: forgets the caller's credential for a host; whether there was
/// one.
pub(crate) async fn remove(context: CallContext, params: RemoveParams) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let host = host(&params.host)?;
    let audit = Audit {
        action: "hostCredentials/remove",
        detail: detail("host", &host),
    };
    let removed = own_secrets::forget(&context, &person, (HOST_CREDENTIAL, &host), audit).await?;
    Reply::of(json!({"host": host, "removed": removed}))
}
