//! Console sign-in through an OpenID Connect provider (`[oidc]`, docs/src/team-sign-in.md):
//! `<path>/oidc/start` sends the browser to the provider (authorization code flow with PKCE,
//! a fresh state and nonce kept in the store for ten minutes, and a cookie that binds them to
//! this browser); `<path>/oidc/callback` takes them back once (a replayed state finds
//! nothing, on any instance), exchanges the code, checks the ID token ([`provider`]) and
//! opens a console session for the person it names.
//!
//! A session knows its person as any console session does (`console_sessions.person`,
//! `signed_in_with = 'oidc'`): on each look ([`resume`]) the person is the users file's one of
//! that name, else the one the groups the provider last gave them make (`oidc_people`,
//! `Access::signed_in`); someone none of whose groups is mapped is told to ask an admin,
//! forgotten, and their console sessions end.

mod page;
mod provider;

use actix_web::cookie::{time::Duration as CookieAge, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::audit::{self, Via};
use super::session;
use crate::access::{hash_token, valid_name};
use crate::db::queries::oidc::{self, PendingLogin, SignedInPerson};
use crate::random::random_hex;
use crate::unix_time::now;
use crate::ws::state::ServerState;
use provider::{Identity, Provider};

/// Seconds a sign-in sent to the provider may take to come back.
const LOGIN_SECS: i64 = 600;
/// The cookie that binds a sign-in to the browser that began it.
const BROWSER_COOKIE: &str = "rummy_oidc";

/// Why a sign-in through the provider is refused: each says what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    #[error("The identity provider could not be reached or answered wrongly ({0}); try again later, or tell an admin.")]
    Unreachable(String),
    #[error("The identity provider did not sign you in: {0}.")]
    ProviderSaid(String),
    #[error("This sign-in link is not one this server began, or it was used already: start again from the sign-in page.")]
    UnknownState,
    #[error("This sign-in took longer than ten minutes: start again from the sign-in page.")]
    LoginExpired,
    #[error("This sign-in was begun in another browser (or its cookie was lost): start again from the sign-in page.")]
    OtherBrowser,
    #[error("The identity provider refused the sign-in code ({0}{1}); a code signs in once only: start again from the sign-in page.")]
    CodeRefused(String, String),
    #[error("The identity provider sent no ID token.")]
    NoIdToken,
    #[error("The identity provider's ID token has expired: refused (check this server's clock, and start again).")]
    TokenExpired,
    #[error(
        "The ID token's signature does not verify with the identity provider's keys: refused."
    )]
    TokenSignature,
    #[error("The ID token was issued for another client than this server: refused.")]
    TokenAudience,
    #[error(
        "The ID token comes from another issuer than this server's identity provider: refused."
    )]
    TokenIssuer,
    #[error("The ID token belongs to another sign-in (its nonce differs): refused.")]
    TokenNonce,
    #[error("The ID token is not valid ({0}): refused.")]
    TokenInvalid(String),
    #[error("The ID token has no '{0}' claim to name you by: ask an admin.")]
    NoName(String),
    #[error("The identity provider names you {0:?}, which is not a name this server takes (1–64 letters, digits or ._@-): ask an admin.")]
    BadName(String),
    #[error("The name '{0}' belongs to another account of the identity provider: ask an admin.")]
    NameTaken(String),
    #[error("You are signed in at the identity provider as {0}, but none of your groups gives you access to this server: ask an admin to add you to one.")]
    NoGroup(String),
    #[error("The session store cannot be reached; try again.")]
    Store,
}

impl Refusal {
    /// Its fixed name, by which the audit counts refusals alike ([`super::refusals`]).
    fn kind(&self) -> &'static str {
        match self {
            Refusal::Unreachable(_) => "unreachable",
            Refusal::ProviderSaid(_) => "provider-said",
            Refusal::UnknownState => "unknown-state",
            Refusal::LoginExpired => "login-expired",
            Refusal::OtherBrowser => "other-browser",
            Refusal::CodeRefused(..) => "code-refused",
            Refusal::NoIdToken => "no-id-token",
            Refusal::TokenExpired => "token-expired",
            Refusal::TokenSignature => "token-signature",
            Refusal::TokenAudience => "token-audience",
            Refusal::TokenIssuer => "token-issuer",
            Refusal::TokenNonce => "token-nonce",
            Refusal::TokenInvalid(_) => "token-invalid",
            Refusal::NoName(_) => "no-name",
            Refusal::BadName(_) => "bad-name",
            Refusal::NameTaken(_) => "name-taken",
            Refusal::NoGroup(_) => "no-group",
            Refusal::Store => "store",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Refusal::Unreachable(_) | Refusal::Store => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::NoGroup(_) | Refusal::NameTaken(_) => StatusCode::FORBIDDEN,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// Takes everyone the store knows signed in through the provider into `access`, at start
/// (nothing without a provider).
pub(crate) async fn recall(state: &ServerState) -> Result<(), crate::db::DbError> {
    if state.agent.settings.oidc.client.is_none() {
        return Ok(());
    }
    let people = state.agent.db.read(oidc::people).await?;
    for person in people {
        state
            .access
            .signed_in(&person.name, Some(&person.group_list()));
    }
    Ok(())
}

/// The cookie binding a sign-in to this browser: sent back on the provider's redirect
/// (`SameSite=Lax`), only to the callback's path.
fn browser_cookie(
    request: &HttpRequest,
    state: &ServerState,
    value: String,
    max_age: i64,
) -> Cookie<'static> {
    Cookie::build(BROWSER_COOKIE, value)
        .path(format!("{}/oidc", state.agent.settings.server.console_path))
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(session::reached_over_tls(request, state))
        .max_age(CookieAge::seconds(max_age))
        .finish()
}

/// `GET <path>/oidc/start`: to the provider, with a new state, nonce and PKCE challenge.
pub(super) async fn start(request: HttpRequest, state: web::Data<ServerState>) -> HttpResponse {
    let Some(client) = state.agent.settings.oidc.client.clone() else {
        return HttpResponse::NotFound().finish();
    };
    let path = &state.agent.settings.server.console_path;
    let provider = match Provider::discover(&client).await {
        Ok(provider) => provider,
        Err(refusal) => return page::refused(path, &refusal),
    };
    let authorization = provider.authorize();
    let Ok(browser) = random_hex(32) else {
        return page::refused(path, &Refusal::Store);
    };
    let now = now();
    let login = PendingLogin {
        browser_hash: hash_token(&browser),
        nonce: authorization.nonce,
        pkce_verifier: authorization.pkce_verifier,
        expires_at: now + LOGIN_SECS,
    };
    let state_hash = hash_token(&authorization.state);
    let stored = state
        .agent
        .db
        .call(move |conn| oidc::begin(conn, &state_hash, &login, now))
        .await;
    if let Err(error) = stored {
        tracing::warn!(%error, "an OpenID Connect sign-in could not be stored");
        return page::refused(path, &Refusal::Store);
    }
    HttpResponse::SeeOther()
        .cookie(browser_cookie(&request, &state, browser, LOGIN_SECS))
        .insert_header((header::LOCATION, authorization.url.to_string()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// The provider's redirect back.
#[derive(Debug, Deserialize)]
pub(super) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET <path>/oidc/callback`: the provider's answer; a session, or a page saying why not.
pub(super) async fn callback(
    request: HttpRequest,
    state: web::Data<ServerState>,
    query: web::Query<Callback>,
) -> HttpResponse {
    let path = state.agent.settings.server.console_path.clone();
    let from = audit::from(&request, &state);
    let outcome = signed_in(&request, &state, query.into_inner()).await;
    let (person, refusal) = match outcome {
        Ok(person) => {
            let opened = session::open(&state, Some(person), String::new(), Via::Oidc, from).await;
            return match opened {
                Ok((id, lifetime)) => HttpResponse::SeeOther()
                    .cookie(session::cookie(&request, &state, id, lifetime))
                    .cookie(browser_cookie(&request, &state, String::new(), 0))
                    .insert_header((header::LOCATION, format!("{path}/")))
                    .insert_header((header::CACHE_CONTROL, "no-store"))
                    .finish(),
                Err(response) => response,
            };
        }
        Err(refused) => refused,
    };
    audit::refused(
        &state,
        person,
        Via::Oidc,
        refusal.kind(),
        from,
        refusal.to_string(),
    )
    .await;
    page::refused(&path, &refusal)
}

/// Who the provider's answer signs in, or why no one (with the name it gave, when it did).
async fn signed_in(
    request: &HttpRequest,
    state: &ServerState,
    answer: Callback,
) -> Result<String, (Option<String>, Refusal)> {
    let anonymous = |refusal| (None, refusal);
    let settings = &state.agent.settings.oidc;
    let client = settings
        .client
        .as_ref()
        .ok_or_else(|| anonymous(Refusal::UnknownState))?;
    let state_hash = hash_token(answer.state.as_deref().unwrap_or_default());
    let login = state
        .agent
        .db
        .call(move |conn| oidc::take(conn, &state_hash))
        .await
        .map_err(|_| anonymous(Refusal::Store))?
        .ok_or_else(|| anonymous(Refusal::UnknownState))?;
    if login.expires_at <= now() {
        return Err(anonymous(Refusal::LoginExpired));
    }
    let browser = request
        .cookie(BROWSER_COOKIE)
        .map(|cookie| hash_token(cookie.value()));
    if browser.as_deref() != Some(login.browser_hash.as_str()) {
        return Err(anonymous(Refusal::OtherBrowser));
    }
    if let Some(error) = answer.error {
        let said = match answer.error_description {
            Some(description) => format!("{error}: {description}"),
            None => error,
        };
        return Err(anonymous(Refusal::ProviderSaid(said)));
    }
    let code = answer
        .code
        .ok_or_else(|| anonymous(Refusal::ProviderSaid("no code".into())))?;
    let provider = Provider::discover(client).await.map_err(anonymous)?;
    let identity = provider
        .identify(code, login.pkce_verifier, login.nonce, settings)
        .await
        .map_err(anonymous)?;
    admit(state, identity).await
}

/// Notes `identity` in the store and takes them in: their name, or why not.
async fn admit(
    state: &ServerState,
    identity: Identity,
) -> Result<String, (Option<String>, Refusal)> {
    let Identity {
        issuer,
        subject,
        name,
        groups,
    } = identity;
    if !valid_name(&name) {
        return Err((None, Refusal::BadName(name)));
    }
    let refused = |refusal| (Some(name.clone()), refusal);
    let person = SignedInPerson {
        name: name.clone(),
        issuer,
        subject,
        groups: serde_json::to_string(&groups).map_err(|_| refused(Refusal::Store))?,
    };
    let now = now();
    let known = state
        .agent
        .db
        .call(move |conn| oidc::signed_in(conn, &person, now))
        .await
        .map_err(|_| refused(Refusal::Store))?;
    if !known {
        return Err(refused(Refusal::NameTaken(name.clone())));
    }
    if state.access.signed_in(&name, Some(&groups)).is_some() {
        return Ok(name);
    }
    let forgotten = name.clone();
    state
        .agent
        .db
        .call(move |conn| oidc::forget(conn, &forgotten))
        .await
        .map_err(|_| refused(Refusal::Store))?;
    Err(refused(Refusal::NoGroup(name.clone())))
}
