//! `rm`: remove entries now, or propose deleting project files (202 each). Patterns and
//! body filters select; `preview` lists what would go and removes nothing.

use std::borrow::Cow;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::models::entry::EntryRow;
use crate::db::paths::is_file;
use crate::db::queries::selected;
use crate::parser::{Command, Selection, TagSpec};
use crate::plugins::bundled::tools::files;
use crate::plugins::bundled::tools::{
    attribute_or, fail, file_changes_forbidden, headed, non_empty, not_found, preview,
    propose_separately, report, select_settled,
};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    ClientCall, Handled, ToolEffect, ToolError, ToolInfo, ToolScope, TypedTool,
};
use crate::plugins::writes::finish;

pub(crate) struct Rm;

impl ToolInfo for Rm {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Changes
    }

    fn proposes(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "rm"
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "path",
            attributes: &["path", "body", "preview"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/rm.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("rm", attribute_or(entry, "path", entry.path), entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.full_view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Rm(Selection {
            path: Some(call.path.clone()),
            filter: call.body.clone().or_else(|| call.attribute("body")),
            preview: call.flag("preview"),
        })
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let attributes = &proposal.attributes;
        if let Some(file) = attributes.get("path").and_then(|path| path.as_str()) {
            if let Some(root) = scope.disk_root {
                if let Some(refusal) = scope.readonly.refusal("rm", file) {
                    return Err(ToolError::Readonly(refusal));
                }
                files::remove(root, file)?;
            }
            selected::delete_at(scope.conn, scope.run_id, file)?;
        }
        Ok(())
    }
}

impl TypedTool for Rm {
    type Input = Selection;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Selection>> {
        match command {
            Command::Rm(selection) => Some(Cow::Borrowed(selection)),
            _ => None,
        }
    }

    fn target(&self, selection: &Selection) -> String {
        selection.path.clone().unwrap_or_default()
    }

    fn forbids(&self, selection: &Selection, policy: &ToolPolicy) -> Option<String> {
        match selection {
            Selection {
                path: Some(path),
                preview: false,
                ..
            } if is_file(path) => file_changes_forbidden("rm", policy),
            _ => None,
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        selection: &Selection,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some(path) = non_empty(selection.path.as_deref()) else {
            return fail(
                scope,
                result_path,
                EntryStatus::BadRequest,
                "path is required",
            );
        };
        let filter = non_empty(selection.filter.as_deref());
        let rows = select_settled(scope, path, filter, result_path)?;
        if selection.preview {
            return preview(scope, result_path, "rm", path, filter, &rows);
        }
        if rows.is_empty() {
            return not_found(scope, result_path, path);
        }
        let (files, others): (Vec<EntryRow>, Vec<EntryRow>) =
            rows.into_iter().partition(|row| is_file(&row.path));
        if let Some(refusal) = files
            .iter()
            .find_map(|file| scope.readonly.refusal("rm", &file.path))
        {
            return fail(scope, result_path, EntryStatus::Forbidden, &refusal);
        }
        selected::delete(scope.conn, &others)?;
        if let ([file], []) = (files.as_slice(), others.as_slice()) {
            let attributes = json!({ "path": file.path });
            return finish(
                scope,
                result_path,
                EntryStatus::Proposed,
                &file.path,
                Some(attributes),
            );
        }
        let mut proposals = Vec::new();
        for file in &files {
            let attributes = json!({ "path": file.path });
            let proposal = propose_separately(scope, "rm", &file.path, &file.path, attributes)?;
            proposals.push(proposal);
        }
        let mut lines: Vec<String> = others.iter().map(|row| row.path.clone()).collect();
        lines.extend(
            files
                .iter()
                .map(|file| format!("{} (awaiting approval)", file.path)),
        );
        report(scope, result_path, path, &lines.join("\n"))?;
        Ok(Handled::at(
            proposals
                .into_iter()
                .next()
                .unwrap_or_else(|| result_path.to_owned()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::plugins::bundled::tools::testing::TestRun;

    #[test]
    fn entries_go_now_files_are_proposed_and_preview_deletes_nothing() {
        let mut run = TestRun::new();
        run.put("known://tmp_a", "a");
        run.put("known://tmp_b", "b");
        run.put("src/old.js", "old");
        run.respond("<rm path=\"known://tmp_*\" preview/>");
        assert!(run.entry("known://tmp_a").is_some());
        run.respond("<rm path=\"known://tmp_*\"/>");
        assert!(run.entry("known://tmp_a").is_none() && run.entry("known://tmp_b").is_none());
        let outcome = run.respond("<rm path=\"src/old.js\"/>");
        assert_eq!(outcome.proposals[0].path, "rm://turn_3/src/old.js");
        assert!(run.entry("src/old.js").is_some(), "files wait for the user");
        assert_eq!(
            run.projected("rm://turn_2/known%3A//tmp_*"),
            "# rm known://tmp_*\nknown://tmp_a\nknown://tmp_b"
        );
    }
}
