//! Writing routes into a kernel table as fast as the kernel takes them:
//! `RTM_NEWROUTE` messages (`<linux/rtnetlink.h>`) packed into batches,
//! one `sendmsg` per batch, an acknowledgement asked for only on each
//! batch's last message.
//!
//! rtnetlink handles every message of a datagram inside the `sendmsg`
//! call, under the RTNL lock, so the time from the first send to the last
//! acknowledgement is the kernel's own insert time (including the
//! notifications it makes for listeners).

use bricks_control::netlink::{self, AF_INET, NLMSG_ERROR, NLM_F_REPLACE, NLM_F_REQUEST};
use bricks_lpm::Prefix4;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use std::io;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// `NLM_F_ACK`: answer this message even when it succeeds.
const NLM_F_ACK: u16 = 0x4;
/// `NLM_F_CREATE`: create the route if it does not exist.
const NLM_F_CREATE: u16 = 0x400;
/// `RTPROT_STATIC`: a route an administrator (here: a daemon) set.
const RTPROT_STATIC: u8 = 4;
/// `RT_TABLE_COMPAT`: `rtm_table` of a table above 255 (read `RTA_TABLE`).
const RT_TABLE_COMPAT: u8 = 252;
/// `RTNH_F_ONLINK`: the gateway is on the link, whatever its address.
const RTNH_F_ONLINK: u32 = 4;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_TABLE: u16 = 15;
/// One route message: header 16, rtmsg 12, four 8-byte attributes.
const MESSAGE_LEN: usize = 60;
/// Bytes per datagram: under the default socket send buffer (212,992
/// bytes), which bounds one `sendmsg` on a netlink socket.
const BATCH_BYTES: usize = 64 << 10;
/// How long one batch's acknowledgement may take.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// A route to write: its prefix, the outgoing interface and the onlink
/// gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRoute {
    /// The destination.
    pub prefix: Prefix4,
    /// The outgoing interface's index.
    pub oif: u32,
    /// The next router, reached on `oif` whatever its address.
    pub gateway: Ipv4Addr,
}

/// Appends one `RTM_NEWROUTE` (create or replace) for `r` in `table`.
fn push_route(out: &mut Vec<u8>, seq: u32, flags: u16, table: u32, r: &KernelRoute) {
    let attr = |out: &mut Vec<u8>, ty: u16, v: [u8; 4]| {
        out.extend_from_slice(&8u16.to_ne_bytes());
        out.extend_from_slice(&ty.to_ne_bytes());
        out.extend_from_slice(&v);
    };
    out.extend_from_slice(&(MESSAGE_LEN as u32).to_ne_bytes());
    out.extend_from_slice(&netlink::RTM_NEWROUTE.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    let t = u8::try_from(table).unwrap_or(RT_TABLE_COMPAT);
    // family, dst_len, src_len, tos, table, protocol, scope (universe), type
    out.extend_from_slice(&[
        AF_INET,
        r.prefix.len,
        0,
        0,
        t,
        RTPROT_STATIC,
        0,
        netlink::RTN_UNICAST,
    ]);
    out.extend_from_slice(&RTNH_F_ONLINK.to_ne_bytes());
    attr(out, RTA_TABLE, table.to_ne_bytes());
    attr(out, RTA_DST, r.prefix.addr.to_be_bytes());
    attr(out, RTA_OIF, r.oif.to_ne_bytes());
    attr(out, RTA_GATEWAY, r.gateway.octets());
}

/// Routes as the datagrams that write them into `table`: each a run of
/// `RTM_NEWROUTE`s (`NLM_F_CREATE | NLM_F_REPLACE`) whose last one asks
/// for an acknowledgement. Sequence numbers count from 1, one per route.
pub fn batches(routes: &[KernelRoute], table: u32) -> Vec<Vec<u8>> {
    let per = BATCH_BYTES / MESSAGE_LEN;
    let mut seq = 0u32;
    routes
        .chunks(per)
        .map(|chunk| {
            let mut b = Vec::with_capacity(chunk.len() * MESSAGE_LEN);
            for (i, r) in chunk.iter().enumerate() {
                seq += 1;
                let mut flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
                if i + 1 == chunk.len() {
                    flags |= NLM_F_ACK;
                }
                push_route(&mut b, seq, flags, table, r);
            }
            b
        })
        .collect()
}

/// What writing a table took.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    /// Routes sent.
    pub sent: usize,
    /// Routes the kernel refused (an error answer).
    pub refused: usize,
    /// The first refusal's errno.
    pub first_error: Option<i32>,
    /// Before the first send.
    pub start: Instant,
    /// After the last acknowledgement.
    pub end: Instant,
}

impl Loaded {
    /// Routes the kernel holds now.
    pub fn accepted(&self) -> usize {
        self.sent - self.refused
    }

    /// Seconds from the first send to the last acknowledgement.
    pub fn seconds(&self) -> f64 {
        (self.end - self.start).as_secs_f64()
    }
}

/// Sends `batches` (from [`batches`]) on a new rtnetlink socket of the
/// calling thread's namespace and waits for each batch's
/// acknowledgement.
pub fn send(batches: &[Vec<u8>]) -> io::Result<Loaded> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let (mut sent, mut refused, mut first_error) = (0, 0, None);
    let start = Instant::now();
    for b in batches {
        sock.send(b, 0)?;
        let n = b.len() / MESSAGE_LEN;
        sent += n;
        let last_seq = u32::try_from(sent).unwrap_or(u32::MAX);
        let deadline = Instant::now() + ACK_TIMEOUT;
        // Error answers for the batch's messages, then the last one's
        // acknowledgement; bounded by the batch's size and a deadline.
        let mut acked = false;
        for _ in 0..=n {
            if Instant::now() > deadline {
                break;
            }
            buf.clear();
            sock.recv(&mut buf, 0)?;
            for m in netlink::messages(&buf).flatten() {
                if m.ty != NLMSG_ERROR {
                    continue;
                }
                let code = m
                    .payload
                    .get(..4)
                    .map_or(0, |c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]));
                if code != 0 {
                    refused += 1;
                    first_error.get_or_insert(-code);
                }
                if m.seq == last_seq {
                    acked = true;
                }
            }
            if acked {
                break;
            }
        }
        if !acked {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the kernel did not acknowledge a batch of routes",
            ));
        }
    }
    Ok(Loaded {
        sent,
        refused,
        first_error,
        start,
        end: Instant::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_control::netlink::{decode, messages, Message};

    /// What is written reads back through bricks' own decoder as the route
    /// that was meant.
    #[test]
    fn messages_decode_as_the_routes_written() {
        let routes: Vec<KernelRoute> = (0..3000u32)
            .map(|i| KernelRoute {
                prefix: Prefix4::new(0x0a00_0000 | i << 8, 24),
                oif: 7,
                gateway: Ipv4Addr::new(10, 255, 0, 1 + (i % 16) as u8),
            })
            .collect();
        let bs = batches(&routes, 100);
        assert!(bs.len() > 1, "more than one datagram");
        assert!(bs.iter().all(|b| b.len() <= BATCH_BYTES));
        let mut n = 0;
        for b in &bs {
            let ms: Vec<_> = messages(b).map(|m| m.unwrap()).collect();
            for (i, raw) in ms.iter().enumerate() {
                assert_eq!(raw.flags & NLM_F_ACK != 0, i + 1 == ms.len());
                let Ok(Message::Route(r)) = decode(*raw) else {
                    panic!("not a route");
                };
                let want = routes[n];
                assert_eq!(r.table, 100);
                assert_eq!(r.prefix, bricks_lpm::source::RoutePrefix::V4(want.prefix));
                assert_eq!(r.hops.len(), 1);
                assert_eq!(r.hops[0].ifindex, 7);
                assert_eq!(r.hops[0].gateway, Some(want.gateway.into()));
                n += 1;
            }
        }
        assert_eq!(n, routes.len());
    }

    #[test]
    fn a_table_above_255_is_named_by_its_attribute() {
        let r = KernelRoute {
            prefix: Prefix4::new(0x0a00_0000, 8),
            oif: 2,
            gateway: Ipv4Addr::new(10, 255, 0, 1),
        };
        let b = batches(&[r], 1000);
        let raw = messages(&b[0]).next().unwrap().unwrap();
        let Ok(Message::Route(m)) = decode(raw) else {
            panic!("not a route");
        };
        assert_eq!(m.table, 1000);
    }
}
