//! Spend caps as values: what a person, project, the server or a run may spend per UTC day
//! and per UTC month, in tokens and in US dollars ([`CapLimits`] as configured, [`Limits`]
//! checked), the periods they count over ([`Period`]), and where a scope stands against
//! each of its limits ([`Standing`]): reached (no further call), or past its warning share
//! (80 % unless `RUMMY_CAP_WARNING_PERCENT` says otherwise).

use serde::{Deserialize, Serialize};

use super::clock::{Date, UtcTime};
use super::Micros;

mod amount;

/// Caps as the configuration, the users file and `ask`/`act` give them: each absent key is
/// no cap. Tokens count prompt and completion together (`total_tokens`). An amount of the
/// wrong kind (a string, `1.5` tokens) is refused as it is read, saying what it must be;
/// [`CapLimits::checked`] refuses the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CapLimits {
    /// Tokens per UTC day.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "amount::tokens"
    )]
    pub day_tokens: Option<i64>,
    /// US dollars per UTC day.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "amount::dollars"
    )]
    pub day_dollars: Option<f64>,
    /// Tokens per UTC month.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "amount::tokens"
    )]
    pub month_tokens: Option<i64>,
    /// US dollars per UTC month.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "amount::dollars"
    )]
    pub month_dollars: Option<f64>,
}

/// Why caps cannot be taken: the key and what it held.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key} must be {what}, 0 or more (got {value})")]
pub(crate) struct CapError {
    pub key: &'static str,
    what: &'static str,
    value: String,
}

impl CapLimits {
    /// The limits these give; a negative, unbounded or not-a-number amount is refused
    /// naming its key.
    pub(crate) fn checked(&self) -> Result<Limits, CapError> {
        let mut limits = Vec::new();
        for (key, period, tokens) in [
            ("day_tokens", Period::Day, self.day_tokens),
            ("month_tokens", Period::Month, self.month_tokens),
        ] {
            let Some(tokens) = tokens else { continue };
            if tokens < 0 {
                return Err(CapError {
                    key,
                    what: "a whole number of tokens",
                    value: tokens.to_string(),
                });
            }
            limits.push(Limit {
                period,
                unit: Unit::Tokens,
                amount: tokens,
            });
        }
        for (key, period, dollars) in [
            ("day_dollars", Period::Day, self.day_dollars),
            ("month_dollars", Period::Month, self.month_dollars),
        ] {
            let Some(dollars) = dollars else { continue };
            let micros = Micros::from_dollars(dollars).ok_or(CapError {
                key,
                what: "a number of US dollars",
                value: dollars.to_string(),
            })?;
            limits.push(Limit {
                period,
                unit: Unit::Dollars,
                amount: micros.0,
            });
        }
        Ok(Limits(limits))
    }
}

/// The span a cap counts over: the UTC calendar day or month holding the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    Day,
    Month,
}

impl Period {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }

    /// The first second of the period holding `now`, and of the next one (when it resets).
    pub(crate) fn bounds(self, now: UtcTime) -> (UtcTime, UtcTime) {
        let today = now.date();
        match self {
            Period::Day => {
                let starts = UtcTime::of_date(today);
                (starts, UtcTime(starts.0 + 86_400))
            }
            Period::Month => {
                let first = Date { day: 1, ..today };
                let next = match today.month {
                    12 => Date {
                        year: today.year + 1,
                        month: 1,
                        day: 1,
                    },
                    month => Date {
                        month: month + 1,
                        ..first
                    },
                };
                (UtcTime::of_date(first), UtcTime::of_date(next))
            }
        }
    }
}

/// What a cap counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Total tokens (prompt and completion).
    Tokens,
    /// Money, counted in micro-dollars, shown in US dollars.
    Dollars,
}

impl Unit {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Unit::Tokens => "tokens",
            Unit::Dollars => "dollars",
        }
    }
}

/// One cap of a scope: at most `amount` (tokens, or micro-dollars) per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub period: Period,
    pub unit: Unit,
    pub amount: i64,
}

/// A scope's caps, checked; empty: none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Limits(Vec<Limit>);

impl Limits {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Limit> {
        self.0.iter()
    }

    /// Whether there is no cap.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The limit for `period` and `unit`, if there is one.
    pub(crate) fn get(&self, period: Period, unit: Unit) -> Option<i64> {
        self.0
            .iter()
            .find(|limit| limit.period == period && limit.unit == unit)
            .map(|limit| limit.amount)
    }

    /// These limits, each replaced by `over`'s limit of the same period and unit, with
    /// `over`'s others added (a stored cap replaces the configured one).
    pub(crate) fn replaced_by(&self, over: &Limits) -> Limits {
        let mut limits: Vec<Limit> = self
            .0
            .iter()
            .filter(|limit| over.get(limit.period, limit.unit).is_none())
            .copied()
            .collect();
        limits.extend(over.iter().copied());
        Limits(limits)
    }

    /// The first of these limits above the same limit of `bound` (a run's caps may not
    /// exceed its starter's).
    pub(crate) fn above(&self, bound: &Limits) -> Option<(Limit, i64)> {
        self.0.iter().find_map(|limit| {
            bound
                .get(limit.period, limit.unit)
                .filter(|allowed| limit.amount > *allowed)
                .map(|allowed| (*limit, allowed))
        })
    }
}

/// Whose spending a cap limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One run's calls, those of the sub-agents it delegated to included.
    Run,
    /// The calls of the runs a person started.
    Person,
    /// The calls of a project's runs.
    Project,
    /// Every call.
    Server,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Run => "run",
            Scope::Person => "person",
            Scope::Project => "project",
            Scope::Server => "server",
        }
    }
}

/// What a scope spent in a period: total tokens and money.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    pub tokens: i64,
    pub cost: Micros,
}

/// An amount in a cap's unit, as the wire shows it: tokens, or US dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Tokens(i64),
    Dollars(f64),
}

impl Amount {
    pub(crate) fn of(unit: Unit, amount: i64) -> Amount {
        match unit {
            Unit::Tokens => Amount::Tokens(amount),
            Unit::Dollars => Amount::Dollars(Micros(amount).dollars()),
        }
    }
}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Amount::Tokens(tokens) => write!(f, "{tokens} tokens"),
            Amount::Dollars(dollars) => write!(f, "${dollars:.6}"),
        }
    }
}

/// Where one scope stands against one of its caps in the current period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub scope: Scope,
    /// The run's alias, the person's or the project's name; empty for the server.
    pub subject: String,
    pub limit: Limit,
    /// Spent in the period, in the limit's unit.
    pub spent: i64,
    /// The period's first second.
    pub starts: UtcTime,
    /// When the period ends and the cap resets.
    pub resets: UtcTime,
}

/// A standing as the wire shows it (a `-32011` error's `data`, `usage/capReached`,
/// `usage/capWarning` and `usage/caps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingView {
    pub scope: Scope,
    pub subject: String,
    pub period: Period,
    pub unit: Unit,
    pub limit: Amount,
    pub spent: Amount,
    /// What may still be spent (0 once reached).
    pub left: Amount,
    /// The period's end, ISO 8601 UTC.
    pub resets: String,
}

impl Standing {
    /// The scope's limit and what it spent in the period.
    pub(crate) fn new(
        scope: Scope,
        subject: &str,
        limit: Limit,
        spent: Spent,
        now: UtcTime,
    ) -> Standing {
        let (starts, resets) = limit.period.bounds(now);
        Standing {
            scope,
            subject: subject.to_owned(),
            limit,
            spent: match limit.unit {
                Unit::Tokens => spent.tokens,
                Unit::Dollars => spent.cost.0,
            },
            starts,
            resets,
        }
    }

    /// No further call may be made: the period's spending is at its limit or past it.
    pub(crate) fn reached(&self) -> bool {
        self.spent >= self.limit.amount
    }

    /// The spending is at `percent` % of the limit or past it.
    pub(crate) fn past_warning(&self, percent: u8) -> bool {
        i128::from(self.spent) * 100 >= i128::from(self.limit.amount) * i128::from(percent)
    }

    pub(crate) fn view(&self) -> StandingView {
        let unit = self.limit.unit;
        StandingView {
            scope: self.scope,
            subject: self.subject.clone(),
            period: self.limit.period,
            unit,
            limit: Amount::of(unit, self.limit.amount),
            spent: Amount::of(unit, self.spent),
            left: Amount::of(unit, self.limit.amount.saturating_sub(self.spent).max(0)),
            resets: self.resets.iso(),
        }
    }

    /// "the person cap of mo (5 tokens per day) is reached: 6 tokens spent; it resets at …"
    pub(crate) fn describe(&self) -> String {
        let view = self.view();
        let whose = match self.scope {
            Scope::Server => "the server's cap".to_owned(),
            scope => format!("the {} cap of {}", scope.as_str(), self.subject),
        };
        format!(
            "{whose} ({} per {}) is reached: {} spent; it resets at {}",
            view.limit,
            self.limit.period.as_str(),
            view.spent,
            view.resets
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> UtcTime {
        UtcTime::parse_stored(text).unwrap()
    }

    #[test]
    fn a_day_and_a_month_are_utc_calendar_periods() {
        let now = at("2026-12-31 23:59:59");
        assert_eq!(
            Period::Day.bounds(now),
            (at("2026-12-31 00:00:00"), at("2027-01-01 00:00:00"))
        );
        assert_eq!(
            Period::Month.bounds(now),
            (at("2026-12-01 00:00:00"), at("2027-01-01 00:00:00"))
        );
        assert_eq!(
            Period::Month.bounds(at("2028-02-01 00:00:00")),
            (at("2028-02-01 00:00:00"), at("2028-03-01 00:00:00"))
        );
    }

    #[test]
    fn caps_are_checked_naming_the_key() {
        let limits = CapLimits {
            day_tokens: Some(1000),
            month_dollars: Some(2.5),
            ..CapLimits::default()
        }
        .checked()
        .unwrap();
        assert_eq!(limits.get(Period::Day, Unit::Tokens), Some(1000));
        assert_eq!(limits.get(Period::Month, Unit::Dollars), Some(2_500_000));
        assert_eq!(limits.get(Period::Day, Unit::Dollars), None);
        let negative = CapLimits {
            month_tokens: Some(-1),
            ..CapLimits::default()
        };
        assert_eq!(negative.checked().unwrap_err().key, "month_tokens");
        for dollars in [f64::NAN, -0.5, f64::INFINITY] {
            let bad = CapLimits {
                day_dollars: Some(dollars),
                ..CapLimits::default()
            };
            let error = bad.checked().unwrap_err();
            assert_eq!(error.key, "day_dollars");
            assert!(
                error.to_string().starts_with("day_dollars must be"),
                "{error}"
            );
        }
        assert_eq!(CapLimits::default().checked().unwrap(), Limits::default());
    }

    #[test]
    fn a_limit_above_its_bound_is_found() {
        let person = CapLimits {
            day_dollars: Some(1.0),
            ..CapLimits::default()
        }
        .checked()
        .unwrap();
        let run = |dollars| {
            CapLimits {
                day_dollars: Some(dollars),
                month_tokens: Some(5),
                ..CapLimits::default()
            }
            .checked()
            .unwrap()
        };
        assert_eq!(run(1.0).above(&person), None);
        let (limit, allowed) = run(1.5).above(&person).unwrap();
        assert_eq!((limit.amount, allowed), (1_500_000, 1_000_000));
    }

    #[test]
    fn a_limit_of_the_same_period_and_unit_replaces_and_the_others_stay() {
        let configured = CapLimits {
            day_tokens: Some(100),
            month_dollars: Some(5.0),
            ..CapLimits::default()
        }
        .checked()
        .unwrap();
        let stored = CapLimits {
            day_tokens: Some(1_000),
            day_dollars: Some(1.0),
            ..CapLimits::default()
        }
        .checked()
        .unwrap();
        let both = configured.replaced_by(&stored);
        assert_eq!(both.get(Period::Day, Unit::Tokens), Some(1_000));
        assert_eq!(both.get(Period::Day, Unit::Dollars), Some(1_000_000));
        assert_eq!(both.get(Period::Month, Unit::Dollars), Some(5_000_000));
        assert_eq!(both.iter().count(), 3);
        assert_eq!(configured.replaced_by(&Limits::default()), configured);
    }

    #[test]
    fn a_cap_is_reached_at_its_limit_and_warns_from_80_percent() {
        let limit = Limit {
            period: Period::Day,
            unit: Unit::Dollars,
            amount: 1_000,
        };
        let now = at("2026-06-01 10:00:00");
        let standing = |cost| {
            Standing::new(
                Scope::Person,
                "mo",
                limit,
                Spent {
                    tokens: 0,
                    cost: Micros(cost),
                },
                now,
            )
        };
        assert!(!standing(799).past_warning(80));
        assert!(standing(800).past_warning(80));
        assert!(!standing(499).past_warning(50));
        assert!(standing(500).past_warning(50));
        assert!(!standing(999).reached());
        assert!(standing(1_000).reached());
        let reached = standing(1_200);
        assert_eq!(
            reached.describe(),
            "the person cap of mo ($0.001000 per day) is reached: $0.001200 spent; it resets \
             at 2026-06-02T00:00:00Z"
        );
        let view = serde_json::to_value(reached.view()).unwrap();
        assert_eq!(
            view,
            serde_json::json!({"scope": "person", "subject": "mo", "period": "day",
                "unit": "dollars", "limit": 0.001, "spent": 0.0012, "left": 0.0,
                "resets": "2026-06-02T00:00:00Z"})
        );
    }
}
