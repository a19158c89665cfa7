//! The local mode: rummy's server in this process, on the default store, reachable only
//! from this process (127.0.0.1, a port the system picks, a fresh random token that never
//! leaves it), applying accepted edits itself (an editor has no way to delete or move a
//! file for it) and connecting any MCP server the editor passes: this machine is the
//! person's own.

use std::collections::HashMap;

/// Overrides in the environment the settings are loaded from (it wins over every file):
/// loopback, port 0, a random token, edits applied by the server.
pub fn environment(env: &mut HashMap<String, String>) -> Result<(), getrandom::Error> {
    let token = crate::random::random_hex(32)?;
    env.insert("RUMMY_HOST".into(), "127.0.0.1".into());
    env.insert("PORT".into(), "0".into());
    env.insert("RUMMY_AUTH_TOKEN".into(), token);
    env.insert("RUMMY_APPLY_EDITS".into(), "server".into());
    env.insert("RUMMY_CLIENT_MCP".into(), "all".into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_start_has_a_fresh_token_on_loopback() {
        let (mut first, mut second) = (HashMap::new(), HashMap::new());
        first.insert("RUMMY_AUTH_TOKEN".to_string(), "mine".to_string());
        environment(&mut first).unwrap();
        environment(&mut second).unwrap();
        assert_eq!(first["RUMMY_AUTH_TOKEN"].len(), 64);
        assert_ne!(first["RUMMY_AUTH_TOKEN"], second["RUMMY_AUTH_TOKEN"]);
        assert_eq!(first["RUMMY_HOST"], "127.0.0.1");
        assert_eq!(first["PORT"], "0");
        assert_eq!(first["RUMMY_APPLY_EDITS"], "server");
        assert_eq!(first["RUMMY_CLIENT_MCP"], "all");
    }
}
