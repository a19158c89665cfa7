//! The `rummy` binary: `rummy serve` (the default), `rummy migrate` and `rummy healthcheck`.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rummy::config::Settings;

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
    /// Exit 0 when the server configured here answers `GET /healthz`, else 1 (a container's
    /// HEALTHCHECK: the image has no curl).
    Healthcheck,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let env: HashMap<String, String> = std::env::vars().collect();
    let settings = Settings::load(&env, &cli.config_dir).context("loading configuration")?;
    rummy::telemetry::init(&settings.log);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => actix_web::rt::System::new()
            .block_on(rummy::app::serve(settings))
            .context("serving"),
        Command::Migrate => {
            rummy::app::migrate(&settings).context("migrating")?;
            tracing::info!(db = %settings.storage.db_path.display(), "migrations applied");
            Ok(())
        }
        Command::Healthcheck => actix_web::rt::System::new()
            .block_on(rummy::healthcheck::probe(&settings.server))
            .context("health check"),
    }
}
