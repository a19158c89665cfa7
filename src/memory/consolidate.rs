//! Consolidation after a loop ends and before a panic loop compresses the context (a
//! panic's notes would otherwise wait for the end of the retry, which an abort or a failure
//! may never reach): the session notes' decisions and constraints become
//! facts of the project, each under its topic, and the notes' narrative (state, intent,
//! work log) moves to the project's history under the notes' title, one per run, where a
//! later run's recall finds it after the facts. The rules do it, not a model: the sidecar
//! already chose what lasts and named its topic when it wrote the notes (from the run's log,
//! its `known://` entries among it), so a second call would only pick again what the first
//! picked. The store deduplicates by topic: a fact on a topic the project already has
//! replaces the old one, which the history keeps; the same fact again changes nothing; a
//! topic a person set keeps the person's fact (the notes still say what the model thought).

use crate::db::ids::{ProjectId, RunId};
use crate::db::models::memory::MemoryFactForm;
use crate::db::queries::memory::{self, HistoryBounds, Written};
use crate::db::{Conn, DbError};

use super::notes::SessionNotes;

/// Writes the notes' lasting facts to `project`'s memory and their narrative to its
/// history; how many facts were created or replaced.
pub(super) fn consolidate(
    conn: &mut Conn,
    project: ProjectId,
    run: RunId,
    notes: &SessionNotes,
    history: HistoryBounds,
) -> Result<usize, DbError> {
    let mut changed = 0;
    for item in notes.decisions.iter().chain(&notes.constraints) {
        let fact = item.fact.trim();
        if memory::normalize_topic(&item.topic).is_empty() || fact.is_empty() {
            continue;
        }
        let form = MemoryFactForm {
            project_id: Some(project),
            topic: item.topic.clone(),
            body: fact.to_owned(),
            run_id: Some(run),
            person: None,
            by_person: false,
            transient: item.transient,
        };
        if matches!(
            memory::write_fact(conn, &form, history)?.1,
            Written::Created | Written::Replaced
        ) {
            changed += 1;
        }
    }
    let narrative = notes.narrative();
    if !narrative.is_empty() {
        memory::record_narrative(conn, project, run, &notes.title, &narrative, history)?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_run, TestDb};
    use crate::memory::notes::TopicFact;

    /// Bounds no test here reaches.
    const ROOMY: HistoryBounds = HistoryBounds {
        per_topic: 100,
        items: 100,
    };

    fn topical(topic: &str, fact: &str) -> TopicFact {
        TopicFact {
            topic: topic.into(),
            fact: fact.into(),
            transient: false,
        }
    }

    #[test]
    fn decisions_and_constraints_become_facts_and_a_newer_one_replaces_the_older() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let project = run.project_id;
        let notes = SessionNotes {
            title: "t".into(),
            decisions: vec![
                topical("Auth", "sessions in cookies"),
                topical(" ", "no topic"),
            ],
            constraints: vec![topical("style", "tabs")],
            ..SessionNotes::default()
        };
        assert_eq!(
            consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap(),
            2
        );
        assert_eq!(
            consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap(),
            0
        );
        let newer = SessionNotes {
            decisions: vec![topical("auth", "JWT bearer tokens")],
            ..notes
        };
        assert_eq!(
            consolidate(&mut db.conn, project, run.id, &newer, ROOMY).unwrap(),
            1
        );
        let facts = memory::list_facts(&mut db.conn, Some(project)).unwrap();
        let facts: Vec<_> = facts
            .iter()
            .map(|fact| (fact.topic.as_str(), fact.body.as_str()))
            .collect();
        assert_eq!(facts, [("auth", "JWT bearer tokens"), ("style", "tabs")]);
        let history = memory::list_history(&mut db.conn, Some(project)).unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].body, "sessions in cookies");
    }

    #[test]
    fn a_decision_the_notes_mark_transient_becomes_a_transient_fact() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let project = run.project_id;
        let notes = SessionNotes::from_answer(
            r#"{"title": "t", "decisions": [{"topic": "wip", "fact": "halfway", "transient": true}],
                "constraints": [{"topic": "style", "fact": "tabs"}]}"#,
        )
        .unwrap();
        consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap();
        let facts: Vec<(String, bool)> = memory::list_facts(&mut db.conn, Some(project))
            .unwrap()
            .into_iter()
            .map(|fact| (fact.topic, fact.transient))
            .collect();
        assert_eq!(facts, [("style".into(), false), ("wip".into(), true)]);
        assert_eq!(
            serde_json::to_value(&notes.constraints).unwrap(),
            serde_json::json!([{"topic": "style", "fact": "tabs"}]),
            "a lasting one's JSON is as before"
        );
    }

    #[test]
    fn consolidation_folds_the_history_within_its_bounds() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let project = run.project_id;
        let tight = HistoryBounds {
            per_topic: 1,
            items: 100,
        };
        for fact in ["one", "two", "three"] {
            let notes = SessionNotes {
                title: "t".into(),
                decisions: vec![topical("auth", fact)],
                ..SessionNotes::default()
            };
            consolidate(&mut db.conn, project, run.id, &notes, tight).unwrap();
        }
        let history = memory::list_history(&mut db.conn, Some(project)).unwrap();
        let kept: Vec<(&str, i32)> = history
            .iter()
            .map(|item| (item.body.as_str(), item.folded))
            .collect();
        assert_eq!(kept, [("two", 1)]);
    }

    #[test]
    fn a_topic_a_person_set_keeps_the_person_s_fact() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let project = run.project_id;
        let persons = MemoryFactForm {
            project_id: Some(project),
            topic: "auth".into(),
            body: "sessions in cookies".into(),
            run_id: None,
            person: Some("ada".into()),
            by_person: true,
            transient: false,
        };
        memory::write_fact(&mut db.conn, &persons, ROOMY).unwrap();
        let notes = SessionNotes {
            title: "t".into(),
            decisions: vec![topical("auth", "JWT"), topical("style", "tabs")],
            ..SessionNotes::default()
        };
        assert_eq!(
            consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap(),
            1,
            "only the style"
        );
        let facts = memory::list_facts(&mut db.conn, Some(project)).unwrap();
        assert_eq!(facts[0].body, "sessions in cookies");
        assert!(memory::list_history(&mut db.conn, Some(project))
            .unwrap()
            .iter()
            .all(|item| item.reason == "narrative"));
    }

    #[test]
    fn a_run_keeps_one_narrative_in_the_history_its_latest() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let project = run.project_id;
        let mut notes = SessionNotes {
            title: "Fix Login".into(),
            current_state: "reading".into(),
            work_log: vec!["read auth.rs".into()],
            ..SessionNotes::default()
        };
        consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap();
        notes.current_state = "done".into();
        notes.work_log.push("fixed the token check".into());
        consolidate(&mut db.conn, project, run.id, &notes, ROOMY).unwrap();
        let history = memory::list_history(&mut db.conn, Some(project)).unwrap();
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(
            (history[0].topic.as_str(), history[0].reason.as_str()),
            ("fix login", "narrative")
        );
        assert_eq!(
            history[0].body,
            "Current state: done\nWork log:\n- read auth.rs\n- fixed the token check"
        );
        let recalled = memory::recall_history(&mut db.conn, project, "token check", 8).unwrap();
        assert_eq!(recalled.len(), 1);
        assert_eq!(
            recalled[0].layer,
            crate::db::models::memory::MemoryLayer::Narrative
        );
    }
}
