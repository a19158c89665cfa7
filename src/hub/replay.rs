//! What a reconnecting client missed: each run's most recent notification frames, by `seq`.
//!
//! Bounded five ways: `per_run` frames of a run (its oldest go first), `runs` runs per
//! project (opening one more frees the run that published least recently), `bytes` of
//! frames per project (past it the oldest frames of the run that published least recently
//! go first, so runs whose frames carry megabyte bodies cannot hold the server's memory),
//! `server_bytes` of frames of every project together (past it the project publishing sheds
//! its own oldest frames the same way, so many projects cannot either) and time (the hub's
//! sweep frees a run quiet for `keep`). A freed run that publishes again is numbered
//! afresh, above every seq it had before, so a client never takes new notifications for ones
//! it saw, and a replay from a seq the server no longer keeps says so.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::db::ids::RunId;

/// How much of the notifications a project's hub keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayLimits {
    /// Frames kept per run.
    pub per_run: usize,
    /// Runs whose frames are kept (at least one: a run's numbering lives in its log).
    pub runs: usize,
    /// Bytes of frames kept for the project's runs together.
    pub bytes: usize,
    /// Bytes of frames kept for every project's runs together.
    pub server_bytes: usize,
    /// A run that published nothing for this long is freed.
    pub keep: Duration,
}

/// Why a replay has no frames to offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Some notification after `since` is no longer kept.
    #[error("notifications since seq {since} are no longer kept")]
    NotKept { since: u64 },
    /// `since` is past the latest seq of the run.
    #[error("seq {since} is ahead of the latest, {latest}")]
    Ahead { since: u64, latest: u64 },
}

/// One run's numbering and its latest frames.
struct RunLog {
    /// The seq this numbering started after: its first notification is `start + 1`.
    start: u64,
    /// The latest seq given.
    last: u64,
    /// The frames of seqs `last - frames.len() + 1 ..= last`.
    frames: VecDeque<Arc<str>>,
    /// When the run last published.
    published: Instant,
}

impl RunLog {
    /// The first seq still kept (`last + 1` when none is).
    fn oldest(&self) -> u64 {
        self.last + 1 - self.frames.len() as u64
    }
}

/// Bytes of the frames the hubs of one server keep, all projects together.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerFrames(Arc<AtomicUsize>);

impl ServerFrames {
    pub(crate) fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// The logs of one project's runs.
pub(crate) struct RunLogs {
    limits: ReplayLimits,
    logs: HashMap<RunId, RunLog>,
    /// The highest seq of every run freed so far: a new numbering starts above it.
    floor: u64,
    /// Bytes of the frames kept in `logs`, also counted in `server`.
    bytes: usize,
    server: ServerFrames,
}

impl RunLogs {
    /// The logs of a project whose frames count in `server` too.
    pub(crate) fn new(limits: ReplayLimits, server: ServerFrames) -> RunLogs {
        RunLogs {
            limits,
            logs: HashMap::new(),
            floor: 0,
            bytes: 0,
            server,
        }
    }

    fn hold(&mut self, bytes: usize) {
        self.bytes += bytes;
        self.server.0.fetch_add(bytes, Ordering::Relaxed);
    }

    fn release(&mut self, bytes: usize) {
        self.bytes -= bytes;
        self.server.0.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn over_bounds(&self) -> bool {
        self.bytes > self.limits.bytes
            || (self.bytes > 0 && self.server.bytes() > self.limits.server_bytes)
    }

    /// How long a quiet run is kept.
    pub(crate) fn keep(&self) -> Duration {
        self.limits.keep
    }

    /// Numbers the next notification of `run`, keeps the frame `frame` makes of that seq and
    /// returns it; a frame that cannot be made takes no seq. A run without a log is numbered
    /// from above both `clock_us` (wall-clock microseconds, which outlast a restart) and every
    /// seq a freed run had (which a clock set back cannot undercut); opening its log at the
    /// bound frees the run that published least recently.
    pub(crate) fn record<E>(
        &mut self,
        run: RunId,
        now: Instant,
        clock_us: u64,
        frame: impl FnOnce(u64) -> Result<Arc<str>, E>,
    ) -> Result<Arc<str>, E> {
        self.make_room(run);
        let start = clock_us.max(self.floor);
        let log = self.logs.entry(run).or_insert_with(|| RunLog {
            start,
            last: start,
            frames: VecDeque::new(),
            published: now,
        });
        let text = frame(log.last + 1)?;
        self.push(run, now, Arc::clone(&text));
        Ok(text)
    }

    /// Keeps `text`, the frame of `run` numbered `seq` by the instance executing the run, as
    /// if it had been numbered here: a numbering here later goes on after it. A frame after a
    /// gap keeps only what follows the gap (a replay from before it answers
    /// [`ReplayError::NotKept`]); one not above the run's latest seq is dropped (false).
    pub(crate) fn keep_numbered(
        &mut self,
        run: RunId,
        now: Instant,
        seq: u64,
        text: Arc<str>,
    ) -> bool {
        self.make_room(run);
        let before = seq.saturating_sub(1);
        let log = self.logs.entry(run).or_insert_with(|| RunLog {
            start: before,
            last: before,
            frames: VecDeque::new(),
            published: now,
        });
        if seq <= log.last {
            return false;
        }
        if before != log.last {
            let dropped: usize = log.frames.drain(..).map(|frame| frame.len()).sum();
            log.last = before;
            self.release(dropped);
        }
        self.push(run, now, text);
        true
    }

    /// The seq `run`'s last frame took, if its log is kept.
    pub(crate) fn last(&self, run: RunId) -> Option<u64> {
        self.logs.get(&run).map(|log| log.last)
    }

    /// Frees the run that published least recently when `run` would open a log past the
    /// bound.
    fn make_room(&mut self, run: RunId) {
        if !self.logs.contains_key(&run) && self.logs.len() >= self.limits.runs {
            let least_recent = self
                .logs
                .iter()
                .min_by_key(|(_, log)| log.published)
                .map(|(run, _)| *run);
            if let Some(least_recent) = least_recent {
                self.free(least_recent);
            }
        }
    }

    /// Appends `text` to `run`'s open log as its next seq, within the bounds per run and on
    /// the project's bytes.
    fn push(&mut self, run: RunId, now: Instant, text: Arc<str>) {
        let Some(log) = self.logs.get_mut(&run) else {
            return;
        };
        log.last += 1;
        log.published = now;
        let added = text.len();
        log.frames.push_back(text);
        let over = if log.frames.len() > self.limits.per_run {
            log.frames.pop_front().map_or(0, |oldest| oldest.len())
        } else {
            0
        };
        self.hold(added);
        self.release(over);
        self.shed_bytes();
    }

    /// Drops the oldest frames of the runs that published least recently until the frames
    /// kept fit the project's bytes and the server's (a run keeps its numbering when it
    /// keeps no frame).
    fn shed_bytes(&mut self) {
        while self.over_bounds() {
            let least_recent = self
                .logs
                .values_mut()
                .filter(|log| !log.frames.is_empty())
                .min_by_key(|log| log.published);
            let Some(oldest) = least_recent.and_then(|log| log.frames.pop_front()) else {
                return;
            };
            self.release(oldest.len());
        }
    }

    /// The frames of `run` after seq `since`, oldest first; `since` 0 means none was seen,
    /// so the answer starts at the run's current numbering. A run without a log has nothing
    /// to offer from 0, and has freed whatever came after any other seq.
    pub(crate) fn after(&self, run: RunId, since: u64) -> Result<Vec<Arc<str>>, ReplayError> {
        let Some(log) = self.logs.get(&run) else {
            return match since {
                0 => Ok(Vec::new()),
                _ => Err(ReplayError::NotKept { since }),
            };
        };
        if since > log.last {
            return Err(ReplayError::Ahead {
                since,
                latest: log.last,
            });
        }
        let seen = if since == 0 { log.start } else { since };
        let oldest = log.oldest();
        if seen + 1 < oldest {
            return Err(ReplayError::NotKept { since });
        }
        let skip = usize::try_from(seen + 1 - oldest).unwrap_or(usize::MAX);
        Ok(log.frames.iter().skip(skip).cloned().collect())
    }

    /// Whether no run's frames are kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }

    /// Frees the runs that published nothing for the `keep` of the limits.
    pub(crate) fn sweep(&mut self, now: Instant) {
        let keep = self.limits.keep;
        let quiet: Vec<RunId> = self
            .logs
            .iter()
            .filter(|(_, log)| now.saturating_duration_since(log.published) >= keep)
            .map(|(run, _)| *run)
            .collect();
        for run in quiet {
            self.free(run);
        }
    }

    fn free(&mut self, run: RunId) {
        if let Some(log) = self.logs.remove(&run) {
            self.floor = self.floor.max(log.last);
            self.release(log.frames.iter().map(|frame| frame.len()).sum());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOCK: u64 = 1_000_000;
    const RUN: RunId = RunId(1);

    fn logs(per_run: usize, runs: usize) -> RunLogs {
        RunLogs::new(
            ReplayLimits {
                per_run,
                runs,
                bytes: usize::MAX,
                server_bytes: usize::MAX,
                keep: Duration::from_secs(60),
            },
            ServerFrames::default(),
        )
    }

    /// A frame of ten bytes naming `seq`.
    fn frame(seq: u64) -> Arc<str> {
        Arc::from(format!("{seq:0>10}"))
    }

    /// Publishes a frame naming its seq; returns the seq.
    fn publish(logs: &mut RunLogs, run: RunId, now: Instant, clock_us: u64) -> u64 {
        let text = logs
            .record(run, now, clock_us, |seq| {
                Ok::<_, ()>(Arc::from(seq.to_string()))
            })
            .unwrap();
        text.parse().unwrap()
    }

    fn seqs(frames: Result<Vec<Arc<str>>, ReplayError>) -> Result<Vec<u64>, ReplayError> {
        frames.map(|frames| frames.iter().map(|text| text.parse().unwrap()).collect())
    }

    #[test]
    fn the_bytes_bound_drops_the_oldest_frames_of_the_least_recent_run_first() {
        let mut logs = RunLogs::new(
            ReplayLimits {
                per_run: 100,
                runs: 4,
                bytes: 40,
                server_bytes: usize::MAX,
                keep: Duration::from_secs(60),
            },
            ServerFrames::default(),
        );
        let start = Instant::now();
        let later = start + Duration::from_secs(1);
        let quiet = RunId(2);
        for seq in 1..=3 {
            assert!(logs.keep_numbered(quiet, start, seq, frame(seq)));
        }
        assert!(logs.keep_numbered(RUN, later, 1, frame(1)));
        assert_eq!(logs.bytes, 40, "four frames of ten bytes fit");
        assert!(logs.keep_numbered(RUN, later, 2, frame(2)));
        assert_eq!(logs.bytes, 40);
        assert_eq!(
            seqs(logs.after(quiet, 1)),
            Ok(vec![2, 3]),
            "the quiet run's oldest went"
        );
        assert_eq!(seqs(logs.after(RUN, 0)), Ok(vec![1, 2]));
        for seq in 3..=5 {
            assert!(logs.keep_numbered(RUN, later, seq, frame(seq)));
        }
        assert_eq!(logs.after(quiet, 1), Err(ReplayError::NotKept { since: 1 }));
        assert_eq!(seqs(logs.after(RUN, 1)), Ok(vec![2, 3, 4, 5]));
        assert_eq!(
            logs.last(quiet),
            Some(3),
            "a run without frames keeps its numbering"
        );
        logs.free(RUN);
        assert_eq!(logs.bytes, 0);
    }

    #[test]
    fn past_the_servers_bytes_the_project_publishing_sheds_its_own_oldest_frames() {
        let server = ServerFrames::default();
        let limits = ReplayLimits {
            per_run: 100,
            runs: 4,
            bytes: 1_000,
            server_bytes: 50,
            keep: Duration::from_secs(60),
        };
        let now = Instant::now();
        let mut quiet = RunLogs::new(limits, server.clone());
        let mut busy = RunLogs::new(limits, server.clone());
        for seq in 1..=3 {
            assert!(quiet.keep_numbered(RUN, now, seq, frame(seq)));
        }
        for seq in 1..=2 {
            assert!(busy.keep_numbered(RUN, now, seq, frame(seq)));
        }
        assert_eq!(server.bytes(), 50, "five frames of ten bytes fit");
        for seq in 3..=4 {
            assert!(busy.keep_numbered(RUN, now, seq, frame(seq)));
        }
        assert_eq!(server.bytes(), 50);
        assert_eq!(seqs(quiet.after(RUN, 0)), Ok(vec![1, 2, 3]), "untouched");
        assert_eq!(seqs(busy.after(RUN, 2)), Ok(vec![3, 4]));
        assert_eq!(busy.after(RUN, 1), Err(ReplayError::NotKept { since: 1 }));
        quiet.sweep(now + Duration::from_secs(60));
        assert_eq!(server.bytes(), 20, "a freed run's frames count no more");
        assert!(busy.keep_numbered(RUN, now, 5, frame(5)));
        assert_eq!(seqs(busy.after(RUN, 2)), Ok(vec![3, 4, 5]), "room again");
    }

    #[test]
    fn frames_numbered_elsewhere_are_kept_in_order_and_numbering_here_goes_on_after_them() {
        let mut logs = logs(8, 4);
        let now = Instant::now();
        let frame = |seq: u64| Arc::from(seq.to_string());
        assert!(logs.keep_numbered(RUN, now, 41, frame(41)));
        assert!(logs.keep_numbered(RUN, now, 42, frame(42)));
        assert!(!logs.keep_numbered(RUN, now, 42, frame(42)), "a repeat");
        assert_eq!(seqs(logs.after(RUN, 40)), Ok(vec![41, 42]));
        assert!(logs.keep_numbered(RUN, now, 45, frame(45)), "after a gap");
        assert_eq!(seqs(logs.after(RUN, 44)), Ok(vec![45]));
        assert_eq!(logs.after(RUN, 42), Err(ReplayError::NotKept { since: 42 }));
        assert_eq!(publish(&mut logs, RUN, now, 1), 46);
        assert_eq!(logs.last(RUN), Some(46));
    }

    #[test]
    fn a_run_is_numbered_from_the_clock_one_by_one_and_replayed_after_any_seq() {
        let mut logs = logs(8, 4);
        let now = Instant::now();
        let first = publish(&mut logs, RUN, now, CLOCK);
        assert_eq!(first, CLOCK + 1);
        for expected in CLOCK + 2..=CLOCK + 4 {
            assert_eq!(publish(&mut logs, RUN, now, CLOCK + 99), expected);
        }
        let all = Ok(vec![CLOCK + 1, CLOCK + 2, CLOCK + 3, CLOCK + 4]);
        assert_eq!(seqs(logs.after(RUN, 0)), all, "since 0: every one");
        assert_eq!(
            seqs(logs.after(RUN, CLOCK)),
            all,
            "since just before the first"
        );
        assert_eq!(
            seqs(logs.after(RUN, CLOCK + 2)),
            Ok(vec![CLOCK + 3, CLOCK + 4])
        );
        assert_eq!(seqs(logs.after(RUN, CLOCK + 4)), Ok(vec![]), "up to date");
        assert_eq!(
            logs.after(RUN, CLOCK + 5),
            Err(ReplayError::Ahead {
                since: CLOCK + 5,
                latest: CLOCK + 4
            })
        );
        assert_eq!(
            logs.after(RUN, CLOCK - 1),
            Err(ReplayError::NotKept { since: CLOCK - 1 }),
            "a seq from before this numbering"
        );
    }

    #[test]
    fn the_oldest_frames_go_first_and_a_replay_needing_them_is_refused() {
        let mut logs = logs(3, 4);
        let now = Instant::now();
        for _ in 0..5 {
            publish(&mut logs, RUN, now, CLOCK);
        }
        assert_eq!(
            seqs(logs.after(RUN, CLOCK + 2)),
            Ok(vec![CLOCK + 3, CLOCK + 4, CLOCK + 5]),
            "just the kept ones"
        );
        assert_eq!(
            logs.after(RUN, CLOCK + 1),
            Err(ReplayError::NotKept { since: CLOCK + 1 }),
            "seq 2 is gone"
        );
        assert_eq!(logs.after(RUN, 0), Err(ReplayError::NotKept { since: 0 }));
    }

    #[test]
    fn keeping_no_frame_still_numbers_and_answers_the_up_to_date() {
        let mut logs = logs(0, 4);
        let now = Instant::now();
        assert_eq!(seqs(logs.after(RUN, 0)), Ok(vec![]), "never published");
        assert_eq!(
            logs.after(RUN, 7),
            Err(ReplayError::NotKept { since: 7 }),
            "no log: whatever followed seq 7 is gone"
        );
        publish(&mut logs, RUN, now, CLOCK);
        assert_eq!(publish(&mut logs, RUN, now, CLOCK), CLOCK + 2);
        assert_eq!(seqs(logs.after(RUN, CLOCK + 2)), Ok(vec![]));
        assert_eq!(
            logs.after(RUN, CLOCK + 1),
            Err(ReplayError::NotKept { since: CLOCK + 1 })
        );
    }

    #[test]
    fn a_frame_that_cannot_be_made_takes_no_seq() {
        let mut logs = logs(8, 4);
        let now = Instant::now();
        let failed = logs.record(RUN, now, CLOCK, |_| Err::<Arc<str>, _>("no"));
        assert_eq!(failed, Err("no"));
        assert_eq!(seqs(logs.after(RUN, 0)), Ok(vec![]));
        assert_eq!(publish(&mut logs, RUN, now, CLOCK), CLOCK + 1);
    }

    #[test]
    fn past_the_bound_the_run_that_published_least_recently_is_freed() {
        let mut logs = logs(8, 2);
        let start = Instant::now();
        let (a, b, c) = (RunId(1), RunId(2), RunId(3));
        publish(&mut logs, a, start, CLOCK);
        publish(&mut logs, b, start + Duration::from_secs(1), CLOCK);
        publish(&mut logs, a, start + Duration::from_secs(2), CLOCK);
        publish(&mut logs, c, start + Duration::from_secs(3), CLOCK);
        assert!(logs.after(a, 0).is_ok_and(|frames| frames.len() == 2));
        assert!(logs.after(c, 0).is_ok_and(|frames| frames.len() == 1));
        assert_eq!(
            logs.after(b, CLOCK + 1),
            Err(ReplayError::NotKept { since: CLOCK + 1 }),
            "b published least recently"
        );
    }

    #[test]
    fn a_freed_run_is_numbered_above_every_seq_it_had_whatever_the_clock_says() {
        let mut logs = logs(8, 1);
        let now = Instant::now();
        let (a, b) = (RunId(1), RunId(2));
        for _ in 0..3 {
            publish(&mut logs, a, now, CLOCK);
        }
        publish(&mut logs, b, now, CLOCK + 1);
        let again = publish(&mut logs, a, now, CLOCK - 500);
        assert_eq!(
            again,
            CLOCK + 5,
            "above a's and b's last (+3, +4), not at the clock"
        );
        assert_eq!(
            logs.after(a, CLOCK + 3),
            Err(ReplayError::NotKept { since: CLOCK + 3 }),
            "the server cannot tell what a client that saw a's last seq missed"
        );
        let later = publish(&mut logs, b, now, CLOCK + 10_000);
        assert_eq!(later, CLOCK + 10_001, "a later clock wins over the floor");
    }

    #[test]
    fn a_run_quiet_for_the_keep_is_freed_by_the_sweep() {
        let mut logs = logs(8, 4);
        let start = Instant::now();
        let keep = Duration::from_secs(60);
        let (quiet, busy) = (RunId(1), RunId(2));
        publish(&mut logs, quiet, start, CLOCK);
        publish(&mut logs, busy, start + Duration::from_secs(1), CLOCK);
        logs.sweep(start + keep - Duration::from_nanos(1));
        assert!(logs.after(quiet, CLOCK + 1).is_ok(), "not yet");
        logs.sweep(start + keep);
        assert_eq!(
            logs.after(quiet, CLOCK + 1),
            Err(ReplayError::NotKept { since: CLOCK + 1 })
        );
        assert!(logs.after(busy, CLOCK + 1).is_ok(), "published later");
        assert_eq!(
            publish(&mut logs, quiet, start + keep, CLOCK),
            CLOCK + 2,
            "numbered above what it had"
        );
    }
}
