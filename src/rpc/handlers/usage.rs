//! `usage/report`: what model calls used and cost over a time range, grouped by person,
//! project, model, purpose or day; `usage/caps`: where the spend caps stand. A person sees
//! the calls and caps of the runs they started; an admin (or the operator) everyone's, or
//! one person's.

use serde::{Deserialize, Serialize};

use crate::access::Role;
use crate::db::queries::usage::{self, GroupBy, ReportRow, ReportScope};
use crate::error::AppError;
use crate::hub::notifications::Cost;
use crate::llm::{spender, Spender};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::usage::{Micros, Standing, StandingView, Tokens};

/// The earliest and latest times a report can name.
const EVER: (&str, &str) = ("0000-01-01 00:00:00", "9999-12-31 23:59:59");

/// `usage/report` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReportParams {
    by: GroupBy,
    /// From this UTC time on (`YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`); none: from the first.
    #[serde(default)]
    from: Option<String>,
    /// Before this UTC time; none: to now.
    #[serde(default)]
    to: Option<String>,
    /// Admins only: one person's calls (`""`: the runs no person started).
    #[serde(default)]
    person: Option<String>,
}

#[derive(Serialize)]
struct ReportResult {
    by: GroupBy,
    from: String,
    to: String,
    /// `None`: everyone's.
    person: Option<Option<String>>,
    rows: Vec<RowView>,
    total: TotalView,
}

#[derive(Serialize)]
struct RowView {
    /// The person (null: none), project, model, purpose or day.
    key: Option<String>,
    calls: i64,
    #[serde(flatten)]
    tokens: Tokens,
    #[serde(flatten)]
    cost: Cost,
}

#[derive(Serialize)]
struct TotalView {
    calls: i64,
    #[serde(flatten)]
    tokens: Tokens,
    #[serde(flatten)]
    cost: Cost,
}

/// `usage/caps` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CapsParams {
    /// A run of the project whose own caps are shown too, counted for its starter.
    #[serde(default)]
    run: Option<String>,
    /// Admins only: another person (`""`: the operator).
    #[serde(default)]
    person: Option<String>,
}

#[derive(Serialize)]
struct CapsResult {
    /// Whose: the person (`None`: the operator, or the runs no person started).
    person: Option<String>,
    /// The time the standings are at, ISO 8601 UTC.
    now: String,
    caps: Vec<StandingView>,
}

/// `usage/caps`: each cap the caller's (or the person's, or the run's) calls in this
/// project count against, with what its period spent.
pub(crate) async fn caps(context: CallContext, params: CapsParams) -> Result<Reply, AppError> {
    let binding = context.project()?;
    let person = whose(&context, params.person)?.unwrap_or_else(|| context.person());
    let run = match params.run.as_deref() {
        Some(alias) => Some(find_run(&context, alias).await?),
        None => None,
    };
    if let (Some(run), false) = (&run, context.grant()?.role() >= Role::Admin) {
        if run.created_by != context.person() {
            return Err(AppError::InvalidParam(
                "run: only an admin may see the caps of another person's run".into(),
            ));
        }
    }
    let spending = context.agent.llm.spending().clone();
    let now = spending.clock().now();
    let caller = Spender {
        run: None,
        person,
        project: (binding.id, binding.name.clone()),
    };
    let run = run.map(|run| run.id);
    let (person, standings) = context
        .agent
        .db
        .read(move |conn| {
            let counted = match run {
                Some(run) => spender(conn, run)?,
                None => caller,
            };
            let standings = spending.standings(conn, &counted, now)?;
            Ok((counted.person, standings))
        })
        .await?;
    Reply::of(CapsResult {
        person,
        now: now.iso(),
        caps: standings.iter().map(Standing::view).collect(),
    })
}

/// Whose usage an admin asked for (`Some(None)`: no person's), or `None` for the caller's
/// own; a person who is no admin may ask only for their own.
fn whose(context: &CallContext, asked: Option<String>) -> Result<Option<Option<String>>, AppError> {
    let admin = context.grant()?.role() >= Role::Admin;
    match (admin, asked) {
        (_, None) => Ok(None),
        (true, Some(person)) => Ok(Some(Some(person).filter(|name| !name.is_empty()))),
        (false, Some(_)) => Err(AppError::InvalidParam(
            "person: only an admin may see another person's usage".into(),
        )),
    }
}

/// `usage/report`: the calls of the range summed by the grouping asked.
pub(crate) async fn report(context: CallContext, params: ReportParams) -> Result<Reply, AppError> {
    let from = params
        .from
        .as_deref()
        .map_or(Ok(EVER.0.to_owned()), |from| timestamp("from", from))?;
    let to = params
        .to
        .as_deref()
        .map_or(Ok(EVER.1.to_owned()), |to| timestamp("to", to))?;
    let admin = context.grant()?.role() >= Role::Admin;
    let person = match whose(&context, params.person)? {
        Some(person) => Some(person),
        None if admin => None,
        None => Some(context.person()),
    };
    let scope = ReportScope { from, to, person };
    let asked = scope.clone();
    let rows = context
        .agent
        .db
        .read(move |conn| usage::report(conn, params.by, &asked))
        .await?;
    Reply::of(ReportResult {
        by: params.by,
        total: TotalView {
            calls: rows.iter().map(|row| row.calls).sum(),
            tokens: rows.iter().map(|row| row.tokens).sum(),
            cost: Cost::of(rows.iter().map(|row| Micros(row.cost_micros)).sum()),
        },
        rows: rows.into_iter().map(view).collect(),
        from: scope.from,
        to: scope.to,
        person: scope.person,
    })
}

fn view(row: ReportRow) -> RowView {
    RowView {
        key: row.key,
        calls: row.calls,
        tokens: row.tokens,
        cost: Cost::of(Micros(row.cost_micros)),
    }
}

/// A UTC time as the store writes them (`YYYY-MM-DD HH:MM:SS`), from `YYYY-MM-DD`,
/// `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS[Z]`.
fn timestamp(name: &str, given: &str) -> Result<String, AppError> {
    let given = given.strip_suffix('Z').unwrap_or(given);
    let full = match given.len() {
        10 => format!("{given} 00:00:00"),
        19 => given.replacen('T', " ", 1),
        _ => String::new(),
    };
    let shape = "dddd-dd-dd dd:dd:dd";
    let fits = full.len() == shape.len()
        && full
            .bytes()
            .zip(shape.bytes())
            .all(|(byte, expected)| match expected {
                b'd' => byte.is_ascii_digit(),
                _ => byte == expected,
            });
    if fits {
        Ok(full)
    } else {
        Err(AppError::InvalidParam(format!(
            "{name} must be a UTC date (YYYY-MM-DD) or time (YYYY-MM-DD HH:MM:SS)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_a_date_or_a_date_and_time_in_the_store_s_shape() {
        assert_eq!(
            timestamp("from", "2026-11-27").unwrap(),
            "2026-11-27 00:00:00"
        );
        assert_eq!(
            timestamp("from", "2026-11-27T10:11:12Z").unwrap(),
            "2026-11-27 10:11:12"
        );
        assert_eq!(
            timestamp("to", "2026-11-27 10:11:12").unwrap(),
            "2026-11-27 10:11:12"
        );
        for bad in [
            "2026-11-2",
            "yesterday",
            "2026-11-27 10:11",
            "2026/11/27",
            "2026-11-27X10:11:12",
        ] {
            assert!(timestamp("to", bad).is_err(), "{bad}");
        }
    }
}
