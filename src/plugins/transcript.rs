//! The transcript plugin: `$RUMMY_HOME/last_run.txt` holds the exchanges of the most recent
//! loop (what was sent, what came back), for a person debugging a run. It observes events
//! and hands the text to its own writer thread, in order, so a slow disk never holds up a
//! turn.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::plugins::events::{Event, Observer};

/// One write: start the file afresh, or append.
struct Chunk {
    text: String,
    truncate: bool,
}

/// Appends each turn's exchange to one file, started afresh with every loop.
pub struct Transcript {
    sender: Mutex<Option<Sender<Chunk>>>,
    writer: Option<JoinHandle<()>>,
}

impl Transcript {
    /// A transcript at `path`, written by a thread of its own.
    pub fn new(path: PathBuf) -> Transcript {
        let (sender, receiver) = channel::<Chunk>();
        let writer = std::thread::Builder::new()
            .name("rummy-transcript".into())
            .spawn(move || {
                for chunk in receiver {
                    write_chunk(&path, &chunk);
                }
            })
            .map_err(|error| tracing::warn!(%error, "no transcript writer"))
            .ok();
        Transcript {
            sender: Mutex::new(Some(sender)),
            writer,
        }
    }

    fn write(&self, text: String, truncate: bool) {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(sender) = sender.as_ref() {
            let _ = sender.send(Chunk { text, truncate });
        }
    }
}

impl Drop for Transcript {
    /// Lets the writer finish what it was given.
    fn drop(&mut self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

fn write_chunk(path: &Path, chunk: &Chunk) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(!chunk.truncate)
        .truncate(chunk.truncate)
        .open(path);
    let written = file.and_then(|mut file| file.write_all(chunk.text.as_bytes()));
    if let Err(error) = written {
        tracing::warn!(path = %path.display(), %error, "cannot write the transcript");
    }
}

impl Observer for Transcript {
    fn priority(&self) -> i32 {
        900
    }

    fn observe(&self, event: &Event<'_>) {
        match *event {
            Event::LoopStarted {
                run, mode, prompt, ..
            } => self.write(
                format!("# run {run}, {} loop\n{prompt}\n", mode.as_str()),
                true,
            ),
            Event::TurnResponse {
                turn,
                system,
                user,
                content,
                ..
            } => self.write(
                format!(
                    "\n## turn {turn}\n### system\n{system}\n### user\n{user}\n### assistant\n{content}\n"
                ),
                false,
            ),
            Event::LoopEnded { status, .. } => {
                self.write(format!("\n# ended {}\n", status.code()), false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{LoopMode, RunStatus};
    use crate::db::ids::{LoopId, RunId};

    #[test]
    fn a_loop_is_written_as_one_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last_run.txt");
        let transcript = Transcript::new(path.clone());
        std::fs::write(&path, "an older loop").unwrap();
        transcript.observe(&Event::LoopStarted {
            run: RunId(1),
            loop_id: LoopId(1),
            mode: LoopMode::Ask,
            prompt: "what port?",
        });
        transcript.observe(&Event::TurnResponse {
            run: RunId(1),
            turn: 1,
            system: "SYSTEM",
            user: "USER",
            content: "<summarize>3000</summarize>",
        });
        transcript.observe(&Event::LoopEnded {
            run: RunId(1),
            loop_id: LoopId(1),
            status: RunStatus::Completed,
        });
        drop(transcript);
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.ends_with("# ended 200\n"), "{written}");
        assert!(!written.contains("an older loop"), "{written}");
        assert!(
            written.contains("what port?")
                && written.contains("### assistant\n<summarize>3000</summarize>")
        );
    }
}
