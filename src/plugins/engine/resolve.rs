//! Resolving proposals: the client's accept, reject or error for one pending (202) entry.
//!
//! Accept sets 200 and the body (the command output, the user's answer; a file edit keeps
//! its original content as body) and runs the owning tool's side effects on the store: the
//! answer kept as `answer`, a `set://` merge applied to the stored file, an `rm://` file
//! entry removed, a moved file's source removed. Reject sets 403 with the client's reason
//! (default "rejected"); error sets 500 with its output, and still records a user's answer.
//! With `RUMMY_APPLY_EDITS=server` ([`resolve_proposal_on_disk`]) the server also writes,
//! removes, copies or moves the file under the project root (atomically); a change it cannot
//! apply leaves the proposal at 500 with the reason, and one that would write a readonly file
//! at 403.
//! The files an acceptance changed are recorded with who accepted it
//! (`plugins::engine::changed_files`: `run/changes`).
//! What happens to the run afterwards (resume or complete) is the `resolve` verb's
//! (`agent::verbs::resolve`); the outcome says which action was taken and what is still
//! pending.

use std::path::Path;

use crate::db::Conn;
use diesel::Connection;

use crate::db::enums::{EntryStatus, RunStatus};
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::UnresolvedRow;
use crate::db::queries::{entries, proposals, runs};
use crate::plugins::engine::changed_files::Before;
use crate::plugins::engine::readonly::ReadonlyFiles;
use crate::plugins::gather::{Accepting, Gather, Gathered};
use crate::plugins::tool::{ToolError, ToolScope};
use crate::plugins::Plugins;

/// The status of an accepted proposal the server refused to apply because its file is
/// readonly: like a rejection, it stops the run.
const READONLY_REFUSED: EntryStatus = EntryStatus::Forbidden;

/// What the client decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Resolution {
    /// Applied / run; `output` is the result.
    Accept,
    /// Refused by the user.
    Reject,
    /// The client failed to apply or run it.
    Error,
}

impl Resolution {
    /// Parses the wire `action`.
    pub(crate) fn parse(action: &str) -> Result<Resolution, ToolError> {
        match action {
            "accept" => Ok(Resolution::Accept),
            "reject" => Ok(Resolution::Reject),
            "error" => Ok(Resolution::Error),
            other => Err(ToolError::InvalidResolution(other.to_owned())),
        }
    }

    /// The wire `action`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Resolution::Accept => "accept",
            Resolution::Reject => "reject",
            Resolution::Error => "error",
        }
    }

    /// The entry status it leaves.
    pub(crate) fn status(self) -> EntryStatus {
        match self {
            Resolution::Accept => EntryStatus::Ok,
            Resolution::Reject => EntryStatus::Forbidden,
            Resolution::Error => EntryStatus::Failed,
        }
    }
}

/// One resolution request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolveInput {
    pub run_id: RunId,
    /// The proposal's path, as the client received it.
    pub path: String,
    pub resolution: Resolution,
    /// Command output, the user's answer, or a reason.
    pub output: Option<String>,
    /// The resolver claimed the proposal (`db::queries::proposals::claim`) while it carried
    /// out its acceptance; any other resolution of a claimed proposal finds it not pending.
    pub claimed: bool,
    /// Who resolves it (`None`: the operator), recorded with the files an acceptance changed.
    pub by: Option<String>,
}

/// What a resolution did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResolveOutcome {
    /// The resolved entry's path.
    pub path: String,
    /// Its new status.
    pub status: EntryStatus,
    pub resolution: Resolution,
    /// The run's proposals still pending.
    pub remaining: Vec<UnresolvedRow>,
    /// The turn that proposed it, and its loop (none for a client's proposal).
    pub turn: i32,
    pub loop_id: Option<LoopId>,
    /// The run's status as the resolution found it.
    pub run_status: RunStatus,
}

/// Resolves one pending proposal of a run, the client having applied any file change;
/// a path that is not a pending proposal (or one another request claimed) is
/// [`ToolError::NotPending`].
pub(crate) fn resolve_proposal(
    conn: &mut Conn,
    plugins: &Plugins,
    input: &ResolveInput,
    gathered: &mut Gathered,
) -> Result<ResolveOutcome, ToolError> {
    resolve_with(conn, plugins, input, gathered, None)
}

/// [`resolve_proposal`] with the server applying an accepted file change under `root`
/// itself (`RUMMY_APPLY_EDITS=server`). When that fails the proposal ends as 500 with the
/// reason.
pub(crate) fn resolve_proposal_on_disk(
    conn: &mut Conn,
    plugins: &Plugins,
    input: &ResolveInput,
    gathered: &mut Gathered,
    root: &Path,
) -> Result<ResolveOutcome, ToolError> {
    resolve_with(conn, plugins, input, gathered, Some(root))
}

/// What accepting `accepting`'s proposal needs from outside the store: its tool's gather
/// half, to run before the unit of work that resolves it, under the tool's name (`None`
/// when its tool needs nothing, or it has none).
pub(crate) fn acceptance<'a>(
    plugins: &'a Plugins,
    accepting: &'a Accepting<'a>,
) -> Option<(&'static str, Gather<'a>)> {
    let tool = plugins.get(accepting.proposal.scheme.as_deref()?)?;
    let half = tool.gather_acceptance(accepting)?;
    Some((tool.name(), half))
}

/// What `half` obtained, for the tool `tool` finds it under in the resolution's scope.
pub(crate) async fn gathered(half: Option<(&'static str, Gather<'_>)>) -> Gathered {
    match half {
        Some((tool, half)) => Gathered::default().with(tool, half.run().await),
        None => Gathered::default(),
    }
}

fn resolve_with(
    conn: &mut Conn,
    plugins: &Plugins,
    input: &ResolveInput,
    gathered: &mut Gathered,
    disk_root: Option<&Path>,
) -> Result<ResolveOutcome, ToolError> {
    conn.transaction(|conn| {
        let run = runs::get_run(conn, input.run_id)?
            .ok_or_else(|| ToolError::InvalidParams(format!("run {} not found", input.run_id)))?;
        let proposal = proposals::pending(conn, input.run_id, &input.path, input.claimed)?
            .ok_or_else(|| ToolError::NotPending(input.path.clone()))?;
        let scheme = proposal.scheme.clone().unwrap_or_default();
        let tool = plugins.get(&scheme);
        let output = input.output.as_deref().filter(|text| !text.is_empty());
        let keeps_body = tool.is_some_and(|tool| tool.keeps_proposed_body());
        let body = match input.resolution {
            Resolution::Accept if keeps_body && !proposal.body.is_empty() => proposal.body.clone(),
            Resolution::Reject => output.unwrap_or("rejected").to_owned(),
            _ => output.unwrap_or_default().to_owned(),
        };
        let mut status = input.resolution.status();
        if !proposals::resolve(conn, input.run_id, &proposal.path, status, &body)? {
            return Err(ToolError::NotPending(input.path.clone()));
        }
        let runs_side_effects = match input.resolution {
            Resolution::Accept => true,
            Resolution::Error => tool.is_some_and(|tool| tool.accepts_on_error()),
            Resolution::Reject => false,
        };
        if let Some(tool) = tool.filter(|_| runs_side_effects) {
            let before = Before::read(conn, input.run_id, &proposal, disk_root)?;
            let readonly = ReadonlyFiles::of_run(conn, input.run_id)?;
            let mut scope = ToolScope {
                conn,
                run_id: input.run_id,
                loop_id: None,
                turn: run.next_turn,
                policy: crate::plugins::policy::ToolPolicy::act(),
                project_root: disk_root.unwrap_or(Path::new("")),
                settings: plugins.settings(),
                disk_root,
                readonly: &readonly,
                gathered: &mut *gathered,
            };
            let refused = match tool.accept(&mut scope, &proposal, output) {
                Err(ToolError::Disk(reason)) => Some((Resolution::Error.status(), reason)),
                Err(ToolError::Readonly(reason)) => Some((READONLY_REFUSED, reason)),
                other => {
                    other?;
                    None
                }
            };
            match refused {
                Some((refused_status, reason)) => {
                    status = refused_status;
                    entries::resolve_entry(
                        conn,
                        input.run_id,
                        &proposal.path,
                        status,
                        Some(&reason),
                    )?;
                }
                None => before.record(
                    conn,
                    input.run_id,
                    &proposal,
                    disk_root,
                    input.by.as_deref(),
                )?,
            }
        }
        Ok(ResolveOutcome {
            path: proposal.path,
            status,
            resolution: input.resolution,
            remaining: entries::unresolved(conn, input.run_id)?,
            turn: proposal.turn,
            loop_id: proposal.loop_id,
            run_status: run.status,
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use serde_json::json;

    use super::Resolution;
    use crate::plugins::bundled::tools::testing::TestRun;
    use crate::plugins::tool::ToolError;

    #[test]
    fn accepting_a_file_edit_patches_the_stored_copy() {
        let mut run = TestRun::new();
        run.put("src/app.js", "a\nport = 3000\nb\n");
        run.respond("<set path=\"src/app.js\">s/3000/8080/</set>");
        let outcome = run
            .resolve("set://src/app.js", Resolution::Accept, None)
            .unwrap();
        assert_eq!(
            (outcome.status, outcome.remaining.len()),
            (EntryStatus::Ok, 0)
        );
        assert_eq!(run.entry("src/app.js").unwrap().body, "a\nport = 8080\nb\n");
        assert_eq!(
            run.entry("set://src/app.js").unwrap().body,
            "a\nport = 3000\nb\n"
        );
    }

    #[test]
    fn accepting_a_write_creates_the_file_entry() {
        let mut run = TestRun::new();
        run.respond("<set path=\"src/new.js\">export {};</set>");
        run.resolve("set://turn_1/src/new.js", Resolution::Accept, None)
            .unwrap();
        assert_eq!(run.entry("src/new.js").unwrap().body, "export {};");
    }

    #[test]
    fn accepting_rm_and_mv_removes_the_files_entries() {
        let mut run = TestRun::new();
        run.put("src/old.js", "old");
        run.put("src/a.js", "a");
        run.respond("<rm path=\"src/old.js\"/>");
        run.resolve("rm://turn_1/src/old.js", Resolution::Accept, None)
            .unwrap();
        assert!(run.entry("src/old.js").is_none());
        run.respond("<mv path=\"src/a.js\" to=\"src/b.js\"/>");
        run.resolve("mv://turn_2/src/a.js", Resolution::Accept, None)
            .unwrap();
        assert!(run.entry("src/a.js").is_none());
        run.respond("<cp path=\"src/b.js\" to=\"src/c.js\"/>");
        assert!(
            run.entry("src/b.js").is_none(),
            "b only exists once the scan finds it"
        );
    }

    #[test]
    fn answers_are_kept_and_rejections_and_errors_recorded() {
        let mut run = TestRun::new();
        run.respond("<ask_user question=\"Which db?\" options=\"sqlite; postgres\"/>");
        let path = "ask_user://turn_1/Which%20db%3F";
        assert_eq!(
            run.attribute(path, "options"),
            json!(["sqlite", "postgres"])
        );
        run.resolve(path, Resolution::Accept, Some("postgres"))
            .unwrap();
        assert_eq!(run.attribute(path, "answer"), json!("postgres"));
        assert_eq!(
            run.projected(path),
            "# ask_user\n# Question: Which db?\n# Answer: postgres"
        );
        run.respond("<sh>make</sh>");
        let rejected = run
            .resolve("sh://turn_2/make", Resolution::Reject, None)
            .unwrap();
        assert_eq!(rejected.status, EntryStatus::Forbidden);
        assert_eq!(run.entry("sh://turn_2/make").unwrap().body, "rejected");
        run.respond("<env>ls</env>");
        run.resolve("env://turn_3/ls", Resolution::Error, Some("boom"))
            .unwrap();
        assert_eq!(run.status("env://turn_3/ls"), Some(EntryStatus::Failed));
    }

    #[test]
    fn only_pending_proposals_resolve_and_the_rest_stay_listed() {
        let mut run = TestRun::new();
        run.put("src/x.js", "x");
        run.put("src/y.js", "y");
        run.respond("<rm path=\"src/*.js\"/>");
        let first = run
            .resolve("rm://turn_1/src/x.js", Resolution::Reject, Some("keep it"))
            .unwrap();
        assert_eq!(first.remaining.len(), 1);
        assert!(matches!(
            run.resolve("rm://turn_1/src/x.js", Resolution::Accept, None),
            Err(ToolError::NotPending(_))
        ));
        assert!(matches!(
            run.resolve("known://nothing", Resolution::Accept, None),
            Err(ToolError::NotPending(_))
        ));
        assert!(run.entry("src/x.js").is_some());
        assert!(matches!(
            Resolution::parse("maybe"),
            Err(ToolError::InvalidResolution(_))
        ));
        assert_eq!(Resolution::parse("error").unwrap(), Resolution::Error);
    }

    #[test]
    fn the_server_applies_accepted_changes_when_asked() {
        let mut run = TestRun::new();
        run.file("src/app.js", "a\nport = 3000\nb\n");
        run.file("src/old.js", "old");
        run.file("src/a.js", "a");
        run.respond("<set path=\"src/app.js\">s/3000/8080/</set>");
        run.resolve_on_disk("set://src/app.js", Resolution::Accept);
        assert_eq!(
            run.on_disk("src/app.js").as_deref(),
            Some("a\nport = 8080\nb\n")
        );
        assert_eq!(run.entry("src/app.js").unwrap().body, "a\nport = 8080\nb\n");
        run.respond("<rm path=\"src/old.js\"/>");
        run.resolve_on_disk("rm://turn_2/src/old.js", Resolution::Accept);
        assert_eq!(run.on_disk("src/old.js"), None);
        run.respond("<mv path=\"src/a.js\" to=\"lib/a.js\"/>");
        run.resolve_on_disk("mv://turn_3/src/a.js", Resolution::Accept);
        assert_eq!(
            (run.on_disk("src/a.js"), run.on_disk("lib/a.js").as_deref()),
            (None, Some("a"))
        );
        run.respond("<set path=\"lib/new.txt\">fresh</set>");
        run.resolve_on_disk("set://turn_4/lib/new.txt", Resolution::Accept);
        assert_eq!(run.on_disk("lib/new.txt").as_deref(), Some("fresh"));
    }

    #[test]
    fn an_edit_the_client_already_wrote_is_not_applied_twice() {
        let mut run = TestRun::new();
        run.file("src/app.js", "a\n");
        run.respond(
            "<set path=\"src/app.js\"><<<<<<< SEARCH\na\n=======\na\na\n>>>>>>> REPLACE</set>",
        );
        std::fs::write(run.root.path().join("src/app.js"), "a\na\n").unwrap();
        let outcome = run.resolve_on_disk("set://src/app.js", Resolution::Accept);
        assert_eq!(outcome.status, EntryStatus::Ok);
        assert_eq!(run.on_disk("src/app.js").as_deref(), Some("a\na\n"));
        assert_eq!(run.entry("src/app.js").unwrap().body, "a\na\n");
    }

    #[test]
    fn an_edit_that_no_longer_applies_on_disk_ends_as_500() {
        let mut run = TestRun::new();
        run.file("src/app.js", "port = 3000\n");
        run.respond("<set path=\"src/app.js\">s/3000/8080/</set>");
        std::fs::write(run.root.path().join("src/app.js"), "rewritten\n").unwrap();
        let outcome = run.resolve_on_disk("set://src/app.js", Resolution::Accept);
        assert_eq!(outcome.status, EntryStatus::Failed);
        assert!(run
            .entry("set://src/app.js")
            .unwrap()
            .body
            .contains("changed on disk"));
        assert_eq!(run.on_disk("src/app.js").as_deref(), Some("rewritten\n"));
    }
}
