//! The tasks that read a plugin process's pipes: its answers on stdout, each handed to
//! whoever started the reading (the end of stdout, or a line that is not an answer, ends
//! it), and its stderr, logged and cut.

use std::ops::ControlFlow;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// The longest line a plugin may write on stdout; a longer one is garbage.
const MAX_LINE_BYTES: u64 = 4 << 20;
/// The most characters of one stderr line logged.
const STDERR_LINE_CHARS: usize = 400;
/// The most stderr lines logged per process started; the rest are dropped (one notice).
const STDERR_LINES: usize = 200;

/// One line of a plugin's stdout: an answer to a request.
#[derive(Deserialize)]
struct Answer {
    id: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<AnswerError>,
}

#[derive(Deserialize)]
struct AnswerError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// An answer read: the id of the request it answers (when it is one rummy can have sent)
/// and its result, or its error's code and message.
pub(super) struct Answered {
    pub id: Option<u64>,
    pub outcome: Result<Value, (i64, String)>,
}

/// Why reading a plugin's stdout ended.
pub(super) enum Ended {
    /// Its stdout closed (or could not be read).
    Closed,
    /// It wrote a line that is not an answer.
    Garbage(String),
    /// `answered` asked to stop.
    Stopped,
}

/// Hands each answer on stdout to `answered` until stdout ends, a line is not an answer,
/// or `answered` breaks.
pub(super) async fn read_answers(
    stdout: impl AsyncRead + Unpin,
    mut answered: impl FnMut(Answered) -> ControlFlow<()>,
) -> Ended {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return Ended::Closed,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 > MAX_LINE_BYTES => {
                return Ended::Garbage(format!("a line over {MAX_LINE_BYTES} bytes"));
            }
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let answer = match serde_json::from_slice::<Answer>(&line) {
            Ok(answer) => answer,
            Err(error) => return Ended::Garbage(error.to_string()),
        };
        let outcome = match (answer.error, answer.result) {
            (Some(error), _) => Err((error.code, error.message)),
            (None, result) => Ok(result.unwrap_or(Value::Null)),
        };
        let read = Answered {
            id: answer.id.as_u64(),
            outcome,
        };
        if answered(read).is_break() {
            return Ended::Stopped;
        }
    }
}

/// Logs each line of a plugin's stderr, cut to [`STDERR_LINE_CHARS`], at most
/// [`STDERR_LINES`] of them.
pub(super) async fn log_stderr(stderr: impl AsyncRead + Unpin, plugin: String) {
    let mut lines = BufReader::new(stderr).lines();
    let mut logged = 0;
    while let Ok(Some(line)) = lines.next_line().await {
        if logged == STDERR_LINES {
            tracing::info!(plugin, "plugin stderr: further lines are not logged");
        }
        logged += 1;
        if logged <= STDERR_LINES {
            let line: String = line.chars().take(STDERR_LINE_CHARS).collect();
            tracing::info!(plugin, line, "plugin stderr");
        }
    }
}
