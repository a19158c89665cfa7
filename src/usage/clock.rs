//! The server's clock for spending: the time the ledger writes on each call and the one the
//! caps' periods are cut from ([`Clock`]), and UTC times as the store and the wire write them
//! ([`UtcTime`]). Tests fix it through `rummy::testing`; nothing else does.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A UTC time to the second: seconds since 1970-01-01 00:00:00.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UtcTime(pub i64);

/// A calendar date: year, month 1–12, day 1–31.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Date {
    pub year: i64,
    pub month: u32,
    pub day: u32,
}

const SECONDS_PER_DAY: i64 = 86_400;

impl UtcTime {
    /// The first second of `date`.
    pub(crate) fn of_date(date: Date) -> UtcTime {
        UtcTime(days_from_civil(date) * SECONDS_PER_DAY)
    }

    /// The day this second is in.
    pub(crate) fn date(self) -> Date {
        civil_from_days(self.0.div_euclid(SECONDS_PER_DAY))
    }

    /// As the store writes times: `YYYY-MM-DD HH:MM:SS`.
    pub(crate) fn stored(self) -> String {
        let Date { year, month, day } = self.date();
        let second = self.0.rem_euclid(SECONDS_PER_DAY);
        format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
            second / 3600,
            second / 60 % 60,
            second % 60
        )
    }

    /// As the wire writes times: ISO 8601, `YYYY-MM-DDTHH:MM:SSZ`.
    pub(crate) fn iso(self) -> String {
        format!("{}Z", self.stored().replacen(' ', "T", 1))
    }

    /// A time the store wrote (`YYYY-MM-DD HH:MM:SS`), or `None`: how tests fix the clock.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn parse_stored(text: &str) -> Option<UtcTime> {
        let number = |range: std::ops::Range<usize>| -> Option<i64> {
            let digits = text.get(range)?;
            digits
                .bytes()
                .all(|byte| byte.is_ascii_digit())
                .then(|| digits.parse().ok())?
        };
        let shape_ok = text.len() == 19
            && text.as_bytes()[4] == b'-'
            && text.as_bytes()[7] == b'-'
            && text.as_bytes()[10] == b' '
            && text.as_bytes()[13] == b':'
            && text.as_bytes()[16] == b':';
        if !shape_ok {
            return None;
        }
        let month = u32::try_from(number(5..7)?)
            .ok()
            .filter(|m| (1..=12).contains(m))?;
        let day = u32::try_from(number(8..10)?)
            .ok()
            .filter(|d| (1..=31).contains(d))?;
        let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let date = Date {
            year: number(0..4)?,
            month,
            day,
        };
        Some(UtcTime(
            UtcTime::of_date(date).0 + hour * 3600 + minute * 60 + second,
        ))
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(Date { year, month, day }: Date) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The civil date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> Date {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    Date {
        year,
        month: u32::try_from(month).unwrap_or(1),
        day: u32::try_from(day).unwrap_or(1),
    }
}

/// The time now: the system's, unless a test fixed it. Cheap to clone; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    /// The fixed time, or [`Clock::SYSTEM`].
    fixed: Arc<AtomicI64>,
    /// Told when a test fixes the time, so the one watching the periods' ends
    /// (`agent::paused::watch`) looks again without waiting for its timer.
    fixed_again: Arc<tokio::sync::Notify>,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock {
            fixed: Arc::new(AtomicI64::new(Clock::SYSTEM)),
            fixed_again: Arc::default(),
        }
    }
}

impl Clock {
    /// The value of `fixed` that follows the system's time.
    const SYSTEM: i64 = i64::MIN;

    pub(crate) fn now(&self) -> UtcTime {
        match self.fixed.load(Ordering::Acquire) {
            Clock::SYSTEM => UtcTime(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |since| {
                        i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
                    }),
            ),
            fixed => UtcTime(fixed),
        }
    }

    /// From now on the time is `at` until set again (a test's clock).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn fix(&self, at: UtcTime) {
        self.fixed.store(at.0, Ordering::Release);
        self.fixed_again.notify_one();
    }

    /// Returns once a test fixed the time again (never, on a server's system clock).
    pub(crate) async fn changed(&self) {
        self.fixed_again.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_the_store_s_text() {
        for text in [
            "1970-01-01 00:00:00",
            "2000-02-29 23:59:59",
            "2026-12-31 12:34:56",
            "2100-03-01 00:00:01",
        ] {
            let time = UtcTime::parse_stored(text).unwrap();
            assert_eq!(time.stored(), text);
        }
        assert_eq!(UtcTime(0).iso(), "1970-01-01T00:00:00Z");
        assert_eq!(
            UtcTime::parse_stored("2026-11-28 00:00:00").unwrap().0,
            1_795_824_000
        );
        for bad in [
            "2026-13-01 00:00:00",
            "2026-11-28T00:00:00",
            "2026-11-28 24:00:00",
            "",
        ] {
            assert_eq!(UtcTime::parse_stored(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_fixed_clock_tells_its_time_and_its_clones_share_it() {
        let clock = Clock::default();
        assert!(clock.now().0 > 1_700_000_000, "the system's time");
        let shared = clock.clone();
        clock.fix(UtcTime(42));
        assert_eq!(shared.now(), UtcTime(42));
    }
}
