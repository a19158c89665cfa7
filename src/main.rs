//! The `rummy` binary: `rummy serve` (the default), `rummy acp`, `rummy migrate`,
//! `rummy healthcheck` and `rummy hash-token`.

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
    /// Serve an editor the Agent Client Protocol on stdin/stdout: with rummy in this process
    /// (the default), or as a client of a running server (`--url`).
    Acp {
        /// A running rummy server to work with (`ws://host:port/`); its token comes from
        /// `RUMMY_AUTH_TOKEN` or `--token-file`.
        #[arg(long)]
        url: Option<String>,
        /// A file whose first line is the token for `--url` (default: `RUMMY_AUTH_TOKEN`,
        /// else `$RUMMY_HOME/token`); read again when the editor signs in.
        #[arg(long, requires = "url")]
        token_file: Option<PathBuf>,
        /// The model alias prompts run with (default: the catalogue's first).
        #[arg(long, env = "RUMMY_ACP_MODEL")]
        model: Option<String>,
    },
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
    // The sandbox's two stages are spawned by the server with a cleared environment; they
    // need no settings, telemetry or runtime, and exit with the command's status.
    if let Some(status) = std::env::args_os()
        .nth(1)
        .and_then(|stage| rummy::sandbox::run_stage(&stage))
    {
        std::process::exit(status.into());
    }
    tune_malloc();
    let cli = Cli::parse();
    if let Some(Command::HashToken) = cli.command {
        return hash_token();
    }
    let mut env: HashMap<String, String> = std::env::vars().collect();
    if let Some(Command::Acp { url: None, .. }) = cli.command {
        rummy::acp::local::environment(&mut env)
            .map_err(|error| anyhow::anyhow!("making the local server's token: {error}"))?;
    }
    let settings = Settings::load(&env, &cli.config_dir).context("loading configuration")?;
    let _tracing = rummy::telemetry::init(&settings.log);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Acp {
            url,
            token_file,
            model,
        } => {
            let target = match url {
                None => rummy::acp::Target::Local(Box::new(settings)),
                Some(url) => {
                    let (token, token_file) =
                        remote_token(&env, token_file, &settings.storage.home)?;
                    rummy::acp::Target::Remote {
                        url,
                        token,
                        token_file,
                    }
                }
            };
            actix_web::rt::System::new()
                .block_on(rummy::acp::serve(target, model))
                .context("serving ACP")
        }
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

/// Sets glibc's malloc for a server whose threads pass megabyte buffers around (a model's
/// reply, its parsed commands, its audit copies): two arenas, not eight per core each
/// keeping what its threads freed, and every block of 128 KiB or more mapped on its own and
/// given back to the system when freed (by default that threshold rises to the size of each
/// such block freed, up to 32 MiB, and later megabyte buffers then stay in the arenas). Under
/// `rummy-load hostile` the debug server's peak RSS fell from 238–321 MiB to 162–211 MiB
/// (tests/it/hostile.rs). With a `MALLOC_*` variable or `GLIBC_TUNABLES` set, the
/// operator's choice stands and nothing changes. Runs before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune_malloc() {
    const ARENAS: libc::c_int = 2;
    const MAPPED_FROM_BYTES: libc::c_int = 128 * 1024;
    let operator_chose = std::env::vars_os().any(|(name, _)| {
        let name = name.to_string_lossy();
        name.starts_with("MALLOC_") || name == "GLIBC_TUNABLES"
    });
    if operator_chose {
        return;
    }
    // SAFETY: mallopt only sets parameters of the allocator, takes no pointer, and is
    // called here before any other thread exists; a value it refuses is left as it was.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM_BYTES);
    }
}

/// Elsewhere the C library's allocator keeps its own settings.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

/// The remote server's token and the file `authenticate` reads it from: `--token-file`
/// when given (its first line, if it exists yet), else `RUMMY_AUTH_TOKEN`, else the first
/// line of `$RUMMY_HOME/token`.
fn remote_token(
    env: &HashMap<String, String>,
    file: Option<PathBuf>,
    home: &std::path::Path,
) -> anyhow::Result<(Option<rummy::config::Secret>, PathBuf)> {
    let from_env = || {
        env.get("RUMMY_AUTH_TOKEN")
            .filter(|token| !token.is_empty())
            .map(|token| rummy::config::Secret::new(token.clone()))
    };
    let (token, file) = match file {
        Some(file) => (rummy::acp::read_token_file(&file)?, file),
        None => {
            let file = home.join("token");
            match from_env() {
                Some(token) => (Some(token), file),
                None => (rummy::acp::read_token_file(&file)?, file),
            }
        }
    };
    Ok((token, file))
}

/// `rummy hash-token`: the token is the first line of stdin, without its line end.
fn hash_token() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the token from stdin")?;
    let token = line.trim_end_matches(['\r', '\n']);
    anyhow::ensure!(!token.is_empty(), "no token on stdin");
    println!("token_sha256 = \"{}\"", rummy::hash_token(token));
    Ok(())
}
