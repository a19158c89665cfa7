//! `unknown`: register an open question. A lifecycle signal; the same question twice is
//! kept once. It stays in `<unknowns>` until removed with `rm`.

use std::borrow::Cow;

use crate::context::view::EntryView;
use crate::db::enums::{Category, EntryStatus};
use crate::db::paths::is_file;
use crate::db::paths::slug_path;
use crate::db::queries::entries;
use crate::parser::{Command, TagSpec, UnknownCommand};
use crate::plugins::bundled::tools::headed;
use crate::plugins::tool::{
    ClientCall, Handled, SchemeSpec, ToolError, ToolInfo, ToolKind, ToolScope, TypedTool,
};
use crate::plugins::writes::write;

pub(crate) struct Unknown;

impl ToolInfo for Unknown {
    fn name(&self) -> &'static str {
        "unknown"
    }

    fn scheme(&self) -> SchemeSpec {
        SchemeSpec::visible(Category::Unknown)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Lifecycle
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["path", "body"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/unknown.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("unknown", "", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.full_view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let explicit = call.path.starts_with("unknown://");
        Command::Unknown(UnknownCommand {
            path: explicit.then(|| call.path.clone()),
            body: match &call.body {
                Some(body) if !body.trim().is_empty() => body.clone(),
                _ if explicit => String::new(),
                _ => call.path.clone(),
            },
        })
    }
}

impl TypedTool for Unknown {
    type Input = UnknownCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, UnknownCommand>> {
        match command {
            Command::Unknown(unknown) => Some(Cow::Borrowed(unknown)),
            _ => None,
        }
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        unknown: &UnknownCommand,
    ) -> Result<Option<Handled>, ToolError> {
        let body = unknown.body.trim();
        if body.is_empty() {
            return Ok(None);
        }
        let existing = entries::entries_of_scheme(scope.conn, scope.run_id, "unknown")?;
        if let Some(same) = existing.iter().find(|row| row.body.trim() == body) {
            return Ok(Some(Handled::at(same.path.clone())));
        }
        let path = match unknown.path.as_deref().map(str::trim) {
            Some(path) if path.starts_with("unknown://") && path.len() > "unknown://".len() => {
                path.to_owned()
            }
            Some(path) if !path.is_empty() && is_file(path) => format!("unknown://{path}"),
            _ => slug_path("unknown", body),
        };
        let path = entries::free_path(scope.conn, scope.run_id, &path)?;
        write(scope, &path, body, EntryStatus::Ok, None)?;
        Ok(Some(Handled::at(path)))
    }
}

#[cfg(test)]
mod tests {
    use crate::plugins::bundled::tools::testing::TestRun;

    #[test]
    fn questions_are_deduplicated_and_may_name_their_path() {
        let mut run = TestRun::new();
        run.respond("<unknown>Which db?</unknown><unknown>Which db?</unknown>");
        run.respond("<unknown>Which db?</unknown>");
        assert!(run.entry("unknown://Which%20db%3F").is_some());
        assert!(run.entry("unknown://Which%20db%3F_2").is_none());
        run.respond("<unknown path=\"unknown://auth/expiry\">When do tokens expire?</unknown>");
        assert_eq!(
            run.projected("unknown://auth/expiry"),
            "# unknown\nWhen do tokens expire?"
        );
    }
}
