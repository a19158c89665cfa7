//! The tag names the parser treats as tools.

/// A tool tag the parser recognises. Anything else in model output is text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `<get>`: load or list entries.
    Get,
    /// `<set>`: write or edit an entry or file.
    Set,
    /// `<known>`: record a fact.
    Known,
    /// `<unknown>`: record an open question.
    Unknown,
    /// `<env>`: a side-effect-free shell command.
    Env,
    /// `<sh>`: a shell command with side effects.
    Sh,
    /// `<rm>`: remove entries or files.
    Rm,
    /// `<cp>`: copy an entry or file.
    Cp,
    /// `<mv>`: move an entry or file.
    Mv,
    /// `<search>`: an external web search.
    Search,
    /// `<summarize>`: the final answer; ends the loop.
    Summarize,
    /// `<update>`: a progress note; the loop continues.
    Update,
    /// `<ask_user>`: a question for the user.
    AskUser,
    /// `<think>`: reasoning; its content is never executed.
    Think,
    /// `<thought>`: a reasoning variant kept generically.
    Thought,
    /// `<mcp>`: a legacy tool kept generically.
    Mcp,
}

impl Tool {
    /// Every tool, in documentation order.
    pub const ALL: [Tool; 16] = [
        Tool::Get,
        Tool::Set,
        Tool::Known,
        Tool::Unknown,
        Tool::Env,
        Tool::Sh,
        Tool::Rm,
        Tool::Cp,
        Tool::Mv,
        Tool::Search,
        Tool::Summarize,
        Tool::Update,
        Tool::AskUser,
        Tool::Think,
        Tool::Thought,
        Tool::Mcp,
    ];

    /// The tag name as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Get => "get",
            Tool::Set => "set",
            Tool::Known => "known",
            Tool::Unknown => "unknown",
            Tool::Env => "env",
            Tool::Sh => "sh",
            Tool::Rm => "rm",
            Tool::Cp => "cp",
            Tool::Mv => "mv",
            Tool::Search => "search",
            Tool::Summarize => "summarize",
            Tool::Update => "update",
            Tool::AskUser => "ask_user",
            Tool::Think => "think",
            Tool::Thought => "thought",
            Tool::Mcp => "mcp",
        }
    }

    /// The tool a tag name denotes, ignoring ASCII case.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL
            .into_iter()
            .find(|tool| tool.name().eq_ignore_ascii_case(name))
    }

    /// The field a bare value fills when a foreign tool-call format gives one: `path` for
    /// get/rm/search, `command` for sh/env, `to` for cp/mv, `options` for ask_user, else `body`.
    pub(crate) fn main_field(self) -> &'static str {
        match self {
            Tool::Get | Tool::Rm | Tool::Search => "path",
            Tool::Sh | Tool::Env => "command",
            Tool::Cp | Tool::Mv => "to",
            Tool::AskUser => "options",
            _ => "body",
        }
    }

    /// The attribute names the tool's documentation teaches.
    pub(crate) fn vocabulary(self) -> &'static [&'static str] {
        match self {
            Tool::Get => &["path", "body", "preview", "line", "limit", "fidelity"],
            Tool::Rm => &["path", "body", "preview"],
            Tool::Set => &[
                "path", "body", "search", "replace", "preview", "fidelity", "summary",
            ],
            Tool::Known => &["path", "summary", "body"],
            Tool::Unknown => &["path", "body"],
            Tool::Env | Tool::Sh => &["command"],
            Tool::Cp | Tool::Mv => &["path", "to", "fidelity", "preview"],
            Tool::Search => &["path", "results"],
            Tool::AskUser => &["question", "options"],
            Tool::Summarize | Tool::Update | Tool::Think | Tool::Thought | Tool::Mcp => &["body"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert_eq!(Tool::from_name(&tool.name().to_uppercase()), Some(tool));
        }
        assert_eq!(Tool::from_name("thinking"), None);
    }
}
