//! Entry path conventions: the scheme of a path, path normalisation and slugs.
//!
//! A path with `://` after at least one character is a scheme path (`known://auth`);
//! anything else is a bare path, a project file. Normalisation is applied to every
//! single-path write, read, promote, remove and resolve, so one entry has one spelling: the
//! scheme is lower-cased and each segment after `://` is percent-encoded exactly once, the
//! way JavaScript's `encodeURIComponent` does it. Patterns are matched in another form,
//! decoded ([`pattern_form`]), which both sides are brought to.

use std::borrow::Cow;

const SCHEME_SEPARATOR: &str = "://";

/// Longest slug, in characters.
pub(crate) const SLUG_MAX_CHARS: usize = 80;

/// The text before the first `://`, when that text is not empty; `None` for bare paths.
pub(crate) fn scheme_of(path: &str) -> Option<&str> {
    match path.find(SCHEME_SEPARATOR) {
        Some(index) if index > 0 => path.get(..index),
        _ => None,
    }
}

/// Whether `path` names a project file (a bare path, no scheme).
pub(crate) fn is_file(path: &str) -> bool {
    scheme_of(path).is_none()
}

/// The canonical spelling of an entry path.
///
/// Bare paths are returned unchanged. For scheme paths the scheme is lower-cased and the
/// rest is percent-decoded once (kept raw when it does not decode), split on `/`, and each
/// segment percent-encoded again. The result is a fixed point: normalising it again
/// changes nothing.
pub(crate) fn normalize_path(path: &str) -> String {
    let Some(scheme) = scheme_of(path) else {
        return path.to_owned();
    };
    let rest = path
        .get(scheme.len() + SCHEME_SEPARATOR.len()..)
        .unwrap_or("");
    let decoded = percent_decode(rest).unwrap_or_else(|| rest.to_owned());
    let segments: Vec<String> = decoded.split('/').map(percent_encode).collect();
    format!(
        "{}{SCHEME_SEPARATOR}{}",
        scheme.to_lowercase(),
        segments.join("/")
    )
}

/// A path in the one form patterns and paths are compared in: a scheme path with its rest
/// percent-decoded, as people write names and URLs (`http://127.0.0.1:8080/page?id=1`,
/// `known://my fact`), a bare path as it is. Stored paths are kept encoded (each segment
/// once, see [`normalize_path`]); both they and a glob or literal pattern are brought to
/// this form before matching, so either spelling of a pattern finds the entry. A rest that
/// does not decode is kept as it is.
pub(crate) fn pattern_form(path: &str) -> Cow<'_, str> {
    let Some(scheme) = scheme_of(path) else {
        return Cow::Borrowed(path);
    };
    let start = scheme.len() + SCHEME_SEPARATOR.len();
    let rest = path.get(start..).unwrap_or("");
    if !rest.contains('%') {
        return Cow::Borrowed(path);
    }
    match percent_decode(rest) {
        Some(decoded) => Cow::Owned(format!("{}{decoded}", path.get(..start).unwrap_or(""))),
        None => Cow::Borrowed(path),
    }
}

/// `encodeURIComponent(text)` cut to [`SLUG_MAX_CHARS`] characters, never inside a `%XX`.
pub(crate) fn slugify(text: &str) -> String {
    let encoded = percent_encode(text);
    if encoded.len() <= SLUG_MAX_CHARS {
        return encoded;
    }
    let mut end = SLUG_MAX_CHARS;
    // The encoded text is ASCII; back off so a cut never splits an escape.
    if let Some(percent) = encoded
        .get(end.saturating_sub(2)..end)
        .and_then(|tail| tail.rfind('%'))
    {
        end = end.saturating_sub(2) + percent;
    }
    encoded.get(..end).unwrap_or("").to_owned()
}

/// The path of a tool's result entry: `<scheme>://turn_<N>/<target>`, the target
/// percent-encoded and the whole normalised, so `/` in the target becomes real segments.
pub(crate) fn result_path(scheme: &str, turn: i32, target: &str) -> String {
    normalize_path(&format!(
        "{scheme}{SCHEME_SEPARATOR}turn_{turn}/{}",
        percent_encode(target)
    ))
}

/// A path named after its content: `<scheme>://<slug of text>` (`untitled` when the text
/// gives no slug), normalised.
pub(crate) fn slug_path(scheme: &str, text: &str) -> String {
    let slug = slugify(text.trim());
    let name = if slug.is_empty() {
        "untitled"
    } else {
        slug.as_str()
    };
    normalize_path(&format!("{scheme}{SCHEME_SEPARATOR}{name}"))
}

/// Percent-encodes every byte except `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, like
/// JavaScript's `encodeURIComponent`.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Decodes every `%XX`, like JavaScript's `decodeURIComponent`; `None` when an escape is
/// malformed or the decoded bytes are not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'%' {
            let high = hex_value(*bytes.get(index + 1)?)?;
            let low = hex_value(*bytes.get(index + 2)?)?;
            decoded.push(high * 16 + low);
            index += 3;
        } else {
            decoded.push(byte);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_pattern_form_decodes_a_scheme_paths_rest_only() {
        assert_eq!(
            pattern_form("http://127.0.0.1%3A8080/a%20b/c"),
            "http://127.0.0.1:8080/a b/c"
        );
        assert_eq!(pattern_form("known://plain"), "known://plain");
        assert_eq!(
            pattern_form("src/a%20b.rs"),
            "src/a%20b.rs",
            "a file as it is"
        );
        assert_eq!(
            pattern_form("known://bad%zz"),
            "known://bad%zz",
            "kept when it does not decode"
        );
        assert_eq!(
            pattern_form(&normalize_path("https://u@h/s?q=1&r=2")),
            "https://u@h/s?q=1&r=2",
            "the decoded form of a stored path is the path as written"
        );
    }

    #[test]
    fn scheme_needs_text_before_the_separator() {
        assert_eq!(scheme_of("known://auth"), Some("known"));
        assert_eq!(scheme_of("src/app.js"), None);
        assert_eq!(scheme_of("://x"), None);
        assert_eq!(scheme_of("a://b://c"), Some("a"));
    }

    #[test]
    fn bare_paths_are_left_alone() {
        assert_eq!(normalize_path("src/My File.js"), "src/My File.js");
    }

    #[test]
    fn scheme_is_lowercased_and_segments_encoded_once() {
        assert_eq!(
            normalize_path("KNOWN://Deploy Target"),
            "known://Deploy%20Target"
        );
        assert_eq!(
            normalize_path("get://turn_2/src/a.js"),
            "get://turn_2/src/a.js"
        );
        assert_eq!(
            normalize_path("sh://turn_2/npm%20test"),
            "sh://turn_2/npm%20test"
        );
        assert_eq!(
            normalize_path("sh://turn_2/npm test"),
            "sh://turn_2/npm%20test"
        );
        assert_eq!(
            normalize_path("get://turn_1/known%3A//*"),
            "get://turn_1/known%3A//*"
        );
    }

    #[test]
    fn undecodable_rest_is_encoded_raw() {
        assert_eq!(normalize_path("known://100%"), "known://100%25");
        assert_eq!(normalize_path("known://%E2%28"), "known://%25E2%2528");
    }

    #[test]
    fn slug_is_cut_without_splitting_an_escape() {
        assert_eq!(slugify("what is this"), "what%20is%20this");
        let long = "é".repeat(30);
        let slug = slugify(&long);
        assert!(slug.len() <= SLUG_MAX_CHARS);
        assert!(percent_decode(&slug).is_some(), "{slug}");
        assert_eq!(slugify(&"a".repeat(100)).len(), SLUG_MAX_CHARS);
    }

    #[test]
    fn result_and_slug_paths() {
        assert_eq!(result_path("get", 2, "src/a.js"), "get://turn_2/src/a.js");
        assert_eq!(result_path("sh", 2, "npm test"), "sh://turn_2/npm%20test");
        assert_eq!(result_path("rm", 1, "known://x"), "rm://turn_1/known%3A//x");
        assert_eq!(result_path("think", 1, ""), "think://turn_1/");
        assert_eq!(
            slug_path("Unknown", "what is it?"),
            "unknown://what%20is%20it%3F"
        );
        assert_eq!(slug_path("known", "  "), "known://untitled");
    }

    proptest! {
        #[test]
        fn normalization_is_a_fixed_point(path in "\\PC{0,40}") {
            let once = normalize_path(&path);
            prop_assert_eq!(normalize_path(&once), once);
        }

        #[test]
        fn encode_then_decode_round_trips(text in "\\PC{0,40}") {
            prop_assert_eq!(percent_decode(&percent_encode(&text)), Some(text));
        }
    }
}
