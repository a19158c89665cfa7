//! The two kinds of simulated client: a load connection repeating the request mix, and an
//! asker running `ask` loops back to back. Each returns its own [`Tally`].

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::{Answer, CallError, RpcClient};
use crate::mix::MixState;
use crate::stats::{Outcome, Tally};

/// Longest wait for a close frame to go out at the end.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Where and how long every worker works.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// `ws://host:port/` of each instance; never empty.
    pub urls: Vec<String>,
    /// Bearer token, if the server wants one.
    pub token: Option<String>,
    /// No request starts after this instant.
    pub deadline: Instant,
    /// Requests each worker sends at most after its setup (`None`: until the deadline).
    pub max_requests: Option<u64>,
    /// Longest wait for one reply (and for a connection to open).
    pub request_timeout: Duration,
    /// Longest wait for one `ask` loop.
    pub ask_timeout: Duration,
    /// Projects the load connections spread over.
    pub projects: usize,
    /// `known://` keys each connection writes at most.
    pub keys: usize,
    /// The model alias runs and asks use.
    pub model: String,
    /// `ask` loops an asker runs in one run before it starts a new one (at least 1).
    pub loops_per_run: u64,
}

impl Plan {
    /// The URL worker `index` connects to: each instance in turn.
    fn url(&self, index: usize) -> &str {
        &self.urls[index % self.urls.len()]
    }

    fn more(&self, sent: u64) -> bool {
        Instant::now() < self.deadline && self.max_requests.is_none_or(|max| sent < max)
    }
}

/// A connection that has set up its project and run.
struct Session {
    client: RpcClient,
    tally: Tally,
}

impl Session {
    /// Opens worker `index`'s connection and binds it to `project`; when either fails,
    /// what was counted.
    async fn open(plan: &Plan, index: usize, project: &str) -> Result<Session, Tally> {
        let mut tally = Tally::default();
        let client =
            match RpcClient::connect(plan.url(index), plan.token.as_deref(), plan.request_timeout)
                .await
            {
                Ok(client) => client,
                Err(error) => {
                    tally.connect_failed(&error.0);
                    return Err(tally);
                }
            };
        let mut session = Session { client, tally };
        let root = format!("/tmp/rummy-load/{project}");
        let init = session
            .call(
                "init",
                "init",
                json!({"name": project, "projectRoot": root}),
                plan.request_timeout,
            )
            .await;
        match init {
            Ok(Answer::Result(_)) => Ok(session),
            _ => Err(session.finish().await),
        }
    }

    /// Sends one request and records it under `label`. After a timeout the connection is
    /// still usable (a late reply is skipped by its id); after a loss it is not.
    async fn call(
        &mut self,
        label: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, CallError> {
        match self.client.call(method, params, timeout).await {
            Ok((answer, latency)) => {
                let outcome = match &answer {
                    Answer::Result(_) => Outcome::Ok,
                    Answer::Error { code, .. } => Outcome::RpcError(*code),
                };
                self.tally.record(label, outcome, Some(latency));
                Ok(answer)
            }
            Err(error) => {
                let outcome = match error {
                    CallError::Timeout => Outcome::Timeout,
                    CallError::Lost(_) => {
                        self.tally.connections_lost += 1;
                        Outcome::Transport
                    }
                };
                self.tally.record(label, outcome, None);
                Err(error)
            }
        }
    }

    /// `startRun`; the new run's alias.
    async fn start_run(&mut self, plan: &Plan) -> Option<String> {
        let answer = self
            .call(
                "startRun",
                "startRun",
                json!({"model": plan.model}),
                plan.request_timeout,
            )
            .await
            .ok()?;
        match answer {
            Answer::Result(result) => result
                .get("run")
                .and_then(Value::as_str)
                .map(str::to_string),
            Answer::Error { .. } => None,
        }
    }

    async fn finish(self) -> Tally {
        let Session { client, mut tally } = self;
        tally.notifications += client.notifications();
        client.close(CLOSE_WAIT).await;
        tally
    }
}

/// Load connection number `index`: init, startRun, then the mix until the plan ends.
pub(crate) async fn load_connection(plan: Plan, index: usize) -> Tally {
    let project = format!("rummy-load-{}", index % plan.projects.max(1));
    let mut session = match Session::open(&plan, index, &project).await {
        Ok(session) => session,
        Err(tally) => return tally,
    };
    let Some(run) = session.start_run(&plan).await else {
        return session.finish().await;
    };
    let mut mix = MixState::new(index, run, plan.keys);
    let mut sent = 0;
    while plan.more(sent) {
        let (operation, params) = mix.next_request();
        sent += 1;
        let answered = session
            .call(
                operation.label(),
                operation.method(),
                params,
                plan.request_timeout,
            )
            .await;
        if let Err(CallError::Lost(_)) = answered {
            break;
        }
    }
    session.finish().await
}

/// Asker number `index`: `ask` loops (no repository scan) one after the other until the
/// plan ends, `loops_per_run` in each run.
pub(crate) async fn asker(plan: Plan, index: usize) -> Tally {
    let project = format!("rummy-load-ask-{index}");
    let mut session = match Session::open(&plan, index, &project).await {
        Ok(session) => session,
        Err(tally) => return tally,
    };
    let mut sent = 0;
    let mut run: Option<String> = None;
    while plan.more(sent) {
        let mut params = json!({
            "model": plan.model,
            "prompt": "Say ok, then summarize.",
            "noRepo": true,
        });
        if let Some(run) = run.take().filter(|_| sent % plan.loops_per_run.max(1) != 0) {
            params["run"] = json!(run);
        }
        sent += 1;
        let status = match session.call("ask", "ask", params, plan.ask_timeout).await {
            Ok(Answer::Result(result)) => {
                run = result.get("run").and_then(Value::as_str).map(str::to_owned);
                result
                    .get("status")
                    .map_or_else(|| "-".to_string(), Value::to_string)
            }
            Ok(Answer::Error { code, .. }) => format!("error {code}"),
            Err(CallError::Timeout) => "timeout".to_string(),
            Err(CallError::Lost(_)) => break,
        };
        session.tally.loop_ended(&status);
    }
    session.finish().await
}

#[cfg(test)]
mod tests;
