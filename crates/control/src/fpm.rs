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
    use crate::netlink::{messages, RTM_DELROUTE, RTM_NEWLINK, RTM_NEWROUTE};
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
        // The route out of an unknown interface comes after the unknown
        // type: its count may land a moment later.
        assert!(wait(|| stats.get(Kind::UnknownInterface) == 1));
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

    /// What zebra (FRR 8.4, `zebra -M dplane_fpm_nl`) streamed over FPM
    /// for IPv6 static routes, captured from a real connection in a
    /// namespace where interface 3 (`d0`) holds 2001:db8:2::1/64 and
    /// interface 5 (`d1`) 2001:db8:3::1/64: the connected routes (fe80::/64
    /// among them), `2001:db8:99::/48 via 2001:db8:2::2`, `2001:db8:97::/48`
    /// via 2001:db8:2::2 and 2001:db8:3::2, a blackhole `2001:db8:96::/48`;
    /// then 97's second path removed (an update: a delete of the prefix and
    /// an add in one frame), then 99 and 96 removed. `no fpm
    /// use-next-hop-groups` gives each route its paths (`RTA_MULTIPATH`
    /// for two); the default gives nexthop objects (`RTM_NEWNEXTHOP`, one
    /// group for 97) and `RTA_NH_ID`.
    pub(crate) const FRR_IPV6_MULTIPATH: &[u8] =
        include_bytes!("testdata/frr-8.4-ipv6-multipath.fpm");
    pub(crate) const FRR_IPV6_NEXTHOP_GROUPS: &[u8] =
        include_bytes!("testdata/frr-8.4-ipv6-nexthop-groups.fpm");

    /// The frames' payloads of a captured stream, whole.
    fn frames(stream: &[u8]) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        let (used, r) = deframe(stream, |ty, payload| {
            assert_eq!(ty, 1);
            v.push(payload.to_vec());
        });
        assert_eq!((used, r), (stream.len(), Ok(())));
        v
    }

    /// An IPv6 follower of an FPM stream as a router runs it: outputs
    /// `blackhole`, `d0`, `d1`, the capture's interfaces known.
    fn follower6() -> (Follower<MapSink>, MapSink, Arc<SourceStats>) {
        let sink = MapSink::default();
        let stats = Arc::new(SourceStats::default());
        stats.quiet();
        let spec = crate::SourceSpec::parse("fpm").unwrap();
        let devices = ["blackhole", "d0", "d1"].map(String::from).to_vec();
        let mut f = crate::follower(
            &spec,
            false,
            true,
            Some(devices),
            sink.clone(),
            stats.clone(),
        );
        for (index, name) in [(3u32, "d0"), (5, "d1")] {
            let mut fixed = [0u8; 16];
            fixed[4..8].copy_from_slice(&index.to_ne_bytes());
            let mut n = name.as_bytes().to_vec();
            n.push(0);
            f.feed(&msg(RTM_NEWLINK, 0, &fixed, &[(3, n)]));
        }
        (f, sink, stats)
    }

    /// The sink's routes as `PREFIX OUTPUT [GATEWAY]` lines, sorted.
    fn table(sink: &MapSink) -> Vec<String> {
        let mut v: Vec<String> = sink
            .0
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(p, hops)| {
                hops.iter().map(move |h| match h.gateway {
                    Some(g) => format!("{p} {} {g}", h.output),
                    None => format!("{p} {}", h.output),
                })
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn zebra_ipv6_routes_reach_the_ipv6_table_in_both_forms() {
        let connected = ["2001:db8:2::/64 1", "2001:db8:3::/64 2"];
        for stream in [FRR_IPV6_MULTIPATH, FRR_IPV6_NEXTHOP_GROUPS] {
            let (mut f, sink, stats) = follower6();
            let mut seen = Vec::new();
            for frame in frames(stream) {
                f.feed(&frame);
                seen.push(table(&sink));
            }
            // At its fullest: both connected networks, the three routes,
            // 97 over both paths; fe80::/64 never (link-local routes are
            // the host's).
            let mut full: Vec<String> = connected.iter().map(|s| s.to_string()).collect();
            full.extend(
                [
                    "2001:db8:96::/48 0",
                    "2001:db8:97::/48 1 2001:db8:2::2",
                    "2001:db8:97::/48 2 2001:db8:3::2",
                    "2001:db8:99::/48 1 2001:db8:2::2",
                ]
                .map(String::from),
            );
            full.sort();
            assert!(seen.contains(&full), "{seen:#?}");
            assert!(seen.iter().flatten().all(|l| !l.starts_with("fe80")));
            assert!(stats.get(Kind::Filtered) >= 1);
            // At the end: 97 over its one remaining path, 99 and 96 gone.
            let mut end: Vec<String> = connected.iter().map(|s| s.to_string()).collect();
            end.push("2001:db8:97::/48 1 2001:db8:2::2".into());
            end.sort();
            assert_eq!(seen.last().unwrap(), &end);
            assert_eq!(stats.get(Kind::Malformed), 0);
            assert_eq!(stats.get(Kind::UnknownType), 0);
        }
    }

    /// A replay after a reconnection states 97 with one path and no
    /// `NLM_F_REPLACE` (zebra sets it on IPv6 adds only for its kernel):
    /// the route is what zebra said, not the kernel's sibling list of the
    /// old paths and the new one.
    #[test]
    fn a_replayed_ipv6_route_replaces_its_paths() {
        let (mut f, sink, _) = follower6();
        let all = frames(FRR_IPV6_MULTIPATH);
        for frame in &all {
            f.feed(frame);
            if table(&sink).iter().any(|l| l.contains("2001:db8:3::2")) {
                break;
            }
        }
        // The update frame's add: 97 via 2001:db8:2::2 alone.
        let update = all
            .iter()
            .find(|fr| messages(fr).count() == 2)
            .expect("an update frame");
        let add = messages(update).nth(1).unwrap().unwrap();
        assert_eq!(add.ty, RTM_NEWROUTE);
        assert_eq!(add.flags & crate::netlink::NLM_F_REPLACE, 0);
        let first = u32::from_ne_bytes(update[0..4].try_into().unwrap()) as usize;
        let add_bytes = &update[(first + 3) & !3..];
        f.begin_snapshot();
        f.feed(add_bytes);
        let t = table(&sink);
        assert!(
            t.contains(&"2001:db8:97::/48 1 2001:db8:2::2".to_string()),
            "{t:?}"
        );
        assert!(!t.iter().any(|l| l.contains("2001:db8:3::2")), "{t:?}");
    }

    #[test]
    fn broken_ipv6_frames_are_counted_never_a_panic() {
        for stream in [FRR_IPV6_MULTIPATH, FRR_IPV6_NEXTHOP_GROUPS] {
            for frame in frames(stream) {
                // Where its messages end: a cut there leaves whole messages.
                let mut ends = vec![0];
                let mut at = 0;
                while at < frame.len() {
                    at = (at
                        + u32::from_ne_bytes(frame[at..at + 4].try_into().unwrap()) as usize
                        + 3)
                        & !3;
                    ends.push(at);
                }
                // Every truncation, the netlink length kept or made to fit.
                for n in 0..frame.len() {
                    let (mut f, sink, stats) = follower6();
                    let mut b = frame[..n].to_vec();
                    f.feed(&b);
                    if n >= 4 {
                        b[0..4].copy_from_slice(&(n as u32).to_ne_bytes());
                        f.feed(&b);
                    }
                    if !ends.contains(&n) {
                        assert!(stats.get(Kind::Malformed) > 0, "{n} of {frame:?}");
                    }
                    drop(sink);
                }
                // Messages of an unknown type are skipped and counted.
                let (mut f, sink, stats) = follower6();
                let mut b = frame.clone();
                for &at in &ends[..ends.len() - 1] {
                    b[at + 4..at + 6].copy_from_slice(&0x7777u16.to_ne_bytes());
                }
                f.feed(&b);
                assert_eq!(stats.get(Kind::UnknownType), ends.len() as u64 - 1);
                assert!(table(&sink).is_empty());
            }
            // The stream cut anywhere: whole frames only, the rest waits.
            for n in 0..stream.len() {
                let (used, r) = deframe(&stream[..n], |_, _| {});
                assert!(used <= n && r.is_ok());
            }
        }
    }
}
