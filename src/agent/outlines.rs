//! Outlines of the source files the model reads at summary fidelity, made when first
//! needed rather than by the scan: a project of thirty thousand files costs a new run its
//! hashing, not thirty thousand parses. A scan drops the outline of a new or changed file;
//! before a turn's packet is assembled, each source file at summary fidelity without one
//! is outlined off the async executor and gets its `symbols` attribute (empty when it has
//! none, so it is not parsed again), which the packet then shows.

use std::time::Duration;

use crate::agent::error::LoopError;
use crate::agent::AgentContext;
use crate::config::Settings;
use crate::db::ids::RunId;
use crate::db::queries::entries;
use crate::project::outline::{outline, Grammar, OutlineLimits};

/// How the settings bound one outline: the largest text parsed, and its time.
pub(crate) fn outline_limits(settings: &Settings) -> OutlineLimits {
    OutlineLimits {
        max_bytes: settings.scan.outline_max_bytes,
        timeout: Duration::from_millis(settings.scan.outline_timeout_ms),
    }
}

/// A file to outline, and what it became.
struct Outlined {
    path: String,
    /// The content hash the outline was made from.
    hash: Option<String>,
    symbols: String,
}

/// Outlines the run's source files at summary fidelity that have no outline yet.
pub(crate) async fn outline_summarized_files(
    agent: &AgentContext,
    run: RunId,
) -> Result<(), LoopError> {
    let pending = agent
        .db
        .read(move |conn| {
            entries::unoutlined_summaries(conn, run, |path| Grammar::for_path(path).is_some())
        })
        .await?;
    if pending.is_empty() {
        return Ok(());
    }
    let limits = outline_limits(&agent.settings);
    let outlining = actix_web::rt::task::spawn_blocking(move || {
        pending
            .into_iter()
            .map(|entry| {
                let symbols = outline(&entry.path, &entry.body, &limits).unwrap_or_else(|error| {
                    tracing::warn!(run = %run, path = entry.path, %error, "no outline");
                    None
                });
                Outlined {
                    path: entry.path,
                    hash: entry.hash,
                    symbols: symbols.unwrap_or_default(),
                }
            })
            .collect::<Vec<_>>()
    });
    let Ok(outlined) = outlining.await else {
        // A panic, or the runtime stopping: the files show their first characters instead.
        tracing::error!(run = %run, "outlining did not finish");
        return Ok(());
    };
    agent
        .db
        .call(move |conn| {
            for file in &outlined {
                entries::set_symbols(conn, run, &file.path, file.hash.as_deref(), &file.symbols)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}
