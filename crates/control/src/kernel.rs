//! Following a Linux routing table over rtnetlink, as routing daemons
//! leave their routes there (BIRD's kernel protocol, FRR's zebra, `ip
//! route`).
//!
//! Two sockets: one joined to the link, IPv4 route, IPv6 route and nexthop
//! groups before anything is read, so that no change is missed, and one
//! for dumps. At start the links, nexthop objects and routes are dumped
//! (a snapshot), then the notifications queued meanwhile and every later
//! one are applied as they come. When the kernel drops notifications
//! because the socket's buffer filled (`ENOBUFS`: a burst of a million
//! changes), the whole table is dumped again and what the dump no longer
//! holds is withdrawn, so the table never stays out of step.

use crate::follow::{Follower, RouteSink};
use crate::netlink::{self, AF_INET, AF_INET6, RTM_GETLINK, RTM_GETNEXTHOP, RTM_GETROUTE};
use crate::stats::Kind;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

// Multicast groups (`enum rtnetlink_groups`).
const RTNLGRP_LINK: u32 = 1;
const RTNLGRP_IPV4_ROUTE: u32 = 7;
const RTNLGRP_IPV6_ROUTE: u32 = 11;
const RTNLGRP_NEXTHOP: u32 = 32;

/// Receive buffer asked for: room for a burst of about 100,000 route
/// notifications before the kernel drops any.
const RCVBUF: i32 = 32 << 20;
/// How often a waiting source looks at its stop flag.
const POLL: Duration = Duration::from_millis(100);
/// Dumps interrupted by changes are retried this many times.
const DUMP_TRIES: usize = 8;

fn setsockopt_int(fd: i32, opt: i32, value: i32) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller, and the option
    // value is a c_int that lives for the call, with its size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_timeout(fd: i32, t: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: t.as_secs() as libc::time_t,
        tv_usec: t.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: as in `setsockopt_int`, with a timeval.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn open() -> io::Result<Socket> {
    let mut s = Socket::new(NETLINK_ROUTE)?;
    s.bind_auto()?;
    let fd = s.as_raw_fd();
    // SO_RCVBUFFORCE passes rmem_max for root; others get what SO_RCVBUF
    // allows, and a resync covers what overflows.
    if setsockopt_int(fd, libc::SO_RCVBUFFORCE, RCVBUF).is_err() {
        let _ = setsockopt_int(fd, libc::SO_RCVBUF, RCVBUF);
    }
    set_timeout(fd, POLL)?;
    Ok(s)
}

/// A followed table: the thread that applies its changes. Dropping it
/// stops the thread.
pub struct Following {
    stop: Arc<AtomicBool>,
    synced: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Following {
    /// Whether the first dump has been applied.
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Waits until the first dump has been applied, at most `timeout`.
    pub fn wait_synced(&self, timeout: Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        while !self.synced() {
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Whether the thread has ended (a socket error it could not recover
    /// from).
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Starts following the kernel's routes into `follower` (whose filter
/// picks the table, protocol and families). The sockets are opened here,
/// so that a missing permission is an error now; the dump and the changes
/// are applied on a thread of their own.
pub fn follow<S: RouteSink>(mut follower: Follower<S>, name: &str) -> io::Result<Following> {
    let events = open()?;
    for g in [
        RTNLGRP_LINK,
        RTNLGRP_IPV4_ROUTE,
        RTNLGRP_IPV6_ROUTE,
        RTNLGRP_NEXTHOP,
    ] {
        // Kernels before 5.3 have no nexthop group; the rest must work.
        if let Err(e) = events.add_membership(g) {
            if g != RTNLGRP_NEXTHOP {
                return Err(e);
            }
        }
    }
    let dumps = open()?;
    let stop = Arc::new(AtomicBool::new(false));
    let synced = Arc::new(AtomicBool::new(false));
    let (stop2, synced2) = (stop.clone(), synced.clone());
    let label = name.to_string();
    let handle = std::thread::Builder::new()
        .name(format!("routes {name}"))
        .spawn(move || {
            let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
            let mut seq = 1;
            if let Err(e) = snapshot(&mut follower, &dumps, &mut buf, &mut seq, &stop2) {
                eprintln!("error: {label}: dump failed: {e}");
                return;
            }
            synced2.store(true, Ordering::Release);
            while !stop2.load(Ordering::Acquire) {
                buf.clear();
                match events.recv(&mut buf, 0) {
                    Ok(_) => {
                        follower.feed(&buf);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                        // Notifications were lost: read the table again.
                        follower.stats().count(Kind::Resyncs);
                        if let Err(e) = snapshot(&mut follower, &dumps, &mut buf, &mut seq, &stop2)
                        {
                            eprintln!("error: {label}: dump failed: {e}");
                            return;
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) || e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        eprintln!("error: {label}: netlink receive failed: {e}");
                        return;
                    }
                }
            }
        })?;
    Ok(Following {
        stop,
        synced,
        handle: Some(handle),
    })
}

/// The kernel's links as rtnetlink messages (an `RTM_GETLINK` dump), for
/// a source that names interfaces by index but does not send their names
/// (FPM).
pub fn links() -> io::Result<Vec<u8>> {
    let sock = open()?;
    sock.send(&netlink::dump_request(RTM_GETLINK, 0, 1), 0)?;
    let mut all = Vec::new();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    // Bounded: a dump of 65,536 links is a few MiB.
    for _ in 0..10_000 {
        buf.clear();
        sock.recv(&mut buf, 0)?;
        let done = netlink::messages(&buf)
            .flatten()
            .any(|m| matches!(m.ty, netlink::NLMSG_DONE | netlink::NLMSG_ERROR));
        all.extend_from_slice(&buf);
        if done {
            return Ok(all);
        }
    }
    Err(io::Error::other("link dump did not end"))
}

/// Dumps links, nexthops and routes as one snapshot.
fn snapshot<S: RouteSink>(
    f: &mut Follower<S>,
    sock: &Socket,
    buf: &mut Vec<u8>,
    seq: &mut u32,
    stop: &AtomicBool,
) -> io::Result<()> {
    for _ in 0..DUMP_TRIES {
        f.begin_snapshot();
        let mut interrupted = false;
        for (ty, family) in [
            (RTM_GETLINK, 0),
            (RTM_GETNEXTHOP, 0),
            (RTM_GETROUTE, AF_INET),
            (RTM_GETROUTE, AF_INET6),
        ] {
            *seq += 1;
            match dump(f, sock, buf, ty, family, *seq, stop) {
                Ok(i) => interrupted |= i,
                // Kernels without nexthop objects refuse their dump.
                Err(_) if ty == RTM_GETNEXTHOP => {}
                Err(e) => return Err(e),
            }
        }
        if !interrupted {
            f.end_snapshot();
            return Ok(());
        }
    }
    // Still changing: keep what was read, withdraw nothing.
    Ok(())
}

/// One dump request and its answer; whether the kernel said it was
/// interrupted by changes.
fn dump<S: RouteSink>(
    f: &mut Follower<S>,
    sock: &Socket,
    buf: &mut Vec<u8>,
    ty: u16,
    family: u8,
    seq: u32,
    stop: &AtomicBool,
) -> io::Result<bool> {
    sock.send(&netlink::dump_request(ty, family, seq), 0)?;
    let mut interrupted = false;
    let mut idle = 0;
    loop {
        buf.clear();
        match sock.recv(buf, 0) {
            Ok(_) => {
                idle = 0;
                let r = f.feed(buf);
                interrupted |= r.interrupted;
                if let Some(e) = r.error {
                    return Err(io::Error::from_raw_os_error(-e));
                }
                if r.done {
                    return Ok(interrupted);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                idle += 1;
                // A dump answers at once; 5 s of silence is a lost answer.
                if idle > 50 || stop.load(Ordering::Acquire) {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no answer to a dump request",
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::follow::tests::MapSink;
    use crate::follow::Filter;
    use crate::stats::SourceStats;

    /// The loopback's local routes exist in every namespace: a dump of the
    /// local table (255) finds 127.0.0.1 as a local route, which is
    /// skipped as unsupported, and the dump completes.
    #[test]
    fn the_running_kernel_dumps_and_syncs() {
        let sink = MapSink::default();
        let stats = Arc::new(SourceStats::default());
        stats.quiet();
        let f = Follower::new(
            Filter {
                table: Some(255),
                protocol: None,
                v4: true,
                v6: false,
                devices: None,
            },
            sink,
            stats.clone(),
        );
        let following = match follow(f, "test") {
            Ok(f) => f,
            Err(e) => {
                eprintln!("skipped: no rtnetlink socket here: {e}");
                return;
            }
        };
        assert!(following.wait_synced(Duration::from_secs(10)));
        assert!(stats.get(Kind::Messages) > 0);
        assert!(
            stats.get(Kind::Unsupported) > 0,
            "127.0.0.1 is a local route"
        );
    }
}
