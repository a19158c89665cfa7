//! A run's proposals as the run's verbs move them (`agent::machine`): pending (202),
//! claimed while one request carries out its acceptance (`proposal_claims`), resolved once,
//! or withdrawn by an abort or a cancel of the loop that proposed it (499); and what a second
//! request for one is told.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::enums::{EntryStatus, RunAction};
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::EntryRow;
use crate::db::paths::normalize_path;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// What a withdrawn proposal's entry says.
pub(crate) const WITHDRAWN: &str = "withdrawn: the run was aborted";

/// What a proposal withdrawn by a cancel of the loop that proposed it says.
pub(crate) const CANCELLED: &str = "withdrawn: the loop that proposed it was cancelled";

/// The run's entry at `path` if it is a pending proposal that no other request is carrying
/// out (`claimed`: the caller is the one that claimed it).
pub(crate) fn pending(
    conn: &mut Conn,
    run: RunId,
    path: &str,
    claimed: bool,
) -> Result<Option<EntryRow>, DbError> {
    let path = normalize_path(path);
    Ok(statement(
        "SELECT * FROM known_entries
         WHERE run_id = ? AND path = ? AND status = 202
           AND (? = 1 OR NOT EXISTS (
               SELECT 1 FROM proposal_claims WHERE run_id = ? AND path = ?))",
    )
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(path.clone())
    .bind::<Integer, _>(i32::from(claimed))
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(path)
    .get_result::<EntryRow>(conn)
    .optional()?)
}

/// Resolves the pending proposal at `path` with `status` and `body`; false when it is no
/// longer pending (another unit of work, on this instance or another, resolved it first).
pub(crate) fn resolve(
    conn: &mut Conn,
    run: RunId,
    path: &str,
    status: EntryStatus,
    body: &str,
) -> Result<bool, DbError> {
    let updated = statement(
        "UPDATE known_entries SET status = ?, body = ?, updated_at = datetime('now')
         WHERE run_id = ? AND path = ? AND status = 202",
    )
    .bind::<Integer, _>(status)
    .bind::<Text, _>(body.to_owned())
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(normalize_path(path))
    .execute(conn)?;
    Ok(updated == 1)
}

/// Claims the pending proposal at `path` for an acceptance by `person` that `instance`
/// carries out; false when it is not pending or another request claimed it first.
pub(crate) fn claim(
    conn: &mut Conn,
    run: RunId,
    path: &str,
    instance: &str,
    person: Option<&str>,
) -> Result<bool, DbError> {
    let path = normalize_path(path);
    let claimed = statement(
        "INSERT INTO proposal_claims (run_id, path, instance_id, action, person)
         SELECT ?, ?, ?, 'accept', ? WHERE EXISTS (
             SELECT 1 FROM known_entries WHERE run_id = ? AND path = ? AND status = 202)
         ON CONFLICT (run_id, path) DO NOTHING",
    )
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(path.clone())
    .bind::<Text, _>(instance.to_owned())
    .bind::<Nullable<Text>, _>(person.map(str::to_owned))
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(path)
    .execute(conn)?;
    Ok(claimed == 1)
}

/// Gives back the claim on `path`; whether the run was aborted while it was held.
pub(crate) fn release(conn: &mut Conn, run: RunId, path: &str) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Released {
        #[diesel(sql_type = Integer)]
        aborted: i32,
    }
    let released: Option<Released> =
        statement("DELETE FROM proposal_claims WHERE run_id = ? AND path = ? RETURNING aborted")
            .bind::<BigInt, _>(run)
            .bind::<Text, _>(normalize_path(path))
            .get_result(conn)
            .optional()?;
    Ok(released.is_some_and(|row| row.aborted != 0))
}

/// Withdraws the run's pending proposals no request is carrying out (499, with
/// [`WITHDRAWN`]), and marks the claimed ones aborted; the paths withdrawn.
pub(crate) fn withdraw(conn: &mut Conn, run: RunId) -> Result<Vec<String>, DbError> {
    withdraw_where(conn, run, None, WITHDRAWN)
}

/// As [`withdraw`], only the proposals loop `proposing` made (its run's loop cancelled).
pub(crate) fn withdraw_of(
    conn: &mut Conn,
    run: RunId,
    proposing: LoopId,
) -> Result<Vec<String>, DbError> {
    withdraw_where(conn, run, Some(proposing), CANCELLED)
}

fn withdraw_where(
    conn: &mut Conn,
    run: RunId,
    proposing: Option<LoopId>,
    body: &str,
) -> Result<Vec<String>, DbError> {
    #[derive(QueryableByName)]
    struct Withdrawn {
        #[diesel(sql_type = Text)]
        path: String,
    }
    statement(
        "UPDATE proposal_claims SET aborted = 1
         WHERE run_id = ? AND path IN (
             SELECT path FROM known_entries
             WHERE run_id = ? AND status = 202 AND (? IS NULL OR loop_id = ?))",
    )
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(run)
    .bind::<Nullable<BigInt>, _>(proposing)
    .bind::<Nullable<BigInt>, _>(proposing)
    .execute(conn)?;
    let withdrawn: Vec<Withdrawn> = statement(
        "UPDATE known_entries SET status = 499, body = ?, updated_at = datetime('now')
         WHERE run_id = ? AND status = 202 AND (? IS NULL OR loop_id = ?) AND path NOT IN (
             SELECT path FROM proposal_claims WHERE run_id = ?)
         RETURNING path",
    )
    .bind::<Text, _>(body)
    .bind::<BigInt, _>(run)
    .bind::<Nullable<BigInt>, _>(proposing)
    .bind::<Nullable<BigInt>, _>(proposing)
    .bind::<BigInt, _>(run)
    .load(conn)?;
    Ok(withdrawn.into_iter().map(|row| row.path).collect())
}

/// The loops whose proposals the run waits on (those still pending).
pub(crate) fn proposing_loops(conn: &mut Conn, run: RunId) -> Result<Vec<LoopId>, DbError> {
    #[derive(QueryableByName)]
    struct Proposing {
        #[diesel(sql_type = BigInt)]
        loop_id: LoopId,
    }
    let proposing: Vec<Proposing> = statement(
        "SELECT DISTINCT loop_id FROM known_entries
         WHERE run_id = ? AND status = 202 AND loop_id IS NOT NULL",
    )
    .bind::<BigInt, _>(run)
    .load(conn)?;
    Ok(proposing.into_iter().map(|row| row.loop_id).collect())
}

/// Where the run's entry at `path` stands, for a request that found it not pending: its
/// status, the claim on it, and the latest action recorded on it (or, once withdrawn, on
/// the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// `None`: the run has no entry at the path.
    pub status: Option<EntryStatus>,
    /// Who claimed it (`Some(None)`: the operator), while it is claimed.
    pub claimed_by: Option<Option<String>>,
    /// The latest action that settled it, and who took it.
    pub action: Option<(RunAction, Option<String>)>,
}

/// What [`Found`] says of the run's entry at `path`.
pub(crate) fn found(conn: &mut Conn, run: RunId, path: &str) -> Result<Found, DbError> {
    #[derive(QueryableByName)]
    struct Status {
        #[diesel(sql_type = Integer)]
        status: EntryStatus,
    }
    #[derive(QueryableByName)]
    struct Claim {
        #[diesel(sql_type = Nullable<Text>)]
        person: Option<String>,
    }
    #[derive(QueryableByName)]
    struct Action {
        #[diesel(sql_type = Text)]
        action: RunAction,
        #[diesel(sql_type = Nullable<Text>)]
        person: Option<String>,
    }
    let path = normalize_path(path);
    let status: Option<Status> =
        statement("SELECT status FROM known_entries WHERE run_id = ? AND path = ?")
            .bind::<BigInt, _>(run)
            .bind::<Text, _>(path.clone())
            .get_result(conn)
            .optional()?;
    let claim: Option<Claim> =
        statement("SELECT person FROM proposal_claims WHERE run_id = ? AND path = ?")
            .bind::<BigInt, _>(run)
            .bind::<Text, _>(path.clone())
            .get_result(conn)
            .optional()?;
    let withdrawn = status
        .as_ref()
        .is_some_and(|row| row.status == EntryStatus::Withdrawn);
    let action: Option<Action> = if withdrawn {
        statement(
            "SELECT action, person FROM run_actions
             WHERE run_id = ? AND action IN ('abort', 'cancel') ORDER BY id DESC LIMIT 1",
        )
        .bind::<BigInt, _>(run)
        .get_result(conn)
        .optional()?
    } else {
        statement(
            "SELECT action, person FROM run_actions
             WHERE run_id = ? AND path = ? ORDER BY id DESC LIMIT 1",
        )
        .bind::<BigInt, _>(run)
        .bind::<Text, _>(path)
        .get_result(conn)
        .optional()?
    };
    Ok(Found {
        status: status.map(|row| row.status),
        claimed_by: claim.map(|row| row.person),
        action: action.map(|row| (row.action, row.person)),
    })
}

#[cfg(test)]
mod tests;
