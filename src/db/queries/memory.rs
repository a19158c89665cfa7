//! Memory across runs: durable facts per project and server-wide, the history of the facts
//! they replaced (kept by the trigger `trg_memory_fact_replaced`) and of runs' session
//! narratives ([`record_narrative`]), kept within bounds, and transient facts pruned
//! (`hygiene.rs`), the per-project switch, and recall ([`recall_facts`],
//! [`recall_history`]).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use crate::db::backend::per_backend;
use crate::db::ids::{MemoryFactId, MemoryHistoryId, ProjectId, RunId};
use crate::db::models::memory::{MemoryFactForm, MemoryFactRow, MemoryHistoryRow};
use crate::db::schema::{memory_disabled, memory_facts, memory_history};
use crate::db::statement::statement;
use crate::db::{Conn, DbError, MultiBackend};

mod hygiene;
mod recall;
mod words;

pub(crate) use hygiene::{fold_history, prune_transient, HistoryBounds};
pub(crate) use recall::{recall_facts, recall_history};
pub(crate) use words::{query_words, searchable};

/// The history's `reason` of a run's session narrative.
const NARRATIVE: &str = "narrative";

/// What writing a fact did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// No fact had its topic.
    Created,
    /// The fact of its topic had another body, now in the history.
    Replaced,
    /// The fact of its topic already said this.
    Unchanged,
    /// A person set the fact of its topic, which stays: a model's differing fact is not
    /// written.
    KeptPersons,
}

/// A topic as it is stored: trimmed, lower case, runs of white space as one space.
pub(crate) fn normalize_topic(topic: &str) -> String {
    topic
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Writes `form` as the fact of its topic in its layer: a new fact, or the replacement of
/// the one with that topic (whose body the trigger keeps in the history, folded within
/// `bounds`) — unless a person set that one and `form` is not a person's: a person's fact
/// outranks a model's, so it stays and the answer is [`Written::KeptPersons`] with the
/// person's fact. A transient fact written again with the same text is renewed: it counts
/// its runs from `form`'s, and is lasting when `form` is.
pub(crate) fn write_fact(
    conn: &mut Conn,
    form: &MemoryFactForm,
    bounds: HistoryBounds,
) -> Result<(MemoryFactRow, Written), DbError> {
    let topic = normalize_topic(&form.topic);
    let transient = form.transient && !form.by_person;
    let existing = layer_facts(form.project_id)
        .filter(memory_facts::topic.eq(&topic))
        .select(MemoryFactRow::as_select())
        .first(conn)
        .optional()?;
    let (id, written) = match existing {
        Some(fact) if fact.body == form.body && fact.by_person >= form.by_person => {
            if !fact.transient || (transient && fact.run_id == form.run_id) {
                return Ok((fact, Written::Unchanged));
            }
            diesel::update(memory_facts::table.find(fact.id))
                .set((
                    memory_facts::transient.eq(transient),
                    memory_facts::run_id.eq(form.run_id),
                ))
                .execute(conn)?;
            (fact.id, Written::Unchanged)
        }
        Some(fact) if fact.by_person && !form.by_person => return Ok((fact, Written::KeptPersons)),
        Some(fact) => {
            diesel::update(memory_facts::table.find(fact.id))
                .set((
                    memory_facts::body.eq(&form.body),
                    memory_facts::run_id.eq(form.run_id),
                    memory_facts::person.eq(&form.person),
                    memory_facts::by_person.eq(form.by_person),
                    memory_facts::transient.eq(transient),
                    memory_facts::updated_at.eq(diesel::dsl::sql::<Text>("datetime('now')")),
                ))
                .execute(conn)?;
            // The same text a person now vouches for is unchanged, and a person's fact.
            match fact.body == form.body {
                true => (fact.id, Written::Unchanged),
                false => {
                    fold_history(conn, form.project_id, &topic, bounds)?;
                    (fact.id, Written::Replaced)
                }
            }
        }
        None => {
            let id = per_backend!(conn, |conn| diesel::insert_into(memory_facts::table)
                .values((
                    memory_facts::project_id.eq(form.project_id),
                    memory_facts::topic.eq(&topic),
                    memory_facts::body.eq(&form.body),
                    memory_facts::run_id.eq(form.run_id),
                    memory_facts::person.eq(&form.person),
                    memory_facts::by_person.eq(form.by_person),
                    memory_facts::transient.eq(transient),
                ))
                .returning(memory_facts::id)
                .get_result::<MemoryFactId>(conn))?;
            (id, Written::Created)
        }
    };
    let fact = memory_facts::table
        .find(id)
        .select(MemoryFactRow::as_select())
        .first(conn)?;
    Ok((fact, written))
}

/// The facts of one layer: `project`'s, or the server-wide ones for `None`.
fn layer_facts(project: Option<ProjectId>) -> memory_facts::BoxedQuery<'static, MultiBackend> {
    match project {
        Some(project) => memory_facts::table
            .filter(memory_facts::project_id.eq(project))
            .into_boxed(),
        None => memory_facts::table
            .filter(memory_facts::project_id.is_null())
            .into_boxed(),
    }
}

/// The history of one layer.
fn layer_history(project: Option<ProjectId>) -> memory_history::BoxedQuery<'static, MultiBackend> {
    match project {
        Some(project) => memory_history::table
            .filter(memory_history::project_id.eq(project))
            .into_boxed(),
        None => memory_history::table
            .filter(memory_history::project_id.is_null())
            .into_boxed(),
    }
}

/// The facts of a layer, by topic.
pub(crate) fn list_facts(
    conn: &mut Conn,
    project: Option<ProjectId>,
) -> Result<Vec<MemoryFactRow>, DbError> {
    Ok(layer_facts(project)
        .order(memory_facts::topic)
        .select(MemoryFactRow::as_select())
        .load(conn)?)
}

/// The fact `id` of a layer.
#[cfg(test)]
pub(crate) fn get_fact(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryFactId,
) -> Result<Option<MemoryFactRow>, DbError> {
    Ok(layer_facts(project)
        .filter(memory_facts::id.eq(id))
        .select(MemoryFactRow::as_select())
        .first(conn)
        .optional()?)
}

/// The history of a layer, newest first.
pub(crate) fn list_history(
    conn: &mut Conn,
    project: Option<ProjectId>,
) -> Result<Vec<MemoryHistoryRow>, DbError> {
    Ok(layer_history(project)
        .order(memory_history::id.desc())
        .select(MemoryHistoryRow::as_select())
        .load(conn)?)
}

/// Erases the fact `id` of a layer (it is not kept in the history); whether there was one.
pub(crate) fn delete_fact(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryFactId,
) -> Result<bool, DbError> {
    let fact = memory_facts::table.filter(memory_facts::id.eq(id));
    let deleted = match project {
        Some(project) => {
            diesel::delete(fact.filter(memory_facts::project_id.eq(project))).execute(conn)?
        }
        None => diesel::delete(fact.filter(memory_facts::project_id.is_null())).execute(conn)?,
    };
    Ok(deleted > 0)
}

/// Erases the history item `id` of a layer; whether there was one.
pub(crate) fn delete_history(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryHistoryId,
) -> Result<bool, DbError> {
    let item = memory_history::table.filter(memory_history::id.eq(id));
    let deleted = match project {
        Some(project) => {
            diesel::delete(item.filter(memory_history::project_id.eq(project))).execute(conn)?
        }
        None => diesel::delete(item.filter(memory_history::project_id.is_null())).execute(conn)?,
    };
    Ok(deleted > 0)
}

/// Whether memory is on for `project` (it is unless switched off).
pub(crate) fn is_enabled(conn: &mut Conn, project: ProjectId) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Off {
        #[diesel(sql_type = BigInt)]
        off: i64,
    }
    let off: Off = statement("SELECT COUNT(*) AS off FROM memory_disabled WHERE project_id = ?")
        .bind::<BigInt, _>(project)
        .get_result(conn)?;
    Ok(off.off == 0)
}

/// Switches memory on or off for `project`; `person` is who switched it off.
pub(crate) fn set_enabled(
    conn: &mut Conn,
    project: ProjectId,
    enabled: bool,
    person: Option<&str>,
) -> Result<(), DbError> {
    if enabled {
        diesel::delete(memory_disabled::table.find(project)).execute(conn)?;
    } else {
        statement(
            "INSERT INTO memory_disabled (project_id, person) VALUES (?, ?) \
             ON CONFLICT (project_id) DO NOTHING",
        )
        .bind::<BigInt, _>(project.0)
        .bind::<Nullable<Text>, _>(person)
        .execute(conn)?;
    }
    Ok(())
}

/// Keeps `body` as `run`'s session narrative in `project`'s history under `topic`, in
/// place of the one the run kept before (a run has one narrative: its latest, which keeps
/// the count of the items folded into the one it replaces), the history folded within
/// `bounds`.
pub(crate) fn record_narrative(
    conn: &mut Conn,
    project: ProjectId,
    run: RunId,
    topic: &str,
    body: &str,
    bounds: HistoryBounds,
) -> Result<(), DbError> {
    let topic = normalize_topic(topic);
    let earlier = memory_history::table
        .filter(memory_history::project_id.eq(project))
        .filter(memory_history::run_id.eq(run))
        .filter(memory_history::reason.eq(NARRATIVE));
    let replaced: Vec<(String, i32)> = earlier
        .select((memory_history::topic, memory_history::folded))
        .load(conn)?;
    diesel::delete(earlier).execute(conn)?;
    let mut folded = 0;
    for (earlier_topic, count) in replaced {
        match earlier_topic == topic {
            true => folded += count,
            false => hygiene::hand_down(conn, Some(project), &earlier_topic, count)?,
        }
    }
    diesel::insert_into(memory_history::table)
        .values((
            memory_history::project_id.eq(project),
            memory_history::topic.eq(&topic),
            memory_history::body.eq(body),
            memory_history::reason.eq(NARRATIVE),
            memory_history::run_id.eq(run),
            memory_history::written_at.eq(diesel::dsl::sql::<Text>("datetime('now')")),
            memory_history::folded.eq(folded),
        ))
        .execute(conn)?;
    fold_history(conn, Some(project), &topic, bounds)?;
    Ok(())
}

#[cfg(test)]
mod tests;
