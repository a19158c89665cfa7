//! The texts the model sees when dispatch refuses or cancels a command.

use serde_json::json;

use crate::db::enums::EntryStatus;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, Tool, ToolError, ToolScope};
use crate::plugins::writes::write;

/// Longest target an action may name, in characters.
const TARGET_MAX_CHARS: usize = 512;

/// Why a target cannot be a path: reasoning that bled into an attribute.
pub(super) fn invalid_target(target: &str) -> Option<String> {
    if target.chars().count() > TARGET_MAX_CHARS {
        return Some(format!(
            "Invalid path: it is longer than {TARGET_MAX_CHARS} characters. A path MUST be \
             short, e.g. src/app.js or known://topic."
        ));
    }
    target
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
        .then(|| "Invalid path: it contains control characters.".to_owned())
}

/// Why `tool` is not available under `policy`: the loop's mode and flags, and any reason
/// of the tool's own.
pub(super) fn excluded_message(tool: &dyn Tool, policy: &ToolPolicy) -> String {
    let mut reasons = vec![format!("{} mode", policy.mode)];
    if policy.no_interaction {
        reasons.push("no interaction".into());
    }
    if policy.no_web {
        reasons.push("no web".into());
    }
    if policy.no_proposals {
        reasons.push("no proposals".into());
    }
    let roomier = ToolPolicy {
        optional_tools: true,
        ..*policy
    };
    if !policy.optional_tools && tool.availability(&roomier) == Availability::Offered {
        reasons.push("a context window too small for its doc".into());
    }
    reasons.extend(tool.excluded_because(policy).map(str::to_owned));
    format!(
        "<{}> is not available here ({}) and was not run. YOU MUST use only the tools \
         listed in tools=\"...\".",
        tool.name(),
        reasons.join(", ")
    )
}

pub(super) fn cancel(
    scope: &mut ToolScope<'_>,
    path: &str,
    earlier: &str,
    status: EntryStatus,
) -> Result<(), ToolError> {
    let message = if status == EntryStatus::Proposed {
        format!("Not run: the earlier <{earlier}> is waiting for the user's decision.")
    } else {
        format!("Not run: the earlier <{earlier}> failed ({status}). Fix it, then try again.")
    };
    write(
        scope,
        path,
        &message,
        EntryStatus::Conflict,
        Some(json!({ "error": message })),
    )?;
    Ok(())
}
