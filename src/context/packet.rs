//! The packet sent to the model, and its token measures.
//!
//! Three measures exist and are never mixed up:
//! * **entry tokens** ([`ContextRow::tokens`](super::ContextRow), summed in
//!   [`Packet::entry_tokens`]): `countTokens` of each projected row, shown to the model as
//!   `tokens="…"` so it can decide what to demote. Display only.
//! * **the assembled estimate** ([`Packet::assembled_tokens`]): `countTokens(system) +
//!   countTokens(user)`, the size of this very packet. The budget check measures it.
//! * **the provider's actual count** (`usage.prompt_tokens`, stored in
//!   `turns.context_tokens` after the call): ground truth, known only once the provider
//!   answers; the packet never contains it.
//!
//! [`Packet::distribution`] splits the assembled estimate over the category buckets of the
//! text that produced it, so the buckets always add up to exactly the assembled estimate.

use serde::{Deserialize, Serialize};

use super::TokenMath;
use crate::db::enums::Category;

/// A telemetry bucket of `context_distribution`, in the wire's (alphabetical) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bucket {
    /// Files, known entries, skills, web pages, memory.
    Data,
    /// Tool results and lifecycle signals.
    Logging,
    /// The task.
    Prompt,
    /// Instructions, tool docs, persona and progress narration.
    System,
    /// Open questions.
    Unknown,
}

impl Bucket {
    /// Every bucket, in order.
    pub const ALL: [Bucket; 5] = [
        Bucket::Data,
        Bucket::Logging,
        Bucket::Prompt,
        Bucket::System,
        Bucket::Unknown,
    ];

    /// The bucket of an entry category (audit text is system text).
    pub fn of(category: Category) -> Bucket {
        match category {
            Category::Data | Category::Memory => Bucket::Data,
            Category::Logging => Bucket::Logging,
            Category::Unknown => Bucket::Unknown,
            Category::Prompt => Bucket::Prompt,
            Category::Audit => Bucket::System,
        }
    }

    fn index(self) -> usize {
        match self {
            Bucket::Data => 0,
            Bucket::Logging => 1,
            Bucket::Prompt => 2,
            Bucket::System => 3,
            Bucket::Unknown => 4,
        }
    }
}

/// One bucket of `context_distribution`: the tokens and entries of the packet it accounts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketShare {
    pub bucket: Bucket,
    /// Its share of the assembled estimate.
    pub tokens: i64,
    /// How many entries of it the packet shows (the instructions count as one system entry).
    pub entries: i64,
}

/// One message being written, with the characters and entries of each bucket counted as
/// text is appended.
#[derive(Debug, Clone)]
pub struct MessageBuilder {
    text: String,
    separator: &'static str,
    characters: [usize; 5],
    entries: [i64; 5],
}

impl MessageBuilder {
    /// An empty message whose sections are separated by `separator`.
    pub fn new(separator: &'static str) -> MessageBuilder {
        MessageBuilder {
            text: String::new(),
            separator,
            characters: [0; 5],
            entries: [0; 5],
        }
    }

    /// Appends `text`, accounted to `bucket`.
    pub fn push(&mut self, bucket: Bucket, text: &str) {
        if let Some(count) = self.characters.get_mut(bucket.index()) {
            *count += text.chars().count();
        }
        self.text.push_str(text);
    }

    /// Starts a section: the separator first unless the message is still empty.
    pub fn open_section(&mut self, bucket: Bucket) {
        if !self.text.is_empty() {
            self.push(bucket, self.separator);
        }
    }

    /// Counts one entry shown in `bucket`.
    pub fn count_entry(&mut self, bucket: Bucket) {
        if let Some(count) = self.entries.get_mut(bucket.index()) {
            *count += 1;
        }
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The two messages of one turn and their measures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Packet {
    /// Everything the model needs to know.
    pub system: String,
    /// Everything the model needs to do; the prompt is last.
    pub user: String,
    /// The assembled estimate: `countTokens(system) + countTokens(user)`.
    pub assembled_tokens: i64,
    /// The display measure: the sum of the projected tokens of the rows shown.
    pub entry_tokens: i64,
    /// The assembled estimate split by bucket, sorted by bucket; empty buckets left out.
    pub distribution: Vec<BucketShare>,
}

impl Packet {
    /// Finishes the two messages; `entry_tokens` is the sum of the rows' projected tokens.
    pub(crate) fn new(
        system: MessageBuilder,
        user: MessageBuilder,
        entry_tokens: i64,
        tokens: TokenMath,
    ) -> Packet {
        let assembled_tokens = tokens.count(&system.text) + tokens.count(&user.text);
        let mut characters = [0usize; 5];
        let mut entries = [0i64; 5];
        for message in [&system, &user] {
            for (total, part) in characters.iter_mut().zip(message.characters) {
                *total += part;
            }
            for (total, part) in entries.iter_mut().zip(message.entries) {
                *total += part;
            }
        }
        let shares = apportion(assembled_tokens, &characters, tokens.divisor());
        let distribution = Bucket::ALL
            .iter()
            .zip(shares.iter().zip(entries))
            .filter(|(_, (tokens, entries))| **tokens > 0 || *entries > 0)
            .map(|(bucket, (tokens, entries))| BucketShare {
                bucket: *bucket,
                tokens: *tokens,
                entries,
            })
            .collect();
        Packet {
            system: system.text,
            user: user.text,
            assembled_tokens,
            entry_tokens,
            distribution,
        }
    }
}

/// Splits `total` tokens over buckets by their characters: each bucket gets
/// `floor(chars / divisor)`, and the tokens left (from rounding each message up) go one by
/// one to the buckets with the largest remainders, bucket order breaking ties.
fn apportion(total: i64, characters: &[usize; 5], divisor: u32) -> [i64; 5] {
    let divisor = usize::try_from(divisor.max(1)).unwrap_or(1);
    let mut shares = [0i64; 5];
    for (share, count) in shares.iter_mut().zip(characters) {
        *share = i64::try_from(count / divisor).unwrap_or(i64::MAX);
    }
    let mut left = total - shares.iter().sum::<i64>();
    let mut candidates: Vec<usize> = (0..characters.len())
        .filter(|index| characters.get(*index).is_some_and(|count| *count > 0))
        .collect();
    candidates.sort_by_key(|index| {
        std::cmp::Reverse(characters.get(*index).map_or(0, |count| count % divisor))
    });
    while left > 0 && !candidates.is_empty() {
        for index in &candidates {
            if left == 0 {
                break;
            }
            if let Some(share) = shares.get_mut(*index) {
                *share += 1;
                left -= 1;
            }
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_add_up_to_the_assembled_estimate() {
        let tokens = TokenMath::new(4);
        let mut system = MessageBuilder::new("\n\n");
        system.push(Bucket::System, "abcde");
        system.count_entry(Bucket::System);
        system.open_section(Bucket::Data);
        system.push(Bucket::Data, "xyz");
        system.count_entry(Bucket::Data);
        let mut user = MessageBuilder::new("\n");
        user.push(Bucket::Prompt, "p");
        let packet = Packet::new(system, user, 7, tokens);
        assert_eq!(packet.system, "abcde\n\nxyz");
        assert_eq!(packet.assembled_tokens, 3 + 1);
        let total: i64 = packet.distribution.iter().map(|share| share.tokens).sum();
        assert_eq!(total, packet.assembled_tokens);
        let buckets: Vec<Bucket> = packet
            .distribution
            .iter()
            .map(|share| share.bucket)
            .collect();
        assert_eq!(buckets, [Bucket::Data, Bucket::Prompt, Bucket::System]);
        assert_eq!(packet.entry_tokens, 7);
    }

    #[test]
    fn an_empty_packet_has_no_buckets() {
        let packet = Packet::new(
            MessageBuilder::new("\n\n"),
            MessageBuilder::new("\n"),
            0,
            TokenMath::new(2),
        );
        assert_eq!(packet.assembled_tokens, 0);
        assert!(packet.distribution.is_empty());
    }

    #[test]
    fn leftover_tokens_go_to_the_largest_remainders() {
        assert_eq!(apportion(3, &[3, 1, 0, 0, 5], 4), [1, 1, 0, 0, 1]);
        assert_eq!(apportion(2, &[3, 1, 0, 0, 4], 4), [1, 0, 0, 0, 1]);
        assert_eq!(apportion(0, &[0; 5], 4), [0; 5]);
    }

    #[test]
    fn distribution_serializes_as_the_wire_expects() {
        let share = BucketShare {
            bucket: Bucket::Logging,
            tokens: 30,
            entries: 2,
        };
        assert_eq!(
            serde_json::to_value(share).unwrap(),
            serde_json::json!({"bucket": "logging", "tokens": 30, "entries": 2})
        );
    }
}
