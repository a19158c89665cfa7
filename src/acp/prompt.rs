//! An ACP prompt (content blocks) as a rummy prompt and the entries it brings into the run.
//! Text is the prompt as written. A resource link to a file of the project is read into the
//! run (`get`: the server reads it from disk, confined to the root as any client's `get`) and
//! named in the prompt by its project path. An embedded text resource (an unsaved editor
//! buffer) of the project becomes the entry `known://editor/<path>` holding the buffer's text
//! (`known`), named in the prompt, so the model sees what the editor shows, not the file on
//! disk. A link or a buffer outside the project, or not a `file://` URI, is prompt text only:
//! a link as its URI (nothing is read), a buffer as its URI and its text.

use std::path::{Component, Path, PathBuf};

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use serde_json::json;

use crate::acp::error::AcpError;
use crate::acp::link::Link;

/// Where the unsaved buffers of the editor become entries.
pub(super) const BUFFERS: &str = "known://editor/";

/// A prompt ready to send: its text, and the entries to make in the run first.
#[derive(Debug, PartialEq)]
pub(super) struct Prompt {
    pub text: String,
    entries: Vec<Entry>,
}

/// An entry a prompt brings into the run.
#[derive(Debug, PartialEq)]
enum Entry {
    /// The project file at this path, read by the server.
    File(String),
    /// A buffer's text at this `known://editor/…` path.
    Buffer { path: String, text: String },
}

impl Prompt {
    /// The prompt of `blocks`, for the project rooted at `root`.
    pub(super) fn of(blocks: &[ContentBlock], root: &Path) -> Result<Prompt, AcpError> {
        let mut parts = Vec::with_capacity(blocks.len());
        let mut entries = Vec::new();
        for block in blocks {
            match block {
                ContentBlock::Text(text) => parts.push(text.text.clone()),
                ContentBlock::ResourceLink(link) => match in_project(&link.uri, root) {
                    Some(path) => {
                        parts.push(format!("@{path}"));
                        entries.push(Entry::File(path));
                    }
                    None => parts.push(format!("@{}", link.uri)),
                },
                ContentBlock::Resource(embedded) => match &embedded.resource {
                    EmbeddedResourceResource::TextResourceContents(contents) => {
                        match in_project(&contents.uri, root) {
                            Some(path) => {
                                let path = format!("{BUFFERS}{path}");
                                parts.push(format!("@{path}"));
                                entries.push(Entry::Buffer {
                                    path,
                                    text: contents.text.clone(),
                                });
                            }
                            None => parts.push(format!(
                                "@{}:\n```\n{}\n```",
                                contents.uri,
                                contents.text.trim_end_matches('\n')
                            )),
                        }
                    }
                    _ => return Err(AcpError::UnsupportedContent("binary resources")),
                },
                ContentBlock::Image(_) => return Err(AcpError::UnsupportedContent("images")),
                ContentBlock::Audio(_) => return Err(AcpError::UnsupportedContent("audio")),
                _ => return Err(AcpError::UnsupportedContent("this content block")),
            }
        }
        Ok(Prompt {
            text: parts.join("\n\n"),
            entries,
        })
    }

    /// Makes the prompt's entries in `run`, in the order the prompt names them.
    pub(super) async fn enter(&self, link: &Link, run: &str) -> Result<(), AcpError> {
        for entry in &self.entries {
            match entry {
                Entry::File(path) => link.call("get", json!({"run": run, "path": path})),
                Entry::Buffer { path, text } => {
                    link.call("known", json!({"run": run, "path": path, "body": text}))
                }
            }
            .await?;
        }
        Ok(())
    }
}

/// The project path of a `file://` URI under `root` (percent-decoded, its `.` and `..`
/// resolved as written: the server refuses a path that leaves the root through a symlink);
/// `None` for any other URI, one outside the root, or the root itself.
fn in_project(uri: &str, root: &Path) -> Option<String> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    let path = url.to_file_path().ok()?;
    let mut resolved = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    let relative = resolved.strip_prefix(root).ok()?.to_str()?;
    (!relative.is_empty()).then(|| relative.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };

    fn buffer(text: &str, uri: &str) -> ContentBlock {
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(text, uri)),
        ))
    }

    #[test]
    fn links_and_buffers_of_the_project_become_entries_the_prompt_names() {
        let blocks = vec![
            ContentBlock::from("Fix the bug in"),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///p/src/a.rs")),
            buffer("fn b() {}\n", "file:///p/src/b.rs"),
        ];
        let prompt = Prompt::of(&blocks, Path::new("/p")).unwrap();
        assert_eq!(
            prompt.text,
            "Fix the bug in\n\n@src/a.rs\n\n@known://editor/src/b.rs"
        );
        assert_eq!(
            prompt.entries,
            [
                Entry::File("src/a.rs".into()),
                Entry::Buffer {
                    path: "known://editor/src/b.rs".into(),
                    text: "fn b() {}\n".into()
                }
            ]
        );
    }

    #[test]
    fn what_is_outside_the_project_is_prompt_text_only() {
        let blocks = vec![
            ContentBlock::ResourceLink(ResourceLink::new("doc", "https://x.org/doc")),
            ContentBlock::ResourceLink(ResourceLink::new("pw", "file:///etc/passwd")),
            ContentBlock::ResourceLink(ResourceLink::new("up", "file:///p/../etc/passwd")),
            buffer("secret\n", "file:///q/c.rs"),
        ];
        let prompt = Prompt::of(&blocks, Path::new("/p")).unwrap();
        assert_eq!(
            prompt.text,
            "@https://x.org/doc\n\n@file:///etc/passwd\n\n@file:///p/../etc/passwd\n\n\
             @file:///q/c.rs:\n```\nsecret\n```"
        );
        assert!(prompt.entries.is_empty());
    }

    #[test]
    fn project_paths_resolve_dots_and_never_leave_the_root() {
        let root = Path::new("/p");
        assert_eq!(
            in_project("file:///p/a/./b/../c.rs", root).as_deref(),
            Some("a/c.rs")
        );
        assert_eq!(in_project("file:///p/../p2/x", root), None);
        assert_eq!(in_project("file:///p", root), None);
        assert_eq!(in_project("file:///pq/x", root), None);
        assert_eq!(
            in_project("file:///p/my%20file.rs", root).as_deref(),
            Some("my file.rs")
        );
        assert_eq!(in_project("file://host/p/x", root), None);
        assert_eq!(in_project("/p/x", root), None);
    }

    #[test]
    fn images_and_audio_are_refused_by_name() {
        let blocks = vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
        let error = Prompt::of(&blocks, Path::new("/p")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rummy takes text, resource links and embedded text resources, not images"
        );
        let blocks = vec![ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav"))];
        let error = Prompt::of(&blocks, Path::new("/p")).unwrap_err();
        assert!(error.to_string().ends_with("not audio"), "{error}");
    }
}
