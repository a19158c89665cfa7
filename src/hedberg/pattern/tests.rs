use serde_json::json;

use super::*;

fn compile(pattern: &str) -> Pattern {
    Pattern::compile(pattern).expect("pattern")
}

#[test]
fn detection_order() {
    let kinds = [
        ("s/a/b/", PatternKind::Sed),
        ("s/abc", PatternKind::Literal),
        ("/src/i", PatternKind::Regex),
        ("/usr/bin/", PatternKind::Regex),
        ("/$.+/", PatternKind::Regex),
        ("$.a.b", PatternKind::JsonPath),
        ("$..", PatternKind::JsonPath),
        ("//item", PatternKind::XPath),
        ("/root/item[1]", PatternKind::XPath),
        ("/root/item", PatternKind::Literal),
        ("*.js", PatternKind::Glob),
        ("foo.*", PatternKind::Literal),
        ("c++", PatternKind::Literal),
    ];
    for (pattern, kind) in kinds {
        assert_eq!(compile(pattern).kind(), kind, "{pattern}");
    }
}

#[test]
fn compile_errors() {
    assert!(Pattern::compile("/(/").is_err());
    assert!(Pattern::compile("s/a/b/x").is_err());
    assert!(Pattern::compile("s/(/b/g").is_err());
    assert!(Pattern::compile("/a{99999}{99999}/").is_err());
}

#[test]
fn literal_semantics() {
    let literal = compile("a.b");
    assert!(literal.is_match("a.b") && !literal.is_match("xa.b"));
    assert_eq!(
        literal.search("xxa.b"),
        Some(SearchHit {
            matched: Matched::Text("a.b".into()),
            index: 2
        })
    );
    assert_eq!(literal.replace("a.b a.b", "$&"), Some("$& $&".into()));
    assert_eq!(literal.replace("none", "x"), None);
}

#[test]
fn regex_semantics() {
    let regex = compile(r"/(\d+)/");
    assert!(regex.is_match("port 42"));
    assert_eq!(regex.replace("a1 b2", "<$1>"), Some("a<1> b<2>".into()));
    assert_eq!(compile("/B/i").search("aéb").map(|hit| hit.index), Some(2));
}

#[test]
fn sed_semantics() {
    let literal_sed = compile(r"s/a\/b/X/");
    assert!(literal_sed.is_match("xa/b"));
    assert_eq!(
        literal_sed.replace("a/b a/b\na/b", "ignored"),
        Some("X a/b\nX".into())
    );
    let regex_sed = compile(r"s/(\d+)/[\1]/g");
    assert_eq!(regex_sed.replace("1 22", ""), Some("[1] [22]".into()));
    assert_eq!(regex_sed.replace("none", ""), None);
}

#[test]
fn glob_search_is_whole_subject() {
    let glob = compile("TODO?");
    assert_eq!(glob.search("TODO!").map(|hit| hit.index), Some(0));
    assert_eq!(glob.search("a TODO!"), None);
    assert_eq!(compile("*.js").replace("app.js", "X"), Some("X".into()));
}

#[test]
fn structured_patterns() {
    let json = compile("$.items[*]");
    assert_eq!(
        json.search(r#"{"items":[{"id":1}]}"#)
            .map(|hit| hit.matched),
        Some(Matched::Json(json!({"id":1})))
    );
    assert!(!json.is_match("not json"));
    assert_eq!(json.replace(r#"{"items":[1]}"#, "x"), None);
    assert!(!compile("$.a[").is_match(r#"{"a":[1]}"#));
    let xpath = compile("//b");
    assert!(xpath.is_match("<a><b>x</b></a>"));
    assert_eq!(xpath.replace("<a><b>x</b></a>", "y"), None);
}

#[test]
fn compiled_patterns_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Pattern>();
}

#[test]
fn sed_pattern_without_flags_is_literal_text() {
    let sed = compile("s/a.b/X/");
    assert!(!sed.is_match("axb"));
    assert_eq!(sed.replace("axb", ""), None);
    let regex_sed = compile("s/a.b/X/g");
    assert!(regex_sed.is_match("axb"));
    assert_eq!(
        compile("//item/@id")
            .search(r#"<r><item id="3"/></r>"#)
            .map(|hit| hit.matched),
        Some(Matched::Text("3".into()))
    );
}

#[test]
fn escaped_slash_in_a_regex_body() {
    assert!(compile(r"/a\/b/").is_match("xa/b"));
}
