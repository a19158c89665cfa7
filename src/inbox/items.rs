//! The inbox's items as a person sees them: which runs are theirs to see, why each is there
//! and since when, their order (newest first) and the strings that name an item (`id`) and a
//! place in the list (`before`).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::access::{Grant, Role};
use crate::db::enums::RunStatus;
use crate::db::ids::RunId;
use crate::db::queries::inbox::Waiting;

/// Why a run is in a person's inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Why {
    /// It waits on proposals the person may resolve.
    Approval,
    /// A spend cap stopped the loop they asked for.
    Capped,
    /// The loop they asked for failed (413: its context did not fit; 500).
    Failed,
    /// The loop they asked for finished.
    Finished,
}

/// One item of an inbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct InboxItem {
    /// What `inbox/dismiss` takes.
    pub id: String,
    /// The project's name.
    pub project: String,
    /// Run alias.
    pub run: String,
    /// The run's first prompt, cut to [`TITLE_MAX`] characters.
    pub title: String,
    pub why: Why,
    pub status: RunStatus,
    /// Since when it is so (ms since the epoch): when the run's latest notification was
    /// written, or its latest loop queued when the event log no longer keeps it.
    pub since: i64,
}

/// A page of an inbox, and where the next begins (`None`: this is the last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct InboxPage {
    pub items: Vec<InboxItem>,
    pub next: Option<String>,
}

/// How long a title may be, in characters.
const TITLE_MAX: usize = 120;

/// An item's id: its run and the run's latest notification when it was listed, so a
/// dismissal holds until the run has something new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ItemId {
    pub run: RunId,
    pub seq: i64,
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.run, self.seq)
    }
}

impl FromStr for ItemId {
    type Err = ();
    fn from_str(text: &str) -> Result<ItemId, ()> {
        let (run, seq) = text.split_once('.').ok_or(())?;
        Ok(ItemId {
            run: RunId(run.parse().map_err(|_| ())?),
            seq: seq.parse().map_err(|_| ())?,
        })
    }
}

/// A place in an inbox: the items after it are older (`since`, then run, both lower).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cursor {
    since: i64,
    run: RunId,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.since, self.run)
    }
}

impl FromStr for Cursor {
    type Err = ();
    fn from_str(text: &str) -> Result<Cursor, ()> {
        let (since, run) = text.split_once('-').ok_or(())?;
        Ok(Cursor {
            since: since.parse().map_err(|_| ())?,
            run: RunId(run.parse().map_err(|_| ())?),
        })
    }
}

/// Why `row` is in the inbox of the caller `grant` speaks for, if it is: they may open its
/// project, and resolve its proposals (member and up) for an approval (a run waiting on
/// its proposals, or an idle one on a person's revert). The query chose the ended runs by
/// whose loop they are (`asked`: a run chosen for its proposal is not theirs otherwise).
pub(crate) fn why(row: &Waiting, grant: &Grant) -> Option<Why> {
    grant.open(&row.project).ok()?;
    let resolves = grant.role() >= Role::Member;
    if row.proposing && resolves {
        return Some(Why::Approval);
    }
    match row.status {
        RunStatus::Proposed => resolves.then_some(Why::Approval),
        _ if !row.asked => None,
        RunStatus::Completed => Some(Why::Finished),
        RunStatus::CapReached => Some(Why::Capped),
        RunStatus::TooLarge | RunStatus::Failed => Some(Why::Failed),
        _ => None,
    }
}

/// The page of `rows` the caller `grant` speaks for sees, newest first, after `before`.
pub(crate) fn page(
    rows: Vec<Waiting>,
    grant: &Grant,
    before: Option<Cursor>,
    limit: usize,
) -> InboxPage {
    let mut items: Vec<(Cursor, InboxItem)> = rows
        .into_iter()
        .filter_map(|row| {
            let why = why(&row, grant)?;
            let since = row.event_ms.unwrap_or_else(|| utc_ms(&row.loop_created_at));
            let cursor = Cursor {
                since,
                run: row.run_id,
            };
            let item = InboxItem {
                id: ItemId {
                    run: row.run_id,
                    seq: row.seq,
                }
                .to_string(),
                project: row.project,
                run: row.alias,
                title: row.first_prompt.chars().take(TITLE_MAX).collect(),
                why,
                status: row.status,
                since,
            };
            Some((cursor, item))
        })
        .filter(|(cursor, _)| before.is_none_or(|before| *cursor < before))
        .collect();
    items.sort_by_key(|(cursor, _)| std::cmp::Reverse(*cursor));
    let next = if items.len() > limit {
        limit
            .checked_sub(1)
            .and_then(|last| items.get(last))
            .map(|(cursor, _)| cursor.to_string())
    } else {
        None
    };
    items.truncate(limit);
    InboxPage {
        items: items.into_iter().map(|(_, item)| item).collect(),
        next,
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC, as the store writes its timestamps) in ms since the epoch; 0
/// for anything else.
fn utc_ms(text: &str) -> i64 {
    let number = |range: std::ops::Range<usize>| -> Option<i64> { text.get(range)?.parse().ok() };
    let parsed = (|| {
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
        // Days from the civil date (Howard Hinnant's algorithm).
        let year = if month <= 2 { year - 1 } else { year };
        let era = year.div_euclid(400);
        let year_of_era = year - era * 400;
        let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        let days = era * 146_097 + day_of_era - 719_468;
        Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
    })();
    parsed.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_timestamps_read_as_milliseconds_since_the_epoch() {
        assert_eq!(utc_ms("1970-01-01 00:00:00"), 0);
        assert_eq!(utc_ms("2024-02-29 12:30:05"), 1_709_209_805_000);
        assert_eq!(utc_ms("yesterday"), 0);
    }

    #[test]
    fn ids_and_cursors_read_back_what_they_write_and_nothing_else() {
        let id = ItemId {
            run: RunId(42),
            seq: 7,
        };
        assert_eq!(id.to_string().parse::<ItemId>(), Ok(id));
        let cursor: Cursor = "1700000000000-42".parse().unwrap();
        assert_eq!(cursor.to_string(), "1700000000000-42");
        for bad in ["", "42", "x.7", "42.x", "1-", "-1", "a-b"] {
            assert!(
                bad.parse::<ItemId>().is_err() || bad.parse::<Cursor>().is_err(),
                "{bad}"
            );
        }
        assert!("oops".parse::<Cursor>().is_err());
        assert!("42.7".parse::<Cursor>().is_err());
    }
}
