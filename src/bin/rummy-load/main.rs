//! `rummy-load`: a load generator for a running rummy server, and a fake LLM to drive it.
//!
//! `rummy-load --url ws://127.0.0.1:3044/ --connections 50 --seconds 20` opens N WebSocket
//! clients (spread over the `--url`s when there are several); each binds a project, starts a run and repeats a mix of requests until the time
//! (or `--requests`) is used up; `--asks K` adds K clients running `ask` loops back to back.
//! The report gives requests per second, latency percentiles per operation, errors by code
//! and connection failures. `rummy-load fake-llm --port P` serves an OpenAI-compatible
//! endpoint that answers every turn at once, so loops measure rummy's own work.
//! `rummy-load idle --clients N --server-pid PID` holds N quiet connections and reports the
//! server's memory per idle connection (spread over the `--url`s, addresses of one server,
//! when there are several: one address has too few ephemeral ports for 50,000).
//! `rummy-load hostile --llm-port P --clients 6 --seconds 300 --server-pid PID` runs hostile
//! clients against a fuzzing model and probes what a fresh client gets meanwhile.
//!
//! The tool only ever talks to the URLs it is given, and refuses hosts other than loopback
//! unless `--allow-remote` says otherwise.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use futures_util::future::{join, join_all};

mod client;
mod fake_llm;
mod hostile;
mod idle;
mod llm;
mod mix;
mod proc_status;
mod report;
mod stats;
mod workers;

use client::RpcClient;
use stats::Tally;
use workers::Plan;

/// Load generator for a running rummy server.
#[derive(Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    load: LoadArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a fake OpenAI-compatible LLM that answers `<summarize>ok</summarize>` at once.
    FakeLlm(FakeLlmArgs),
    /// Hold idle connections (one `ping` each) and report the server's memory per connection.
    Idle(IdleArgs),
    /// Hostile clients against a fuzzing model, while a fresh client probes the server.
    Hostile(HostileArgs),
}

/// The server under load.
#[derive(Args, Clone)]
struct Target {
    /// The server's WebSocket URL. Given several times (instances of one server on one
    /// store), the clients go to each in turn; setup goes to the first.
    #[arg(long = "url", default_value = "ws://127.0.0.1:3044/", num_args = 1)]
    urls: Vec<String>,
    /// Bearer token presented on connect.
    #[arg(long, env = "RUMMY_AUTH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Allow a URL whose host is not loopback.
    #[arg(long)]
    allow_remote: bool,
}

impl Target {
    /// Refuses the URLs (and any other URL the run talks to) when one is not loopback,
    /// unless `--allow-remote` says otherwise.
    fn check(&self, others: Option<&String>) -> anyhow::Result<()> {
        for url in self.urls.iter().chain(others) {
            if !self.allow_remote && !is_loopback_url(url) {
                bail!("{url} is not a loopback address; pass --allow-remote to load it anyway");
            }
        }
        Ok(())
    }
}

/// What to load and for how long.
#[derive(Args, Clone)]
struct LoadArgs {
    #[command(flatten)]
    target: Target,
    /// Concurrent clients running the request mix.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(0..=10_000))]
    connections: u16,
    /// How long to send requests, in seconds.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    seconds: u64,
    /// Requests each client sends at most after its setup (default: until time is up).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,
    /// Longest wait for one reply (and for a connection to open), in milliseconds.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    timeout_ms: u64,
    /// Projects the clients spread over.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    projects: u16,
    /// `known://` keys each client writes at most (bounds the store).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..))]
    keys: u16,
    /// Model alias for `startRun` and `ask`.
    #[arg(long, default_value = "fake")]
    model: String,
    /// Concurrent clients running `ask` loops (`noRepo`; a new run each unless
    /// `--loops-per-run`).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1_000))]
    asks: u16,
    /// `ask` loops each asker runs in one run before it starts a new one: a run's log, and
    /// what a turn reads and tells of it, grow with its loops.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    loops_per_run: u64,
    /// Longest wait for one `ask` loop, in seconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    ask_timeout_secs: u64,
    /// The OpenAI-compatible server rummy uses: its first model is registered as `--model`,
    /// and the built-in fake's completions are counted.
    #[arg(long)]
    llm_url: Option<String>,
    /// Client threads, each with its own event loop.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=16))]
    threads: u8,
}

/// How many idle connections, and how long they are held. Each needs a file descriptor in
/// this process and in the server: raise `ulimit -n` for both.
#[derive(Args)]
struct IdleArgs {
    #[command(flatten)]
    target: Target,
    /// Idle connections to hold.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    clients: u32,
    /// Seconds between the last connection opening and the memory reading.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=3_600))]
    settle_secs: u64,
    /// Seconds the connections stay open after the reading.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    hold_secs: u64,
    /// Longest wait for a connection to open and answer its `ping`, in milliseconds.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    timeout_ms: u64,
    /// The server's process id (Linux, same machine): its `VmRSS` is read before and after.
    #[arg(long)]
    server_pid: Option<u32>,
}

/// A hostile run: the fuzzing model, its clients and the probes.
#[derive(Args)]
struct HostileArgs {
    #[command(flatten)]
    target: Target,
    /// TCP port on 127.0.0.1 of the fuzzing model: the server's `OPENAI_BASE_URL`.
    #[arg(long)]
    llm_port: u16,
    /// Concurrent hostile clients.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u16).range(1..=1_000))]
    clients: u16,
    /// How long the clients work, in seconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
    /// Seed of the fuzzing model and of the clients' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Milliseconds between two fresh-client probes.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    probe_every_ms: u64,
    /// Longest wait for one reply (and for a connection to open), in milliseconds.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    timeout_ms: u64,
    /// The server's process id (Linux, same machine): its memory is sampled.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Where the clients' projects are laid out (inside the server's `RUMMY_PROJECTS_DIR`
    /// when it has one).
    #[arg(long, default_value = "/tmp/rummy-hostile")]
    projects_dir: std::path::PathBuf,
    /// Alias the fuzzing model is registered under.
    #[arg(long, default_value = "hostile")]
    model: String,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Where the fake LLM listens.
#[derive(Args)]
struct FakeLlmArgs {
    /// TCP port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Context size `/v1/models` and `/props` report.
    #[arg(long, default_value_t = 32_768)]
    context: u32,
    /// Turns per loop: a loop's turns before its last say `<update>`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    turns: u64,
    /// Stop after this many seconds if not interrupted before.
    #[arg(long, default_value_t = 3_600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::FakeLlm(args)) => {
            let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), args.port);
            actix_web::rt::System::new().block_on(fake_llm::serve(
                addr,
                args.context,
                args.turns,
                Duration::from_secs(args.seconds),
            ))
        }
        Some(Command::Idle(args)) => {
            args.target.check(None)?;
            let plan = idle::IdlePlan {
                urls: args.target.urls,
                token: args.target.token,
                clients: args.clients as usize,
                settle: Duration::from_secs(args.settle_secs),
                hold: Duration::from_secs(args.hold_secs),
                timeout: Duration::from_millis(args.timeout_ms),
                server_pid: args.server_pid,
            };
            let report = actix_web::rt::System::new().block_on(idle::run(plan));
            print!("{report}");
            Ok(())
        }
        Some(Command::Hostile(args)) => hostile(args),
        None => load(cli.load),
    }
}

fn hostile(args: HostileArgs) -> anyhow::Result<()> {
    args.target.check(None)?;
    let [url] = <[String; 1]>::try_from(args.target.urls)
        .map_err(|_| anyhow::anyhow!("hostile loads one server: give one --url"))?;
    let plan = hostile::HostilePlan {
        url,
        token: args.target.token,
        llm_port: args.llm_port,
        clients: usize::from(args.clients),
        duration: Duration::from_secs(args.seconds),
        seed: args.seed,
        probe_every: Duration::from_millis(args.probe_every_ms),
        timeout: Duration::from_millis(args.timeout_ms),
        server_pid: args.server_pid,
        projects_dir: args.projects_dir,
        model: args.model,
    };
    let report = actix_web::rt::System::new().block_on(hostile::run(plan))?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.render());
    }
    Ok(())
}

fn load(args: LoadArgs) -> anyhow::Result<()> {
    args.target.check(args.llm_url.as_ref())?;
    if args.connections == 0 && args.asks == 0 {
        bail!("nothing to do: both --connections and --asks are 0");
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let completions_before = actix_web::rt::System::new().block_on(prepare_llm(&args, timeout))?;
    let started = Instant::now();
    let plan = Plan {
        urls: args.target.urls.clone(),
        token: args.target.token.clone(),
        deadline: started + Duration::from_secs(args.seconds),
        max_requests: args.requests,
        request_timeout: timeout,
        ask_timeout: Duration::from_secs(args.ask_timeout_secs),
        loops_per_run: args.loops_per_run,
        projects: usize::from(args.projects),
        keys: usize::from(args.keys),
        model: args.model.clone(),
    };
    let tally = run_workers(
        &plan,
        usize::from(args.connections),
        usize::from(args.asks),
        usize::from(args.threads),
    )?;
    let elapsed = started.elapsed();
    let llm_completions = match (&args.llm_url, completions_before) {
        (Some(url), Some(before)) => actix_web::rt::System::new()
            .block_on(llm::completions_served(url, timeout))
            .map(|after| after.saturating_sub(before)),
        _ => None,
    };
    let facts = report::RunFacts {
        connections: usize::from(args.connections),
        asks: usize::from(args.asks),
        elapsed,
        llm_completions,
    };
    print!("{}", report::render(&tally, facts));
    Ok(())
}

/// With `--llm-url`: registers its model under `--model`; returns the fake's completion
/// count so far (`None` from any other server, or without `--llm-url`).
async fn prepare_llm(args: &LoadArgs, timeout: Duration) -> anyhow::Result<Option<u64>> {
    let Some(llm_url) = &args.llm_url else {
        return Ok(None);
    };
    let model = llm::served_model(llm_url, timeout).await?;
    let target = &args.target;
    let url = &target.urls[0];
    let mut client = RpcClient::connect(url, target.token.as_deref(), timeout)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    llm::register(&mut client, &args.model, &model, timeout).await?;
    client.close(timeout).await;
    Ok(llm::completions_served(llm_url, timeout).await)
}

/// Runs every worker, spread over `threads` event loops; returns their merged tally.
fn run_workers(
    plan: &Plan,
    connections: usize,
    asks: usize,
    threads: usize,
) -> anyhow::Result<Tally> {
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let plan = plan.clone();
            std::thread::Builder::new()
                .name(format!("load-{thread}"))
                .spawn(move || {
                    actix_web::rt::System::new().block_on(async move {
                        let loads = (thread..connections)
                            .step_by(threads)
                            .map(|index| workers::load_connection(plan.clone(), index));
                        let askers = (thread..asks)
                            .step_by(threads)
                            .map(|index| workers::asker(plan.clone(), index));
                        let (loads, askers) = join(join_all(loads), join_all(askers)).await;
                        let mut tally = Tally::default();
                        for worker in loads.into_iter().chain(askers) {
                            tally.merge(worker);
                        }
                        tally
                    })
                })
        })
        .collect::<Result<_, _>>()
        .context("starting client threads")?;
    let mut tally = Tally::default();
    for handle in handles {
        match handle.join() {
            Ok(part) => tally.merge(part),
            Err(_) => bail!("a client thread panicked"),
        }
    }
    Ok(tally)
}

/// Whether `url`'s host is `localhost` or a loopback address.
fn is_loopback_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<awc::http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass() {
        assert!(is_loopback_url("ws://127.0.0.1:3044/"));
        assert!(is_loopback_url("ws://localhost:3044/rpc"));
        assert!(is_loopback_url("ws://[::1]:3044/"));
        assert!(is_loopback_url("http://127.0.0.2:8080/v1"));
        assert!(!is_loopback_url("ws://10.0.0.5:3044/"));
        assert!(!is_loopback_url("wss://example.com/"));
        assert!(!is_loopback_url("not a url"));
    }

    #[test]
    fn the_arguments_parse_with_defaults_and_bounds() {
        let cli =
            Cli::try_parse_from(["rummy-load", "--connections", "200", "--asks", "10"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(
            (cli.load.connections, cli.load.asks, cli.load.seconds),
            (200, 10, 20)
        );
        assert_eq!(cli.load.target.urls, ["ws://127.0.0.1:3044/"]);
        let cli = Cli::try_parse_from([
            "rummy-load",
            "--url",
            "ws://127.0.0.1:1/",
            "--url",
            "ws://127.0.0.1:2/",
        ])
        .unwrap();
        assert_eq!(
            cli.load.target.urls,
            ["ws://127.0.0.1:1/", "ws://127.0.0.1:2/"],
            "every --url, without the default"
        );
        assert!(Cli::try_parse_from(["rummy-load", "--seconds", "0"]).is_err());
        assert!(Cli::try_parse_from(["rummy-load", "--connections", "20000"]).is_err());
        let cli = Cli::try_parse_from(["rummy-load", "fake-llm", "--port", "9000"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::FakeLlm(FakeLlmArgs { port: 9000, .. }))
        ));
        let cli = Cli::try_parse_from(["rummy-load", "idle", "--clients", "10000"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Idle(IdleArgs {
                clients: 10_000,
                settle_secs: 5,
                hold_secs: 0,
                ..
            }))
        ));
        assert!(Cli::try_parse_from(["rummy-load", "idle", "--clients", "0"]).is_err());
        let cli = Cli::try_parse_from([
            "rummy-load",
            "idle",
            "--url",
            "ws://127.0.0.1:3044/",
            "--url",
            "ws://127.0.0.2:3044/",
        ])
        .unwrap();
        let Some(Command::Idle(idle)) = cli.command else {
            panic!("not an idle run");
        };
        assert_eq!(
            idle.target.urls,
            ["ws://127.0.0.1:3044/", "ws://127.0.0.2:3044/"],
            "idle takes every --url, addresses of one server"
        );
    }
}
