//! Resolving proposals: the client's accept, reject or error for one pending (202) entry.
//!
//! Accept sets 200 and the body (the command output, the user's answer; a file edit keeps
//! its original content as body) and runs the owning tool's side effects on the store: the
//! answer kept as `answer`, a `set://` merge applied to the stored file, an `rm://` file
//! entry removed, a moved file's source removed. Reject sets 403 with the client's reason
//! (default "rejected"); error sets 500 with its output, and still records a user's answer.
//! What happens to the run afterwards (resume or complete) is the run actor's decision;
//! the outcome says which action was taken and what is still pending.

use diesel::{Connection, SqliteConnection};

use crate::db::ids::RunId;
use crate::db::models::entry::UnresolvedRow;
use crate::db::queries::{entries, runs};
use crate::plugins::tool::{ToolError, ToolScope};
use crate::plugins::Plugins;

/// What the client decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Applied / run; `output` is the result.
    Accept,
    /// Refused by the user.
    Reject,
    /// The client failed to apply or run it.
    Error,
}

impl Resolution {
    /// Parses the wire `action`.
    pub fn parse(action: &str) -> Result<Resolution, ToolError> {
        match action {
            "accept" => Ok(Resolution::Accept),
            "reject" => Ok(Resolution::Reject),
            "error" => Ok(Resolution::Error),
            other => Err(ToolError::InvalidResolution(other.to_owned())),
        }
    }

    /// The entry status it leaves.
    pub fn status(self) -> i32 {
        match self {
            Resolution::Accept => 200,
            Resolution::Reject => 403,
            Resolution::Error => 500,
        }
    }
}

/// One resolution request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveInput {
    /// The run.
    pub run_id: RunId,
    /// The proposal's path, as the client received it.
    pub path: String,
    /// The decision.
    pub resolution: Resolution,
    /// Command output, the user's answer, or a reason.
    pub output: Option<String>,
}

/// What a resolution did.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveOutcome {
    /// The resolved entry's path.
    pub path: String,
    /// Its new status.
    pub status: i32,
    /// The decision.
    pub resolution: Resolution,
    /// The run's proposals still pending.
    pub remaining: Vec<UnresolvedRow>,
}

/// Resolves one pending proposal of a run; a path that is not one is
/// [`ToolError::NotPending`].
pub fn resolve_proposal(
    conn: &mut SqliteConnection,
    plugins: &Plugins,
    input: &ResolveInput,
) -> Result<ResolveOutcome, ToolError> {
    conn.transaction(|conn| {
        let run = runs::get_run(conn, input.run_id)?
            .ok_or_else(|| ToolError::InvalidParams(format!("run {} not found", input.run_id)))?;
        let proposal = entries::get_entry(conn, input.run_id, &input.path)?
            .filter(|entry| entry.status == 202)
            .ok_or_else(|| ToolError::NotPending(input.path.clone()))?;
        let scheme = proposal.scheme.clone().unwrap_or_default();
        let output = input.output.as_deref().filter(|text| !text.is_empty());
        let body = match input.resolution {
            Resolution::Accept if scheme == "set" && !proposal.body.is_empty() => {
                proposal.body.clone()
            }
            Resolution::Reject => output.unwrap_or("rejected").to_owned(),
            _ => output.unwrap_or_default().to_owned(),
        };
        let status = input.resolution.status();
        entries::resolve_entry(conn, input.run_id, &proposal.path, status, Some(&body))?;
        let runs_side_effects = match input.resolution {
            Resolution::Accept => true,
            Resolution::Error => scheme == "ask_user",
            Resolution::Reject => false,
        };
        if let Some(tool) = plugins.get(&scheme).filter(|_| runs_side_effects) {
            let mut scope = ToolScope {
                conn,
                run_id: input.run_id,
                loop_id: None,
                turn: run.next_turn,
                policy: crate::plugins::policy::ToolPolicy::act(),
                project_root: std::path::Path::new(""),
                settings: plugins.settings(),
            };
            tool.accept(&mut scope, &proposal, output)?;
        }
        Ok(ResolveOutcome {
            path: proposal.path,
            status,
            resolution: input.resolution,
            remaining: entries::unresolved(conn, input.run_id)?,
        })
    })
}
