//! `ask_user`: a question for the user with suggested answers. A 202 proposal
//! `{question, options}`; the answer comes back on accept and is kept as `answer`.

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::context::view::EntryView;
use crate::db::enums::LoopMode;
use crate::db::models::entry::EntryRow;
use crate::db::queries::entries;
use crate::parser::{AskUserCommand, Command, TagSpec};
use crate::plugins::bundled::tools::{non_empty, propose_text};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};

pub(crate) struct AskUser;

impl ToolInfo for AskUser {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Asks
    }

    fn proposes(&self) -> bool {
        true
    }

    fn accepts_on_error(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "ask_user"
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.no_interaction || policy.no_proposals || policy.mode == LoopMode::Panic {
            Availability::Excluded
        } else {
            Availability::Offered
        }
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "options",
            attributes: &["question", "options"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/ask_user.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let mut lines = vec!["# ask_user".to_owned()];
        let question = entry.attribute("question");
        if let Some(question) = question {
            lines.push(format!("# Question: {question}"));
        }
        if let Some(answer) = entry.attribute("answer") {
            lines.push(format!("# Answer: {answer}"));
        } else if !entry.body.is_empty() && question != Some(entry.body) {
            // Refused, rejected or failed: the model sees why no answer came.
            lines.push(entry.body.to_owned());
        }
        lines.join("\n")
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        let question = entry.attribute("question").unwrap_or(entry.body);
        match entry.attribute("answer") {
            Some(answer) => format!("{question} → {answer}"),
            None => question.to_owned(),
        }
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::AskUser(AskUserCommand {
            question: call
                .attribute("question")
                .or_else(|| Some(call.path.clone())),
            options: call.attribute("options").or_else(|| call.body.clone()),
        })
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        output: Option<&str>,
    ) -> Result<(), ToolError> {
        if let Some(answer) = non_empty(output) {
            let patch = json!({ "answer": Value::String(answer.to_owned()) });
            entries::update_attributes(scope.conn, scope.run_id, &proposal.path, &patch)?;
        }
        Ok(())
    }
}

impl TypedTool for AskUser {
    type Input = AskUserCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, AskUserCommand>> {
        match command {
            Command::AskUser(ask) => Some(Cow::Borrowed(ask)),
            _ => None,
        }
    }

    fn target(&self, ask: &AskUserCommand) -> String {
        ask.question.clone().unwrap_or_default()
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        ask: &AskUserCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let options = split_options(ask.options.as_deref().unwrap_or_default());
        propose_text(
            scope,
            result_path,
            ask.question.as_deref(),
            "question is required",
            |question| json!({ "question": question, "options": options }),
        )
    }
}

/// Options split on `;` when there is one, else on `,`; trimmed, empty ones dropped.
fn split_options(text: &str) -> Vec<String> {
    let separator = if text.contains(';') { ';' } else { ',' };
    text.split(separator)
        .map(str::trim)
        .filter(|option| !option.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split_options;

    #[test]
    fn options_split_on_semicolons_first() {
        assert_eq!(split_options("a, b; c"), ["a, b", "c"]);
        assert_eq!(split_options(" a , b ,"), ["a", "b"]);
        assert!(split_options("").is_empty());
    }
}
