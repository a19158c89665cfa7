//! One client connection: frames in, replies and notifications out.
//!
//! Requests are served concurrently (a slow `ask` never blocks a `ping`), within the bounds
//! on requests in flight; replies go out in completion order. The session pings every
//! `heartbeat_secs` and drops a peer silent for `client_timeout_secs`, even while its socket
//! takes nothing (its pump keeps driving it). A console page's connection also looks at
//! each heartbeat whether its session still holds, and closes once it does not (signed out
//! on any instance, expired, its token no longer opening the server). A protocol error
//! (oversized frame, invalid UTF-8) closes only this connection.
//!
//! Every request with an id is answered exactly once: a close (the client's close frame or
//! end of stream, a protocol error, a silent peer, the server stopping) first answers each
//! request still being served with `-32603` [`AppError::Closing`], and stops serving it.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_http::ws::Item;
use actix_web_actors::ws::{self, CloseCode, CloseReason, ProtocolError};
use bytes::{Bytes, BytesMut};
use futures_util::future::join_all;
use futures_util::FutureExt;
use serde_json::Value;

use crate::access::Caller;
use crate::error::{code, AppError};
use crate::hub::{ConnId, Outbound};
use crate::rpc::call::{CallContext, ProjectBinding, Reply};
use crate::rpc::dispatch;
use crate::rpc::envelope::{self, Frame, Incoming, Request};
use crate::tokens;
use crate::ws::cookie;
use crate::ws::registry::Shutdown;
use crate::ws::state::ServerState;

/// The actor behind one WebSocket connection.
pub(crate) struct WsSession {
    id: ConnId,
    /// Who it acts for, from the token it presented.
    caller: Caller,
    /// For a console page's connection, the SHA-256 of its session id.
    console_session: Option<String>,
    /// The address it comes from (`ws::client_addr`).
    client_addr: Option<IpAddr>,
    state: ServerState,
    project: Option<ProjectBinding>,
    last_heard: Instant,
    fragments: Option<BytesMut>,
    /// The frames being served, by arrival: what each still owes its client.
    serving: BTreeMap<u64, Owed>,
    /// The number the next frame served gets.
    next_frame: u64,
}

/// A frame being served: the future serving it, and the replies a close sends instead.
struct Owed {
    handle: SpawnHandle,
    replies: Vec<Value>,
    batch: bool,
}

impl WsSession {
    /// A session for a freshly upgraded connection.
    pub(crate) fn new(
        id: ConnId,
        caller: Caller,
        console_session: Option<String>,
        client_addr: Option<IpAddr>,
        state: ServerState,
    ) -> Self {
        WsSession {
            id,
            caller,
            console_session,
            client_addr,
            state,
            project: None,
            last_heard: Instant::now(),
            fragments: None,
            serving: BTreeMap::new(),
            next_frame: 0,
        }
    }

    fn start_heartbeat(&self, ctx: &mut ws::WebsocketContext<Self>) {
        let server = &self.state.agent.settings.server;
        let interval = Duration::from_secs(server.heartbeat_secs.max(1));
        let timeout = Duration::from_secs(server.client_timeout_secs.max(1));
        ctx.run_interval(interval, move |session, ctx| {
            if session.last_heard.elapsed() > timeout {
                session.close_with(ctx, CloseCode::Away, "heartbeat timeout");
                return;
            }
            ctx.ping(b"");
            session.check_console_session(ctx);
            session.check_token(ctx);
        });
    }

    /// Closes a connection whose personal access token no longer opens the server (revoked
    /// or expired on any instance); a store that cannot be read keeps it open until the
    /// next look.
    fn check_token(&self, ctx: &mut ws::WebsocketContext<Self>) {
        if !matches!(self.caller, Caller::Token(_)) {
            return;
        }
        let (db, caller) = (self.state.agent.db.clone(), self.caller.clone());
        let looked = async move { tokens::still_open(&db, &caller).await };
        ctx.spawn(looked.into_actor(self).map(|open, session, ctx| {
            if matches!(open, Ok(false)) {
                session.close_with(
                    ctx,
                    CloseCode::Policy,
                    "personal access token revoked or expired",
                );
            }
        }));
    }

    /// Closes a console page's connection whose session no longer holds; a store that
    /// cannot be read keeps it open until the next look.
    fn check_console_session(&self, ctx: &mut ws::WebsocketContext<Self>) {
        let Some(id_hash) = self.console_session.clone() else {
            return;
        };
        let state = self.state.clone();
        let looked = async move { cookie::resume_hashed(&state, id_hash).await };
        ctx.spawn(looked.into_actor(self).map(|holds, session, ctx| {
            if matches!(holds, Ok(None)) {
                session.close_with(ctx, CloseCode::Policy, "console session ended");
            }
        }));
    }

    fn close_with(&mut self, ctx: &mut ws::WebsocketContext<Self>, code: CloseCode, why: &str) {
        tracing::info!(conn = self.id, ?code, why, "closing connection");
        self.answer_unfinished(ctx);
        ctx.close(Some(CloseReason {
            code,
            description: Some(why.into()),
        }));
        ctx.stop();
    }

    /// Stops serving the frames still being served, and sends the replies they owe as
    /// [`AppError::Closing`] errors, oldest frame first.
    fn answer_unfinished(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        for (_, owed) in std::mem::take(&mut self.serving) {
            ctx.cancel_future(owed.handle);
            self.send_replies(ctx, owed.replies, owed.batch);
        }
    }

    fn receive_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        if self.state.agent.settings.log.debug {
            let frame = super::frame_log::inbound(text);
            tracing::debug!(conn = self.id, frame = &*frame, "inbound");
        }
        let frame = match envelope::decode_frame(text) {
            Ok(frame) => frame,
            Err(error) => {
                self.send(ctx, &envelope::failure(Value::Null, &error.to_rpc()));
                return;
            }
        };
        let (items, is_batch) = match frame {
            Frame::Single(item) => (vec![item], false),
            Frame::Batch(items) => (items, true),
        };
        let context = CallContext {
            agent: self.state.agent.clone(),
            conn: self.id,
            caller: self.caller.clone(),
            client_addr: self.client_addr,
            access: self.state.access.clone(),
            project: self.project.clone(),
            outbound: ctx.address().recipient(),
        };
        let permit = match self
            .state
            .in_flight
            .take(self.id, &context.limit_key(), items.len())
        {
            Ok(permit) => permit,
            Err(overloaded) => {
                let error = overloaded.to_rpc();
                let replies: Vec<Value> = items
                    .iter()
                    .filter_map(|item| match item {
                        Incoming::Request(Request { id: None, .. }) => None,
                        Incoming::Request(Request { id: Some(id), .. }) => {
                            Some(envelope::failure(id.clone(), &error))
                        }
                        Incoming::Invalid { id, .. } => Some(envelope::failure(id.clone(), &error)),
                    })
                    .collect();
                self.send_replies(ctx, replies, is_batch);
                return;
            }
        };
        let owed: Vec<Value> = items.iter().filter_map(closing_reply).collect();
        let served = join_all(
            items
                .into_iter()
                .map(|item| serve(self.state.clone(), context.clone(), item)),
        );
        let frame = self.next_frame;
        self.next_frame += 1;
        let handle = ctx.spawn(actix::fut::wrap_future(served).map(
            move |outcomes: Vec<Served>, session: &mut WsSession, ctx| {
                drop(permit);
                session.done_serving(frame);
                let mut replies = Vec::new();
                for outcome in outcomes {
                    if let Some(binding) = outcome.bind {
                        session.bind(binding, ctx);
                    }
                    replies.extend(outcome.reply);
                }
                session.send_replies(ctx, replies, is_batch);
            },
        ));
        self.serving.insert(
            frame,
            Owed {
                handle,
                replies: owed,
                batch: is_batch,
            },
        );
    }

    /// Forgets frame `frame`, served. The map's last frame takes its node with it: an
    /// emptied `BTreeMap` keeps its root node (half a kilobyte here), which a quiet
    /// connection would hold for the rest of its life.
    fn done_serving(&mut self, frame: u64) {
        self.serving.remove(&frame);
        if self.serving.is_empty() {
            self.serving = BTreeMap::new();
        }
    }

    fn send_replies(&self, ctx: &mut ws::WebsocketContext<Self>, replies: Vec<Value>, batch: bool) {
        let limit = self.state.agent.settings.server.max_frame_bytes;
        for text in envelope::encode_replies(replies, batch, limit) {
            self.send_text(ctx, text);
        }
    }

    fn send(&self, ctx: &mut ws::WebsocketContext<Self>, message: &Value) {
        self.send_text(ctx, message.to_string());
    }

    /// Sends a reply frame, counted (a notification frame is counted by the hub that
    /// offers it).
    fn send_text(&self, ctx: &mut ws::WebsocketContext<Self>, text: String) {
        if self.state.agent.settings.log.debug {
            let frame = super::frame_log::outbound(&text);
            tracing::debug!(conn = self.id, frame = &*frame, "outbound");
        }
        self.state.agent.metrics.work().frame(text.len());
        ctx.text(text);
    }

    fn bind(&mut self, binding: ProjectBinding, ctx: &mut ws::WebsocketContext<Self>) {
        if let Some(previous) = &self.project {
            if previous.id == binding.id {
                self.project = Some(binding);
                return;
            }
            self.state.agent.hubs.unsubscribe(previous.id, self.id);
        }
        self.state
            .agent
            .hubs
            .subscribe(binding.id, self.id, ctx.address().recipient());
        self.project = Some(binding);
    }

    fn receive_continuation(&mut self, item: Item, ctx: &mut ws::WebsocketContext<Self>) {
        let limit = self.state.agent.settings.server.max_frame_bytes;
        let (chunk, last): (Bytes, bool) = match item {
            Item::FirstText(chunk) | Item::FirstBinary(chunk) => {
                self.fragments = Some(BytesMut::new());
                (chunk, false)
            }
            Item::Continue(chunk) => (chunk, false),
            Item::Last(chunk) => (chunk, true),
        };
        let Some(buffer) = self.fragments.as_mut() else {
            self.close_with(
                ctx,
                CloseCode::Protocol,
                "continuation without a first frame",
            );
            return;
        };
        if buffer.len() + chunk.len() > limit {
            self.fragments = None;
            self.close_with(ctx, CloseCode::Size, "message too large");
            return;
        }
        buffer.extend_from_slice(&chunk);
        if last {
            let message = self.fragments.take().unwrap_or_default().freeze();
            self.receive_bytes(message, ctx);
        }
    }

    fn receive_bytes(&mut self, bytes: Bytes, ctx: &mut ws::WebsocketContext<Self>) {
        match std::str::from_utf8(&bytes) {
            Ok(text) => self.receive_text(text, ctx),
            Err(_) => self.close_with(ctx, CloseCode::Invalid, "frame is not valid UTF-8"),
        }
    }
}

/// The reply a close sends for `item` in place of its answer: none for a notification.
fn closing_reply(item: &Incoming) -> Option<Value> {
    match item {
        Incoming::Request(Request { id: None, .. }) => None,
        Incoming::Request(Request {
            id: Some(id),
            method,
            ..
        }) => Some(envelope::failure(
            id.clone(),
            &AppError::Closing(method.clone()).to_rpc(),
        )),
        Incoming::Invalid { id, reason } => Some(envelope::failure(
            id.clone(),
            &AppError::InvalidRequest(reason.clone()).to_rpc(),
        )),
    }
}

/// The outcome of one element of a frame.
struct Served {
    reply: Option<Value>,
    bind: Option<ProjectBinding>,
}

async fn serve(state: ServerState, context: CallContext, item: Incoming) -> Served {
    let request = match item {
        Incoming::Request(request) => request,
        Incoming::Invalid { id, reason } => {
            let error = AppError::InvalidRequest(reason).to_rpc();
            return Served {
                reply: Some(envelope::failure(id, &error)),
                bind: None,
            };
        }
    };
    let started = Instant::now();
    let project = context.project.as_ref().map(|binding| binding.id);
    let person = context.person();
    let call = dispatch::call(context, &request.method, request.params.clone());
    let outcome = answered(&request.method, call).await;
    let duration = started.elapsed();
    let duration_ms = duration.as_millis() as u64;
    state.agent.metrics.record_request(outcome.is_ok());
    state.audit(project, person, &request, &outcome, duration);
    match outcome {
        Ok(reply) => {
            tracing::debug!(method = %request.method, duration_ms, "rpc ok");
            Served {
                reply: request.id.map(|id| envelope::success(id, reply.result)),
                bind: reply.bind,
            }
        }
        Err(error) => {
            let rpc = error.to_rpc();
            if rpc.code == code::INTERNAL {
                tracing::warn!(method = %request.method, duration_ms, %error, "rpc failed");
            } else {
                tracing::debug!(method = %request.method, duration_ms, code = rpc.code.get(), "rpc error");
            }
            Served {
                reply: request.id.map(|id| envelope::failure(id, &rpc)),
                bind: None,
            }
        }
    }
}

/// The outcome of a handler, or an internal error when it panicked: a bug in one handler
/// must still answer its request, and must not take the connection's other requests (or
/// the worker thread) down with it.
async fn answered(
    method: &str,
    call: impl Future<Output = Result<Reply, AppError>>,
) -> Result<Reply, AppError> {
    match AssertUnwindSafe(call).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::error!(method, "handler panicked");
            Err(AppError::Internal(format!(
                "The '{method}' handler failed unexpectedly."
            )))
        }
    }
}

impl Actor for WsSession {
    type Context = ws::WebsocketContext<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.state.agent.settings.server.client_buffer.max(16));
        self.start_heartbeat(ctx);
        self.state
            .connections
            .register(self.id, ctx.address().recipient());
        self.state.agent.metrics.connection_opened();
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Some(project) = &self.project {
            self.state.agent.hubs.unsubscribe(project.id, self.id);
        }
        self.state.connections.deregister(self.id);
        self.state.agent.presence.closed(self.id);
        self.state.agent.inbox.closed(self.id);
        self.state.agent.live.leave(self.id);
        self.state.agent.mcp.release(self.id);
        self.state.agent.metrics.connection_closed();
    }
}

impl Handler<Outbound> for WsSession {
    type Result = ();
    fn handle(&mut self, Outbound(text): Outbound, ctx: &mut Self::Context) {
        ctx.text(text.as_ref());
    }
}

impl Handler<Shutdown> for WsSession {
    type Result = ();
    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        self.close_with(ctx, CloseCode::Away, "server shutting down");
    }
}

impl StreamHandler<Result<ws::Message, ProtocolError>> for WsSession {
    fn handle(&mut self, message: Result<ws::Message, ProtocolError>, ctx: &mut Self::Context) {
        self.last_heard = Instant::now();
        match message {
            Ok(ws::Message::Text(text)) => self.receive_text(&text, ctx),
            Ok(ws::Message::Binary(bytes)) => self.receive_bytes(bytes, ctx),
            Ok(ws::Message::Continuation(item)) => self.receive_continuation(item, ctx),
            Ok(ws::Message::Ping(payload)) => ctx.pong(&payload),
            Ok(ws::Message::Pong(_)) | Ok(ws::Message::Nop) => {}
            Ok(ws::Message::Close(reason)) => {
                self.answer_unfinished(ctx);
                ctx.close(reason);
                ctx.stop();
            }
            Err(ProtocolError::Overflow) => {
                self.close_with(ctx, CloseCode::Size, "frame larger than the server accepts")
            }
            Err(ProtocolError::Io(error)) => self.close_with(
                ctx,
                CloseCode::Invalid,
                &format!("unreadable frame: {error}"),
            ),
            Err(error) => self.close_with(ctx, CloseCode::Protocol, &error.to_string()),
        }
    }

    /// The client ended its side without a close frame: what it asked is answered, then
    /// the session stops.
    fn finished(&mut self, ctx: &mut Self::Context) {
        self.answer_unfinished(ctx);
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix::test]
    async fn a_panicking_handler_is_answered_with_an_internal_error() {
        let panicking = async {
            let empty: Vec<u8> = Vec::new();
            let _ = empty
                .get(..1)
                .map(<[u8]>::len)
                .ok_or(())
                .map_err(|()| panic!("bug"));
            Reply::of(())
        };
        let outcome = answered("ping", panicking).await;
        assert!(matches!(outcome, Err(AppError::Internal(message)) if message.contains("'ping'")));
        let fine = answered("ping", async { Reply::of(()) }).await;
        assert!(fine.is_ok());
    }
}
