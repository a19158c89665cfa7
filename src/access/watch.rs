//! Reloading the users file on SIGHUP and when it changes on disk.

use std::fs::Metadata;
use std::time::{Duration, SystemTime};

use actix_web::web;

use super::Access;

/// How often the users file's modification time and size are looked at.
pub(super) const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// Reloads the users file whenever the process gets SIGHUP or the file's modification time
/// or size changes, for as long as the server runs, and calls `reloaded` after each reload
/// (a person's caps may have changed). A file that does not read is logged and the people
/// stay as they were.
pub(crate) async fn watch(access: Access, reloaded: impl Fn()) {
    let Some(path) = access.users_file().map(ToOwned::to_owned) else {
        return;
    };
    let mut hangups = hangups();
    let mut seen = fingerprint(path.clone()).await;
    let mut tick = tokio::time::interval(WATCH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let hangup = tokio::select! {
            _ = tick.tick() => false,
            Some(()) = next_hangup(&mut hangups) => true,
        };
        let now = fingerprint(path.clone()).await;
        if !hangup && now == seen {
            continue;
        }
        seen = now;
        let reloading = access.clone();
        match web::block(move || reloading.reload()).await {
            Ok(Ok(people)) => {
                tracing::info!(people, hangup, "users file reloaded");
                reloaded();
            }
            Ok(Err(error)) => {
                tracing::error!(%error, "users file not reloaded; the people stay as they were")
            }
            Err(error) => tracing::error!(%error, "users file reload stopped"),
        }
    }
}

/// When and how large the file was last written; `None` while it cannot be read.
async fn fingerprint(path: std::path::PathBuf) -> Option<(SystemTime, u64)> {
    let metadata: Metadata = web::block(move || std::fs::metadata(path))
        .await
        .ok()?
        .ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangups() -> Hangups {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGHUP; the users file reloads on change only");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangups() -> Hangups {}

/// The next SIGHUP; never, where there are none.
#[cfg(unix)]
async fn next_hangup(hangups: &mut Hangups) -> Option<()> {
    match hangups {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) -> Option<()> {
    std::future::pending().await
}
