//! [`Pump`]: runs one session on its socket. It drives the session (which reads the socket
//! and serves requests) and writes what the session encodes, queueing what the socket has
//! not taken yet.
//!
//! The session is driven even while the socket takes nothing, so it keeps reading its peer,
//! answering, and timing a silent peer out; what it writes meanwhile waits here, bounded. A
//! peer that does not read its replies and notifications is dropped as soon as more than
//! `client_send_buffer_bytes` wait for it, or once its socket has taken none of them for
//! `client_timeout_secs`: the socket is reset (a close frame could not reach it anyway),
//! which frees the kernel's buffers too. Every connection has its own pump, and nothing
//! else waits on a socket (the hubs offer notifications with `try_send`), so a peer that
//! stops reading delays no one else.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWrite;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::time::Sleep;

use crate::config::ServerSettings;
use crate::hub::ConnId;

/// How long a peer may leave the server's bytes untaken, and how many may wait for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendLimits {
    /// Bytes encoded for the peer that its socket has not taken, at most.
    pub queued_bytes: usize,
    /// Longest time the socket may take none of them.
    pub stall: Duration,
}

impl SendLimits {
    /// `client_send_buffer_bytes`, and `client_timeout_secs` for the stall.
    pub(crate) fn new(settings: &ServerSettings) -> Self {
        SendLimits {
            queued_bytes: settings.client_send_buffer_bytes,
            stall: Duration::from_secs(settings.client_timeout_secs.max(1)),
        }
    }
}

/// Runs a session until it stops and what it wrote is out, or the peer goes or is dropped.
/// Dropping the pump closes the socket and stops the session.
pub(crate) struct Pump<S> {
    conn: ConnId,
    /// The session's encoded frames; `None` once it has stopped.
    outbound: Option<S>,
    writer: OwnedWriteHalf,
    /// Encoded bytes the socket has not taken yet, oldest first.
    pending: VecDeque<Bytes>,
    /// Their total length.
    queued: usize,
    limits: SendLimits,
    /// Runs while bytes wait and the socket takes none of them.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Pump<S> {
    /// A pump for connection `conn`: `outbound` is its session, `writer` its socket.
    pub(crate) fn new(
        conn: ConnId,
        outbound: S,
        writer: OwnedWriteHalf,
        limits: SendLimits,
    ) -> Self {
        Pump {
            conn,
            outbound: Some(outbound),
            writer,
            pending: VecDeque::new(),
            queued: 0,
            limits,
            stalled: None,
        }
    }

    /// Writes what the socket takes now; `Err` when the peer is gone.
    fn flush(&mut self, cx: &mut Context<'_>) -> Result<(), Gone> {
        while let Some(front) = self.pending.front_mut() {
            match Pin::new(&mut self.writer).poll_write(cx, front) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Err(Gone),
                Poll::Ready(Ok(written)) => {
                    self.stalled = None;
                    self.queued -= written;
                    front.advance(written);
                    if front.is_empty() {
                        self.pending.pop_front();
                    }
                    if self.pending.is_empty() {
                        // Its buffer too: a quiet connection keeps none.
                        self.pending = VecDeque::new();
                    }
                }
            }
        }
        Ok(())
    }

    /// Resets the connection instead of closing it: nothing more is sent, and the kernel
    /// drops what it still holds for the peer.
    fn reset(&self) {
        if let Err(error) = self.writer.as_ref().set_zero_linger() {
            tracing::debug!(conn = self.conn, %error, "cannot reset the connection");
        }
    }
}

/// The peer closed its side or the socket failed.
struct Gone;

impl<S> Future for Pump<S>
where
    S: Stream<Item = Result<Bytes, actix_web::Error>> + Unpin,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            let produced = match this.outbound.as_mut().map(|s| s.poll_next_unpin(cx)) {
                Some(Poll::Ready(Some(Ok(chunk)))) => {
                    this.queued += chunk.len();
                    this.pending.push_back(chunk);
                    true
                }
                Some(Poll::Ready(Some(Err(_)) | None)) => {
                    this.outbound = None;
                    false
                }
                Some(Poll::Pending) | None => false,
            };
            if this.flush(cx).is_err() {
                return Poll::Ready(());
            }
            if this.queued > this.limits.queued_bytes {
                tracing::warn!(
                    conn = this.conn,
                    bytes = this.queued,
                    limit = this.limits.queued_bytes,
                    "client is not reading: dropping the connection"
                );
                this.reset();
                return Poll::Ready(());
            }
            if !produced {
                break;
            }
        }
        if this.pending.is_empty() {
            return match this.outbound {
                Some(_) => Poll::Pending,
                None => Poll::Ready(()),
            };
        }
        let stall = this.limits.stall;
        let stalled = this
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        if stalled.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        tracing::warn!(
            conn = this.conn,
            bytes = this.queued,
            secs = stall.as_secs(),
            "client took none of the server's bytes in time: dropping the connection"
        );
        this.reset();
        Poll::Ready(())
    }
}

#[cfg(test)]
mod tests;
