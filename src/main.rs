//! The `rummy` binary: `rummy serve` (the default), `rummy migrate`, `rummy healthcheck` and
//! `rummy hash-token`.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rummy::config::Settings;
use rummy::healthcheck::Probe;

/// A team server that runs LLM coding agents for editor clients.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Directory holding `$RUMMY_ENV.toml` overrides.
    #[arg(long, env = "RUMMY_CONFIG_DIR", default_value = "config")]
    config_dir: PathBuf,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server in the foreground (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Read a person's token from stdin and print the line the users file stores for it.
    HashToken,
    /// Exit 0 when the server configured here answers `GET /healthz`, else 1 (a container's
    /// HEALTHCHECK: the image has no curl).
    Healthcheck {
        /// Ask `GET /readyz` instead: whether the server can serve clients now (its store
        /// answers in time), which is what a proxy or orchestrator should route by.
        #[arg(long)]
        ready: bool,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::HashToken) = cli.command {
        return hash_token();
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    let settings = Settings::load(&env, &cli.config_dir).context("loading configuration")?;
    rummy::telemetry::init(&settings.log);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => actix_web::rt::System::new()
            .block_on(rummy::app::serve(settings))
            .context("serving"),
        Command::HashToken => hash_token(),
        Command::Migrate => {
            rummy::app::migrate(&settings).context("migrating")?;
            tracing::info!(db = %rummy::app::store(&settings), "migrations applied");
            Ok(())
        }
        Command::Healthcheck { ready } => actix_web::rt::System::new()
            .block_on(rummy::healthcheck::probe(
                &settings.server,
                if ready { Probe::Ready } else { Probe::Alive },
            ))
            .context("health check"),
    }
}

/// `rummy hash-token`: the token is the first line of stdin, without its line end.
fn hash_token() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the token from stdin")?;
    let token = line.trim_end_matches(['\r', '\n']);
    anyhow::ensure!(!token.is_empty(), "no token on stdin");
    println!("token_sha256 = \"{}\"", rummy::access::hash_token(token));
    Ok(())
}
