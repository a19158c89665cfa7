//! The words recall indexes and searches for, the same on both stores and for a stored fact
//! and a question alike. Text splits into words at every character that is neither a letter
//! nor a digit, except in the scripts written without spaces between words (Chinese,
//! Japanese; Korean too, whose words carry their particles: [`is_cjk`]): there nothing marks
//! where a word ends, so a run of their characters counts as its overlapping pairs of
//! characters (`数据库` → `数据 据库`, the bigrams of Lucene's CJK analyzer), and a lone one
//! as no word. [`searchable`] rewrites a text so: SQLite's SQL function `searchable`
//! (registered from it) feeds the FTS5 tables, PostgreSQL's twin in PL/pgSQL (migration
//! `2026-12-07-000000_cjk_recall`) the `search` columns, and [`query_words`] reads a
//! question through it. It also turns the punctuation these scripts are written with into
//! spaces ([`is_wide_punctuation`]): FTS5 splits there anyway, but PostgreSQL's parser in a
//! `C` locale takes every character past ASCII for a letter, and would read `Rust。` as one
//! word.

use std::borrow::Cow;

/// Most distinct words of a text a recall searches for.
pub(super) const MAX_QUERY_WORDS: usize = 32;
/// Shortest word a recall searches for, in characters, but for a pair of CJK characters.
const MIN_QUERY_WORD_CHARS: usize = 3;

/// Whether `c` is a letter of the Han, Hiragana, Katakana or Hangul scripts (the ideographs
/// of the unified and compatibility blocks and their extensions, `々〆〇`, the kana with
/// their iteration and prolonged-sound marks and the half-width ones, the Hangul syllables
/// and jamo); never a punctuation mark such as `。` or `・`. PostgreSQL's `searchable`
/// names the same ranges.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(
        u32::from(c),
        0x1100..=0x11FF
            | 0x3005..=0x3007
            | 0x3041..=0x3096
            | 0x309D..=0x309F
            | 0x30A1..=0x30FA
            | 0x30FC..=0x30FF
            | 0x3131..=0x318E
            | 0x31F0..=0x31FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA960..=0xA97C
            | 0xAC00..=0xD7A3
            | 0xD7B0..=0xD7FB
            | 0xF900..=0xFAFF
            | 0xFF66..=0xFF9F
            | 0x20000..=0x3134F
    )
}

/// Whether `c` is a mark of the General Punctuation block (dashes, quotes, `…`), of CJK
/// Symbols and Punctuation (`、。「」〜`, the ideographic space), `゠・`, or a vertical,
/// full-width or half-width form of punctuation (`，！？：｡｢｣･`); never a letter or a digit.
/// PostgreSQL's `searchable` names the same ranges.
pub(crate) fn is_wide_punctuation(c: char) -> bool {
    matches!(
        u32::from(c),
        0x2000..=0x206F
            | 0x3000..=0x3004
            | 0x3008..=0x3020
            | 0x3030
            | 0x303D..=0x303F
            | 0x30A0
            | 0x30FB
            | 0xFE30..=0xFE4F
            | 0xFF01..=0xFF0F
            | 0xFF1A..=0xFF20
            | 0xFF3B..=0xFF40
            | 0xFF5B..=0xFF65
    )
}

/// `text` as recall's indexes read it: each run of CJK characters replaced by its
/// overlapping pairs, space-separated, with a space on either side (a lone character leaves
/// the two spaces), and each mark of wide punctuation by a space; everything else as it
/// was.
pub(crate) fn searchable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_cjk(c) || is_wide_punctuation(c)) {
        return Cow::Borrowed(text);
    }
    let mut rewritten = String::with_capacity(text.len() * 2);
    let mut run = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
            continue;
        }
        push_pairs(&mut rewritten, &mut run);
        rewritten.push(if is_wide_punctuation(c) { ' ' } else { c });
    }
    push_pairs(&mut rewritten, &mut run);
    Cow::Owned(rewritten)
}

/// Appends the pairs of `run` (emptied) to `rewritten`, between spaces; nothing for no run.
fn push_pairs(rewritten: &mut String, run: &mut Vec<char>) {
    if run.is_empty() {
        return;
    }
    rewritten.push(' ');
    for (index, pair) in run.windows(2).enumerate() {
        if index > 0 {
            rewritten.push(' ');
        }
        rewritten.extend(pair);
    }
    rewritten.push(' ');
    run.clear();
}

/// The distinct words of `text` a recall looks for, in the order they come: each of at
/// least `MIN_QUERY_WORD_CHARS` characters or a pair of CJK characters, lower case, at most
/// `MAX_QUERY_WORDS` of them.
pub(crate) fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in searchable(text).split(|c: char| !c.is_alphanumeric()) {
        let chars = word.chars().count();
        let pair = chars == 2 && word.chars().all(is_cjk);
        if chars < MIN_QUERY_WORD_CHARS && !pair {
            continue;
        }
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_cjk_characters_is_its_overlapping_pairs() {
        assert_eq!(searchable("deploy with care"), "deploy with care");
        assert!(matches!(searchable("plain"), Cow::Borrowed(_)));
        assert_eq!(searchable("数据库备份"), " 数据 据库 库备 备份 ");
        assert_eq!(searchable("用Rust写"), "  Rust  ");
        assert_eq!(
            searchable("東京に行く。テスト・ケース"),
            " 東京 京に に行 行く   テス スト   ケー ース "
        );
        assert_eq!(searchable("Rust、Go—“ok”"), "Rust Go  ok ");
    }

    #[test]
    fn wide_punctuation_is_neither_a_letter_nor_a_digit_nor_cjk() {
        let marks: Vec<char> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| is_wide_punctuation(*c))
            .collect();
        assert!(marks.contains(&'。') && marks.contains(&'…') && marks.contains(&'，'));
        for c in marks {
            assert!(!c.is_alphanumeric() && !is_cjk(c), "{c:?}");
        }
    }

    #[test]
    fn a_question_s_words_are_its_long_words_and_its_cjk_pairs() {
        assert_eq!(
            query_words("数据库怎么备份？"),
            ["数据", "据库", "库怎", "怎么", "么备", "备份"]
        );
        assert_eq!(
            query_words("デプロイの手順は?"),
            ["デプ", "プロ", "ロイ", "イの", "の手", "手順", "順は"]
        );
        assert_eq!(query_words("Rust的数据"), ["rust", "的数", "数据"]);
        assert!(
            query_words("字 a 了").is_empty(),
            "lone characters are no words"
        );
        assert_eq!(
            query_words("서버를 재시작"),
            ["서버", "버를", "재시", "시작"]
        );
    }
}
