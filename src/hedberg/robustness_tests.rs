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
    fn edit_syntaxes_never_panic_and_stay_in_proportion(body in edit_body_strategy(), file in soup(30)) {
        let blocks = parse_edit_content(&body);
        prop_assert!(
            block_text(&blocks) <= 2 * body.len(),
            "the blocks hold only text of the body (a diff's context lines twice): {:?}",
            blocks
        );
        let sed_blocks = parse_sed(&body);
        prop_assert!(block_text(&sed_blocks) <= body.len(), "{:?}", sed_blocks);
        if let Some(edit) = parse_json_edit(&body) {
            prop_assert!(edit.search.len() + edit.replace.len() <= body.len(), "{:?}", edit);
        }
        for block in blocks.iter().chain(&sed_blocks) {
            let search = block.search.as_deref().unwrap_or_default();
            for target in [file.clone(), format!("{file}\n{search}\n")] {
                if let Ok(edited) = apply_edit(&target, block) {
                    let limit = edit_size_limit(&target, block);
                    prop_assert!(edited.body.len() <= limit, "{} > {limit}: {:?}", edited.body.len(), block);
                }
            }
        }
        let revision = classify_set(&SetAttributes::default(), &body).revision;
        if let SetRevision::Replace(block) = &revision {
            if let Ok(edited) = revision.apply(&file) {
                prop_assert!(edited.body.len() <= edit_size_limit(&file, block));
            }
        }
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

/// Characters of search and replacement text in `blocks`.
fn block_text(blocks: &[EditBlock]) -> usize {
    blocks
        .iter()
        .map(|block| block.search.as_deref().map_or(0, str::len) + block.replace.len())
        .sum()
}

/// The most one block may grow a file to. A sed block may match at every position, and each
/// back-reference copies at most the file; any other block replaces one place (or is the
/// whole new body), its lines re-indented to at most the file's deepest indentation. CRLF may
/// double every line break.
fn edit_size_limit(file: &str, block: &EditBlock) -> usize {
    let replace = block.replace.len();
    let grown = if block.sed {
        2 * (file.len() + 1) * (replace + 1)
    } else {
        let indent = |line: &str| {
            line.len()
                - line
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
                    .len()
        };
        let deepest_indent = file.split('\n').map(indent).max().unwrap_or(0);
        file.len() + replace + (block.replace.split('\n').count() + 1) * deepest_indent + 2
    };
    2 * grown
}

fn megabyte_of(line: &str) -> String {
    line.repeat((1 << 20) / line.len().max(1) + 1)
}

/// Far beyond what any of these calls takes (well under a second each, in a debug build);
/// only a super-linear blow-up on a megabyte reaches it.
const MEGABYTE_CALLS_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `work` under the default step budget with [`MEGABYTE_CALLS_LIMIT`] for its deadline:
/// the steps bound the work, and a machine busy with other tests must not turn a slow call
/// into a refused one.
fn unhurried<T>(work: impl FnOnce() -> T) -> T {
    let limits = budget::Limits {
        timeout: MEGABYTE_CALLS_LIMIT,
        ..budget::Limits::default()
    };
    budget::scoped(std::rc::Rc::new(budget::Budget::new(limits)), work)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    #[test]
    fn megabyte_bodies_are_bounded(line in "[ab \t]{1,6}(\n|\r\n)", search_lines in 1usize..400) {
        let started = std::time::Instant::now();
        let body = megabyte_of(&line);
        let periodic_search = line.repeat(search_lines) + "z";
        prop_assert_eq!(
            unhurried(|| apply_edit(&body, &EditBlock::literal(&periodic_search, "x"))),
            Err(HedbergError::SearchNotFound)
        );
        let dots = ".".repeat(1 << 20);
        let escaped_search = format!("\\.{}", ".".repeat(search_lines));
        let unescaped = unhurried(|| apply_edit(&dots, &EditBlock::literal(&escaped_search, "x")));
        prop_assert_eq!(
            unescaped.map(|edited| edited.body.len()),
            Ok(dots.len() - search_lines),
            "the unescaped SEARCH matches at the start of the only line"
        );
        let has_letter = line.contains('a') || line.contains('b');
        match unhurried(|| apply_edit(&body, &EditBlock::sed("(a|b)+\\s*$", "\\1", "g"))) {
            Ok(edited) => {
                prop_assert!(has_letter);
                prop_assert!(edited.body.len() <= body.len(), "a sed step that only shortens");
            }
            Err(error) => {
                prop_assert!(!has_letter, "{error}");
                prop_assert_eq!(error, HedbergError::SearchNotFound);
            }
        }
        prop_assert_eq!(unhurried(|| pattern_search("/(a|b)*z/", &body)), Ok(None));
        let alternating = line.contains('a') && line.contains('b');
        prop_assert_eq!(unhurried(|| pattern_match("**/*a*b*a*b*", &body)), Ok(alternating));
        prop_assert!(started.elapsed() < MEGABYTE_CALLS_LIMIT, "{:?}", started.elapsed());
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
