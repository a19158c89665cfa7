//! An ACP prompt (content blocks) as the text of a rummy prompt: text as written, a
//! resource link as the file it names (relative to the project when it is inside it), an
//! embedded text resource (an unsaved editor buffer) as its text under its name.

use std::path::Path;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

use crate::acp::error::AcpError;

/// The prompt text of `blocks`, for the project rooted at `root`.
pub fn compose(blocks: &[ContentBlock], root: &Path) -> Result<String, AcpError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", named(&link.uri, root))),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => parts.push(format!(
                    "@{}:\n```\n{}\n```",
                    named(&contents.uri, root),
                    contents.text.trim_end_matches('\n')
                )),
                _ => return Err(AcpError::UnsupportedContent("binary resources")),
            },
            ContentBlock::Image(_) => return Err(AcpError::UnsupportedContent("images")),
            ContentBlock::Audio(_) => return Err(AcpError::UnsupportedContent("audio")),
            _ => return Err(AcpError::UnsupportedContent("this content block")),
        }
    }
    Ok(parts.join("\n\n"))
}

/// A `file://` URI under `root` as its path in the project; anything else as it is.
fn named(uri: &str, root: &Path) -> String {
    uri.strip_prefix("file://")
        .and_then(|path| Path::new(path).strip_prefix(root).ok())
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|| uri.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };

    #[test]
    fn text_links_and_buffers_make_one_prompt() {
        let blocks = vec![
            ContentBlock::from("Fix the bug in"),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///p/src/a.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn b() {}\n",
                    "file:///p/src/b.rs",
                )),
            )),
            ContentBlock::ResourceLink(ResourceLink::new("doc", "https://x.org/doc")),
        ];
        assert_eq!(
            compose(&blocks, Path::new("/p")).unwrap(),
            "Fix the bug in\n\n@src/a.rs\n\n@src/b.rs:\n```\nfn b() {}\n```\n\n@https://x.org/doc"
        );
    }

    #[test]
    fn an_image_is_refused_by_name() {
        let blocks = vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
        let error = compose(&blocks, Path::new("/p")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rummy takes text, resource links and embedded text resources, not images"
        );
    }
}
