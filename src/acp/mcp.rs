//! The editor's MCP servers (`session/new`'s and `session/load`'s `mcpServers`), attached to
//! the session's run with `run/mcp` on the session's connection, so they live as long as
//! the session. rummy connects to them itself: on the local server that is this machine; a
//! team server takes what its `RUMMY_CLIENT_MCP` allows, and what it refuses is logged, the
//! session going on without them. SSE servers are not taken (this agent offers HTTP only).

use agent_client_protocol::v1::schema::McpServer;
use serde_json::{json, Map, Value};

/// The servers as `run/mcp` takes them; the SSE ones are left out, logged.
pub(super) fn client_servers(servers: &[McpServer]) -> Vec<Value> {
    servers
        .iter()
        .filter_map(|server| match server {
            McpServer::Stdio(stdio) => Some(json!({
                "name": stdio.name,
                "command": stdio.command.display().to_string(),
                "args": stdio.args,
                "env": pairs(stdio.env.iter().map(|var| (&var.name, &var.value))),
            })),
            McpServer::Http(http) => Some(json!({
                "name": http.name,
                "url": http.url,
                "headers": pairs(http.headers.iter().map(|header| (&header.name, &header.value))),
            })),
            McpServer::Sse(sse) => {
                tracing::warn!(server = %sse.name, "an SSE MCP server is not taken: give its streamable-HTTP URL");
                None
            }
            _ => {
                tracing::warn!("an MCP server of a transport this agent does not know is not taken");
                None
            }
        })
        .collect()
}

/// Name-value pairs as one JSON object (a later name wins).
fn pairs<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> Value {
    Value::Object(
        pairs
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect::<Map<String, Value>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn stdio_and_http_servers_are_passed_with_their_env_and_headers_and_sse_is_left_out() {
        let servers = [
            McpServer::Stdio(
                McpServerStdio::new("glossary", "/usr/bin/python3")
                    .args(vec!["-u".into(), "server.py".into()])
                    .env(vec![EnvVariable::new("TOKEN", "s3cret")]),
            ),
            McpServer::Http(
                McpServerHttp::new("docs", "https://mcp.example/mcp")
                    .headers(vec![HttpHeader::new("Authorization", "Bearer x")]),
            ),
            McpServer::Sse(McpServerSse::new("old", "https://mcp.example/sse")),
        ];
        assert_eq!(
            client_servers(&servers),
            vec![
                json!({"name": "glossary", "command": "/usr/bin/python3",
                       "args": ["-u", "server.py"], "env": {"TOKEN": "s3cret"}}),
                json!({"name": "docs", "url": "https://mcp.example/mcp",
                       "headers": {"Authorization": "Bearer x"}}),
            ]
        );
    }
}
