//! Providers' base URLs as admins set them (`provider_endpoints`, `addModel` with a
//! provider): laid over the environment's settings at start and when set. Their keys are
//! sealed in `secrets` (the server's, kind `provider`); `api_key` here only holds a key
//! stored before that, until the start seals it (`app::first_run`).

use diesel::sql_types::{Nullable, Text};
use diesel::{QueryableByName, RunQueryDsl};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One provider's stored endpoint, by its slug (`openai`, `ollama`, `openrouter`, `xai`).
#[derive(Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct EndpointRow {
    #[diesel(sql_type = Text)]
    pub provider: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub base_url: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub api_key: Option<String>,
}

/// Every stored endpoint.
pub(crate) fn all(conn: &mut Conn) -> Result<Vec<EndpointRow>, DbError> {
    Ok(statement("SELECT provider, base_url, api_key FROM provider_endpoints").load(conn)?)
}

/// Forgets `provider`'s key as stored here in plain text (once it is sealed in `secrets`).
pub(crate) fn forget_key(conn: &mut Conn, provider: &str) -> Result<(), DbError> {
    statement("UPDATE provider_endpoints SET api_key = NULL WHERE provider = ?")
        .bind::<Text, _>(provider)
        .execute(conn)?;
    Ok(())
}

/// Stores what `row` names for its provider; a `None` keeps the stored value.
pub(crate) fn set(conn: &mut Conn, row: &EndpointRow) -> Result<(), DbError> {
    statement(
        "INSERT INTO provider_endpoints (provider, base_url, api_key) VALUES (?, ?, ?)
         ON CONFLICT (provider) DO UPDATE SET
             base_url = COALESCE(excluded.base_url, provider_endpoints.base_url),
             api_key = COALESCE(excluded.api_key, provider_endpoints.api_key)",
    )
    .bind::<Text, _>(&row.provider)
    .bind::<Nullable<Text>, _>(&row.base_url)
    .bind::<Nullable<Text>, _>(&row.api_key)
    .execute(conn)?;
    Ok(())
}
