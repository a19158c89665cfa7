//! The messages a client sends, read from the bare socket and decoded with the configured
//! frame limit.
//!
//! The buffer lives only while a frame arrives: reads go through the stack, and once a frame
//! is decoded with nothing behind it the buffer is let go, so neither a quiet connection nor
//! one that once sent a large frame keeps memory for it.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_codec::{AsyncRead, Decoder, ReadBuf};
use actix_http::ws::{Codec, Frame, Message, ProtocolError};
use bytes::BytesMut;
use bytestring::ByteString;
use futures_util::Stream;
use tokio::net::tcp::OwnedReadHalf;

/// Largest read from the socket at once.
const READ_CHUNK: usize = 8 * 1024;

/// A client's messages, until it closes its side.
pub(crate) struct SocketFrames {
    reader: OwnedReadHalf,
    codec: Codec,
    /// Bytes of a frame not complete yet.
    partial: BytesMut,
    /// The client closed its side: what is left in `partial` is all there is.
    ended: bool,
}

impl SocketFrames {
    /// Frames from `reader`, starting with `early` (what the client sent right behind its
    /// handshake), decoded by `codec`.
    pub(crate) fn new(reader: OwnedReadHalf, early: &[u8], codec: Codec) -> Self {
        SocketFrames {
            reader,
            codec,
            partial: BytesMut::from(early),
            ended: false,
        }
    }
}

impl Stream for SocketFrames {
    type Item = Result<Message, ProtocolError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(frame) = this.codec.decode(&mut this.partial)? {
                if this.partial.is_empty() {
                    this.partial = BytesMut::new();
                }
                return Poll::Ready(Some(message(frame)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            let mut chunk = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
            let mut read = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut this.reader).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Some(Err(ProtocolError::Io(error)))),
                Poll::Ready(Ok(())) if read.filled().is_empty() => this.ended = true,
                Poll::Ready(Ok(())) => this.partial.extend_from_slice(read.filled()),
            }
        }
    }
}

/// The message a frame carries; a text frame that is not UTF-8 is an I/O error, as
/// actix-web-actors reports it.
fn message(frame: Frame) -> Result<Message, ProtocolError> {
    Ok(match frame {
        Frame::Text(data) => Message::Text(
            ByteString::try_from(data)
                .map_err(|error| ProtocolError::Io(io::Error::other(error.to_string())))?,
        ),
        Frame::Binary(data) => Message::Binary(data),
        Frame::Ping(payload) => Message::Ping(payload),
        Frame::Pong(payload) => Message::Pong(payload),
        Frame::Close(reason) => Message::Close(reason),
        Frame::Continuation(item) => Message::Continuation(item),
    })
}
