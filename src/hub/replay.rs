//! What a reconnecting client missed: a run's frames after the latest seq it saw, read from
//! the event log (`db::queries::run_events`), complete and in order, or why not.
//!
//! A run's seqs are contiguous from its first to its latest, every one of them written
//! before it was sent, and the log drops a run's oldest frames first. So the frames after
//! `since` are all kept exactly when the oldest one needed is, and a replay either delivers
//! every frame the client did not see or says it cannot ([`ReplayError::NotKept`]: the
//! client resyncs with `getRun`); never a part with a gap.

use crate::db::ids::RunId;
use crate::db::queries::run_events::{self, RunSeqs};
use crate::db::{Conn, DbError};

/// Why a replay delivers nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplayError {
    /// Some frame after `since` is no longer kept, or more follow it than one replay
    /// delivers, or `since` is from before the run's numbering; `latest` is the run's latest
    /// seq (0: it never published).
    #[error("notifications since seq {since} are no longer kept")]
    NotKept { since: u64, latest: u64 },
    /// `since` is past the latest seq of the run.
    #[error("seq {since} is ahead of the latest, {latest}")]
    Ahead { since: u64, latest: u64 },
}

/// The seqs a replay after `since` delivers (`None`: none), given the run's numbering
/// (`None`: it never published) and the most frames one replay delivers. `since` 0 means
/// nothing was seen: every frame from the run's first.
pub(crate) fn window(
    since: u64,
    seqs: Option<RunSeqs>,
    most: u64,
) -> Result<Option<(u64, u64)>, ReplayError> {
    let Some(RunSeqs {
        first_seq,
        last_seq,
    }) = seqs
    else {
        return match since {
            0 => Ok(None),
            _ => Err(ReplayError::NotKept { since, latest: 0 }),
        };
    };
    let (first, latest) = (seq_of(first_seq), seq_of(last_seq));
    let not_kept = ReplayError::NotKept { since, latest };
    if since > latest {
        return Err(ReplayError::Ahead { since, latest });
    }
    if since == latest {
        return Ok(None);
    }
    let from = match since {
        0 => first,
        seen if seen < first => return Err(not_kept),
        seen => seen + 1,
    };
    if latest - from >= most {
        return Err(not_kept);
    }
    Ok(Some((from, latest)))
}

/// The frames of `run` a client that saw up to `since` missed, oldest first, at most `most`
/// of them, read in one read transaction.
pub(crate) fn missed(
    conn: &mut Conn,
    run: RunId,
    since: u64,
    most: u64,
) -> Result<Result<Vec<String>, ReplayError>, DbError> {
    let seqs = run_events::seqs(conn, run)?;
    let (from, to) = match window(since, seqs, most) {
        Ok(Some(window)) => window,
        Ok(None) => return Ok(Ok(Vec::new())),
        Err(error) => return Ok(Err(error)),
    };
    let frames = run_events::frames(conn, run, stored(from), stored(to))?;
    let complete = frames.first().map(|(seq, _)| seq_of(*seq)) == Some(from)
        && frames.len() as u64 == to - from + 1;
    if !complete {
        let latest = seqs.map_or(0, |seqs| seq_of(seqs.last_seq));
        return Ok(Err(ReplayError::NotKept { since, latest }));
    }
    Ok(Ok(frames.into_iter().map(|(_, frame)| frame).collect()))
}

fn seq_of(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or_default()
}

fn stored(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: u64 = 1_000_001;

    fn numbered(first: u64, last: u64) -> Option<RunSeqs> {
        Some(RunSeqs {
            first_seq: first as i64,
            last_seq: last as i64,
        })
    }

    #[test]
    fn frames_read_whole_are_delivered_and_any_hole_among_them_is_not_kept() {
        use crate::db::events::{discard_staged, Unnumbered};
        use crate::db::queries::run_events::{append, EventBounds};
        use crate::db::statement::statement;
        use diesel::RunQueryDsl;
        let mut db = crate::db::testing::TestDb::new();
        let conn = &mut db.conn;
        let run = crate::db::testing::sample_run(conn);
        let frame = Unnumbered {
            before: r#"{"seq":"#.into(),
            after: "}",
        };
        let bounds = EventBounds::default();
        let seqs: Vec<u64> = (0..4)
            .map(|_| {
                append(
                    conn,
                    &bounds,
                    run.project_id,
                    run.id,
                    std::slice::from_ref(&frame),
                )
                .unwrap()[0]
                    .seq
            })
            .collect();
        discard_staged();
        let delivered = missed(conn, run.id, seqs[0], 10).unwrap().unwrap();
        assert_eq!(delivered.len(), 3);
        assert_eq!(delivered[0], format!(r#"{{"seq":{}}}"#, seqs[1]));
        statement("DELETE FROM run_events WHERE seq = ?")
            .bind::<diesel::sql_types::BigInt, _>(seqs[2] as i64)
            .execute(conn)
            .unwrap();
        let not_kept = ReplayError::NotKept {
            since: seqs[0],
            latest: seqs[3],
        };
        assert_eq!(missed(conn, run.id, seqs[0], 10).unwrap(), Err(not_kept));
        assert_eq!(missed(conn, run.id, seqs[2], 10).unwrap().unwrap().len(), 1);
    }

    #[test]
    fn a_run_that_never_published_owes_nothing_from_0_and_knows_no_other_seq() {
        assert_eq!(window(0, None, 10), Ok(None));
        assert_eq!(
            window(7, None, 10),
            Err(ReplayError::NotKept {
                since: 7,
                latest: 0
            })
        );
    }

    #[test]
    fn the_window_runs_from_after_since_to_the_latest() {
        let run = numbered(FIRST, FIRST + 9);
        assert_eq!(window(0, run, 10), Ok(Some((FIRST, FIRST + 9))), "all");
        assert_eq!(window(FIRST + 4, run, 10), Ok(Some((FIRST + 5, FIRST + 9))));
        assert_eq!(window(FIRST + 9, run, 10), Ok(None), "up to date");
        assert_eq!(
            window(FIRST + 10, run, 10),
            Err(ReplayError::Ahead {
                since: FIRST + 10,
                latest: FIRST + 9
            })
        );
    }

    #[test]
    fn more_than_one_replay_delivers_or_a_seq_before_the_numbering_is_not_kept() {
        let run = numbered(FIRST, FIRST + 9);
        let not_kept = |since| {
            Err(ReplayError::NotKept {
                since,
                latest: FIRST + 9,
            })
        };
        assert_eq!(window(0, run, 9), not_kept(0), "ten frames, nine at most");
        assert_eq!(window(FIRST, run, 9), Ok(Some((FIRST + 1, FIRST + 9))));
        assert_eq!(window(FIRST - 1, run, 10), not_kept(FIRST - 1));
        assert_eq!(window(5, run, 10), not_kept(5));
    }
}
