//! What a newcomer needs at start: the providers' endpoints admins set from the console laid
//! over the environment's, and the log lines saying where the console is and, when the
//! catalogue is empty, how to add a model.

use std::net::SocketAddr;

use crate::agent::AgentContext;
use crate::db::queries::{models, provider_endpoints, secrets};
use crate::llm::{ProviderEndpoint, ProviderKind};
use crate::secrets::{Binding, ExposeSecret, SecretString, PROVIDER_KEY, SERVER};

/// Lays the stored endpoints (`addModel` with a provider) over the environment's settings,
/// their keys opened from the sealed store; a key an older server stored in plain text is
/// sealed first, and its plain text forgotten in the same unit of work.
pub(super) async fn apply_endpoints(agent: &AgentContext) -> anyhow::Result<()> {
    let rows = agent.db.read(provider_endpoints::all).await?;
    for row in &rows {
        let Some(plain) = &row.api_key else {
            continue;
        };
        let binding = Binding {
            person: SERVER,
            kind: PROVIDER_KEY,
            name: &row.provider,
        };
        let sealed = agent
            .secrets
            .keyring()
            .seal(binding, &SecretString::from(plain.clone()))?;
        let provider = row.provider.clone();
        agent
            .db
            .call(move |conn| {
                secrets::put(
                    conn,
                    SERVER,
                    PROVIDER_KEY,
                    &provider,
                    &sealed.bytes,
                    &sealed.key_id,
                )?;
                provider_endpoints::forget_key(conn, &provider)
            })
            .await?;
        tracing::info!(
            provider = row.provider,
            "sealed an admin-set provider key stored in plain text"
        );
    }
    for row in rows {
        let Some(provider) = ProviderKind::from_slug(&row.provider) else {
            tracing::warn!(
                provider = row.provider,
                "a stored endpoint names no provider"
            );
            continue;
        };
        let key = agent
            .secrets
            .open(SERVER, PROVIDER_KEY, &row.provider)
            .await?;
        agent.llm.set_endpoint(&ProviderEndpoint {
            provider,
            base_url: row.base_url,
            api_key: key.map(|key| key.expose_secret().to_owned()),
        });
    }
    Ok(())
}

/// Logs the console's URL and, with no model in the catalogue, how to add one (a warning
/// when the catalogue cannot be read: the server runs all the same).
pub(super) async fn log_console(agent: &AgentContext, addr: SocketAddr) {
    let server = &agent.settings.server;
    let public = server.public_url.trim();
    let origin = if public.is_empty() {
        format!("http://{addr}")
    } else {
        public.to_owned()
    };
    let console = format!("{origin}{}/", server.console_path);
    tracing::info!("console: {console}");
    let any = agent
        .db
        .read(|conn| models::list_models(conn, Some(1), None))
        .await;
    let any = match any {
        Ok(any) => any,
        Err(error) => {
            tracing::warn!(%error, "cannot read the model catalogue");
            return;
        }
    };
    if any.is_empty() {
        tracing::info!(
            "no model is configured: add one from the console's Admin page ({console}#/admin), \
             or set RUMMY_MODEL_<alias> (with OPENAI_BASE_URL, OLLAMA_BASE_URL, \
             OPENROUTER_API_KEY or XAI_API_KEY) or [models.<alias>] in the settings file"
        );
    }
}
