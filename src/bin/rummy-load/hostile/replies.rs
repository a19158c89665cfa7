//! The fuzzing model of `rummy-load hostile`: each chat completion is answered with one
//! hostile kind drawn from a seeded generator — a 1 MB reply, deeply nested or unclosed
//! tags, giant attributes, regex and glob bombs, path escapes, every edit format, binary
//! bytes, a flood of commands, or an HTTP fault — and, after it, `<update>` (the loop goes
//! on) or `<summarize>` (it ends), so loops stay short whatever the kind.

use std::sync::Mutex;
use std::time::Duration;

use rummy::testing::fake_llm::{Reply, Step};

/// About one megabyte: the size of the largest replies.
const MEGABYTE: usize = 1 << 20;

/// A small seeded generator (SplitMix64): the same seed draws the same kinds in the same
/// order of requests.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            return 0;
        }
        (self.next() % bound as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, which must not be empty.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The kinds of hostile reply, drawn with equal weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A 1 MB body in a `known://` entry, a 1 MB file write, or 1 MB of prose.
    Huge,
    /// Tags nested tens of thousands deep, never closed.
    Nested,
    /// One attribute of hundreds of kilobytes, or thousands of attributes.
    GiantAttributes,
    /// Patterns that are costly to compile or match: nested quantifiers, huge repetitions,
    /// stacked `**` and brace globs, applied to files and entries.
    PatternBombs,
    /// Paths that try to leave the project: `..`, absolute, encoded, NUL.
    PathEscapes,
    /// Edits in each format: sed, SEARCH/REPLACE, whole content, fidelity, rm, mv, cp, and
    /// commands that propose (`sh`, `env`, `ask_user`).
    Edits,
    /// Control characters, NULs and random code points.
    Binary,
    /// More commands than a reply may run.
    Flood,
    /// An HTTP error, a malformed body, or a slow answer.
    HttpFault,
}

impl Kind {
    pub(crate) const ALL: [Kind; 9] = [
        Kind::Huge,
        Kind::Nested,
        Kind::GiantAttributes,
        Kind::PatternBombs,
        Kind::PathEscapes,
        Kind::Edits,
        Kind::Binary,
        Kind::Flood,
        Kind::HttpFault,
    ];
}

/// The fuzzing model: a seeded generator behind a lock (the fake serves on its own thread).
pub(crate) struct HostileModel {
    rng: Mutex<Rng>,
}

impl HostileModel {
    pub(crate) fn new(seed: u64) -> HostileModel {
        HostileModel {
            rng: Mutex::new(Rng::new(seed)),
        }
    }

    /// The next answer, whatever the request.
    pub(crate) fn answer(&self) -> Step {
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let kind = *rng.pick(&Kind::ALL);
        step_of(kind, &mut rng)
    }
}

/// One answer of `kind`.
pub(crate) fn step_of(kind: Kind, rng: &mut Rng) -> Step {
    if kind == Kind::HttpFault {
        return http_fault(rng);
    }
    let mut content = match kind {
        Kind::Huge => huge(rng),
        Kind::Nested => nested(rng),
        Kind::GiantAttributes => giant_attributes(rng),
        Kind::PatternBombs => pattern_bombs(rng),
        Kind::PathEscapes => path_escapes(rng),
        Kind::Edits => edits(rng),
        Kind::Binary => binary(rng),
        Kind::Flood => flood(rng),
        Kind::HttpFault => String::new(),
    };
    content.push_str(if rng.chance(55) {
        "<summarize>done</summarize>"
    } else {
        "<update>going on</update>"
    });
    Step::Reply(Reply::new(content))
}

fn huge(rng: &mut Rng) -> String {
    let filler = "hostile ".repeat(MEGABYTE / 8);
    match rng.below(3) {
        0 => format!(
            "<known path=\"known://fuzz/huge{}\">{filler}</known>",
            rng.below(50)
        ),
        1 => format!("<set path=\"src/huge{}.txt\">{filler}</set>", rng.below(5)),
        _ => filler,
    }
}

fn nested(rng: &mut Rng) -> String {
    let depth = 20_000 + rng.below(30_000);
    let tag = rng.pick(&[
        "<get path=\"a\">",
        "<known>",
        "<set path=\"x\">",
        "<b>",
        "<",
    ]);
    tag.repeat(depth)
}

fn giant_attributes(rng: &mut Rng) -> String {
    if rng.chance(50) {
        let value = "a".repeat(MEGABYTE / 2);
        format!("<get path=\"{value}\"/><known path=\"known://fuzz/{value}\">x</known>")
    } else {
        let attributes: String = (0..20_000).map(|n| format!(" a{n}=\"{n}\"")).collect();
        format!(
            "<get path=\"src/*\"{attributes}/><set path=\"known://fuzz/attr\"{attributes}>x</set>"
        )
    }
}

fn pattern_bombs(rng: &mut Rng) -> String {
    let regex_bomb = "(((a*)*)*)*b".repeat(1 + rng.below(3));
    let repetition = "(x{1000}){1000}";
    let glob = format!("{}*a*a*a*a*a*a*a*a*b", "**/".repeat(200));
    let braces = "{a,b,c,d}".repeat(40);
    format!(
        "<get path=\"src/*\">/{regex_bomb}/</get>\
         <get path=\"/{regex_bomb}/\"/>\
         <get path=\"{glob}\"/>\
         <get path=\"src/{braces}\"/>\
         <get path=\"known://*\">/{repetition}/</get>\
         <set path=\"src/main.rs\">s/{regex_bomb}/x/g</set>\
         <set path=\"src/*\">s/{repetition}/y/g</set>\
         <rm path=\"{glob}\"/>"
    )
}

fn path_escapes(rng: &mut Rng) -> String {
    let path = *rng.pick(&[
        "../../../../etc/passwd",
        "/etc/shadow",
        "src/../../outside.txt",
        "..%2F..%2Fetc%2Fpasswd",
        "src/\u{0}/../../x",
        "~/.ssh/id_rsa",
        "file:///etc/passwd",
        "known://../../etc",
        "\\\\server\\share\\x",
    ]);
    format!(
        "<get path=\"{path}\"/><set path=\"{path}\">owned</set><rm path=\"{path}\"/>\
         <mv path=\"src/main.rs\" to=\"{path}\"/><cp path=\"{path}\" to=\"src/copy.txt\"/>"
    )
}

fn edits(rng: &mut Rng) -> String {
    let file = rng.pick(&["src/main.rs", "src/lib.py", "README.md", "src/new.txt"]);
    match rng.below(8) {
        0 => format!("<set path=\"{file}\">s/fn/function/g</set>"),
        1 => format!(
            "<set path=\"{file}\">\n<<<<<<< SEARCH\nfn main() {{\n=======\nfn main() {{ // changed\n>>>>>>> REPLACE\n</set>"
        ),
        2 => format!(
            "<set path=\"{file}\">--- a/{file}\n+++ b/{file}\n@@ -1,2 +1,2 @@\n-old\n+new\n</set>"
        ),
        3 => format!("<set path=\"{file}\">whole new content {}\n</set>", rng.next()),
        4 => "<set path=\"src/*\" fidelity=\"summary\" summary=\"fuzz\"/>".to_string(),
        5 => format!("<rm path=\"{file}\"/><mv path=\"src/a.txt\" to=\"src/b.txt\"/><cp path=\"src/main.rs\" to=\"src/c.rs\"/>"),
        6 => "<sh>cat /etc/passwd; rm -rf /</sh><env>ls -la</env>".to_string(),
        _ => "<ask_user question=\"Proceed?\" options=\"yes; no\"/>".to_string(),
    }
}

fn binary(rng: &mut Rng) -> String {
    let mut text = String::from("<known path=\"known://fuzz/bin\">");
    for _ in 0..(10_000 + rng.below(50_000)) {
        let code = rng.below(0x11_0000) as u32;
        let character = if rng.chance(30) {
            char::from((rng.below(32)) as u8)
        } else {
            char::from_u32(code).unwrap_or('\u{FFFD}')
        };
        text.push(character);
    }
    text.push_str("</known>");
    text
}

fn flood(rng: &mut Rng) -> String {
    (0..5_000 + rng.below(5_000))
        .map(|n| format!("<known path=\"known://fuzz/flood/{n}\">{n}</known><get path=\"src/*\"/>"))
        .collect()
}

fn http_fault(rng: &mut Rng) -> Step {
    match rng.below(6) {
        0 => Step::error(500),
        1 => Step::error_retry_after(429, "1"),
        2 => Step::error(503),
        3 => Step::Json(serde_json::json!({"choices": "not a list"})),
        4 => Step::Json(serde_json::json!({"choices": [{"message": {"content": null}}]})),
        _ => Step::delayed(
            Duration::from_millis(500 + rng.below(1_500) as u64),
            Reply::new("<summarize>late</summarize>"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(step: &Step) -> &str {
        match step {
            Step::Reply(reply) => &reply.content,
            other => panic!("not a reply: {other:?}"),
        }
    }

    #[test]
    fn a_seed_draws_the_same_answers() {
        let first = HostileModel::new(7);
        let second = HostileModel::new(7);
        for _ in 0..30 {
            assert_eq!(first.answer(), second.answer());
        }
        let other = HostileModel::new(8);
        let differs = (0..30).any(|_| first.answer() != other.answer());
        assert!(differs, "another seed draws other answers");
    }

    #[test]
    fn every_kind_is_drawn_and_replies_end_their_turn() {
        let mut rng = Rng::new(1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..500 {
            seen.insert(*rng.pick(&Kind::ALL));
        }
        assert_eq!(seen.len(), Kind::ALL.len());
        for kind in Kind::ALL
            .into_iter()
            .filter(|kind| *kind != Kind::HttpFault)
        {
            let step = step_of(kind, &mut rng);
            let text = content(&step);
            assert!(
                text.ends_with("</summarize>") || text.ends_with("</update>"),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn huge_replies_are_a_megabyte_and_nesting_is_deep() {
        let mut rng = Rng::new(3);
        let huge = step_of(Kind::Huge, &mut rng);
        assert!(content(&huge).len() >= MEGABYTE);
        let nested = step_of(Kind::Nested, &mut rng);
        assert!(content(&nested).matches('<').count() >= 20_000);
    }

    #[test]
    fn faults_are_not_replies() {
        let mut rng = Rng::new(5);
        let faults: Vec<Step> = (0..40)
            .map(|_| step_of(Kind::HttpFault, &mut rng))
            .collect();
        assert!(faults
            .iter()
            .any(|step| matches!(step, Step::Error { status: 500, .. })));
        assert!(faults.iter().any(|step| matches!(step, Step::Json(_))));
        assert!(faults
            .iter()
            .any(|step| matches!(step, Step::Delayed { .. })));
    }
}
