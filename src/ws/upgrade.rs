//! The WebSocket upgrade, taken over from the HTTP/1 dispatcher: gates, handshake, then the
//! session runs on the bare socket.
//!
//! Served inside an ordinary HTTP response stream, a WebSocket keeps the dispatcher's read
//! and write buffers (8 KiB each) for its whole life; idle editors would pay that. Here the
//! socket is handed over after the `101`: [`SocketFrames`] reads it, and a [`Pump`] writes
//! what the session encodes straight out, so a quiet connection holds no I/O buffer at all.
//!
//! An accepted connection is logged once, and the session runs inside a `connection` span
//! naming it, the person it acts for and the client's address (`client.addr`, see
//! [`client_addr`]), so every line the session logs says whom it is about.

use std::future::Future;
use std::io;
use std::pin::Pin;

use actix::AsyncContext;
use actix_codec::Framed;
use actix_http::body::{BodySize, BoxBody, MessageBody};
use actix_http::error::PayloadError;
use actix_http::{h1, ws::Codec, ConnectionType, Request, Response, StatusCode};
use actix_web::rt::net::TcpStream;
use actix_web_actors::ws::WebsocketContext;
use bytes::Bytes;
use futures_util::future::{self, Either};
use futures_util::{stream, FutureExt, SinkExt, Stream};
use tracing::instrument::Instrumented;
use tracing::Instrument;

use crate::ws::client_addr::client_addr;
use crate::ws::cookie;
use crate::ws::frames::SocketFrames;
use crate::ws::gate;
use crate::ws::pump::{Pump, SendLimits};
use crate::ws::session::WsSession;
use crate::ws::state::ServerState;

/// The paths that speak JSON-RPC over WebSocket to a token; the console's page speaks it at
/// its own path, with its session cookie ([`cookie::caller`]).
pub(crate) const SOCKET_PATHS: [&str; 2] = ["/", "/rpc"];

/// Serves one request that asked for `Upgrade: websocket`, and then its session until the
/// connection ends. A socket error only ends the connection (the peer is gone).
///
/// Boxed: the dispatcher's task is sized for its largest state, and every connection would
/// pay for this future's size inline. The handshake is boxed again and chained with
/// `then`, not awaited in an `async` block: such a block keeps what it captured (the
/// server's state, the request, the dispatcher's codec) in its own space for as long as it
/// lives, even once moved out, so every connection would carry them to its end. Chained,
/// once the session runs only the `Pump` is left.
pub(crate) fn serve(
    state: ServerState,
    request: Request,
    framed: Framed<TcpStream, h1::Codec>,
) -> Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(
        Box::pin(handshake(state, request, framed)).then(|handshake| match handshake {
            Ok(Some(pump)) => Either::Left(pump),
            Ok(None) => Either::Right(future::ready(())),
            Err(error) => {
                tracing::debug!(%error, "websocket handshake failed");
                Either::Right(future::ready(()))
            }
        }),
    )
}

/// Answers the request: a refusal (`None`), or `101` and the session on the bare socket,
/// inside its connection's span. The request ends here: its headers point into the
/// dispatcher's read buffer and would keep it alive.
async fn handshake(
    state: ServerState,
    request: Request,
    mut framed: Framed<TcpStream, h1::Codec>,
) -> io::Result<Option<Instrumented<Pump<impl Stream<Item = Result<Bytes, actix_web::Error>>>>>> {
    let head = request.head();
    let server = &state.agent.settings.server;
    let client = request
        .peer_addr()
        .map(|peer| client_addr(peer.ip(), head, &server.trusted_proxies));
    let admitted = if SOCKET_PATHS.contains(&head.uri.path()) {
        gate::admit_socket(head, &state.access, &state.agent.db, server, client)
            .await
            .map(|caller| (caller, None))
    } else if head.uri.path() == cookie::socket_path(&server.console_path) {
        cookie::caller(head, &state)
            .await
            .map(|(caller, session)| (caller, Some(session)))
    } else {
        refuse(&mut framed, Response::new(StatusCode::NOT_FOUND)).await?;
        return Ok(None);
    };
    let (caller, console_session) = match admitted {
        Ok(admitted) => admitted,
        Err(refusal) => {
            refuse(&mut framed, refusal.response().into()).await?;
            return Ok(None);
        }
    };
    let accepted = match actix_http::ws::handshake(head) {
        Ok(mut accepted) => accepted.finish().drop_body(),
        Err(error) => {
            refuse(&mut framed, error.into()).await?;
            return Ok(None);
        }
    };
    let conn = state.connections.next_id();
    let span = tracing::info_span!(
        "connection",
        conn,
        person = caller.person(),
        client.addr = tracing::field::Empty
    );
    if let Some(client) = client {
        span.record("client.addr", tracing::field::display(client));
    }
    framed.send((accepted, BodySize::None).into()).await?;
    span.in_scope(|| tracing::info!("connection opened"));
    let parts = framed.into_parts();
    let (reader, writer) = parts.io.into_split();
    let frames = SocketFrames::new(
        reader,
        &parts.read_buf,
        Codec::new().max_size(server.max_frame_bytes),
    );
    let session = WsSession::new(conn, caller, console_session, client, state.clone());
    // The context's own reader gets a stream that never yields: the frames come from ours.
    let outbound = WebsocketContext::with_factory(
        stream::pending::<Result<Bytes, PayloadError>>(),
        move |ctx| {
            ctx.add_stream(frames);
            session
        },
    );
    Ok(Some(
        Pump::new(conn, outbound, writer, SendLimits::new(server)).instrument(span),
    ))
}

/// Answers with `response` and ends the connection.
async fn refuse(
    framed: &mut Framed<TcpStream, h1::Codec>,
    response: Response<BoxBody>,
) -> io::Result<()> {
    let (mut head, body) = response.into_parts();
    head.head_mut().set_connection_type(ConnectionType::Close);
    let body = body.try_into_bytes().unwrap_or_default();
    let size = BodySize::Sized(body.len() as u64);
    framed.send((head, size).into()).await?;
    framed.send(h1::Message::Chunk(Some(body))).await?;
    framed.send(h1::Message::Chunk(None)).await
}
