//! The ledger's queries (`model_calls`, one row per answered model call, written only by
//! `llm::Ledger`): recording a call with its run's person and project, a run's calls by
//! purpose (its own, and under `subagent` those of the runs it delegated sub-tasks to and
//! theirs: `run/state` and `getRun` report it), and the `usage/report` sums over a time
//! range, grouped by person, project, model, purpose or day; and for the caps, what a
//! scope spent in a period ([`spent`]), whom a run's calls count for ([`spender`]), a run's
//! own caps, and the warnings sent at each cap's warning share ([`first_warning`]).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Binary, Bool, Integer, Nullable, Text};

use crate::db::ids::ProjectId;
use crate::db::ids::RunId;
use crate::db::models::run::{ModelCallForm, PurposeUsage};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};
use crate::usage::{Micros, Spent, Standing, Tokens, UtcTime};

/// The columns of a usage sum over `model_calls` rows: the calls, each token count, the cost.
macro_rules! sums {
    () => {
        "COUNT(*) AS calls, \
         CAST(SUM(prompt_tokens) AS BIGINT) AS prompt_tokens, \
         CAST(SUM(cached_tokens) AS BIGINT) AS cached_tokens, \
         CAST(SUM(completion_tokens) AS BIGINT) AS completion_tokens, \
         CAST(SUM(reasoning_tokens) AS BIGINT) AS reasoning_tokens, \
         CAST(SUM(total_tokens) AS BIGINT) AS total_tokens, \
         CAST(SUM(cost_micros) AS BIGINT) AS cost_micros"
    };
}

/// Records one answered model call made for a run, under the run's person and project;
/// that project's id and name.
pub(crate) fn record_call(
    conn: &mut Conn,
    form: &ModelCallForm,
) -> Result<(ProjectId, String), DbError> {
    #[derive(QueryableByName)]
    struct Recorded {
        #[diesel(sql_type = BigInt)]
        id: i64,
        #[diesel(sql_type = Text)]
        project: String,
    }
    let tokens = &form.tokens;
    statement(
        "INSERT INTO model_calls (run_id, loop_id, turn, purpose, model, prompt_tokens, \
                                  cached_tokens, completion_tokens, reasoning_tokens, \
                                  total_tokens, cost_micros, created_at, key_of, person, \
                                  project_id) \
         SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, created_by, project_id FROM runs \
         WHERE id = ?",
    )
    .bind::<Nullable<BigInt>, _>(form.loop_id.map(|id| id.0))
    .bind::<Integer, _>(form.turn)
    .bind::<Text, _>(form.purpose.as_str())
    .bind::<Text, _>(&form.model)
    .bind::<BigInt, _>(tokens.prompt_tokens)
    .bind::<BigInt, _>(tokens.cached_tokens)
    .bind::<BigInt, _>(tokens.completion_tokens)
    .bind::<BigInt, _>(tokens.reasoning_tokens)
    .bind::<BigInt, _>(tokens.total_tokens)
    .bind::<BigInt, _>(form.cost.0)
    .bind::<Text, _>(form.at.stored())
    .bind::<Nullable<Text>, _>(form.key_of.as_deref())
    .bind::<BigInt, _>(form.run_id)
    .execute(conn)?;
    let recorded: Recorded = statement(
        "SELECT p.id, p.name AS project FROM runs AS r JOIN projects AS p ON p.id = r.project_id \
         WHERE r.id = ?",
    )
    .bind::<BigInt, _>(form.run_id)
    .get_result(conn)?;
    Ok((ProjectId(recorded.id), recorded.project))
}

/// Whose calls a cap counts, as the store tells them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpendScope {
    Run(RunId),
    /// The runs this person started.
    Person(String),
    Project(ProjectId),
    Server,
}

/// What `scope` spent in `[from, to)`: total tokens and money; a run's calls include those
/// of the runs it delegated sub-tasks to, and theirs. One statement per scope, so each reads
/// its own index: a run's calls, a person's or a project's in the range; the server's are
/// every call in the range.
pub(crate) fn spent(
    conn: &mut Conn,
    scope: &SpendScope,
    from: UtcTime,
    to: UtcTime,
) -> Result<Spent, DbError> {
    #[derive(QueryableByName)]
    struct Sum {
        #[diesel(sql_type = BigInt)]
        tokens: i64,
        #[diesel(sql_type = BigInt)]
        cost: i64,
    }
    macro_rules! spent_where {
        ($condition:literal) => {
            concat!(
                "SELECT CAST(COALESCE(SUM(total_tokens), 0) AS BIGINT) AS tokens, \
                        CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) AS cost \
                 FROM model_calls WHERE created_at >= ? AND created_at < ? AND ",
                $condition
            )
        };
    }
    let (from, to) = (from.stored(), to.stored());
    let sum: Sum = match scope {
        SpendScope::Run(run) => statement(concat!(
            "WITH RECURSIVE tree (id) AS ( \
                 SELECT id FROM runs WHERE id = ? \
                 UNION ALL SELECT r.id FROM runs AS r JOIN tree AS t ON r.delegated_by = t.id) ",
            spent_where!("run_id IN (SELECT id FROM tree)")
        ))
        .bind::<BigInt, _>(*run)
        .bind::<Text, _>(&from)
        .bind::<Text, _>(&to)
        .get_result(conn)?,
        SpendScope::Person(person) => statement(spent_where!("person = ?"))
            .bind::<Text, _>(&from)
            .bind::<Text, _>(&to)
            .bind::<Text, _>(person)
            .get_result(conn)?,
        SpendScope::Project(project) => statement(spent_where!("project_id = ?"))
            .bind::<Text, _>(&from)
            .bind::<Text, _>(&to)
            .bind::<BigInt, _>(*project)
            .get_result(conn)?,
        SpendScope::Server => statement(spent_where!("TRUE"))
            .bind::<Text, _>(&from)
            .bind::<Text, _>(&to)
            .get_result(conn)?,
    };
    Ok(Spent {
        tokens: sum.tokens,
        cost: Micros(sum.cost),
    })
}

/// Whom a run's calls count for: the run whose caps hold them (itself, or for a sub-agent's
/// run the run that delegated the first sub-task), its alias, its person (none: the
/// operator or the server), its project's id and name, and the caps its starter gave it
/// (JSON, `CapLimits`).
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct Spender {
    #[diesel(sql_type = BigInt)]
    pub run: RunId,
    #[diesel(sql_type = Text)]
    pub alias: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub person: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub project_id: i64,
    #[diesel(sql_type = Text)]
    pub project: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub caps: Option<String>,
}

/// Whom run `run`'s calls count for.
pub(crate) fn spender(conn: &mut Conn, run: RunId) -> Result<Spender, DbError> {
    Ok(statement(
        "WITH RECURSIVE up (id, delegated_by) AS ( \
             SELECT id, delegated_by FROM runs WHERE id = ? \
             UNION ALL SELECT r.id, r.delegated_by FROM runs AS r JOIN up ON r.id = up.delegated_by) \
         SELECT r.id AS run, r.alias, r.created_by AS person, r.project_id, p.name AS project, \
                r.caps \
         FROM up JOIN runs AS r ON r.id = up.id JOIN projects AS p ON p.id = r.project_id \
         WHERE up.delegated_by IS NULL",
    )
    .bind::<BigInt, _>(run)
    .get_result(conn)?)
}

/// Whom a call of run `run` to `provider` counts for, whether its project requires its
/// starter's own key, and that person's key for `provider`, sealed, when they have one: one
/// statement, [`spender`]'s with the two joined.
#[derive(QueryableByName)]
pub(crate) struct Paying {
    #[diesel(embed)]
    pub spender: Spender,
    #[diesel(sql_type = Bool)]
    pub keys_required: bool,
    #[diesel(sql_type = Nullable<Binary>)]
    pub sealed: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    pub key_id: Option<String>,
}

/// [`Paying`] for a call of run `run` to `provider` (its slug).
pub(crate) fn paying(conn: &mut Conn, run: RunId, provider: &str) -> Result<Paying, DbError> {
    Ok(statement(
        "WITH RECURSIVE up (id, delegated_by) AS ( \
             SELECT id, delegated_by FROM runs WHERE id = ? \
             UNION ALL SELECT r.id, r.delegated_by FROM runs AS r JOIN up ON r.id = up.delegated_by) \
         SELECT r.id AS run, r.alias, r.created_by AS person, r.project_id, p.name AS project, \
                r.caps, p.personal_keys_required AS keys_required, s.sealed, s.key_id \
         FROM up JOIN runs AS r ON r.id = up.id JOIN projects AS p ON p.id = r.project_id \
         LEFT JOIN secrets AS s \
             ON s.person = r.created_by AND s.kind = 'provider' AND s.name = ? \
         WHERE up.delegated_by IS NULL",
    )
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(provider)
    .get_result(conn)?)
}

/// Sets the caps run `run`'s starter gave it (JSON, `CapLimits`).
pub(crate) fn set_run_caps(conn: &mut Conn, run: RunId, caps: &str) -> Result<(), DbError> {
    statement("UPDATE runs SET caps = ? WHERE id = ?")
        .bind::<Text, _>(caps)
        .bind::<BigInt, _>(run)
        .execute(conn)?;
    Ok(())
}

/// Notes that `standing` passed its warning share in its period; whether it is the first to (then its
/// warning is sent, once, whichever instance notes it first).
pub(crate) fn first_warning(conn: &mut Conn, standing: &Standing) -> Result<bool, DbError> {
    let inserted = statement(
        "INSERT INTO cap_warnings (scope, subject, period, starts, unit) \
         VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(standing.scope.as_str())
    .bind::<Text, _>(&standing.subject)
    .bind::<Text, _>(standing.limit.period.as_str())
    .bind::<Text, _>(standing.starts.stored())
    .bind::<Text, _>(standing.limit.unit.as_str())
    .execute(conn)?;
    Ok(inserted == 1)
}

/// The run's calls summed by purpose, `turn` first, then `session_notes`, `rerank` and
/// `subagent`; a purpose without calls is left out. A delegated run's own turns (recorded
/// as `subagent`) are its `turn`s.
pub(crate) fn by_purpose(conn: &mut Conn, run: RunId) -> Result<Vec<PurposeUsage>, DbError> {
    Ok(statement(concat!(
        "WITH RECURSIVE delegated (id) AS ( \
             SELECT id FROM runs WHERE delegated_by = ? \
             UNION ALL SELECT r.id FROM runs AS r JOIN delegated AS d ON r.delegated_by = d.id), \
         mine AS ( \
             SELECT CASE WHEN run_id <> ? THEN 'subagent' \
                         WHEN purpose = 'subagent' THEN 'turn' ELSE purpose END AS purpose, \
                    prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, \
                    total_tokens, cost_micros \
             FROM model_calls WHERE run_id = ? OR run_id IN (SELECT id FROM delegated)) \
         SELECT purpose, ",
        sums!(),
        " FROM mine GROUP BY purpose \
         ORDER BY CASE purpose WHEN 'turn' THEN 0 WHEN 'session_notes' THEN 1 \
                               WHEN 'rerank' THEN 2 ELSE 3 END"
    ))
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(run)
    .load(conn)?)
}

/// What a usage report is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum GroupBy {
    /// Who started the runs (none: the operator or the server).
    Person,
    /// The project's name.
    Project,
    /// The provider model id that answered.
    Model,
    /// `turn`, `session_notes`, `rerank` or `subagent`.
    Purpose,
    /// The UTC day, `YYYY-MM-DD`.
    Day,
}

impl GroupBy {
    fn as_str(self) -> &'static str {
        match self {
            GroupBy::Person => "person",
            GroupBy::Project => "project",
            GroupBy::Model => "model",
            GroupBy::Purpose => "purpose",
            GroupBy::Day => "day",
        }
    }
}

/// Which calls a report sums: those recorded in `[from, to)` (`YYYY-MM-DD HH:MM:SS`,
/// UTC), of one person's runs when `person` is given (`Some(None)`: the runs no person
/// started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReportScope {
    pub from: String,
    pub to: String,
    pub person: Option<Option<String>>,
}

/// One group of a usage report.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub(crate) struct ReportRow {
    /// The person, project, model, purpose or day; `None`: no person.
    #[diesel(sql_type = Nullable<Text>)]
    pub key: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub calls: i64,
    #[diesel(embed)]
    pub tokens: Tokens,
    #[diesel(sql_type = BigInt)]
    pub cost_micros: i64,
}

/// The calls in `scope` summed by `by`, the costliest group first (then by key).
pub(crate) fn report(
    conn: &mut Conn,
    by: GroupBy,
    scope: &ReportScope,
) -> Result<Vec<ReportRow>, DbError> {
    let (any_person, person) = match &scope.person {
        None => (true, None),
        Some(person) => (false, person.as_deref()),
    };
    Ok(statement(concat!(
        "WITH grouped AS ( \
             SELECT CASE ? WHEN 'person' THEN c.person WHEN 'project' THEN p.name \
                           WHEN 'model' THEN c.model WHEN 'purpose' THEN c.purpose \
                           ELSE substr(c.created_at, 1, 10) END AS key, \
                    c.prompt_tokens, c.cached_tokens, c.completion_tokens, \
                    c.reasoning_tokens, c.total_tokens, c.cost_micros \
             FROM model_calls AS c JOIN projects AS p ON p.id = c.project_id \
             WHERE c.created_at >= ? AND c.created_at < ? \
               AND (? OR c.person = ? OR (c.person IS NULL AND ? IS NULL))) \
         SELECT key, ",
        sums!(),
        " FROM grouped GROUP BY key ORDER BY cost_micros DESC, key"
    ))
    .bind::<Text, _>(by.as_str())
    .bind::<Text, _>(&scope.from)
    .bind::<Text, _>(&scope.to)
    .bind::<diesel::sql_types::Bool, _>(any_person)
    .bind::<Nullable<Text>, _>(person)
    .bind::<Nullable<Text>, _>(person)
    .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::CallPurpose;
    use crate::db::testing::{sample_run, TestDb};
    use crate::usage::Micros;

    fn call(run: RunId, purpose: CallPurpose, tokens: i64, cost: i64) -> ModelCallForm {
        ModelCallForm {
            run_id: run,
            loop_id: None,
            turn: 1,
            purpose,
            model: "openai/m".into(),
            tokens: Tokens {
                prompt_tokens: tokens,
                completion_tokens: 1,
                total_tokens: tokens + 1,
                ..Tokens::default()
            },
            cost: Micros(cost),
            at: UtcTime::parse_stored("2026-06-01 10:00:00").unwrap(),
            key_of: None,
        }
    }

    /// Records `form` as the schema before `key_of` (2026-12-27) took it.
    fn record_before_key_of(conn: &mut Conn, form: &ModelCallForm) {
        let tokens = &form.tokens;
        statement(
            "INSERT INTO model_calls (run_id, turn, purpose, model, prompt_tokens, \
                                      cached_tokens, completion_tokens, reasoning_tokens, \
                                      total_tokens, cost_micros, created_at, person, project_id) \
             SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, created_by, project_id FROM runs \
             WHERE id = ?",
        )
        .bind::<Integer, _>(form.turn)
        .bind::<Text, _>(form.purpose.as_str())
        .bind::<Text, _>(&form.model)
        .bind::<BigInt, _>(tokens.prompt_tokens)
        .bind::<BigInt, _>(tokens.cached_tokens)
        .bind::<BigInt, _>(tokens.completion_tokens)
        .bind::<BigInt, _>(tokens.reasoning_tokens)
        .bind::<BigInt, _>(tokens.total_tokens)
        .bind::<BigInt, _>(form.cost.0)
        .bind::<Text, _>(form.at.stored())
        .bind::<BigInt, _>(form.run_id)
        .execute(conn)
        .unwrap();
    }

    fn delegate(conn: &mut Conn, child: RunId, parent: RunId) {
        statement("UPDATE runs SET delegated_by = ? WHERE id = ?")
            .bind::<BigInt, _>(parent)
            .bind::<BigInt, _>(child)
            .execute(conn)
            .unwrap();
    }

    fn started_by(conn: &mut Conn, run: RunId, person: &str) {
        statement("UPDATE runs SET created_by = ? WHERE id = ?")
            .bind::<Text, _>(person)
            .bind::<BigInt, _>(run)
            .execute(conn)
            .unwrap();
    }

    #[test]
    fn a_scope_s_spending_is_summed_over_its_period_by_the_recorded_time() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        started_by(conn, run, "ada");
        let other = sample_run(conn).id;
        let at = |text: &str| UtcTime::parse_stored(text).unwrap();
        let mut late = call(run, CallPurpose::Turn, 100, 10);
        late.at = at("2026-06-01 23:59:59");
        record_call(conn, &late).unwrap();
        let mut next_day = call(run, CallPurpose::Rerank, 1000, 100);
        next_day.at = at("2026-06-02 00:00:00");
        record_call(conn, &next_day).unwrap();
        record_call(conn, &call(other, CallPurpose::Turn, 10, 1)).unwrap();
        let june_first = (at("2026-06-01 00:00:00"), at("2026-06-02 00:00:00"));
        let spent_on = |conn: &mut Conn, scope: SpendScope, (from, to)| {
            let spent = spent(conn, &scope, from, to).unwrap();
            (spent.tokens, spent.cost.0)
        };
        assert_eq!(spent_on(conn, SpendScope::Run(run), june_first), (101, 10));
        assert_eq!(
            spent_on(conn, SpendScope::Person("ada".into()), june_first),
            (101, 10)
        );
        assert_eq!(
            spent_on(conn, SpendScope::Person("bo".into()), june_first),
            (0, 0)
        );
        let project = spender(conn, run).unwrap().project_id;
        let project = SpendScope::Project(ProjectId(project));
        assert_eq!(spent_on(conn, project, june_first), (101 + 11, 11));
        assert_eq!(spent_on(conn, SpendScope::Server, june_first), (112, 11));
        let june = (at("2026-06-01 00:00:00"), at("2026-07-01 00:00:00"));
        assert_eq!(spent_on(conn, SpendScope::Run(run), june), (1102, 110));
        let child = sample_run(conn).id;
        let grandchild = sample_run(conn).id;
        delegate(conn, child, run);
        delegate(conn, grandchild, child);
        record_call(conn, &call(grandchild, CallPurpose::Subagent, 4, 2)).unwrap();
        assert_eq!(
            spent_on(conn, SpendScope::Run(run), june),
            (1107, 112),
            "a sub-agent's calls count for the run that delegated"
        );
        assert_eq!(spent_on(conn, SpendScope::Run(child), june), (5, 2));
    }

    #[test]
    fn a_run_s_spender_and_caps_are_read_back() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        started_by(conn, run, "ada");
        assert_eq!(spender(conn, run).unwrap().caps, None);
        set_run_caps(conn, run, r#"{"day_tokens":5}"#).unwrap();
        let child = sample_run(conn).id;
        let grandchild = sample_run(conn).id;
        delegate(conn, child, run);
        delegate(conn, grandchild, child);
        for counted in [run, child, grandchild] {
            let spender = spender(conn, counted).unwrap();
            assert_eq!(
                spender.run, run,
                "a sub-agent's calls count for its delegator"
            );
            assert_eq!(spender.person.as_deref(), Some("ada"));
            assert_eq!(spender.project, "p");
            assert_eq!(spender.caps.as_deref(), Some(r#"{"day_tokens":5}"#));
        }
    }

    #[test]
    fn a_cap_s_warning_is_noted_once_per_cap_and_period() {
        use crate::usage::{Limit, Period, Scope, Unit};
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let limit = Limit {
            period: Period::Day,
            unit: Unit::Tokens,
            amount: 10,
        };
        let at = |text: &str| UtcTime::parse_stored(text).unwrap();
        let standing = |scope, unit, now| {
            let limit = Limit { unit, ..limit };
            Standing::new(scope, "ada", limit, Spent::default(), at(now))
        };
        let morning = standing(Scope::Person, Unit::Tokens, "2026-06-01 08:00:00");
        assert!(first_warning(conn, &morning).unwrap());
        let evening = standing(Scope::Person, Unit::Tokens, "2026-06-01 20:00:00");
        assert!(!first_warning(conn, &evening).unwrap(), "the same day");
        let dollars = standing(Scope::Person, Unit::Dollars, "2026-06-01 20:00:00");
        assert!(first_warning(conn, &dollars).unwrap(), "another cap");
        let project = standing(Scope::Project, Unit::Tokens, "2026-06-01 20:00:00");
        assert!(first_warning(conn, &project).unwrap(), "another scope");
        let tomorrow = standing(Scope::Person, Unit::Tokens, "2026-06-02 08:00:00");
        assert!(first_warning(conn, &tomorrow).unwrap(), "the next day");
    }

    fn all_time() -> ReportScope {
        ReportScope {
            from: "0000-01-01 00:00:00".into(),
            to: "9999-12-31 23:59:59".into(),
            person: None,
        }
    }

    fn keyed(rows: Vec<ReportRow>) -> Vec<(Option<String>, i64, i64, i64)> {
        rows.into_iter()
            .map(|row| {
                (
                    row.key,
                    row.calls,
                    row.tokens.prompt_tokens,
                    row.cost_micros,
                )
            })
            .collect()
    }

    #[test]
    fn a_run_s_calls_are_summed_by_purpose_its_sub_agents_under_subagent() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        let child = sample_run(conn).id;
        let grandchild = sample_run(conn).id;
        let stranger = sample_run(conn).id;
        delegate(conn, child, run);
        delegate(conn, grandchild, child);
        record_call(conn, &call(run, CallPurpose::Turn, 100, 10)).unwrap();
        record_call(conn, &call(run, CallPurpose::Turn, 50, 10)).unwrap();
        record_call(conn, &call(run, CallPurpose::Rerank, 7, 0)).unwrap();
        record_call(conn, &call(run, CallPurpose::SessionNotes, 30, 250)).unwrap();
        record_call(conn, &call(run, CallPurpose::SessionNotes, 10, 250)).unwrap();
        record_call(conn, &call(child, CallPurpose::Subagent, 20, 1)).unwrap();
        record_call(conn, &call(child, CallPurpose::SessionNotes, 5, 0)).unwrap();
        record_call(conn, &call(grandchild, CallPurpose::Subagent, 3, 1)).unwrap();
        record_call(conn, &call(stranger, CallPurpose::Turn, 1000, 1)).unwrap();
        let seen: Vec<_> = by_purpose(conn, run)
            .unwrap()
            .into_iter()
            .map(|row| {
                (
                    row.purpose,
                    row.calls,
                    row.tokens.prompt_tokens,
                    row.cost_micros,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (CallPurpose::Turn, 2, 150, 20),
                (CallPurpose::SessionNotes, 2, 40, 500),
                (CallPurpose::Rerank, 1, 7, 0),
                (CallPurpose::Subagent, 3, 28, 2),
            ]
        );
        let of_child: Vec<_> = by_purpose(conn, child)
            .unwrap()
            .into_iter()
            .map(|row| (row.purpose, row.calls))
            .collect();
        assert_eq!(
            of_child,
            [
                (CallPurpose::Turn, 1),
                (CallPurpose::SessionNotes, 1),
                (CallPurpose::Subagent, 1)
            ],
            "a delegated run's own turns are its turns"
        );
    }

    #[test]
    fn a_call_is_recorded_under_its_run_s_person_and_project() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        started_by(conn, run, "ada");
        let project = record_call(conn, &call(run, CallPurpose::Turn, 10, 5)).unwrap();
        assert_eq!(project.1, "p");
        let by_person = report(conn, GroupBy::Person, &all_time()).unwrap();
        assert_eq!(keyed(by_person), [(Some("ada".into()), 1, 10, 5)]);
        let by_project = report(conn, GroupBy::Project, &all_time()).unwrap();
        assert_eq!(keyed(by_project), [(Some("p".into()), 1, 10, 5)]);
    }

    #[test]
    fn a_report_sums_its_range_and_person_by_key_costliest_first() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let ada = sample_run(conn).id;
        started_by(conn, ada, "ada");
        let server = sample_run(conn).id;
        record_call(conn, &call(ada, CallPurpose::Turn, 10, 5)).unwrap();
        record_call(conn, &call(ada, CallPurpose::Rerank, 1, 1)).unwrap();
        record_call(conn, &call(server, CallPurpose::Turn, 20, 7)).unwrap();
        statement("UPDATE model_calls SET created_at = '2026-01-02 10:00:00' WHERE run_id = ?")
            .bind::<BigInt, _>(server)
            .execute(conn)
            .unwrap();
        let by_purpose = report(conn, GroupBy::Purpose, &all_time()).unwrap();
        assert_eq!(
            keyed(by_purpose),
            [
                (Some("turn".into()), 2, 30, 12),
                (Some("rerank".into()), 1, 1, 1)
            ]
        );
        let by_person = report(conn, GroupBy::Person, &all_time()).unwrap();
        assert_eq!(
            keyed(by_person),
            [(None, 1, 20, 7), (Some("ada".into()), 2, 11, 6)]
        );
        let january = ReportScope {
            from: "2026-01-02 00:00:00".into(),
            to: "2026-01-02 10:00:00".into(),
            ..all_time()
        };
        assert_eq!(
            report(conn, GroupBy::Day, &january).unwrap(),
            [],
            "to is exclusive"
        );
        let january = ReportScope {
            from: "2026-01-02 10:00:00".into(),
            to: "2026-01-03 00:00:00".into(),
            ..all_time()
        };
        let by_day = report(conn, GroupBy::Day, &january).unwrap();
        assert_eq!(keyed(by_day), [(Some("2026-01-02".into()), 1, 20, 7)]);
        let of_ada = ReportScope {
            person: Some(Some("ada".into())),
            ..all_time()
        };
        let by_model = report(conn, GroupBy::Model, &of_ada).unwrap();
        assert_eq!(keyed(by_model), [(Some("openai/m".into()), 2, 11, 6)]);
        let of_nobody = ReportScope {
            person: Some(None),
            ..all_time()
        };
        let by_model = report(conn, GroupBy::Model, &of_nobody).unwrap();
        assert_eq!(keyed(by_model), [(Some("openai/m".into()), 1, 20, 7)]);
    }

    /// Reverts the migrations down to the one that priced `model_calls`, that one
    /// included.
    fn before_pricing(conn: &mut Conn) {
        revert_from(conn, "20261202000000");
    }

    /// Reverts the migrations of version `from` and later.
    fn revert_from(conn: &mut Conn, from: &str) {
        use crate::db::connection::{POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
        use diesel_migrations::MigrationHarness;
        let applied = |conn: &mut Conn| -> Vec<String> {
            let versions = match conn {
                Conn::Sqlite(conn) => conn.applied_migrations(),
                Conn::Postgres(conn) => conn.applied_migrations(),
            };
            versions.unwrap().iter().map(ToString::to_string).collect()
        };
        while applied(conn).iter().any(|version| version.as_str() >= from) {
            match conn {
                Conn::Sqlite(conn) => conn.revert_last_migration(SQLITE_MIGRATIONS),
                Conn::Postgres(conn) => conn.revert_last_migration(POSTGRES_MIGRATIONS),
            }
            .unwrap();
        }
    }

    #[test]
    fn the_migration_prices_the_calls_before_it_and_reverts() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        started_by(conn, run, "ada");
        record_call(conn, &call(run, CallPurpose::Turn, 100, 5)).unwrap();
        before_pricing(conn);
        statement(
            "INSERT INTO model_calls (run_id, turn, purpose, prompt_tokens, cost) \
             VALUES (?, 2, 'rerank', 7, 0.0025)",
        )
        .bind::<BigInt, _>(run)
        .execute(conn)
        .unwrap();
        crate::db::connection::run_migrations(conn).unwrap();
        let by_purpose = report(conn, GroupBy::Purpose, &all_time()).unwrap();
        assert_eq!(
            keyed(by_purpose),
            [
                (Some("rerank".into()), 1, 7, 2_500),
                (Some("turn".into()), 1, 100, 5)
            ],
            "the turn's cost came back from dollars"
        );
        let by_person = report(conn, GroupBy::Person, &all_time()).unwrap();
        assert_eq!(keyed(by_person), [(Some("ada".into()), 2, 107, 2_505)]);
    }

    #[test]
    fn the_migration_brings_calls_recorded_past_the_bounds_within_them() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        revert_from(conn, "20261205000000");
        // What an absurd report left: SQLite stored the 64-bit maximum; PostgreSQL's
        // counts are 32-bit, its costs 64-bit.
        let count = match conn {
            Conn::Sqlite(_) => i64::MAX,
            Conn::Postgres(_) => i64::from(i32::MAX),
        };
        let absurd = ModelCallForm {
            tokens: Tokens {
                prompt_tokens: count,
                cached_tokens: count,
                completion_tokens: 7,
                reasoning_tokens: count,
                total_tokens: count,
            },
            cost: Micros(i64::MAX),
            ..call(run, CallPurpose::Turn, 0, 0)
        };
        for _ in 0..2 {
            record_before_key_of(conn, &absurd);
        }
        crate::db::connection::run_migrations(conn).unwrap();
        let total = report(conn, GroupBy::Purpose, &all_time()).unwrap();
        assert_eq!(
            total[0].tokens,
            Tokens {
                prompt_tokens: 2_000_000_000,
                cached_tokens: 2_000_000_000,
                completion_tokens: 14,
                reasoning_tokens: 2_000_000_000,
                total_tokens: 4_000_000_000,
            }
        );
        assert_eq!(total[0].cost_micros, 2 * 10_000_000_000);
    }
}
