//! What may wait for a person, read from the runs as they stand (nothing is written when a
//! run changes): every run waiting on proposals (202, or any status with a proposal
//! pending: a person's revert raised on an idle run, `agent::verbs::revert`), and the runs whose latest loop the
//! person asked for that ended stopped by a cap (402), failed (413, 500) or finished (200);
//! a sub-agent's run is its parent's business and never listed. Who may see which (their
//! projects, their role) is the caller's to judge (`inbox`); what a person dismissed
//! (`inbox_dismissals`) stays away while the run's latest notification is the one it had.

use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text};
use diesel::{QueryableByName, RunQueryDsl};

use crate::db::enums::RunStatus;
use crate::db::ids::{ProjectId, RunId};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// A run that may be an inbox item.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub(crate) struct Waiting {
    #[diesel(sql_type = BigInt)]
    pub run_id: RunId,
    #[diesel(sql_type = Text)]
    pub alias: String,
    #[diesel(sql_type = Integer)]
    pub status: RunStatus,
    /// Whether a proposal of the run waits (whatever the run's status).
    #[diesel(sql_type = Bool)]
    pub proposing: bool,
    /// Whether the person asked for its latest loop.
    #[diesel(sql_type = Bool)]
    pub asked: bool,
    #[diesel(sql_type = BigInt)]
    pub project_id: ProjectId,
    #[diesel(sql_type = Text)]
    pub project: String,
    /// The run's first prompt.
    #[diesel(sql_type = Text)]
    pub first_prompt: String,
    /// Who asked for its latest loop (`None`: the operator).
    #[diesel(sql_type = Nullable<Text>)]
    pub requested_by: Option<String>,
    /// Its latest notification's seq (0: none).
    #[diesel(sql_type = BigInt)]
    pub seq: i64,
    /// When its latest notification was written, if the event log still keeps it.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub event_ms: Option<i64>,
    /// When its latest loop was queued (`YYYY-MM-DD HH:MM:SS`, UTC).
    #[diesel(sql_type = Text)]
    pub loop_created_at: String,
}

/// The runs that wait for `person` (`None`: the operator) and that they have not dismissed,
/// of every project (only `run` when given).
pub(crate) fn waiting(
    conn: &mut Conn,
    person: Option<&str>,
    run: Option<RunId>,
) -> Result<Vec<Waiting>, DbError> {
    let who = person.unwrap_or_default();
    Ok(statement(
        "SELECT r.id AS run_id, r.alias, r.status, r.project_id, p.name AS project,
                EXISTS (SELECT 1 FROM known_entries AS k
                        WHERE k.run_id = r.id AND k.status = 202) AS proposing,
                COALESCE(l.requested_by, '') = ? AS asked,
                COALESCE((SELECT f.prompt FROM loops AS f WHERE f.run_id = r.id
                          ORDER BY f.id LIMIT 1), '') AS first_prompt,
                l.requested_by, COALESCE(s.last_seq, 0) AS seq,
                (SELECT e.created_ms FROM run_events AS e
                 WHERE e.run_id = r.id AND e.seq = s.last_seq) AS event_ms,
                l.created_at AS loop_created_at
         FROM runs AS r
         JOIN projects AS p ON p.id = r.project_id
         JOIN loops AS l ON l.id = (SELECT MAX(m.id) FROM loops AS m WHERE m.run_id = r.id)
         LEFT JOIN run_event_seqs AS s ON s.run_id = r.id
         WHERE r.delegated_by IS NULL
           AND (? IS NULL OR r.id = ?)
           AND (r.status = 202
                OR EXISTS (SELECT 1 FROM known_entries AS k
                           WHERE k.run_id = r.id AND k.status = 202)
                OR (r.status IN (200, 402, 413, 500) AND COALESCE(l.requested_by, '') = ?))
           AND NOT EXISTS (SELECT 1 FROM inbox_dismissals AS d
                           WHERE d.person = ? AND d.run_id = r.id
                             AND d.seq >= COALESCE(s.last_seq, 0))",
    )
    .bind::<Text, _>(who)
    .bind::<Nullable<BigInt>, _>(run)
    .bind::<Nullable<BigInt>, _>(run)
    .bind::<Text, _>(who)
    .bind::<Text, _>(who)
    .load(conn)?)
}

/// Keeps `run`'s item away from `person`'s inbox while the run's latest notification is
/// `seq`.
pub(crate) fn dismiss(
    conn: &mut Conn,
    person: Option<&str>,
    run: RunId,
    seq: i64,
) -> Result<(), DbError> {
    statement(
        "INSERT INTO inbox_dismissals (person, run_id, seq) VALUES (?, ?, ?)
         ON CONFLICT (person, run_id) DO UPDATE SET seq = excluded.seq",
    )
    .bind::<Text, _>(person.unwrap_or_default())
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(seq)
    .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests;
