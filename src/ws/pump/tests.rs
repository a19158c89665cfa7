//! The pump against real loopback sockets, polled by hand: what it counts as waiting, the
//! bound's edge, and how it leaves a peer it drops.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::rc::Rc;

use futures_util::task::noop_waker_ref;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::*;

/// A session stand-in: yields what the test pushes, and waits when there is nothing.
#[derive(Clone, Default)]
struct Frames(Rc<RefCell<VecDeque<Bytes>>>);

impl Frames {
    fn push(&self, len: usize) {
        self.0.borrow_mut().push_back(Bytes::from(vec![b'x'; len]));
    }
}

impl Stream for Frames {
    type Item = Result<Bytes, actix_web::Error>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.borrow_mut().pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(chunk))),
            None => Poll::Pending,
        }
    }
}

/// A connected pair with small kernel buffers: the server's halves (the write half for the
/// pump; the socket closes when both are dropped) and the peer.
async fn pair() -> (OwnedReadHalf, OwnedWriteHalf, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let (peer, accepted) = tokio::join!(
        socket.connect(listener.local_addr().unwrap()),
        listener.accept()
    );
    let (server, _) = accepted.unwrap();
    let (read_half, write_half) = server.into_split();
    (read_half, write_half, peer.unwrap())
}

fn pump(writer: OwnedWriteHalf, frames: &Frames, queued_bytes: usize) -> Pump<Frames> {
    let limits = SendLimits {
        queued_bytes,
        stall: Duration::from_secs(3600),
    };
    Pump::new(7, frames.clone(), writer, limits)
}

fn poll(pump: &mut Pump<Frames>) -> Poll<()> {
    Pin::new(pump).poll(&mut Context::from_waker(noop_waker_ref()))
}

/// Pushes frames until some wait, then polls until the socket takes nothing more: the
/// peer's window is shut, and every byte pushed after this waits in the pump.
async fn fill_until_still(pump: &mut Pump<Frames>, frames: &Frames) {
    while pump.queued == 0 {
        frames.push(64 * 1024);
        assert!(
            poll(pump).is_pending(),
            "the bound is far above what fills the socket"
        );
    }
    let mut last = pump.queued;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(poll(pump).is_pending());
        if pump.queued == last {
            return;
        }
        last = pump.queued;
    }
}

#[tokio::test]
async fn bytes_the_socket_takes_stop_counting() {
    let (_reader, writer, _peer) = pair().await;
    let frames = Frames::default();
    let mut pump = pump(writer, &frames, 1 << 20);
    frames.push(1000);
    frames.push(24);
    assert!(poll(&mut pump).is_pending());
    assert_eq!(pump.queued, 0, "the socket took both frames");
    assert!(pump.pending.is_empty());
}

#[tokio::test]
async fn exactly_the_bound_waits_and_one_byte_more_drops() {
    let (_reader, writer, _peer) = pair().await;
    let frames = Frames::default();
    let mut pump = pump(writer, &frames, usize::MAX);
    fill_until_still(&mut pump, &frames).await;
    let waiting = pump.queued;
    assert!(waiting > 0);

    pump.limits.queued_bytes = waiting + 100;
    frames.push(100);
    assert!(poll(&mut pump).is_pending(), "at the bound the peer stays");
    assert_eq!(pump.queued, waiting + 100);
    frames.push(1);
    assert!(
        poll(&mut pump).is_ready(),
        "past the bound the peer is dropped"
    );
}

#[tokio::test]
async fn a_dropped_peer_is_reset_not_closed() {
    let (reader, writer, mut peer) = pair().await;
    let frames = Frames::default();
    let mut pump = pump(writer, &frames, usize::MAX);
    fill_until_still(&mut pump, &frames).await;
    pump.limits.queued_bytes = pump.queued;
    frames.push(1);
    assert!(poll(&mut pump).is_ready());
    drop(pump);
    drop(reader);

    let mut buffer = vec![0; 64 * 1024];
    let ending = loop {
        match peer.read(&mut buffer).await {
            Ok(0) => break None,
            Ok(_) => continue,
            Err(error) => break Some(error.kind()),
        }
    };
    assert_eq!(
        ending,
        Some(ErrorKind::ConnectionReset),
        "a reset, not an orderly close after the queued bytes"
    );
}
