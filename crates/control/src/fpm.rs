//! The Forwarding Plane Manager protocol: FRR's zebra connects to the
//! data plane over TCP (port 2620 by default) and streams its FIB, each
//! route change a netlink message behind a 4-byte header (`dplane_fpm_nl`;
//! FRR's `doc/developer/fpm.rst`):
//!
//! ```text
//! version (1 byte, 1) | type (1 byte: 1 netlink, 2 protobuf) | length (2 bytes, big-endian, header included)
//! ```
//!
//! bricks listens; one peer at a time (a second connection is closed at
//! once and counted). On every connection zebra replays its whole FIB, so
//! a connection starts a snapshot: the routes of the previous connection
//! stay while the replay comes in, and those it did not repeat are
//! withdrawn once the stream has been quiet for [`REPLAY_QUIET`]. A peer
//! that goes away leaves the table as its last complete frame left it.
//! Only whole frames are applied (zebra writes an update's delete and add
//! in one frame), and a frame with a bad version or length ends the
//! connection, since nothing after it can be found.
//!
//! Several route elements can take routes from one listening address (the
//! IPv4 and the IPv6 table of a router): each subscribes with its own
//! follower, and every frame goes to all of them.

use crate::follow::{Follower, RouteSink};
use crate::stats::{Kind, SourceStats};
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// zebra's default FPM port.
pub const DEFAULT_PORT: u16 = 2620;
/// A replay has ended when the stream has been quiet this long.
pub const REPLAY_QUIET: Duration = Duration::from_secs(2);
/// ... or at the latest this long after the connection.
const REPLAY_MAX: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(100);
const FPM_HEADER: usize = 4;

/// What the listener needs of a follower, whatever its sink.
pub trait Feed: Send {
    /// Reads a frame's netlink messages.
    fn feed(&mut self, buf: &[u8]);
    /// A replay starts.
    fn begin_snapshot(&mut self);
    /// A replay has ended.
    fn end_snapshot(&mut self);
    /// The follower's counters.
    fn stats(&self) -> &SourceStats;
}

impl<S: RouteSink> Feed for Follower<S> {
    fn feed(&mut self, buf: &[u8]) {
        Follower::feed(self, buf);
    }
    fn begin_snapshot(&mut self) {
        Follower::begin_snapshot(self)
    }
    fn end_snapshot(&mut self) {
        Follower::end_snapshot(self)
    }
    fn stats(&self) -> &SourceStats {
        Follower::stats(self)
    }
}

type Subscribers = Mutex<Vec<(u64, Box<dyn Feed>)>>;

struct Hub {
    subs: Subscribers,
    connected: std::sync::atomic::AtomicBool,
}

fn hubs() -> &'static Mutex<HashMap<SocketAddr, Arc<Hub>>> {
    static HUBS: OnceLock<Mutex<HashMap<SocketAddr, Arc<Hub>>>> = OnceLock::new();
    HUBS.get_or_init(Default::default)
}

/// A follower taking routes from an FPM listener; dropping it
/// unsubscribes (the listener closes with its last subscriber).
pub struct Subscription {
    hub: Arc<Hub>,
    id: u64,
}

impl Subscription {
    /// Whether a zebra is connected now.
    pub fn connected(&self) -> bool {
        self.hub.connected.load(Ordering::Acquire)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut subs = self.hub.subs.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|(id, _)| *id != self.id);
    }
}

/// Subscribes `feed` to the FPM listener on `addr`, starting the listener
/// if this is its first subscriber.
pub fn subscribe(addr: SocketAddr, feed: Box<dyn Feed>) -> io::Result<Subscription> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut hubs = hubs().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hub) = hubs.get(&addr) {
        hub.subs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, feed));
        return Ok(Subscription {
            hub: hub.clone(),
            id,
        });
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen for FPM on {addr}: {e}")))?;
    listener.set_nonblocking(true)?;
    let hub = Arc::new(Hub {
        subs: Mutex::new(vec![(id, feed)]),
        connected: false.into(),
    });
    hubs.insert(addr, hub.clone());
    let h = hub.clone();
    std::thread::Builder::new()
        .name(format!("fpm {addr}"))
        .spawn(move || serve(addr, listener, h))?;
    Ok(Subscription { hub, id })
}

fn each(hub: &Hub, mut f: impl FnMut(&mut dyn Feed)) {
    let mut subs = hub.subs.lock().unwrap_or_else(|e| e.into_inner());
    for (_, s) in subs.iter_mut() {
        f(s.as_mut());
    }
}

/// The listener's thread: accepts one peer at a time and feeds its frames.
fn serve(addr: SocketAddr, listener: TcpListener, hub: Arc<Hub>) {
    let mut peer: Option<Peer> = None;
    loop {
        {
            // Last subscriber gone: close, unless one came in meanwhile.
            let mut hubs = hubs().lock().unwrap_or_else(|e| e.into_inner());
            if hub
                .subs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty()
            {
                hubs.remove(&addr);
                return;
            }
        }
        match listener.accept() {
            Ok((stream, from)) => {
                if peer.is_some() {
                    each(&hub, |s| s.stats().count(Kind::ConnectionsRefused));
                    eprintln!("warning: fpm {addr}: refused a second peer {from} (one at a time)");
                    drop(stream);
                } else {
                    match Peer::new(stream) {
                        Ok(p) => {
                            each(&hub, |s| {
                                s.stats().count(Kind::Connections);
                                s.begin_snapshot();
                            });
                            hub.connected.store(true, Ordering::Release);
                            peer = Some(p);
                        }
                        Err(e) => eprintln!("warning: fpm {addr}: {from}: {e}"),
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => eprintln!("warning: fpm {addr}: accept failed: {e}"),
        }
        let Some(p) = &mut peer else {
            std::thread::sleep(POLL);
            continue;
        };
        match p.read(&hub) {
            Ok(()) => {}
            Err(why) => {
                if !why.is_empty() {
                    eprintln!("warning: fpm {addr}: {why}; closing the connection");
                }
                hub.connected.store(false, Ordering::Release);
                peer = None;
                continue;
            }
        }
        if let Some(since) = p.replaying {
            if p.last.elapsed() >= REPLAY_QUIET || since.elapsed() >= REPLAY_MAX {
                each(&hub, |s| s.end_snapshot());
                p.replaying = None;
            }
        }
    }
}

/// A connected zebra and the bytes of its frame in progress.
struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
    /// When its replay started, until it has ended.
    replaying: Option<Instant>,
    /// When the last frame came.
    last: Instant,
}

impl Peer {
    fn new(stream: TcpStream) -> io::Result<Peer> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(POLL))?;
        Ok(Peer {
            stream,
            buf: Vec::with_capacity(1 << 17),
            replaying: Some(Instant::now()),
            last: Instant::now(),
        })
    }

    /// Reads what has come (waiting at most [`POLL`]) and feeds every
    /// whole frame. An error (or an empty string for a closed connection)
    /// ends the connection.
    fn read(&mut self, hub: &Hub) -> Result<(), String> {
        let mut chunk = [0u8; 65536];
        let n = match self.stream.read(&mut chunk) {
            Ok(0) => return Err(String::new()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        self.buf.extend_from_slice(&chunk[..n]);
        let (at, result) = deframe(&self.buf, |ty, payload| match ty {
            1 => each(hub, |s| s.feed(payload)),
            _ => each(hub, |s| {
                s.stats().skip(
                    Kind::UnknownType,
                    &format!("an FPM frame of type {ty} (only netlink, 1, is read)"),
                )
            }),
        });
        if at > 0 {
            self.last = Instant::now();
        }
        if result.is_err() {
            each(hub, |s| {
                s.stats()
                    .skip(Kind::Malformed, "an FPM frame with a bad header")
            });
        }
        self.buf.drain(..at);
        result
    }
}

/// Splits the whole FPM frames at the start of `buf`, calling `frame` with
/// each one's type and payload; returns the bytes used and, for a header
/// with a bad version or length (after which nothing can be found), why.
pub fn deframe(buf: &[u8], mut frame: impl FnMut(u8, &[u8])) -> (usize, Result<(), String>) {
    let mut at = 0;
    while buf.len() - at >= FPM_HEADER {
        let h = &buf[at..at + FPM_HEADER];
        let (version, ty, len) = (h[0], h[1], usize::from(u16::from_be_bytes([h[2], h[3]])));
        if version != 1 || len < FPM_HEADER {
            return (
                at,
                Err(format!(
                    "bad FPM header (version {version}, length {len}) at byte {at} of the buffer"
                )),
            );
        }
        if buf.len() - at < len {
            break;
        }
        frame(ty, &buf[at + FPM_HEADER..at + len]);
        at += len;
    }
    (at, Ok(()))
}

/// Encodes one FPM frame around netlink messages (for tests and tools).
pub fn frame(netlink: &[u8]) -> Vec<u8> {
    let len = (netlink.len() + FPM_HEADER) as u16;
    let mut f = vec![1, 1];
    f.extend_from_slice(&len.to_be_bytes());
    f.extend_from_slice(netlink);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::follow::tests::MapSink;
    use crate::follow::Filter;
    use crate::netlink::tests::{msg, route4};
    use crate::netlink::{RTM_DELROUTE, RTM_NEWLINK, RTM_NEWROUTE};
    use std::io::Write;

    fn wait(mut f: impl FnMut() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// A real TCP peer on loopback: frames split across writes, a second
    /// peer refused, a disconnect that keeps the table, a reconnect whose
    /// replay withdraws what it does not repeat.
    #[test]
    fn a_peer_streams_routes_over_tcp() {
        let sink = MapSink::default();
        let stats = Arc::new(SourceStats::default());
        stats.quiet();
        let mut f = Follower::new(
            Filter {
                table: None,
                protocol: None,
                v4: true,
                v6: true,
                devices: Some(vec!["r-eth0".into()]),
            },
            sink.clone(),
            stats.clone(),
        );
        // The listener's follower learns names from the links it is sent
        // in tests; in a router it also dumps the kernel's links.
        let mut fixed = [0u8; 16];
        fixed[4..8].copy_from_slice(&2u32.to_ne_bytes());
        f.feed(&msg(RTM_NEWLINK, 0, &fixed, &[(3, b"r-eth0\0".to_vec())]));
        // Port 0 would give each subscriber its own port; find a free one.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let sub = subscribe(addr, Box::new(f)).unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let mut bytes = Vec::new();
        for i in 0..50u8 {
            bytes.extend(frame(&route4(
                RTM_NEWROUTE,
                [10, i, 0, 0],
                16,
                None,
                2,
                254,
                0,
            )));
        }
        // An unknown frame type and a route out of an unknown interface.
        bytes.extend([1, 2, 0, 6, 0xaa, 0xbb]);
        bytes.extend(frame(&route4(
            RTM_NEWROUTE,
            [11, 0, 0, 0],
            8,
            None,
            9,
            254,
            0,
        )));
        for piece in bytes.chunks(7) {
            c.write_all(piece).unwrap();
        }
        assert!(wait(|| sink.0.lock().unwrap().len() == 50));
        assert!(wait(|| stats.get(Kind::UnknownType) == 1));
        assert_eq!(stats.get(Kind::UnknownInterface), 1);
        // A second peer is refused while the first is connected.
        let mut c2 = TcpStream::connect(addr).unwrap();
        c2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(c2.read(&mut b).unwrap_or(0), 0);
        assert!(wait(|| stats.get(Kind::ConnectionsRefused) == 1));
        // A withdrawal, then the peer goes away mid-frame: the table stays.
        c.write_all(&frame(&route4(
            RTM_DELROUTE,
            [10, 0, 0, 0],
            16,
            None,
            2,
            254,
            0,
        )))
        .unwrap();
        c.write_all(&frame(&route4(RTM_NEWROUTE, [12, 0, 0, 0], 8, None, 2, 254, 0))[..9])
            .unwrap();
        assert!(wait(|| sink.0.lock().unwrap().len() == 49));
        drop(c);
        assert!(wait(|| !sub.connected()));
        assert_eq!(sink.0.lock().unwrap().len(), 49);
        // It comes back and replays only ten routes: after the replay the
        // rest are withdrawn.
        let mut c = TcpStream::connect(addr).unwrap();
        for i in 1..11u8 {
            c.write_all(&frame(&route4(
                RTM_NEWROUTE,
                [10, i, 0, 0],
                16,
                None,
                2,
                254,
                0,
            )))
            .unwrap();
        }
        assert!(wait(|| sub.connected()));
        std::thread::sleep(REPLAY_QUIET);
        assert!(wait(|| sink.0.lock().unwrap().len() == 10));
        // A bad header ends the connection.
        c.write_all(&[9, 1, 0, 8, 0, 0, 0, 0]).unwrap();
        assert!(wait(|| !sub.connected()));
        assert_eq!(stats.get(Kind::Connections), 2);
        drop(sub);
    }
}
