//! The tag names the parser treats as tools.

/// A tool tag the parser recognises. Anything else in model output is text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolTag {
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

impl ToolTag {
    /// Every tool, in documentation order.
    pub const ALL: [ToolTag; 16] = [
        ToolTag::Get,
        ToolTag::Set,
        ToolTag::Known,
        ToolTag::Unknown,
        ToolTag::Env,
        ToolTag::Sh,
        ToolTag::Rm,
        ToolTag::Cp,
        ToolTag::Mv,
        ToolTag::Search,
        ToolTag::Summarize,
        ToolTag::Update,
        ToolTag::AskUser,
        ToolTag::Think,
        ToolTag::Thought,
        ToolTag::Mcp,
    ];

    /// The tag name as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            ToolTag::Get => "get",
            ToolTag::Set => "set",
            ToolTag::Known => "known",
            ToolTag::Unknown => "unknown",
            ToolTag::Env => "env",
            ToolTag::Sh => "sh",
            ToolTag::Rm => "rm",
            ToolTag::Cp => "cp",
            ToolTag::Mv => "mv",
            ToolTag::Search => "search",
            ToolTag::Summarize => "summarize",
            ToolTag::Update => "update",
            ToolTag::AskUser => "ask_user",
            ToolTag::Think => "think",
            ToolTag::Thought => "thought",
            ToolTag::Mcp => "mcp",
        }
    }

    /// The tool a tag name denotes, ignoring ASCII case.
    pub fn from_name(name: &str) -> Option<ToolTag> {
        ToolTag::ALL
            .into_iter()
            .find(|tool| tool.name().eq_ignore_ascii_case(name))
    }

    /// The field a bare value fills when a foreign tool-call format gives one: `path` for
    /// get/rm/search, `command` for sh/env, `to` for cp/mv, `options` for ask_user, else `body`.
    pub(crate) fn main_field(self) -> &'static str {
        match self {
            ToolTag::Get | ToolTag::Rm | ToolTag::Search => "path",
            ToolTag::Sh | ToolTag::Env => "command",
            ToolTag::Cp | ToolTag::Mv => "to",
            ToolTag::AskUser => "options",
            _ => "body",
        }
    }

    /// The attribute names the tool's documentation teaches.
    pub(crate) fn vocabulary(self) -> &'static [&'static str] {
        match self {
            ToolTag::Get => &["path", "body", "preview", "line", "limit", "fidelity"],
            ToolTag::Rm => &["path", "body", "preview"],
            ToolTag::Set => &[
                "path", "body", "search", "replace", "preview", "fidelity", "summary",
            ],
            ToolTag::Known => &["path", "summary", "body"],
            ToolTag::Unknown => &["path", "body"],
            ToolTag::Env | ToolTag::Sh => &["command"],
            ToolTag::Cp | ToolTag::Mv => &["path", "to", "fidelity", "preview"],
            ToolTag::Search => &["path", "results"],
            ToolTag::AskUser => &["question", "options"],
            ToolTag::Summarize
            | ToolTag::Update
            | ToolTag::Think
            | ToolTag::Thought
            | ToolTag::Mcp => &["body"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for tool in ToolTag::ALL {
            assert_eq!(ToolTag::from_name(tool.name()), Some(tool));
            assert_eq!(ToolTag::from_name(&tool.name().to_uppercase()), Some(tool));
        }
        assert_eq!(ToolTag::from_name("thinking"), None);
    }
}
