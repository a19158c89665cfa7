//! Property tests: hostile patterns, edit bodies and files never panic, edits keep their
//! promises (verbatim replacement, CRLF kept, nothing edited on refusal), and 1 MB bodies are
//! handled without blow-ups.

use proptest::prelude::*;

use super::*;

/// Characters that exercise every syntax: delimiters, globs, regex and XPath punctuation,
/// markers, line breaks, non-ASCII.
const SYNTAX_SOUP: &str = r"[a-c/\\*?\[\]{}()$.@!^|:+#<>=@ \n\r\t'é-]";

fn soup(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::string::string_regex(SYNTAX_SOUP).expect("regex"),
        0..max,
    )
    .prop_map(|pieces| pieces.concat())
}

fn pattern_strategy() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        Just(""),
        Just("s/"),
        Just("s|"),
        Just("/"),
        Just("$."),
        Just("$.."),
        Just("$["),
        Just("//"),
        Just("/a["),
        Just("!"),
        Just("**/"),
    ];
    (prefix, soup(24)).prop_map(|(prefix, rest)| format!("{prefix}{rest}"))
}

fn lines_strategy() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec("[ \t]{0,3}(a|b|c|a = 1;|\\}|)[ ]?", 0..12)
}

fn edit_body_strategy() -> impl Strategy<Value = String> {
    let marker = prop_oneof![
        Just("<<<<<<< SEARCH\n"),
        Just("=======\n"),
        Just(">>>>>>> REPLACE\n"),
        Just("@@ -1 +1 @@\n"),
        Just("<old_text>"),
        Just("</old_text><new_text>"),
        Just("</new_text>"),
        Just("s/"),
        Just("{\"search\":"),
        Just("\r\n"),
        Just("\n-"),
        Just("\n+"),
    ];
    proptest::collection::vec(prop_oneof![marker.prop_map(str::to_string), soup(6)], 0..16)
        .prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn patterns_never_panic(pattern in pattern_strategy(), subject in soup(40), replacement in soup(6)) {
        let matched = pattern_match(&pattern, &subject);
        let searched = pattern_search(&pattern, &subject);
        let replaced = pattern_replace(&pattern, &replacement, &subject);
        prop_assert_eq!(matched.is_err(), searched.is_err());
        prop_assert_eq!(matched.is_err(), replaced.is_err());
        if let Ok(Some(hit)) = searched {
            prop_assert!(hit.index <= subject.chars().count());
        }
    }

    #[test]
    fn edit_syntaxes_never_panic(body in edit_body_strategy(), file in soup(30)) {
        let blocks = parse_edit_content(&body);
        let _ = parse_sed(&body);
        let _ = parse_json_edit(&body);
        let revision = classify_set(&SetAttributes::default(), &body);
        let _ = revision.apply(&file);
        let _ = apply_blocks(&file, &blocks);
    }

    #[test]
    fn edits_keep_their_promises(
        lines in lines_strategy(),
        search_lines in lines_strategy(),
        replace in "[a-z$&\\\\ \n]{0,12}",
        crlf in any::<bool>(),
    ) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let body = lines.join(ending) + ending;
        let search = search_lines.join("\n");
        match apply_edit(&body, &EditBlock::literal(&search, &replace)) {
            Ok(edited) => {
                if crlf {
                    prop_assert_eq!(edited.body.matches('\n').count(), edited.body.matches("\r\n").count());
                }
                let exact = body.replace("\r\n", "\n");
                if !matcher::is_blank(&search) && exact.matches(search.as_str()).count() == 1 {
                    let expected = exact.replacen(search.as_str(), &replace, 1);
                    prop_assert_eq!(edited.body.replace("\r\n", "\n"), expected);
                }
            }
            Err(HedbergError::AmbiguousSearch { locations }) => prop_assert!(locations >= 2),
            Err(error) => prop_assert_eq!(error, HedbergError::SearchNotFound),
        }
        let _ = apply_tolerant(&body, &search, &replace);
        let _ = apply_edit(&body, &EditBlock::sed(&search, &replace, "g"));
        let _ = unified_diff("f", &body, &search);
    }
}

fn megabyte_of(line: &str) -> String {
    line.repeat((1 << 20) / line.len().max(1) + 1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    #[test]
    fn megabyte_bodies_are_bounded(line in "[ab \t]{1,6}(\n|\r\n)", search_lines in 1usize..400) {
        let body = megabyte_of(&line);
        let periodic_search = line.repeat(search_lines) + "z";
        let _ = apply_edit(&body, &EditBlock::literal(&periodic_search, "x"));
        let escaped_search = format!("\\.{}", ".".repeat(search_lines));
        let _ = apply_edit(&".".repeat(1 << 20), &EditBlock::literal(&escaped_search, "x"));
        let _ = apply_edit(&body, &EditBlock::sed("(a|b)+\\s*$", "\\1", "g"));
        let _ = pattern_search("/(a|b)*z/", &body);
        let _ = pattern_match("**/*a*b*a*b*", &body);
    }
}

#[test]
fn megabyte_structured_subjects() {
    let xml = format!("<r>{}</r>", "<a>x</a>".repeat(1 << 17));
    assert_eq!(pattern_match("//a", &xml), Ok(true));
    assert_eq!(pattern_match("//b", &xml), Ok(false));
    let json = format!("[{}1]", "{\"a\":[1,2]},".repeat(1 << 16));
    assert_eq!(pattern_match("$..a", &json), Ok(true));
    assert_eq!(pattern_match("$..b", &json), Ok(false));
}
