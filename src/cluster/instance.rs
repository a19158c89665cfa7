//! This instance among the instances sharing one store: its id, its heartbeat and its
//! hand-over at a clean stop.
//!
//! A run's loops are driven by the instance holding the run's lease (`run_leases`), which
//! lasts as long as the instance's heartbeat row (`instances`): the heartbeat pushes the row's
//! expiry forward by `RUMMY_LEASE_TTL_SECS` every third of it, so one statement renews every
//! lease the instance holds. The same beat releases the instances whose row expired (killed,
//! or cut off from the store) as start-up recovery does a crash: their runs end 499 with their
//! loops pending, for any instance to run when a client next drives the run.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::db::ids::{ProjectId, RunId};
use crate::db::queries::instances::{self, Gone};
use crate::db::queries::runs::now_ms;
use crate::db::{DbError, DbHandle};

/// This instance: its id in the store and how long its leases outlive its last heartbeat.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    id: Arc<str>,
    lease_ttl: Duration,
}

impl Instance {
    /// A new instance with a random id (128 bits, hex), its leases lasting `lease_ttl`.
    pub(crate) fn new(lease_ttl: Duration) -> Result<Instance, getrandom::Error> {
        Ok(Instance {
            id: crate::random::random_hex(16)?.into(),
            lease_ttl: lease_ttl.max(Duration::from_secs(1)),
        })
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// A number for connection `conn` of this instance, told apart from every other
    /// instance's but by chance (31 bits of the instance's random id, then the connection's
    /// 32): what a loop records of the connection that queued it (a number, which costs the
    /// store no text), for `run/cancel` of an operator's own loops. A collision only lets one
    /// operator connection cancel another's loop, which the operator may do anyway.
    pub(crate) fn connection_key(&self, conn: u64) -> i64 {
        let high = self
            .id
            .get(..8)
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .unwrap_or(0)
            & 0x7fff_ffff;
        (i64::from(high) << 32) | (conn & 0xffff_ffff) as i64
    }

    /// How often the heartbeat renews the leases: three beats per lease, so one late beat
    /// loses none. Also how often a run leased by another instance is looked at again.
    pub(crate) fn beat_interval(&self) -> Duration {
        self.lease_ttl / 3
    }

    /// When this instance's leases expire if it beats now (ms since the epoch).
    fn expiry(&self) -> i64 {
        now_ms().saturating_add(i64::try_from(self.lease_ttl.as_millis()).unwrap_or(i64::MAX))
    }

    /// Recovers the runs of the instances gone before this one started, then enters this
    /// one's heartbeat row; returns how many runs were aborted. Alone on the store (SQLite,
    /// which only one instance uses, or a PostgreSQL database no live instance beats on),
    /// it recovers as a single instance restarting does: every run left at 100 or 102 ends
    /// 499. Beside live instances it releases only the expired ones, whose runs it knows.
    pub(crate) async fn join(&self, db: &DbHandle, shared: bool) -> Result<usize, DbError> {
        let id = Arc::clone(&self.id);
        let expiry = self.expiry();
        db.call(move |conn| {
            let now = now_ms();
            let aborted = if shared && instances::any_alive(conn, now)? {
                instances::release(conn, Gone::ExpiredBefore(now))?.runs
            } else {
                let aborted = crate::db::queries::runs::recover_after_restart(conn)?;
                instances::forget_all(conn)?;
                aborted
            };
            instances::join(conn, &id, expiry)?;
            Ok(aborted)
        })
        .await
    }

    /// Beats every [`beat_interval`](Self::beat_interval) until `stop` is cancelled: renews
    /// this instance's leases and releases the instances whose leases expired (then
    /// `released` is called: what they watched over is this one's now). When another
    /// instance found this one expired (a stall longer than the TTL), this one's runs are no
    /// longer its own: `lost` is called to abort the loops it still runs, and it joins again.
    /// The runs that connections of a released instance were in are handed to `vacated`.
    pub(crate) async fn beat(
        self,
        db: DbHandle,
        stop: CancellationToken,
        lost: impl Fn(),
        released: impl Fn(),
        vacated: impl Fn(Vec<(ProjectId, RunId)>),
    ) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.beat_interval()) => {}
            }
            let id = Arc::clone(&self.id);
            let expiry = self.expiry();
            let beat = db
                .call(move |conn| {
                    let kept = instances::renew(conn, &id, expiry)?;
                    if !kept {
                        instances::join(conn, &id, expiry)?;
                    }
                    let expired = Gone::ExpiredBefore(now_ms());
                    let left = instances::vacated(conn, expired)?;
                    let gone = instances::release(conn, expired)?;
                    Ok((kept, gone, left))
                })
                .await;
            match beat {
                Ok((kept, gone, left)) => {
                    let aborted = gone.runs;
                    if gone.instances > 0 {
                        released();
                    }
                    if !left.is_empty() {
                        vacated(left);
                    }
                    if !kept {
                        tracing::error!(
                            instance = %self.id,
                            "this instance's leases expired and its runs were released; \
                             aborting the loops it still ran"
                        );
                        lost();
                    }
                    if aborted > 0 {
                        tracing::info!(
                            runs = aborted,
                            "runs of instances whose leases expired are aborted"
                        );
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot renew this instance's leases"),
            }
        }
    }

    /// Gives back this instance's leases at a clean stop: runs it still drives end 499 with
    /// their loops pending, its queued loops become anyone's, and its row goes. Returns how
    /// many runs were aborted, and the runs its connections were in.
    pub(crate) async fn leave(
        &self,
        db: &DbHandle,
    ) -> Result<(usize, Vec<(ProjectId, RunId)>), DbError> {
        let id = Arc::clone(&self.id);
        db.call(move |conn| {
            let left = instances::vacated(conn, Gone::This(&id))?;
            Ok((instances::release(conn, Gone::This(&id))?.runs, left))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_get_distinct_ids_and_beat_three_times_per_lease() {
        let one = Instance::new(Duration::from_secs(30)).unwrap();
        let two = Instance::new(Duration::from_secs(30)).unwrap();
        assert_ne!(one.id(), two.id());
        assert_eq!(one.id().len(), 32);
        assert_eq!(one.beat_interval(), Duration::from_secs(10));
    }
}
