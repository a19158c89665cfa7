//! The body of a delivery: rummy's JSON object ([`Payload`]), or for `format: "slack"` a
//! `{"text": …}` with one readable line and, when the server knows its public URL, the
//! run's console link.

use serde::Serialize;
use serde_json::Value;

use crate::db::queries::webhooks::deliveries::Claimed;
use crate::usage::UtcTime;

use super::Format;

/// Where the run's console page is, when the server knows its public URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsoleLinks {
    /// `RUMMY_PUBLIC_URL` and `RUMMY_CONSOLE_PATH` joined: `https://host/ui`.
    pub base: String,
}

impl ConsoleLinks {
    /// The console page of run `run` of `project`.
    fn run(&self, project: &str, run: &str) -> String {
        format!(
            "{}/#/p/{}/r/{}",
            self.base,
            component(project),
            component(run)
        )
    }
}

/// `text` as one component of a URL's fragment: unreserved characters kept, others
/// percent-encoded (as the console's `decodeURIComponent` reads them).
fn component(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// What a delivery says, in rummy's JSON format.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Payload {
    /// The delivery's id, the same on every attempt: a receiver that sees it twice has
    /// handled it already.
    pub id: String,
    /// `approval.pending`, `run.finished`, `run.failed`, `cap.warning` or `cap.reached`.
    pub event: String,
    pub project: String,
    /// The run's alias.
    pub run: Option<String>,
    /// The run's first prompt, cut to 200 characters.
    pub title: Option<String>,
    /// The run's status (`run/outcome`'s): 202, 200, 500, 413, 402.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// Why the loop ended (`done`, `failed` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What failed, did not fit, or which cap was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The pending proposals' paths (`approval.pending`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proposals: Vec<String>,
    /// The cap and where its period stands (`cap.warning`: `usage/capWarning`'s object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap: Option<Value>,
    /// Who requested the loop that ended (the run's starter for a cap warning); `null`: the
    /// operator.
    pub who: Option<String>,
    /// When the event happened, ISO 8601 UTC.
    pub at: String,
    /// The run's console page, when the server knows its public URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Payload {
    /// What `delivery` says.
    pub(crate) fn of(delivery: &Claimed, links: Option<&ConsoleLinks>) -> Payload {
        let detail: Value = serde_json::from_str(&delivery.detail).unwrap_or(Value::Null);
        let outcome = detail.get("params");
        let text = |key: &str| {
            outcome
                .and_then(|params| params.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let proposals = outcome
            .and_then(|params| params.get("proposed"))
            .and_then(Value::as_array)
            .map(|proposed| {
                proposed
                    .iter()
                    .filter_map(|proposal| proposal.get("path").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let url = links
            .zip(delivery.run.as_deref())
            .map(|(links, run)| links.run(&delivery.project, run));
        Payload {
            id: delivery_id(delivery.id),
            event: delivery.event.clone(),
            project: delivery.project.clone(),
            run: delivery.run.clone(),
            title: delivery.title.clone(),
            status: outcome
                .and_then(|params| params.get("status"))
                .and_then(Value::as_i64),
            reason: text("reason"),
            error: text("error"),
            proposals,
            cap: outcome
                .is_none()
                .then_some(detail)
                .filter(|cap| !cap.is_null()),
            who: delivery.who.clone(),
            at: UtcTime(delivery.created_ms.div_euclid(1000)).iso(),
            url,
        }
    }

    /// The body in `format`.
    pub(crate) fn body(&self, format: Format) -> Vec<u8> {
        let value = match format {
            Format::Json => serde_json::to_vec(self),
            Format::Slack => serde_json::to_vec(&serde_json::json!({ "text": self.line() })),
        };
        value.unwrap_or_default()
    }

    /// One readable line (Slack's text, its `&`, `<` and `>` escaped), then the link.
    fn line(&self) -> String {
        let run = self.run.as_deref().unwrap_or("?");
        let what = match self.event.as_str() {
            "approval.pending" => match self.proposals.len() {
                1 => format!("run {run} waits for approval of {}", self.proposals[0]),
                count => format!("run {run} waits for approval of {count} proposals"),
            },
            "run.finished" => format!("run {run} finished"),
            "run.failed" => format!(
                "run {run} failed ({})",
                self.error
                    .as_deref()
                    .or(self.reason.as_deref())
                    .unwrap_or("no reason given")
            ),
            "cap.warning" => format!(
                "run {run} took spending past the warning share of {}",
                cap_named(self.cap.as_ref())
            ),
            "cap.reached" => format!(
                "run {run} stopped at a spend cap: {}",
                self.error.as_deref().unwrap_or("a cap is reached")
            ),
            other => format!("run {run}: {other}"),
        };
        let mut line = format!("[{}] {what}", self.project);
        if let Some(title) = &self.title {
            line.push_str(&format!(": “{title}”"));
        }
        if let Some(who) = &self.who {
            line.push_str(&format!(" ({who})"));
        }
        let mut text = escaped(&line);
        if let Some(url) = &self.url {
            text.push_str(&format!("\n<{url}|Open in the console>"));
        }
        text
    }
}

/// "the project cap web (tokens per day)", from a cap's standing.
fn cap_named(cap: Option<&Value>) -> String {
    let field = |key: &str| {
        cap.and_then(|cap| cap.get(key))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    let subject = field("subject");
    let whose = match subject.as_str() {
        "" => field("scope"),
        subject => format!("{} {subject}", field("scope")),
    };
    format!(
        "the {whose} cap ({} per {})",
        field("unit"),
        field("period")
    )
}

/// `text` with Slack's control characters escaped.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A delivery's id on the wire.
pub(crate) fn delivery_id(id: i64) -> String {
    format!("dlv_{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(event: &str, detail: &str) -> Claimed {
        Claimed {
            id: 7,
            event: event.into(),
            detail: detail.into(),
            title: Some("Fix <the> login & logout".into()),
            who: Some("ada".into()),
            created_ms: 1_700_000_000_123,
            attempts: 0,
            url: "http://127.0.0.1/".into(),
            format: "json".into(),
            secret: "s".into(),
            project: "web app".into(),
            run: Some("fix_1".into()),
        }
    }

    #[test]
    fn an_outcome_says_its_status_reason_and_proposals_and_links_the_run() {
        let frame = r#"{"jsonrpc":"2.0","method":"run/outcome","params":{"run":"fix_1","status":202,"proposed":[{"path":"set://a.rs"},{"path":"sh://1"}],"seq":4}}"#;
        let links = ConsoleLinks {
            base: "https://rummy.example.com/ui".into(),
        };
        let payload = Payload::of(&claimed("approval.pending", frame), Some(&links));
        assert_eq!(payload.id, "dlv_7");
        assert_eq!(payload.status, Some(202));
        assert_eq!(payload.proposals, ["set://a.rs", "sh://1"]);
        assert_eq!(payload.at, "2023-11-14T22:13:20Z");
        assert_eq!(
            payload.url.as_deref(),
            Some("https://rummy.example.com/ui/#/p/web%20app/r/fix_1")
        );
        assert_eq!(payload.cap, None);
        let slack: Value = serde_json::from_slice(&payload.body(Format::Slack)).unwrap();
        assert_eq!(
            slack,
            serde_json::json!({"text": "[web app] run fix_1 waits for approval of 2 proposals: “Fix &lt;the&gt; login &amp; logout” (ada)\n<https://rummy.example.com/ui/#/p/web%20app/r/fix_1|Open in the console>"})
        );
        let unlinked = Payload::of(&claimed("run.finished", frame), None);
        assert_eq!(unlinked.url, None);
        let json: Value = serde_json::from_slice(&unlinked.body(Format::Json)).unwrap();
        assert!(json.get("url").is_none());
    }

    #[test]
    fn a_cap_warning_carries_the_caps_standing() {
        let standing = r#"{"scope":"project","subject":"web app","period":"day","unit":"tokens","limit":100,"spent":85,"left":15,"resets":"2023-11-15T00:00:00Z"}"#;
        let payload = Payload::of(&claimed("cap.warning", standing), None);
        assert_eq!(
            payload.cap.as_ref().and_then(|cap| cap.get("spent")),
            Some(&serde_json::json!(85))
        );
        assert_eq!(payload.status, None);
        let slack: Value = serde_json::from_slice(&payload.body(Format::Slack)).unwrap();
        assert!(slack["text"]
            .as_str()
            .unwrap()
            .contains("the project web app cap (tokens per day)"));
    }
}
