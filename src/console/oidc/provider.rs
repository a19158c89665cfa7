//! This server as a client of the OpenID Connect provider, through the `openidconnect`
//! crate: discovery, the authorization request (code flow, PKCE with SHA-256, state and
//! nonce), the code's exchange and the ID token's checks (signature by the provider's
//! published keys with an asymmetric algorithm, issuer, audience, expiry, nonce).

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType,
    CoreGenderClaim, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreProviderMetadata, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, ClaimsVerificationError, Client, ClientId, ClientSecret,
    CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields,
    IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    StandardErrorResponse, StandardTokenResponse, TokenResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Refusal;
use crate::config::{OidcClient, OidcSettings};

/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The claims of an ID token beyond the standard ones (the groups, a custom name claim).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct OtherClaims(HashMap<String, Value>);

impl AdditionalClaims for OtherClaims {}

type Tokens = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

type ProviderClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The signature algorithms an ID token may use: the provider's keys, never the client
/// secret (HMAC) and never none.
const ALGORITHMS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// The HTTP client for the provider: no redirects followed, a bounded wait.
fn http() -> Result<&'static reqwest::Client, Refusal> {
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = HTTP.get() {
        return Ok(client);
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| Refusal::Unreachable(error.to_string()))?;
    Ok(HTTP.get_or_init(|| client))
}

/// The provider as its discovery document describes it, with this server as its client.
pub(super) struct Provider {
    client: ProviderClient,
}

/// What the browser is sent to the provider with, and what its return is checked against.
pub(super) struct Authorization {
    pub url: url::Url,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who the provider says signed in.
#[derive(Debug)]
pub(super) struct Identity {
    pub issuer: String,
    pub subject: String,
    /// The value of the name claim.
    pub name: String,
    pub groups: Vec<String>,
}

impl Provider {
    /// Reads the provider's discovery document and keys.
    pub(super) async fn discover(config: &OidcClient) -> Result<Provider, Refusal> {
        let issuer = IssuerUrl::new(config.issuer.clone())
            .map_err(|error| Refusal::Unreachable(error.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, http()?)
            .await
            .map_err(|error| Refusal::Unreachable(error.to_string()))?;
        let redirect = RedirectUrl::new(config.redirect_url.clone())
            .map_err(|error| Refusal::Unreachable(error.to_string()))?;
        let client = ProviderClient::from_provider_metadata(
            metadata,
            ClientId::new(config.client_id.clone()),
            Some(ClientSecret::new(config.client_secret.expose().to_owned())),
        )
        .set_redirect_uri(redirect);
        Ok(Provider { client })
    }

    /// A new authorization request: its URL at the provider, and its state, nonce and PKCE
    /// verifier, each fresh and random.
    pub(super) fn authorize(&self) -> Authorization {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = self
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("profile".to_owned()))
            .add_scope(Scope::new("email".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        Authorization {
            url,
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        }
    }

    /// Exchanges `code` (with the PKCE verifier) for the tokens and checks the ID token
    /// against `nonce`; who it names, by the claims `settings` say.
    pub(super) async fn identify(
        &self,
        code: String,
        pkce_verifier: String,
        nonce: String,
        settings: &OidcSettings,
    ) -> Result<Identity, Refusal> {
        let tokens = self
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|error| Refusal::Unreachable(error.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier))
            .request_async(http()?)
            .await
            .map_err(|error| match error {
                RequestTokenError::ServerResponse(response) => Refusal::CodeRefused(
                    response.error().to_string(),
                    response.error_description().cloned().unwrap_or_default(),
                ),
                other => Refusal::Unreachable(other.to_string()),
            })?;
        let id_token = tokens.id_token().ok_or(Refusal::NoIdToken)?;
        let verifier = self.client.id_token_verifier().set_allowed_algs(ALGORITHMS);
        let claims = id_token
            .claims(&verifier, &Nonce::new(nonce))
            .map_err(refusal_of)?;
        let all = serde_json::to_value(claims).map_err(|_| Refusal::NoIdToken)?;
        let name = match all.get(&settings.name_claim) {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(Refusal::NoName(settings.name_claim.clone())),
        };
        let groups = match all.get(&settings.groups_claim) {
            Some(Value::Array(groups)) => groups
                .iter()
                .filter_map(|group| group.as_str().map(str::to_owned))
                .collect(),
            Some(Value::String(group)) => vec![group.clone()],
            _ => Vec::new(),
        };
        Ok(Identity {
            issuer: claims.issuer().to_string(),
            subject: claims.subject().to_string(),
            name,
            groups,
        })
    }
}

/// The refusal an ID token's failed check is.
fn refusal_of(error: ClaimsVerificationError) -> Refusal {
    match error {
        ClaimsVerificationError::Expired(_) => Refusal::TokenExpired,
        ClaimsVerificationError::InvalidAudience(_) => Refusal::TokenAudience,
        ClaimsVerificationError::InvalidIssuer(_) => Refusal::TokenIssuer,
        ClaimsVerificationError::InvalidNonce(_) => Refusal::TokenNonce,
        ClaimsVerificationError::SignatureVerification(_) => Refusal::TokenSignature,
        other => Refusal::TokenInvalid(other.to_string()),
    }
}
