//! Several instances on one store: each instance's heartbeat row (`instances`), the lease by
//! which exactly one instance drives a run's loops (`run_leases`), and the instance whose
//! client waits for a pending loop (`loop_waiters`). An instance that is gone — stopped, or
//! expired because its heartbeat stopped — is released as a crash is recovered at start: its
//! runs' running loops go back to pending and its runs left at 100/102 end 499.

use diesel::sql_types::{BigInt, Text};

use crate::db::connection::write_transaction;
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::models::run::LoopRow;
use crate::db::queries::loops;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};
use diesel::{OptionalExtension, RunQueryDsl};

/// What the drain of a run may do next.
#[derive(Debug, PartialEq)]
pub(crate) enum Claim {
    /// This loop, now running; the instance holds the run's lease.
    Loop(Box<LoopRow>),
    /// Nothing pending for this instance: the lease (if it held it) is given back.
    Idle,
    /// Another live instance holds the run's lease; the pending loops wait for it to give it
    /// back (or to be released, if it dies).
    Elsewhere,
}

/// Which instances are gone, to release.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Gone<'a> {
    /// This one, stopping.
    This(&'a str),
    /// Every instance whose heartbeat row expired before this time (ms since the epoch).
    ExpiredBefore(i64),
}

impl Gone<'_> {
    /// The two binds of `GONE`: an id (none is empty) and a cutoff.
    fn binds(self) -> (String, i64) {
        match self {
            Gone::This(id) => (id.to_owned(), i64::MIN),
            Gone::ExpiredBefore(now) => (String::new(), now),
        }
    }
}

/// Inserts or renews `instance`'s heartbeat row, alive until `expires_at`.
pub(crate) fn join(conn: &mut Conn, instance: &str, expires_at: i64) -> Result<(), DbError> {
    statement(
        "INSERT INTO instances (id, expires_at) VALUES (?, ?)
         ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at",
    )
    .bind::<Text, _>(instance.to_owned())
    .bind::<BigInt, _>(expires_at)
    .execute(conn)?;
    Ok(())
}

/// Pushes `instance`'s expiry to `expires_at`; false when its row is gone (another instance
/// found it expired and released its runs).
pub(crate) fn renew(conn: &mut Conn, instance: &str, expires_at: i64) -> Result<bool, DbError> {
    let renewed = statement("UPDATE instances SET expires_at = ? WHERE id = ?")
        .bind::<BigInt, _>(expires_at)
        .bind::<Text, _>(instance.to_owned())
        .execute(conn)?;
    Ok(renewed == 1)
}

/// Records that `instance`'s client waits for `loop_id`, so only `instance` claims it.
pub(crate) fn wait_for(conn: &mut Conn, loop_id: LoopId, instance: &str) -> Result<(), DbError> {
    statement("INSERT INTO loop_waiters (loop_id, instance_id) VALUES (?, ?)")
        .bind::<BigInt, _>(loop_id)
        .bind::<Text, _>(instance.to_owned())
        .execute(conn)?;
    Ok(())
}

/// Takes (or keeps) the run's lease for `instance` and claims its next loop for it; gives
/// the lease back when nothing is pending for it. The lease's row is locked while the unit of
/// work lasts, so two instances' claims for one run follow one another.
pub(crate) fn claim_loop(conn: &mut Conn, run_id: RunId, instance: &str) -> Result<Claim, DbError> {
    write_transaction(conn, |conn| {
        if !hold(conn, run_id, instance)? {
            return Ok(Claim::Elsewhere);
        }
        if let Some(claimed) = loops::claim_next_loop(conn, run_id, instance)? {
            return Ok(Claim::Loop(Box::new(claimed)));
        }
        let_go(conn, run_id, instance)?;
        Ok(Claim::Idle)
    })
}

/// Takes (or keeps) the run's lease for `instance`, so that calls for the run another
/// instance receives are sent here: while it runs a loop of the run ([`claim_loop`]) or a
/// command of it; false when another instance holds it.
pub(crate) fn hold(conn: &mut Conn, run_id: RunId, instance: &str) -> Result<bool, DbError> {
    let leased = statement(
        "INSERT INTO run_leases (run_id, instance_id) VALUES (?, ?)
         ON CONFLICT (run_id) DO UPDATE SET instance_id = excluded.instance_id
         WHERE run_leases.instance_id = excluded.instance_id",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<Text, _>(instance.to_owned())
    .execute(conn)?;
    Ok(leased == 1)
}

/// Gives back the lease [`hold`] took.
pub(crate) fn let_go(conn: &mut Conn, run_id: RunId, instance: &str) -> Result<(), DbError> {
    statement("DELETE FROM run_leases WHERE run_id = ? AND instance_id = ?")
        .bind::<BigInt, _>(run_id)
        .bind::<Text, _>(instance.to_owned())
        .execute(conn)?;
    Ok(())
}

/// What [`release`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Released {
    /// Runs aborted.
    pub runs: usize,
    /// Instances whose rows went.
    pub instances: usize,
}

/// Releases the instances that are `gone`: their runs' running loops go back to pending
/// and their runs left created or running (100, 102) end aborted (499), then their rows go,
/// and with them their leases and their claims on pending loops, which any instance may
/// now run. A run paused at a spend cap (402) is no instance's: it stays paused.
pub(crate) fn release(conn: &mut Conn, gone: Gone<'_>) -> Result<Released, DbError> {
    let (id, cutoff) = gone.binds();
    write_transaction(conn, |conn| {
        statement(
            "UPDATE loops SET status = 100
             WHERE status = 102 AND run_id IN (
                 SELECT run_id FROM run_leases WHERE instance_id IN (
                     SELECT id FROM instances WHERE id = ? OR expires_at < ?))",
        )
        .bind::<Text, _>(id.clone())
        .bind::<BigInt, _>(cutoff)
        .execute(conn)?;
        // A run created for a loop of the gone instance that never got to claim it is left
        // at 100 as a run whose instance crashed before its loop started is.
        let aborted = statement(
            "UPDATE runs SET status = 499
             WHERE status IN (100, 102) AND (
                 id IN (SELECT run_id FROM run_leases WHERE instance_id IN (
                     SELECT id FROM instances WHERE id = ? OR expires_at < ?))
                 OR (status = 100
                     AND id NOT IN (SELECT run_id FROM run_leases)
                     AND id IN (
                         SELECT loops.run_id FROM loops
                         JOIN loop_waiters ON loop_waiters.loop_id = loops.id
                         WHERE loop_waiters.instance_id IN (
                             SELECT id FROM instances WHERE id = ? OR expires_at < ?))))",
        )
        .bind::<Text, _>(id.clone())
        .bind::<BigInt, _>(cutoff)
        .bind::<Text, _>(id.clone())
        .bind::<BigInt, _>(cutoff)
        .execute(conn)?;
        let instances = statement("DELETE FROM instances WHERE id = ? OR expires_at < ?")
            .bind::<Text, _>(id)
            .bind::<BigInt, _>(cutoff)
            .execute(conn)?;
        Ok(Released {
            runs: aborted,
            instances,
        })
    })
}

/// The runs in which connections of the instances that are `gone` are present (with their
/// projects): [`release`] takes that presence with the instances' rows, so their clients are
/// told who is left.
pub(crate) fn vacated(conn: &mut Conn, gone: Gone<'_>) -> Result<Vec<(ProjectId, RunId)>, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Vacated {
        #[diesel(sql_type = BigInt)]
        project_id: ProjectId,
        #[diesel(sql_type = BigInt)]
        run_id: RunId,
    }
    let (id, cutoff) = gone.binds();
    let rows: Vec<Vacated> = statement(
        "SELECT DISTINCT runs.project_id, runs.id AS run_id
         FROM run_presence JOIN runs ON runs.id = run_presence.run_id
         WHERE run_presence.instance_id IN (SELECT id FROM instances WHERE id = ? OR expires_at < ?)",
    )
    .bind::<Text, _>(id)
    .bind::<BigInt, _>(cutoff)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| (row.project_id, row.run_id))
        .collect())
}

/// The instance holding `run`'s lease, if it is alive at `now`.
pub(crate) fn holder(conn: &mut Conn, run_id: RunId, now: i64) -> Result<Option<String>, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Holder {
        #[diesel(sql_type = Text)]
        instance_id: String,
    }
    let row: Option<Holder> = statement(
        "SELECT run_leases.instance_id FROM run_leases
         JOIN instances ON instances.id = run_leases.instance_id
         WHERE run_leases.run_id = ? AND instances.expires_at >= ?",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<BigInt, _>(now)
    .get_result(conn)
    .optional()?;
    Ok(row.map(|row| row.instance_id))
}

/// The ids of the instances alive at `now`.
pub(crate) fn alive(conn: &mut Conn, now: i64) -> Result<Vec<String>, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Alive {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let rows: Vec<Alive> = statement("SELECT id FROM instances WHERE expires_at >= ?")
        .bind::<BigInt, _>(now)
        .load(conn)?;
    Ok(rows.into_iter().map(|row| row.id).collect())
}

/// Whether `instance`'s heartbeat row is still alive at `now`.
pub(crate) fn is_alive(conn: &mut Conn, instance: &str, now: i64) -> Result<bool, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Alive {
        #[diesel(sql_type = BigInt)]
        alive: i64,
    }
    let row: Alive =
        statement("SELECT COUNT(*) AS alive FROM instances WHERE id = ? AND expires_at >= ?")
            .bind::<Text, _>(instance)
            .bind::<BigInt, _>(now)
            .get_result(conn)?;
    Ok(row.alive > 0)
}

/// Whether some instance's heartbeat row is still alive at `now`.
pub(crate) fn any_alive(conn: &mut Conn, now: i64) -> Result<bool, DbError> {
    #[derive(diesel::QueryableByName)]
    struct Alive {
        #[diesel(sql_type = BigInt)]
        alive: i64,
    }
    let row: Alive = statement("SELECT COUNT(*) AS alive FROM instances WHERE expires_at >= ?")
        .bind::<BigInt, _>(now)
        .get_result(conn)?;
    Ok(row.alive > 0)
}

/// Forgets every instance, its leases and its claims (at start, when no other instance is
/// alive; `runs::recover_after_restart` has recovered their runs).
pub(crate) fn forget_all(conn: &mut Conn) -> Result<(), DbError> {
    statement("DELETE FROM instances").execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests;
