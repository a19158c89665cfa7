//! The size gate: a known entry larger than `RUMMY_MAX_ENTRY_TOKENS` is refused with 413
//! and a message that teaches the model to split it into atomic entries.

use std::fmt;

use super::text;
use super::tokens::EntryTokens;

/// The size gate's default limit in entry tokens (`RUMMY_MAX_ENTRY_TOKENS`).
pub const DEFAULT_MAX_ENTRY_TOKENS: u64 = 512;

/// A known entry over the size limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryTooLarge {
    /// The entry's path as the model gave it (or as it was derived).
    pub path: String,
    pub tokens: EntryTokens,
    pub limit: EntryTokens,
}

impl EntryTooLarge {
    /// The text the model sees as the tool's result.
    pub fn message(&self) -> String {
        text::fill(
            text::ENTRY_TOO_LARGE,
            &[
                ("path", self.path.clone()),
                ("tokens", self.tokens.to_string()),
                ("limit", self.limit.to_string()),
                ("topic", topic_of(&self.path).to_owned()),
            ],
        )
    }
}

impl fmt::Display for EntryTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for EntryTooLarge {}

/// Refuses a known entry of `tokens` at `path` when it is over `limit`.
pub fn check_entry_size(
    path: &str,
    tokens: EntryTokens,
    limit: EntryTokens,
) -> Result<(), EntryTooLarge> {
    if tokens <= limit {
        return Ok(());
    }
    Err(EntryTooLarge {
        path: path.to_owned(),
        tokens,
        limit,
    })
}

/// The topic the split examples file parts under: the path without its scheme.
fn topic_of(path: &str) -> &str {
    let topic = path.split_once("://").map_or(path, |(_, rest)| rest);
    let topic = topic.trim_matches('/');
    if topic.is_empty() {
        "topic"
    } else {
        topic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit() -> EntryTokens {
        EntryTokens::new(DEFAULT_MAX_ENTRY_TOKENS)
    }

    #[test]
    fn an_entry_at_the_limit_passes() {
        assert_eq!(
            check_entry_size("known://a", EntryTokens::new(512), limit()),
            Ok(())
        );
        assert_eq!(
            check_entry_size("known://a", EntryTokens::new(0), limit()),
            Ok(())
        );
    }

    #[test]
    fn an_entry_over_the_limit_is_refused_with_a_split_lesson() {
        let refused = check_entry_size("known://auth/flow", EntryTokens::new(513), limit())
            .expect_err("over the limit");
        let message = refused.message();
        assert!(message.starts_with("413 "), "{message}");
        assert!(
            message.contains("known://auth/flow would be ~513 tokens"),
            "{message}"
        );
        assert!(message.contains("512 tokens or fewer"), "{message}");
        assert!(message.contains("known://auth/flow/part_1"), "{message}");
        assert!(message.contains("YOU MUST split"), "{message}");
        assert!(!message.contains('{'), "unfilled placeholder: {message}");
        assert_eq!(refused.to_string(), message);
    }

    #[test]
    fn a_path_without_a_topic_still_gets_an_example() {
        let refused = check_entry_size("known://", EntryTokens::new(600), limit()).unwrap_err();
        assert!(refused.message().contains("known://topic/part_2"));
        assert_eq!(topic_of("notes"), "notes");
    }
}
