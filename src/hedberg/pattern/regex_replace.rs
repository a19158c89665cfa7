//! `/regex/` replacement with JavaScript-style templates: `$1`…`$99`, `$<name>`, `$&`, `$$`.

use regex::{Captures, Regex};

/// Replaces every match; `None` when there is none.
pub(super) fn replace_all(regex: &Regex, subject: &str, template: &str) -> Option<String> {
    if !regex.is_match(subject) {
        return None;
    }
    let replaced = regex.replace_all(subject, |captures: &Captures<'_>| {
        expand(template, captures)
    });
    Some(replaced.into_owned())
}

fn expand(template: &str, captures: &Captures<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (expansion, consumed) = expand_one(after, captures);
        match expansion {
            Some(text) => out.push_str(&text),
            None => out.push('$'),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

/// Expands the reference after a `$`; returns the text (or `None` for a literal `$`) and
/// how many bytes of `after` it used.
fn expand_one(after: &str, captures: &Captures<'_>) -> (Option<String>, usize) {
    let group_text = |index: usize| captures.get(index).map_or("", |m| m.as_str()).to_string();
    match after.chars().next() {
        Some('$') => (Some("$".to_string()), 1),
        Some('&') => (Some(group_text(0)), 1),
        Some('<') => match after.find('>') {
            Some(end) if captures.name(&after[1..end]).is_some() => (
                Some(
                    captures
                        .name(&after[1..end])
                        .map_or("", |m| m.as_str())
                        .to_string(),
                ),
                end + 1,
            ),
            _ => (None, 0),
        },
        Some(c) if c.is_ascii_digit() => {
            let digits: String = after
                .chars()
                .take(2)
                .take_while(char::is_ascii_digit)
                .collect();
            let two = digits
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n < captures.len());
            let one = digits
                .get(..1)
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&n| n > 0 && n < captures.len());
            match (two, one) {
                (Some(group), _) if digits.len() == 2 => (Some(group_text(group)), 2),
                (_, Some(group)) => (Some(group_text(group)), 1),
                _ => (None, 0),
            }
        }
        _ => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(regex: &str, subject: &str, template: &str) -> Option<String> {
        replace_all(&Regex::new(regex).expect("regex"), subject, template)
    }

    #[test]
    fn templates() {
        assert_eq!(run(r"\d+", "a1 b22", "N"), Some("aN bN".into()));
        assert_eq!(
            run(r"(\w)(\d)", "a1", "$2$1 $& $$ $3 $x"),
            Some("1a a1 $ $3 $x".into())
        );
        assert_eq!(
            run(r"(?<n>\d)", "7", "[$<n>] $<m>"),
            Some("[7] $<m>".into())
        );
        assert_eq!(run(r"(a)", "a", "$10"), Some("a0".into()));
        assert_eq!(run(r"z", "a", "x"), None);
    }
}
