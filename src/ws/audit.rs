//! The `rpc_log` row of one call, as `RUMMY_RPC_LOG` asks: none when the log is off; its
//! facts (method, project, person, run, status, duration, sizes) otherwise; and in `full`
//! mode its texts too (request id, params, result, error message), each cut to
//! `RUMMY_RPC_LOG_MAX_CHARS`; but never those of a call that carries a secret
//! (`webhooks/add`, `addModel` with its API key).
//!
//! The params and result are measured as they are serialised, keeping only the start a row
//! stores: a call of megabytes is not copied whole for its audit row.

use std::io;
use std::time::Duration;

use serde_json::Value;

use crate::config::{AuditSettings, RpcLogMode};
use crate::db::ids::ProjectId;
use crate::db::models::RpcLogInsertForm;
use crate::error::AppError;
use crate::rpc::call::Reply;
use crate::rpc::envelope::Request;

/// Longest method, request id, run alias or person a row keeps, in characters: real ones
/// are short, and a client naming a megabyte-long method must not have it stored.
const NAME_MAX_CHARS: usize = 256;

/// Most bytes one character takes in UTF-8.
const MAX_CHAR_BYTES: usize = 4;

/// One call as its session saw it.
pub(crate) struct Call<'a> {
    /// The connection's project, when initialised.
    pub project: Option<ProjectId>,
    /// Who made the call.
    pub person: Option<String>,
    pub request: &'a Request,
    pub outcome: &'a Result<Reply, AppError>,
    /// From the request read to its reply ready.
    pub duration: Duration,
}

/// The methods whose params or result carry a secret: their rows keep no text, in any mode.
const SECRET_METHODS: &[&str] = &[
    "webhooks/add",
    "addModel",
    "tokens/mint",
    "people/add",
    "people/token",
    "keys/set",
    "hostCredentials/set",
    "mcpCredentials/set",
];

/// The row `settings` keep of `call`, if any.
pub(crate) fn row(settings: &AuditSettings, call: Call<'_>) -> Option<RpcLogInsertForm> {
    let texts = match settings.rpc_log {
        RpcLogMode::Off => return None,
        RpcLogMode::Meta => None,
        RpcLogMode::Full if SECRET_METHODS.contains(&call.request.method.as_str()) => None,
        RpcLogMode::Full => Some(settings.rpc_log_max_chars),
    };
    let params = Measured::of(&call.request.params, texts);
    let (result, status, error) = match call.outcome {
        Ok(reply) => (Some(Measured::of(&reply.result, texts)), None, None),
        Err(error) => (
            None,
            Some(error.to_rpc().code.get()),
            texts.map(|max_chars| cut(&error.to_string(), max_chars)),
        ),
    };
    let rpc_id = texts.and(call.request.id.as_ref());
    Some(RpcLogInsertForm {
        project_id: call.project,
        method: cut(&call.request.method, NAME_MAX_CHARS),
        rpc_id: rpc_id.and_then(|id| Measured::of(id, Some(NAME_MAX_CHARS)).text),
        params: params.text,
        result_bytes: result.as_ref().map(|result| result.bytes),
        result: result.and_then(|result| result.text),
        error,
        duration_ms: i64::try_from(call.duration.as_millis()).unwrap_or(i64::MAX),
        status,
        params_bytes: params.bytes,
        run: run_of(&call.request.params),
        person: call.person.map(|person| cut(&person, NAME_MAX_CHARS)),
    })
}

/// The run alias a call names: its `run` param, when that is a string.
fn run_of(params: &Value) -> Option<String> {
    let run = params.get("run")?.as_str()?;
    Some(cut(run, NAME_MAX_CHARS))
}

/// The first `max_chars` characters of `text`.
fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// A JSON value's size as text, and the start of that text when it is kept.
struct Measured {
    bytes: i64,
    text: Option<String>,
}

impl Measured {
    /// Measures `value`, keeping its first `keep_chars` characters when asked to.
    fn of(value: &Value, keep_chars: Option<usize>) -> Measured {
        let mut prefix = Prefix {
            bytes: 0,
            kept: Vec::new(),
            keep: keep_chars.map_or(0, |chars| chars.saturating_mul(MAX_CHAR_BYTES)),
        };
        // Neither a `Value` nor a `Prefix` can fail to serialise or write.
        let _ = serde_json::to_writer(&mut prefix, value);
        let text = keep_chars.map(|chars| {
            // The kept bytes may end inside a character; the characters before it are more
            // than `chars`.
            let whole = prefix
                .kept
                .utf8_chunks()
                .next()
                .map_or("", |chunk| chunk.valid());
            cut(whole, chars)
        });
        Measured {
            bytes: i64::try_from(prefix.bytes).unwrap_or(i64::MAX),
            text,
        }
    }
}

/// A writer that counts every byte and keeps the first `keep`.
struct Prefix {
    bytes: usize,
    kept: Vec<u8>,
    keep: usize,
}

impl io::Write for Prefix {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len();
        let room = self.keep.saturating_sub(self.kept.len()).min(buf.len());
        self.kept.extend_from_slice(&buf[..room]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(mode: RpcLogMode) -> AuditSettings {
        AuditSettings {
            rpc_log: mode,
            rpc_log_max_chars: 10,
            rpc_log_max_days: 7,
            rpc_log_max_rows: 100,
        }
    }

    fn request(params: Value) -> Request {
        Request {
            id: Some(json!("abc")),
            method: "getRun".into(),
            params,
        }
    }

    fn call<'a>(request: &'a Request, outcome: &'a Result<Reply, AppError>) -> Call<'a> {
        Call {
            project: Some(ProjectId(3)),
            person: Some("ana".into()),
            request,
            outcome,
            duration: Duration::from_millis(1500),
        }
    }

    #[test]
    fn a_full_row_keeps_the_facts_and_the_texts_cut() {
        let request = request(json!({"path": "é".repeat(20), "run": "r_1"}));
        let outcome = Reply::of(json!({"body": "long enough"}));
        let row = row(&settings(RpcLogMode::Full), call(&request, &outcome)).unwrap();
        let params_text = request.params.to_string();
        let first_ten: String = params_text.chars().take(10).collect();
        assert_eq!(row.params, Some(first_ten));
        assert_eq!(row.params_bytes, params_text.len() as i64);
        assert_eq!(row.result.as_deref(), Some(r#"{"body":"l"#));
        assert_eq!(row.result_bytes, Some(22));
        assert_eq!(row.rpc_id.as_deref(), Some(r#""abc""#));
        assert_eq!((row.status, row.error, row.duration_ms), (None, None, 1500));
        assert_eq!(
            (row.project_id, row.method.as_str(), row.run, row.person),
            (
                Some(ProjectId(3)),
                "getRun",
                Some("r_1".into()),
                Some("ana".into())
            )
        );
    }

    #[test]
    fn a_failed_call_keeps_its_code_and_its_message_cut() {
        let request = request(json!({"run": 5}));
        let outcome = Err(AppError::RunNotFound("nope_1".into()));
        let full = row(&settings(RpcLogMode::Full), call(&request, &outcome)).unwrap();
        assert_eq!(full.status, Some(-32002));
        assert_eq!(full.error.as_deref(), Some("Run 'nope_"), "10 characters");
        assert_eq!((full.result, full.result_bytes), (None, None));
        assert_eq!(
            full.run, None,
            "a run param that is not a string names none"
        );
    }

    #[test]
    fn a_call_carrying_a_secret_keeps_no_text_even_in_full_mode() {
        let request = Request {
            method: "webhooks/add".into(),
            ..request(json!({"url": "http://127.0.0.1/", "secret": "s3cret-s3cret-s3cret"}))
        };
        let outcome = Reply::of(json!({"id": "wh_1", "secret": "s3cret-s3cret-s3cret"}));
        let full = row(&settings(RpcLogMode::Full), call(&request, &outcome)).unwrap();
        assert_eq!(
            (full.rpc_id, full.params, full.result, full.error),
            (None, None, None, None)
        );
        assert_eq!(full.method, "webhooks/add");
    }

    #[test]
    fn a_meta_row_keeps_no_text_and_an_off_log_no_row() {
        let request = request(json!({"run": "r_1", "secret": "s3cret"}));
        let outcome = Reply::of(json!({"body": "private"}));
        let meta = row(&settings(RpcLogMode::Meta), call(&request, &outcome)).unwrap();
        assert_eq!(
            (meta.rpc_id, meta.params, meta.result, meta.error),
            (None, None, None, None)
        );
        assert_eq!(
            (meta.params_bytes, meta.result_bytes),
            (request.params.to_string().len() as i64, Some(18))
        );
        assert_eq!((meta.run.as_deref(), meta.duration_ms), (Some("r_1"), 1500));
        let failed = Err(AppError::NotInitialized);
        let meta = row(&settings(RpcLogMode::Meta), call(&request, &failed)).unwrap();
        assert_eq!((meta.status, meta.error), (Some(-32001), None));
        assert!(row(&settings(RpcLogMode::Off), call(&request, &outcome)).is_none());
    }

    #[test]
    fn names_are_cut_however_long_a_client_sends_them() {
        let long = "m".repeat(NAME_MAX_CHARS * 10);
        let request = Request {
            id: Some(json!(long)),
            method: long.clone(),
            params: json!({ "run": long }),
        };
        let outcome = Reply::of(json!({}));
        let call = Call {
            person: Some(long.clone()),
            ..call(&request, &outcome)
        };
        let row = row(&settings(RpcLogMode::Full), call).unwrap();
        let lengths = [
            row.method.len(),
            row.rpc_id.unwrap_or_default().len(),
            row.run.unwrap_or_default().len(),
            row.person.unwrap_or_default().len(),
        ];
        assert_eq!(lengths, [NAME_MAX_CHARS; 4]);
    }

    #[test]
    fn a_kept_text_never_ends_inside_a_character() {
        for keep in 0..12 {
            let value = json!(format!("a{}", "€é".repeat(10)));
            let measured = Measured::of(&value, Some(keep));
            let expected: String = value.to_string().chars().take(keep).collect();
            assert_eq!(measured.text, Some(expected), "keeping {keep}");
            assert_eq!(measured.bytes, value.to_string().len() as i64);
        }
        assert_eq!(Measured::of(&json!([1, 2]), None).text, None);
    }
}
