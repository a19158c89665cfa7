//! One task per MCP server: connects (a child process on stdio, or streamable HTTP), lists
//! its tools, watches the session end (a crash, a closed stream) and connects again after a
//! backoff that doubles from [`FIRST_RETRY`] up to [`LAST_RETRY`] (reset by a connection
//! that lists its tools). A server that never starts is logged at each attempt and retried
//! for as long as rummy runs; nothing waits for it. Calls go to the session of the moment
//! with the server's timeout, and are cancelled (`notifications/cancelled`) when the loop
//! that made them is aborted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest, ContentBlock,
    Request, ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::{
    streamable_http_client::StreamableHttpClientTransportConfig, StreamableHttpClientTransport,
    TokioChildProcess,
};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::mcp::config::{ServerConfig, Transport};
use crate::mcp::outcome::CallOutcome;
use crate::web::NetFilter;

/// The wait before the first reconnection.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub(super) const LAST_RETRY: Duration = Duration::from_secs(60);

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: Value,
    /// It declares `readOnlyHint: true`: it changes nothing, so it is never proposed.
    pub read_only: bool,
}

/// Where a server's session stands.
#[derive(Clone)]
pub(crate) enum Link {
    /// The first attempt is under way.
    Connecting,
    /// Connected, with its tools.
    Up {
        peer: Peer<RoleClient>,
        tools: Arc<[ToolSpec]>,
    },
    /// Not connected: why, while the next attempt waits.
    Down { reason: String },
}

/// The handle on one server's task; dropping it stops the task (and a child process).
pub(crate) struct Connection {
    config: Arc<ServerConfig>,
    link: watch::Receiver<Link>,
    sender: Arc<watch::Sender<Link>>,
    /// Stops the task of the moment.
    stop: Mutex<CancellationToken>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop().cancel();
    }
}

impl Connection {
    /// Starts the server's task on the current runtime.
    pub(crate) fn start(config: Arc<ServerConfig>) -> Connection {
        let (sender, link) = watch::channel(Link::Connecting);
        let sender = Arc::new(sender);
        let stop = CancellationToken::new();
        tokio::spawn(keep_connected(
            Arc::clone(&config),
            Arc::clone(&sender),
            stop.clone(),
        ));
        Connection {
            config,
            link,
            sender,
            stop: Mutex::new(stop),
        }
    }

    /// A connection that never connects, its calls 502s saying `reason` (a server each
    /// person reaches with their own credential has no shared session).
    pub(crate) fn none(config: Arc<ServerConfig>, reason: String) -> Connection {
        let (sender, link) = watch::channel(Link::Down { reason });
        Connection {
            config,
            link,
            sender: Arc::new(sender),
            stop: Mutex::new(CancellationToken::new()),
        }
    }

    fn stop(&self) -> std::sync::MutexGuard<'_, CancellationToken> {
        self.stop.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the session of the moment (a child process is stopped) and connects again at
    /// once, with a first backoff.
    pub(crate) fn restart(&self) {
        let mut stop = self.stop();
        stop.cancel();
        *stop = CancellationToken::new();
        self.sender.send_replace(Link::Connecting);
        tokio::spawn(keep_connected(
            Arc::clone(&self.config),
            Arc::clone(&self.sender),
            stop.clone(),
        ));
    }

    /// Ends the session for good (the server was removed): calls are 502s saying so.
    pub(crate) fn close(&self, reason: &str) {
        self.stop().cancel();
        self.sender.send_replace(Link::Down {
            reason: reason.to_owned(),
        });
    }

    /// The session once the first attempt has connected or failed, or `Connecting` after
    /// `patience`.
    pub(crate) async fn settled(&self, patience: Duration) -> Link {
        let mut link = self.link.clone();
        let settled = tokio::time::timeout(
            patience,
            link.wait_for(|link| !matches!(link, Link::Connecting)),
        )
        .await;
        match settled {
            Ok(Ok(link)) => link.clone(),
            Ok(Err(_)) | Err(_) => self.link(),
        }
    }

    /// The session of the moment.
    pub(crate) fn link(&self) -> Link {
        self.link.borrow().clone()
    }

    /// The tools listed by the current session (none while it is down).
    pub(crate) fn tools(&self) -> Arc<[ToolSpec]> {
        match &*self.link.borrow() {
            Link::Up { tools, .. } => Arc::clone(tools),
            Link::Connecting | Link::Down { .. } => Arc::from([]),
        }
    }

    /// Calls `tool` with `arguments` on the current session: at most `timeout`, and no
    /// longer than `cancel` allows.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let peer = match self.link() {
            Link::Up { peer, .. } => peer,
            Link::Connecting => return CallOutcome::Gone("the server is still starting".into()),
            Link::Down { reason } => return CallOutcome::Gone(reason),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle,
            Err(error) => return CallOutcome::Gone(error.to_string()),
        };
        let id = handle.id.clone();
        tokio::select! {
            response = handle.await_response() => match response {
                Ok(ServerResult::CallToolResult(result)) => outcome_of(result),
                Ok(_) => CallOutcome::Failed("the server answered with something else".into()),
                Err(ServiceError::Timeout { .. }) => CallOutcome::TimedOut(timeout),
                Err(ServiceError::McpError(error)) => CallOutcome::Failed(error.message.into_owned()),
                Err(error) => CallOutcome::Gone(error.to_string()),
            },
            () = cancel.cancelled() => {
                let reason = Some("the loop was aborted".to_owned());
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                    .await;
                CallOutcome::Cancelled
            }
        }
    }
}

/// The text of a tool's result: its text blocks and the text of its embedded text
/// resources (each under a line naming it), a line naming each block a model cannot read
/// (images, audio, binary resources: their type and size), else its structured content.
fn outcome_of(result: CallToolResult) -> CallOutcome {
    let mut parts: Vec<String> = result.content.iter().map(text_of).collect();
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        CallOutcome::Failed(text)
    } else {
        CallOutcome::Done(text)
    }
}

/// One block of a result as the model reads it.
fn text_of(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => unshown("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => unshown("audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => unshown(
                &format!("resource {uri}"),
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                blob,
            ),
            _ => "[a resource of a kind rummy does not know, not shown]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
        _ => "[a block of a kind rummy does not know, not shown]".to_owned(),
    }
}

/// The line standing for base64 `data` of `mime_type` that the model is not shown.
fn unshown(what: &str, mime_type: &str, data: &str) -> String {
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    format!("[{what}: {mime_type}, {bytes} bytes, not shown]")
}

/// The server's task: connect, serve until the session ends, wait, again; until `stop`.
async fn keep_connected(
    config: Arc<ServerConfig>,
    sender: Arc<watch::Sender<Link>>,
    stop: CancellationToken,
) {
    // A task stopped (restarted, closed) says nothing more.
    let send = |link: Link| {
        if !stop.is_cancelled() {
            sender.send_replace(link);
        }
    };
    let server = config.name.as_str();
    let mut retry = FIRST_RETRY;
    loop {
        let attempt = tokio::time::timeout(
            Duration::from_secs(config.timeout_secs),
            connect_and_list(&config),
        );
        let reason = tokio::select! {
            () = stop.cancelled() => return,
            attempt = attempt => match attempt {
                Ok(Ok((service, tools))) => {
                    tracing::info!(mcp.server = server, tools = tools.len(), "MCP server connected");
                    retry = FIRST_RETRY;
                    let peer = service.peer().clone();
                    let closer = service.cancellation_token();
                    send(Link::Up { peer, tools: tools.into() });
                    let ended = tokio::select! {
                        () = stop.cancelled() => {
                            closer.cancel();
                            return;
                        }
                        ended = service.waiting() => ended,
                    };
                    match ended {
                        Ok(reason) => format!("the session ended ({reason:?})"),
                        Err(error) => format!("the session failed: {error}"),
                    }
                }
                Ok(Err(reason)) => reason,
                Err(_) => format!("no answer within {} s", config.timeout_secs),
            },
        };
        tracing::warn!(
            mcp.server = server,
            %reason,
            retry_ms = retry.as_millis() as u64,
            "MCP server not connected"
        );
        send(Link::Down {
            reason: format!("server {server} is not connected: {reason}"),
        });
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(retry) => {}
        }
        retry = next_retry(retry);
    }
}

/// The wait after one of `retry` failed: twice as long, up to [`LAST_RETRY`].
fn next_retry(retry: Duration) -> Duration {
    (retry * 2).min(LAST_RETRY)
}

/// A session with the server, and its tools.
/// Whether every address `url`'s host is (or resolves to) is one `filter` permits; why
/// not. A name is resolved here and again by the connection: one that resolves elsewhere
/// between the two is reached.
pub(super) async fn reachable(url: &str, filter: &NetFilter) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|error| format!("{url}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url} is not an http or https URL"));
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addresses: Vec<IpAddr> = match parsed.host() {
        None => return Err(format!("{url} has no host")),
        Some(url::Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
        Some(url::Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|error| format!("{name} does not resolve: {error}"))?
            .map(|address| address.ip())
            .collect(),
    };
    match addresses
        .iter()
        .find_map(|address| Some((address, filter.refusal(*address)?)))
    {
        None => Ok(()),
        Some((address, reason)) => Err(format!(
            "{url} reaches {address}, a {reason} address this server does not connect \
             clients' MCP servers to (RUMMY_WEB_ALLOW_NETS permits networks)"
        )),
    }
}

async fn connect_and_list(
    config: &ServerConfig,
) -> Result<(RunningService<RoleClient, ()>, Vec<ToolSpec>), String> {
    let service = match &config.transport {
        Transport::Stdio { command, args, env } => {
            let mut child = tokio::process::Command::new(command);
            child.args(args);
            for (name, value) in env {
                child.env(name, value.expose());
            }
            let (process, stderr) = TokioChildProcess::builder(child)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|error| format!("{command} did not start: {error}"))?;
            if let Some(stderr) = stderr {
                tokio::spawn(log_stderr(config.name.clone(), stderr));
            }
            ().serve(process).await.map_err(|error| error.to_string())?
        }
        Transport::Http {
            url,
            headers,
            reach,
        } => {
            if let Some(filter) = reach {
                reachable(url, filter).await?;
            }
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = http::HeaderName::try_from(name.as_str())
                    .map_err(|error| format!("header {name:?}: {error}"))?;
                let mut value = http::HeaderValue::from_str(value.expose())
                    .map_err(|_| format!("header {name}: not a header value"))?;
                value.set_sensitive(true);
                custom.insert(name, value);
            }
            let transport_config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(transport_config);
            ().serve(transport)
                .await
                .map_err(|error| error.to_string())?
        }
    };
    let listed = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|error| format!("tools/list failed: {error}"))?;
    let tools = listed
        .into_iter()
        .map(|tool| ToolSpec {
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.read_only_hint)
                .unwrap_or(false),
            description: tool
                .description
                .map(|text| text.into_owned())
                .unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            name: tool.name.into_owned(),
        })
        .collect();
    Ok((service, tools))
}

/// A child's stderr, line by line, at debug level (its own diagnostics, never ours).
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(mcp.server = %server, %line, "MCP server stderr");
    }
}

#[cfg(test)]
mod tests {
    use crate::web::NetFilter;
    use rmcp::model::CallToolResult;
    use serde_json::json;

    use std::time::Duration;

    use super::{next_retry, outcome_of, FIRST_RETRY, LAST_RETRY};
    use crate::mcp::outcome::CallOutcome;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_and_text_resources_are_read_and_other_blocks_are_named() {
        let outcome = outcome_of(result(json!({"content": [
            {"type": "text", "text": "two rows"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAECAw=="}},
            {"type": "resource_link", "uri": "file:///c.md", "name": "c"}
        ]})));
        assert_eq!(
            outcome,
            CallOutcome::Done(
                "two rows\n[resource file:///a.txt]\nalpha\n\
                 [image: image/png, 8 bytes, not shown]\n\
                 [audio: audio/wav, 3 bytes, not shown]\n\
                 [resource file:///b.bin: application/octet-stream, 4 bytes, not shown]\n\
                 [resource link file:///c.md]"
                    .into()
            )
        );
    }

    #[test]
    fn structured_content_stands_in_for_no_blocks_and_errors_fail() {
        let structured = outcome_of(result(
            json!({"content": [], "structuredContent": {"n": 1}}),
        ));
        assert_eq!(structured, CallOutcome::Done(r#"{"n":1}"#.into()));
        let failed = outcome_of(result(json!({
            "content": [{"type": "text", "text": "no such table"}],
            "isError": true
        })));
        assert_eq!(failed, CallOutcome::Failed("no such table".into()));
    }

    #[test]
    fn the_wait_between_attempts_doubles_up_to_a_minute() {
        let waits: Vec<u64> =
            std::iter::successors(Some(FIRST_RETRY), |retry| Some(next_retry(*retry)))
                .take(8)
                .map(|wait| wait.as_secs())
                .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(next_retry(LAST_RETRY), Duration::from_secs(60));
    }

    #[tokio::test]
    async fn a_servers_address_is_checked_against_the_filter() {
        let strict = NetFilter::default();
        let refused = super::reachable("http://127.0.0.1:9/mcp", &strict)
            .await
            .unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        let named = super::reachable("http://localhost:9/mcp", &strict)
            .await
            .unwrap_err();
        assert!(named.contains("loopback"), "{named}");
        assert!(super::reachable("file:///etc/passwd", &strict)
            .await
            .is_err());
        let lenient = NetFilter::new(vec![
            "127.0.0.0/8".parse().unwrap(),
            "::1/128".parse().unwrap(),
        ]);
        assert_eq!(
            super::reachable("http://127.0.0.1:9/mcp", &lenient).await,
            Ok(())
        );
        assert_eq!(
            super::reachable("http://localhost:9/mcp", &lenient).await,
            Ok(())
        );
    }
}
