//! The part of a command's output its entry keeps: the first quarter of the cap and the last
//! three quarters (a test run prints its summary last), with a note of what was left out
//! between.

use std::collections::VecDeque;

/// Output kept within a cap, as it arrives.
#[derive(Debug)]
pub(crate) struct KeptOutput {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    /// Bytes seen in all.
    total: u64,
}

impl KeptOutput {
    /// Keeps at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> KeptOutput {
        let head_cap = cap / 4;
        KeptOutput {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Takes the next bytes of output.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        let (head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(head);
        bytes = rest;
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// Bytes seen in all, kept or not.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// What is kept, as text (invalid UTF-8 replaced), with the note of what was left out.
    pub(crate) fn text(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            text.push_str(&format!("\n… [{} bytes omitted] …\n", self.total - kept));
        }
        let (first, second) = self.tail.as_slices();
        text.push_str(&String::from_utf8_lossy(&[first, second].concat()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::KeptOutput;

    #[test]
    fn output_within_the_cap_is_kept_whole() {
        let mut kept = KeptOutput::new(16);
        kept.push(b"hello ");
        kept.push(b"world");
        assert_eq!(kept.text(), "hello world");
        assert_eq!(kept.total(), 11);
    }

    #[test]
    fn past_the_cap_the_start_and_the_end_are_kept_with_a_note() {
        let mut kept = KeptOutput::new(8);
        for chunk in [&b"abcdef"[..], b"ghij", b"klmnopqrstu"] {
            kept.push(chunk);
        }
        assert_eq!(kept.text(), "ab\n… [13 bytes omitted] …\npqrstu");
        let mut one = KeptOutput::new(8);
        one.push(b"abcdefghijklmnopqrstu");
        assert_eq!(one.text(), kept.text(), "however the output was split");
    }
}
