//! The spend caps held: before every model call ([`Spending::admit`], from
//! `actor::admitted` once the call holds its provider slot, so a run's turns, a
//! sub-agent's, the session notes and the re-rank alike) the spending of each scope the call
//! counts for — its run, the run's person, its project, the server — in the current UTC day
//! and month is read from `model_calls`, and the call is refused when any of their caps is reached. After a call is recorded, each cap
//! that first passed its warning share (`RUMMY_CAP_WARNING_PERCENT`) of its limit in its
//! period is warned about once
//! ([`Spending::warnings`], in the ledger's unit of work).
//!
//! Why concurrent loops overshoot a cap by at most the calls in flight: a call is admitted
//! only once it holds one of its provider's slots, and only while what was recorded before
//! it is below every limit; a call answered is recorded before it gives its slot back.
//! Once the recorded spending reaches a limit no call is admitted, so what is recorded past
//! it comes only from calls admitted before: those holding a slot, in flight, when it was
//! reached, never those queued behind the slots. The sums come from the store every
//! instance shares, so several instances on one PostgreSQL database hold one cap with the
//! same bound: the calls in flight on all of them.

use std::collections::HashMap;
use std::sync::Arc;

use super::personal_keys::PersonalKeys;
use super::StoredCaps;
use crate::db::ids::{ProjectId, RunId};
use crate::db::queries::usage::{self, SpendScope};
use crate::db::{Conn, DbError, DbHandle};
use crate::secrets::Sealed;
use crate::usage::{CapLimits, Clock, Limits, Scope, Standing, UtcTime};

/// The caps an admin configured: the server's, each project's by name, and each person's as
/// the users file says now; and those an admin set at run time, which replace them.
pub(crate) struct CapBook {
    pub server: Limits,
    pub projects: HashMap<String, Limits>,
    /// The share of a cap, in percent, past which it is warned about.
    pub warning_percent: u8,
    /// A person's caps, looked up again on every call (the users file may be reloaded).
    pub people: Box<dyn Fn(&str) -> Limits + Send + Sync>,
    /// Whether anyone has caps in the users file as it says now.
    pub anyone_capped: Box<dyn Fn() -> bool + Send + Sync>,
    /// The caps set at run time (`caps/set`).
    pub stored: StoredCaps,
}

impl CapBook {
    /// The caps of `person`.
    pub(crate) fn person(&self, person: &str) -> Limits {
        (self.people)(person).replaced_by(&self.stored.of(Scope::Person, person))
    }

    /// The caps of the project called `project`.
    pub(crate) fn project(&self, project: &str) -> Limits {
        let configured = self.projects.get(project).cloned().unwrap_or_default();
        configured.replaced_by(&self.stored.of(Scope::Project, project))
    }

    /// The server's caps.
    pub(crate) fn server(&self) -> Limits {
        self.server.replaced_by(&self.stored.of(Scope::Server, ""))
    }

    /// Whether no cap of a person, a project or the server is configured or stored now:
    /// then only a run's own caps can hold a call.
    fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.projects.values().all(Limits::is_empty)
            && self.stored.is_empty()
            && !(self.anyone_capped)()
    }
}

/// What the caller of a model call knows of its run's own caps, read with the run's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunCaps {
    /// Not known: read with the spending.
    Unread,
    /// The run has no caps of its own and spends for no other run (it was not delegated).
    Uncapped,
}

impl RunCaps {
    /// What a run's row says of its caps: its own (`caps`), and whether it spends for the
    /// run that delegated to it (`delegated_by`).
    pub(crate) fn of(caps: Option<&str>, delegated_by: Option<RunId>) -> RunCaps {
        match (caps, delegated_by) {
            (None, None) => RunCaps::Uncapped,
            _ => RunCaps::Unread,
        }
    }
}

/// What clients are told about a cap, on the project of the call that met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CapNotice {
    /// A call was refused: this cap is reached.
    Reached(Standing),
    /// Spending passed the warning share of this cap, the first time in its period.
    Warning(Standing),
}

/// Sends a notice to the clients of a project.
pub(crate) type Notify = Arc<dyn Fn(ProjectId, CapNotice) + Send + Sync>;

/// Whom a call counts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spender {
    /// The run whose caps hold the call (a sub-agent's: its delegator's), its alias and the
    /// caps its starter gave it; `None` for a run not made yet.
    pub run: Option<(RunId, String, Limits)>,
    /// The person who started the run; `None`: the operator or the server.
    pub person: Option<String>,
    pub project: (ProjectId, String),
}

/// What the store holds, at a call's admission, of the key that may pay for it: the run's
/// starter, whether the project requires their own key, and their key for the call's
/// provider, sealed.
pub(crate) struct KeyOnFile {
    pub person: Option<String>,
    pub required: bool,
    pub sealed: Option<Sealed>,
}

impl KeyOnFile {
    /// What admission knows without reading while no person's key can pay: the server's
    /// key pays (`paying`).
    fn none() -> KeyOnFile {
        KeyOnFile {
            person: None,
            required: false,
            sealed: None,
        }
    }
}

/// The caps, the clock their periods are cut from, where notices go, and whether a
/// person's own key may pay. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Spending {
    book: Arc<CapBook>,
    clock: Clock,
    notify: Notify,
    keys: PersonalKeys,
}

impl Spending {
    pub(crate) fn new(book: CapBook, clock: Clock, notify: Notify) -> Spending {
        Spending {
            book: Arc::new(book),
            clock,
            notify,
            keys: PersonalKeys::default(),
        }
    }

    /// No caps, the system's clock, notices dropped.
    #[cfg(test)]
    pub(crate) fn without_caps() -> Spending {
        let book = CapBook {
            server: Limits::default(),
            projects: HashMap::new(),
            warning_percent: 80,
            people: Box::new(|_| Limits::default()),
            anyone_capped: Box::new(|| false),
            stored: StoredCaps::default(),
        };
        Spending::new(book, Clock::default(), Arc::new(|_, _| {}))
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    pub(crate) fn book(&self) -> &CapBook {
        &self.book
    }

    pub(crate) fn personal_keys(&self) -> &PersonalKeys {
        &self.keys
    }

    /// Whether no cap can hold a call of a run whose own caps are `caps`: then nothing is
    /// read, before the call or after it.
    fn uncapped(&self, caps: RunCaps) -> bool {
        caps == RunCaps::Uncapped && self.book.is_empty()
    }

    /// Whether a call for `run` (whose own caps are `caps`) to `provider` (its slug) may be
    /// made now: `Ok(Err(cap))` names the first cap reached (and its notice is sent);
    /// admitted, whose key may pay for it, read in the same statement as whom it counts for
    /// (with no cap that can hold it, that one statement is all that is read; and while no
    /// person's key can pay either, nothing is read: the server's key pays).
    pub(crate) async fn admit(
        &self,
        db: &DbHandle,
        run: RunId,
        caps: RunCaps,
        provider: &'static str,
    ) -> Result<Result<KeyOnFile, Standing>, DbError> {
        let uncapped = self.uncapped(caps);
        if uncapped && !self.keys.possible() {
            return Ok(Ok(KeyOnFile::none()));
        }
        let spending = self.clone();
        let now = self.clock.now();
        let (project, reached, on_file) = db
            .read(move |conn| {
                let paying = usage::paying(conn, run, provider)?;
                let on_file = KeyOnFile {
                    person: paying.spender.person.clone(),
                    required: paying.keys_required,
                    sealed: paying
                        .sealed
                        .zip(paying.key_id)
                        .map(|(bytes, key_id)| Sealed { key_id, bytes }),
                };
                let spender = spender_of(paying.spender);
                let reached = if uncapped {
                    None
                } else {
                    spending.reached(conn, &spender, now)?
                };
                Ok((spender.project.0, reached, on_file))
            })
            .await?;
        match reached {
            Some(cap) => {
                (self.notify)(project, CapNotice::Reached(cap.clone()));
                Ok(Err(cap))
            }
            None => Ok(Ok(on_file)),
        }
    }

    /// The first cap of `spender` reached at `now`: the run's, the person's, the project's,
    /// then the server's.
    pub(crate) fn reached(
        &self,
        conn: &mut Conn,
        spender: &Spender,
        now: UtcTime,
    ) -> Result<Option<Standing>, DbError> {
        Ok(self
            .standings(conn, spender, now)?
            .into_iter()
            .find(Standing::reached))
    }

    /// Where each cap of `spender` stands at `now`, run first, server last.
    pub(crate) fn standings(
        &self,
        conn: &mut Conn,
        spender: &Spender,
        now: UtcTime,
    ) -> Result<Vec<Standing>, DbError> {
        let mut scopes = Vec::new();
        if let Some((run, alias, limits)) = &spender.run {
            scopes.push((
                Scope::Run,
                alias.clone(),
                SpendScope::Run(*run),
                limits.clone(),
            ));
        }
        if let Some(person) = &spender.person {
            let limits = self.book.person(person);
            scopes.push((
                Scope::Person,
                person.clone(),
                SpendScope::Person(person.clone()),
                limits,
            ));
        }
        let (project_id, project) = &spender.project;
        let scope = SpendScope::Project(*project_id);
        scopes.push((
            Scope::Project,
            project.clone(),
            scope,
            self.book.project(project),
        ));
        let server = self.book.server();
        scopes.push((Scope::Server, String::new(), SpendScope::Server, server));
        let mut standings = Vec::new();
        for (scope, subject, counted, limits) in scopes {
            for limit in limits.iter() {
                let (from, to) = limit.period.bounds(now);
                let spent = usage::spent(conn, &counted, from, to)?;
                standings.push(Standing::new(scope, &subject, *limit, spent, now));
            }
        }
        Ok(standings)
    }

    /// In the unit of work that recorded a call of `run` (whose own caps are `caps`) at
    /// `now`: the caps that passed their warning share for the first time in their period,
    /// noted so no one warns of them again.
    pub(crate) fn warnings(
        &self,
        conn: &mut Conn,
        run: RunId,
        caps: RunCaps,
        now: UtcTime,
    ) -> Result<Vec<Standing>, DbError> {
        if self.uncapped(caps) {
            return Ok(Vec::new());
        }
        let spender = spender(conn, run)?;
        let mut warnings = Vec::new();
        for standing in self.standings(conn, &spender, now)? {
            if standing.past_warning(self.book.warning_percent)
                && usage::first_warning(conn, &standing)?
            {
                warnings.push(standing);
            }
        }
        Ok(warnings)
    }

    /// Tells the clients of `project` of each warning.
    pub(crate) fn warn(&self, project: ProjectId, warnings: Vec<Standing>) {
        for standing in warnings {
            (self.notify)(project, CapNotice::Warning(standing));
        }
    }
}

/// Whom run `run`'s calls count for, as the store says: a sub-agent's run counts for the
/// run that delegated to it (its caps, its spending).
pub(crate) fn spender(conn: &mut Conn, run: RunId) -> Result<Spender, DbError> {
    Ok(spender_of(usage::spender(conn, run)?))
}

/// The spender a stored row names.
fn spender_of(row: usage::Spender) -> Spender {
    let limits = match row.caps.as_deref() {
        Some(json) => serde_json::from_str::<CapLimits>(json)
            .ok()
            .and_then(|caps| caps.checked().ok())
            .unwrap_or_default(),
        None => Limits::default(),
    };
    Spender {
        run: Some((row.run, row.alias, limits)),
        person: row.person,
        project: (ProjectId(row.project_id), row.project),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::CallPurpose;
    use crate::db::models::run::ModelCallForm;
    use crate::db::statement::statement;
    use crate::db::testing::{sample_run, TestDb};
    use crate::usage::{Micros, Tokens};
    use diesel::sql_types::{BigInt, Text};
    use diesel::RunQueryDsl;

    fn tokens(amount: i64) -> Limits {
        CapLimits {
            day_tokens: Some(amount),
            ..CapLimits::default()
        }
        .checked()
        .unwrap()
    }

    fn spending(projects: &[(&str, i64)], person: i64, server: i64) -> Spending {
        let book = CapBook {
            server: tokens(server),
            projects: projects
                .iter()
                .map(|(name, amount)| ((*name).to_owned(), tokens(*amount)))
                .collect(),
            warning_percent: 80,
            people: Box::new(move |name| match name {
                "ada" => tokens(person),
                _ => Limits::default(),
            }),
            anyone_capped: Box::new(|| true),
            stored: StoredCaps::default(),
        };
        Spending::new(book, Clock::default(), Arc::new(|_, _| {}))
    }

    #[test]
    fn a_call_counts_against_its_run_person_project_and_the_server_the_first_reached_refusing() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        statement("UPDATE runs SET created_by = 'ada', caps = ? WHERE id = ?")
            .bind::<Text, _>(r#"{"day_tokens": 300}"#)
            .bind::<BigInt, _>(run)
            .execute(conn)
            .unwrap();
        let now = UtcTime::parse_stored("2026-06-01 10:00:00").unwrap();
        usage::record_call(
            conn,
            &ModelCallForm {
                run_id: run,
                loop_id: None,
                turn: 1,
                purpose: CallPurpose::Turn,
                model: "openai/m".into(),
                tokens: Tokens {
                    total_tokens: 200,
                    ..Tokens::default()
                },
                cost: Micros(0),
                at: now,
                key_of: None,
            },
        )
        .unwrap();
        let counted = spender(conn, run).unwrap();
        let caps = spending(&[("p", 250), ("other", 1)], 400, 200);
        let seen: Vec<_> = caps
            .standings(conn, &counted, now)
            .unwrap()
            .into_iter()
            .map(|standing| (standing.scope, standing.limit.amount, standing.spent))
            .collect();
        assert_eq!(
            seen,
            [
                (Scope::Run, 300, 200),
                (Scope::Person, 400, 200),
                (Scope::Project, 250, 200),
                (Scope::Server, 200, 200),
            ],
            "another project's caps do not count"
        );
        let reached = caps.reached(conn, &counted, now).unwrap().unwrap();
        assert_eq!(reached.scope, Scope::Server);
        let warned: Vec<_> = caps
            .warnings(conn, run, RunCaps::Unread, now)
            .unwrap()
            .into_iter()
            .map(|standing| standing.scope)
            .collect();
        assert_eq!(
            warned,
            [Scope::Project, Scope::Server],
            "200 of 250, 200 of 200"
        );
        assert_eq!(
            caps.warnings(conn, run, RunCaps::Unread, now).unwrap(),
            [],
            "once"
        );
        let roomy = spending(&[], 1000, 1000);
        assert_eq!(roomy.reached(conn, &counted, now).unwrap(), None);
    }
}
