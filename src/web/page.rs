//! What a fetched body becomes for the model: HTML as Markdown (through `htmd`, without
//! scripts, styles and other markup that carries no reading), other text as it is, and
//! anything else refused as binary.

use crate::web::WebError;

/// Elements whose content is not text for a reader.
const SKIPPED_TAGS: [&str; 9] = [
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head", "nav",
];

/// What a `Content-Type` says of a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// HTML or XHTML: converted to Markdown.
    Html,
    /// Text of another kind (plain, Markdown, JSON, XML, source code): kept as it is.
    Text,
    /// No type given: text unless the bytes say otherwise.
    Unknown,
    /// Anything else (images, archives, PDF ...): refused.
    Binary,
}

impl BodyKind {
    /// The kind a `Content-Type` header value names (its parameters ignored).
    pub(crate) fn of(content_type: Option<&str>) -> BodyKind {
        let Some(content_type) = content_type else {
            return BodyKind::Unknown;
        };
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let textual_application = [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/ecmascript",
            "application/x-sh",
            "application/toml",
            "application/yaml",
            "application/x-yaml",
        ];
        match essence.as_str() {
            "" => BodyKind::Unknown,
            "text/html" | "application/xhtml+xml" => BodyKind::Html,
            text if text.starts_with("text/")
                || text.ends_with("+json")
                || text.ends_with("+xml")
                || textual_application.contains(&text) =>
            {
                BodyKind::Text
            }
            _ => BodyKind::Binary,
        }
    }
}

/// The readable text of `bytes`, a body of `kind` (`content_type` as the server named it).
/// CPU work: call it off the async executor.
pub(super) fn readable(
    bytes: &[u8],
    kind: BodyKind,
    content_type: &str,
) -> Result<String, WebError> {
    let binary = || WebError::Binary(content_type.to_owned());
    if kind == BodyKind::Binary || bytes.contains(&0) {
        return Err(binary());
    }
    let text = String::from_utf8_lossy(bytes);
    match kind {
        BodyKind::Html => html_to_markdown(&text),
        _ if looks_like_html(&text) && kind == BodyKind::Unknown => html_to_markdown(&text),
        _ => Ok(text.into_owned()),
    }
}

/// Whether a body without a type starts like an HTML document.
fn looks_like_html(text: &str) -> bool {
    let start: String = text
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

fn html_to_markdown(html: &str) -> Result<String, WebError> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    converter
        .convert(html)
        .map(|markdown| markdown.trim().to_owned())
        .map_err(|error| WebError::Unreadable(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_sort_into_html_text_and_binary() {
        assert_eq!(
            BodyKind::of(Some("text/html; charset=utf-8")),
            BodyKind::Html
        );
        assert_eq!(BodyKind::of(Some("application/xhtml+xml")), BodyKind::Html);
        assert_eq!(BodyKind::of(Some("text/plain")), BodyKind::Text);
        assert_eq!(BodyKind::of(Some("application/json")), BodyKind::Text);
        assert_eq!(BodyKind::of(Some("application/atom+xml")), BodyKind::Text);
        assert_eq!(BodyKind::of(Some("image/png")), BodyKind::Binary);
        assert_eq!(BodyKind::of(Some("application/pdf")), BodyKind::Binary);
        assert_eq!(BodyKind::of(None), BodyKind::Unknown);
    }

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
            <h1>Title</h1><p>Some <b>bold</b> text and <a href=\"/x\">a link</a>.</p>\
            <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";
        let text = readable(html.as_bytes(), BodyKind::Html, "text/html").unwrap();
        assert!(text.starts_with("# Title"), "{text}");
        assert!(
            text.contains("Some **bold** text and [a link](/x)."),
            "{text}"
        );
        assert!(text.contains("one") && text.contains("two"), "{text}");
        assert!(!text.contains("alert") && !text.contains("p{}"), "{text}");
    }

    #[test]
    fn text_stays_as_it_is_and_bytes_are_refused() {
        let text = readable(b"a <b> c", BodyKind::Text, "text/plain").unwrap();
        assert_eq!(text, "a <b> c");
        let untyped = readable(b"<!DOCTYPE html><p>hi</p>", BodyKind::Unknown, "").unwrap();
        assert_eq!(untyped, "hi");
        let refused = readable(b"PNG\0\x01", BodyKind::Unknown, "").unwrap_err();
        assert!(matches!(refused, WebError::Binary(_)));
        let typed = readable(b"%PDF", BodyKind::Binary, "application/pdf").unwrap_err();
        assert_eq!(
            typed.to_string(),
            "application/pdf is not text: binary content is refused"
        );
    }
}
