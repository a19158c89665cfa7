//! The tags the parser recognises. The tool registry declares them ([`TagSet`], one
//! [`TagSpec`] per tool); anything else in model output is text. A declared tag whose name
//! has a typed command of its own ([`TypedTag`]) gets that command's dedicated parsing;
//! any other parses generically into [`Command::Other`](super::Command::Other).

/// What the parser needs to know of a tool's tag beyond its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagSpec {
    /// The field a bare value fills when a foreign tool-call format gives one (`path` for
    /// `get`, `command` for `sh`).
    pub main_field: &'static str,
    /// The attribute names the tool's documentation teaches: a foreign call's arguments
    /// of these names stay attributes, the first other one fills the main field.
    pub attributes: &'static [&'static str],
}

impl TagSpec {
    /// A tag whose text is its body, with no other attribute.
    pub const BODY: TagSpec = TagSpec {
        main_field: "body",
        attributes: &["body"],
    };
}

/// The tags the parser recognises, as the registered tools declare them.
#[derive(Debug, Clone, Default)]
pub struct TagSet {
    tags: Vec<Tag>,
}

impl FromIterator<(&'static str, TagSpec)> for TagSet {
    fn from_iter<I: IntoIterator<Item = (&'static str, TagSpec)>>(declared: I) -> TagSet {
        TagSet {
            tags: declared
                .into_iter()
                .map(|(name, spec)| Tag {
                    name,
                    spec,
                    typed: TypedTag::from_name(name),
                })
                .collect(),
        }
    }
}

impl TagSet {
    /// The tag a name in model output denotes, ignoring ASCII case.
    pub(crate) fn find(&self, name: &str) -> Option<Tag> {
        self.tags
            .iter()
            .find(|tag| tag.name.eq_ignore_ascii_case(name))
            .copied()
    }
}

/// One recognised tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The name as declared (and as commands report it).
    pub name: &'static str,
    pub spec: TagSpec,
    /// The typed command it parses into; `None` parses generically.
    pub typed: Option<TypedTag>,
}

/// A tag with a typed command and dedicated parsing of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypedTag {
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
    /// `<think>`: reasoning; when closed, its content is never executed.
    Think,
}

impl TypedTag {
    const ALL: [TypedTag; 14] = [
        TypedTag::Get,
        TypedTag::Set,
        TypedTag::Known,
        TypedTag::Unknown,
        TypedTag::Env,
        TypedTag::Sh,
        TypedTag::Rm,
        TypedTag::Cp,
        TypedTag::Mv,
        TypedTag::Search,
        TypedTag::Summarize,
        TypedTag::Update,
        TypedTag::AskUser,
        TypedTag::Think,
    ];

    /// The tag name as the model writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TypedTag::Get => "get",
            TypedTag::Set => "set",
            TypedTag::Known => "known",
            TypedTag::Unknown => "unknown",
            TypedTag::Env => "env",
            TypedTag::Sh => "sh",
            TypedTag::Rm => "rm",
            TypedTag::Cp => "cp",
            TypedTag::Mv => "mv",
            TypedTag::Search => "search",
            TypedTag::Summarize => "summarize",
            TypedTag::Update => "update",
            TypedTag::AskUser => "ask_user",
            TypedTag::Think => "think",
        }
    }

    fn from_name(name: &str) -> Option<TypedTag> {
        TypedTag::ALL
            .into_iter()
            .find(|typed| typed.name().eq_ignore_ascii_case(name))
    }
}

/// The tags of the bundled tools, as the server's parser gets them.
#[cfg(test)]
pub(crate) fn bundled() -> TagSet {
    crate::plugins::Plugins::bundled(crate::plugins::tool::ToolSettings::default())
        .tags()
        .into_owned()
}

/// The bundled tag named `name`.
#[cfg(test)]
pub(crate) fn bundled_tag(name: &str) -> Tag {
    bundled()
        .find(name)
        .unwrap_or_else(|| panic!("no bundled tag {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_case_insensitively_and_typed_by_name() {
        let tags: TagSet = [("get", TagSpec::BODY), ("echo", TagSpec::BODY)]
            .into_iter()
            .collect();
        for typed in TypedTag::ALL {
            assert_eq!(TypedTag::from_name(typed.name()), Some(typed));
        }
        let get = tags.find("GET").map(|tag| (tag.name, tag.typed));
        assert_eq!(get, Some(("get", Some(TypedTag::Get))));
        let echo = tags.find("Echo").map(|tag| (tag.name, tag.typed));
        assert_eq!(echo, Some(("echo", None)));
        assert_eq!(tags.find("set"), None, "undeclared");
        assert_eq!(tags.find("thinking"), None);
    }
}
