//! `rummy-sandbox`: the launcher the server runs each accepted command through
//! (`rummy::sandbox`), a small binary so that starting it for each command costs little.
//! The same stages are in `rummy` itself, which the server falls back on without this one.

fn main() -> std::process::ExitCode {
    let stage = std::env::args_os().nth(1).unwrap_or_default();
    match rummy::sandbox::run_stage(&stage) {
        Some(status) => std::process::ExitCode::from(status),
        None => {
            eprintln!(
                "rummy-sandbox runs commands for the rummy server; it is not run by hand \
                 (stage: {})",
                rummy::sandbox::EXEC_SUBCOMMAND
            );
            std::process::ExitCode::from(2)
        }
    }
}
