//! Runs' titles, as people read them: the first line of a run's first prompt (set with
//! the run's first loop, in the statement that numbers it), the title of its session notes
//! once they have one, or a person's name for it (`run/rename`), which no automatic title
//! replaces.

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};

use crate::db::enums::TitleBy;
use crate::db::ids::RunId;
use crate::db::schema::runs;
use crate::db::{Conn, DbError};

/// Most characters of a title; a longer line is cut at a word with an ellipsis.
pub(crate) const MAX_TITLE_CHARS: usize = 80;

diesel::define_sql_function! {
    /// The first of the two that is not NULL.
    fn coalesce(first: Nullable<Text>, second: Nullable<Text>) -> Nullable<Text>;
}

/// A run's title from a prompt: its first line with text, its whitespace runs made single
/// spaces and control characters dropped, cut to [`MAX_TITLE_CHARS`] (`None`: no text).
pub(crate) fn from_prompt(prompt: &str) -> Option<String> {
    let line = prompt.lines().find(|line| !line.trim().is_empty())?;
    let words: Vec<String> = line
        .split_whitespace()
        .map(|word| word.chars().filter(|c| !c.is_control()).collect::<String>())
        .filter(|word| !word.is_empty())
        .collect();
    let clean = words.join(" ");
    if clean.is_empty() {
        return None;
    }
    Some(cut(&clean))
}

/// `text` cut to [`MAX_TITLE_CHARS`] characters, at the last space before the limit when
/// there is one, with an ellipsis.
fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_TITLE_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(MAX_TITLE_CHARS - 1).collect();
    let kept = match head.rfind(' ') {
        Some(space) if space > 0 => &head[..space],
        _ => head.as_str(),
    };
    format!("{kept}…")
}

/// The assignments that give a run its first prompt's title when it has none yet.
#[allow(clippy::type_complexity)]
pub(crate) fn first_prompt(
    prompt: &str,
) -> (
    diesel::dsl::Eq<runs::title, coalesce<runs::title, Option<String>>>,
    diesel::dsl::Eq<runs::title_by, coalesce<runs::title_by, Option<&'static str>>>,
) {
    let title = from_prompt(prompt);
    let by = title.as_ref().map(|_| TitleBy::Prompt.as_str());
    (
        runs::title.eq(coalesce(runs::title, title)),
        runs::title_by.eq(coalesce(runs::title_by, by)),
    )
}

/// Gives the run its session notes' title, unless a person named it.
pub(crate) fn from_notes(conn: &mut Conn, run: RunId, title: &str) -> Result<(), DbError> {
    let Some(title) = from_prompt(title) else {
        return Ok(());
    };
    diesel::update(runs::table.find(run))
        .filter(
            runs::title_by
                .is_null()
                .or(runs::title_by.ne(TitleBy::Person.as_str())),
        )
        .set((
            runs::title.eq(title),
            runs::title_by.eq(TitleBy::Notes.as_str()),
        ))
        .execute(conn)?;
    Ok(())
}

/// A person's title for the run, which automatic titles no longer replace.
pub(crate) fn by_person(conn: &mut Conn, run: RunId, title: &str) -> Result<(), DbError> {
    diesel::update(runs::table.find(run))
        .set((
            runs::title.eq(title),
            runs::title_by.eq(TitleBy::Person.as_str()),
        ))
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_titles_by_its_first_line_with_text_cleaned_and_cut() {
        assert_eq!(
            from_prompt("\n  \n  Fix   the\tlogin\u{7} bug \nand more").as_deref(),
            Some("Fix the login bug")
        );
        assert_eq!(from_prompt(" \n\t\n"), None);
        let long = "word ".repeat(40);
        let title = from_prompt(&long).unwrap();
        assert!(title.chars().count() <= MAX_TITLE_CHARS, "{title}");
        assert!(title.ends_with("word…"), "{title}");
        let unbroken = "x".repeat(200);
        assert_eq!(
            from_prompt(&unbroken).unwrap().chars().count(),
            MAX_TITLE_CHARS
        );
        assert_eq!(from_prompt(&"é".repeat(80)).unwrap(), "é".repeat(80));
    }
}
