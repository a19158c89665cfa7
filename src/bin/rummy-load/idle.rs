//! `rummy-load idle`: holds N connections that each answer one `ping` and then stay quiet
//! (answering only the server's heartbeat pings), the way editors sit open all day; with
//! `--server-pid` it reports the server's resident memory before and after, per client.
//!
//! The figure is read from `/proc/PID/status` (`VmRSS`) after the connections have
//! settled, so it holds only on Linux and only for a server on this machine.

use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::client::{Answer, RpcClient};
use crate::proc_status;

/// Connections opened at once: more would overflow the server's listen backlog.
const WAVE: usize = 200;

/// What an idle run opens and how long it holds.
pub(crate) struct IdlePlan {
    /// `ws://host:port/`: one server, or several addresses of it (127.0.0.1, 127.0.0.2, … of
    /// a server bound to 0.0.0.0), taken in turn, so that more connections open than one
    /// address has ephemeral ports for.
    pub urls: Vec<String>,
    /// Bearer token, if the server wants one.
    pub token: Option<String>,
    /// Connections to open.
    pub clients: usize,
    /// Wait after the last connection opened before the memory is read.
    pub settle: Duration,
    /// How long the connections stay open after that.
    pub hold: Duration,
    /// Longest wait for a connection to open and its `ping` to be answered.
    pub timeout: Duration,
    /// The server process whose memory is read.
    pub server_pid: Option<u32>,
}

/// Runs an idle plan; returns the report.
pub(crate) async fn run(plan: IdlePlan) -> String {
    let before = plan
        .server_pid
        .and_then(|pid| proc_status::kib(pid, "VmRSS:"));
    let mut open = Vec::with_capacity(plan.clients);
    let mut failed = 0;
    let mut remaining = plan.clients;
    while remaining > 0 {
        let wave = remaining.min(WAVE);
        remaining -= wave;
        let first = plan.clients - remaining - wave;
        let opened = join_all((first..first + wave).map(|n| open_pinged(&plan, n))).await;
        for client in opened {
            match client {
                Some(client) => open.push(client),
                None => failed += 1,
            }
        }
    }
    let clients = open.len();
    let until = Instant::now() + plan.settle + plan.hold;
    let held = actix_web::rt::spawn(async move {
        let lost = join_all(open.into_iter().map(|client| client.idle_until(until))).await;
        lost.into_iter().filter(|held| !held).count()
    });
    actix_web::rt::time::sleep(plan.settle).await;
    let after = plan
        .server_pid
        .and_then(|pid| proc_status::kib(pid, "VmRSS:"));
    let lost = held.await.unwrap_or(clients);
    render(clients, failed, lost, before, after)
}

impl IdlePlan {
    /// The URL connection number `n` opens: each of the plan's in turn.
    fn url_for(&self, n: usize) -> &str {
        &self.urls[n % self.urls.len()]
    }
}

/// Opens connection number `n`.
async fn open_pinged(plan: &IdlePlan, n: usize) -> Option<RpcClient> {
    let url = plan.url_for(n);
    let mut client = RpcClient::connect(url, plan.token.as_deref(), plan.timeout)
        .await
        .ok()?;
    match client
        .call("ping", serde_json::Value::Null, plan.timeout)
        .await
    {
        Ok((Answer::Result(_), _)) => Some(client),
        _ => None,
    }
}

fn render(
    clients: usize,
    failed: usize,
    lost: usize,
    before: Option<u64>,
    after: Option<u64>,
) -> String {
    let mut out =
        format!("{clients} idle connections held ({failed} failed to open, {lost} lost)\n");
    if let (Some(before), Some(after)) = (before, after) {
        let per_client = after.saturating_sub(before) as f64 / clients.max(1) as f64;
        out.push_str(&format!(
            "server VmRSS {:.1} MiB -> {:.1} MiB: {per_client:.2} KiB per idle connection\n",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_to_each_url_in_turn() {
        let plan = IdlePlan {
            urls: vec!["ws://127.0.0.1:1/".into(), "ws://127.0.0.2:1/".into()],
            token: None,
            clients: 3,
            settle: Duration::ZERO,
            hold: Duration::ZERO,
            timeout: Duration::from_secs(1),
            server_pid: None,
        };
        let urls: Vec<&str> = (0..3).map(|n| plan.url_for(n)).collect();
        assert_eq!(
            urls,
            [
                "ws://127.0.0.1:1/",
                "ws://127.0.0.2:1/",
                "ws://127.0.0.1:1/"
            ]
        );
    }

    #[test]
    fn the_report_divides_the_growth_by_the_clients() {
        let report = render(2_000, 0, 0, Some(10 * 1024), Some(30 * 1024));
        assert!(report.contains("2000 idle connections held"), "{report}");
        assert!(
            report.contains("10.0 MiB -> 30.0 MiB: 10.24 KiB per idle connection"),
            "{report}"
        );
    }
}
