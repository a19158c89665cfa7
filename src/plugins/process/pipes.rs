//! The tasks that read a plugin process's pipes: its answers on stdout, handed to the
//! calls waiting for them (the end of stdout, or a line that is not an answer, is the
//! process's failure), and its stderr, logged and cut.

use std::sync::Weak;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use super::link::{lock_pending, CallError, Link, Process};

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

/// Hands each answer on stdout to its waiting call; at the end of stdout or on a line that
/// is not an answer, fails every call waiting and counts the process's failure.
pub(super) async fn read_answers(
    stdout: impl AsyncRead + Unpin,
    process: Weak<Process>,
    link: Weak<Link>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let error = loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break CallError::Crashed,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 > MAX_LINE_BYTES => {
                break CallError::Garbage(format!("a line over {MAX_LINE_BYTES} bytes"));
            }
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let answer = match serde_json::from_slice::<Answer>(&line) {
            Ok(answer) => answer,
            Err(error) => break CallError::Garbage(error.to_string()),
        };
        let Some(process) = process.upgrade() else {
            return;
        };
        let waiting = answer
            .id
            .as_u64()
            .and_then(|id| lock_pending(&process).remove(&id));
        let outcome = match (answer.error, answer.result) {
            (Some(error), _) => Err(CallError::Answered {
                code: error.code,
                message: error.message,
            }),
            (None, result) => Ok(result.unwrap_or(Value::Null)),
        };
        if let Some(waiting) = waiting {
            let _ = waiting.send(outcome);
        }
    };
    let Some(process) = process.upgrade() else {
        return;
    };
    if let Some(link) = link.upgrade() {
        link.failed(Some(process.generation), &error);
    }
    for (_, waiting) in lock_pending(&process).drain() {
        let _ = waiting.send(Err(error.clone()));
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
