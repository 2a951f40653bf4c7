//! `ICMPPingSource`: sends ICMP echo requests (RFC 792) at an interval and
//! keeps ping(1)'s statistics on the replies that come back, as Click's
//! `elements/icmp/icmpsendpings.cc` does.

use super::header::be16;
use super::transport::header_len;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `ICMPPingSource` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMPPingSource",
    ports: "0-1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "periodically sends ICMP echo requests",
    synopsis: "ICMPPingSource(SRC, DST [, KEYWORDS INTERVAL, IDENTIFIER, LIMIT, STOP, DATA, \
        ACTIVE, VERBOSE])",
    description: "Emits an ICMP echo request from SRC to DST every INTERVAL seconds, the \
        sequence number (and IP identification) counting up from 1; TTL 200, destination \
        address and network header annotations set. Echo replies sent to the optional \
        input with the same identifier are matched to their requests by sequence number, \
        and counted with their round-trip times as ping(1) does; with VERBOSE a line per \
        reply goes to standard error. Anything else on the input is dropped.\n\n\
        Click's `summary`, `rtt_min`, `rtt_max` and `rtt_avg` read handlers are the \
        counters below (times in microseconds: a read handler is a counter in bricks); the \
        output is push only (Click also generates a ping per pull), and MIRROR is not \
        supported.",
    ports: "optional input for echo replies (push); one push output",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv4 address",
            default: None,
            doc: "source address",
        },
        Keyword {
            name: "DST",
            ty: "IPv4 address",
            default: None,
            doc: "destination address",
        },
        Keyword {
            name: "INTERVAL",
            ty: "seconds (decimal)",
            default: Some("1"),
            doc: "time between requests",
        },
        Keyword {
            name: "IDENTIFIER",
            ty: "integer 0 to 65535",
            default: Some("0"),
            doc: "the ICMP identifier",
        },
        Keyword {
            name: "LIMIT",
            ty: "integer",
            default: Some("-1"),
            doc: "requests to send; negative for no limit",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router once LIMIT requests were sent",
        },
        Keyword {
            name: "DATA",
            ty: "string",
            default: Some("empty"),
            doc: "payload behind the ICMP header",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "whether requests are sent (write handler `active`)",
        },
        Keyword {
            name: "VERBOSE",
            ty: "boolean",
            default: Some("true"),
            doc: "print a line per reply",
        },
    ],
    counters: &[
        ("count", "echo requests sent"),
        ("received", "echo replies matched to a request"),
        ("duplicates", "replies to a request already answered"),
        ("rtt_min", "smallest round-trip time, microseconds"),
        ("rtt_max", "largest round-trip time, microseconds"),
        ("rtt_avg", "mean round-trip time, microseconds"),
    ],
    example: "ICMPPingSource(10.0.0.1, 10.0.0.2, INTERVAL 0.001, LIMIT 3) \
        -> CheckIPHeader -> CheckICMPHeader -> Discard;",
    see_also: &["ICMPPingResponder", "CheckICMPHeader"],
};

/// A duration in seconds, written as a decimal.
struct Seconds(u64);

impl FromArg for Seconds {
    const TYPE: &'static str = "seconds";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Seconds((s * 1e9) as u64)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// The bit of a send time that says its reply came.
const ANSWERED: u64 = 1 << 63;

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let dst: Ipv4Addr = args.read_mp("DST")?;
    let interval = args.read("INTERVAL")?.unwrap_or(Seconds(1_000_000_000)).0;
    let ident: u16 = args.read("IDENTIFIER")?.unwrap_or(0);
    let limit: i64 = args.read("LIMIT")?.unwrap_or(-1);
    let stop = args.read("STOP")?.unwrap_or(false);
    let data: String = args.read("DATA")?.unwrap_or_default();
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let verbose = args.read("VERBOSE")?.unwrap_or(true);
    if args.read::<bool>("MIRROR")?.unwrap_or(false) {
        return Err(ArgError::new("MIRROR is not supported"));
    }
    if data.len() > 1400 {
        return Err(ArgError::new("DATA longer than 1400 bytes"));
    }
    let mut template = vec![0u8; 28];
    template.extend(data.as_bytes());
    let total = template.len() as u16;
    template[0] = 0x45;
    template[2..4].copy_from_slice(&total.to_be_bytes());
    template[8] = 200;
    template[9] = 1;
    template[12..16].copy_from_slice(&src.octets());
    template[16..20].copy_from_slice(&dst.octets());
    template[20] = 8;
    template[24..26].copy_from_slice(&ident.to_be_bytes());
    Ok(Box::new(ICMPPingSource {
        template,
        dst,
        ident,
        interval,
        limit: u64::try_from(limit).ok(),
        stop,
        active,
        verbose,
        next: None,
        count: 0,
        sent_at: if ports.ninputs() > 0 {
            vec![0; 65536].into_boxed_slice()
        } else {
            Box::default()
        },
        received: 0,
        duplicates: 0,
        rtt: (u64::MAX, 0, 0),
    }))
}

/// Sends pings and counts replies.
#[derive(Debug)]
pub struct ICMPPingSource {
    /// The request without identification, sequence and checksums.
    template: Vec<u8>,
    dst: Ipv4Addr,
    ident: u16,
    interval: u64,
    limit: Option<u64>,
    stop: bool,
    active: bool,
    verbose: bool,
    /// When the next request is due, ns.
    next: Option<u64>,
    count: u64,
    /// Send time of each sequence number, ns (0: none; [`ANSWERED`] set
    /// once answered); empty without an input.
    sent_at: Box<[u64]>,
    received: u64,
    duplicates: u64,
    /// Smallest, largest and total round-trip time, ns.
    rtt: (u64, u64, u64),
}

impl ICMPPingSource {
    fn request(&mut self, now: Timestamp) -> Option<Packet> {
        let mut p = Packet::from_slice(&self.template).ok()?;
        let seq = (self.count % 0xffff) as u16 + 1;
        let d = p.data_mut();
        d[4..6].copy_from_slice(&seq.to_be_bytes());
        d[26..28].copy_from_slice(&seq.to_be_bytes());
        let sum = !checksum::data(&d[..20]);
        d[10..12].copy_from_slice(&sum.to_be_bytes());
        let sum = !checksum::data(&d[20..]);
        d[22..24].copy_from_slice(&sum.to_be_bytes());
        p.set_network_header(0);
        p.anno_mut().dst_ip = self.dst;
        p.anno_mut().timestamp = now;
        if let Some(t) = self.sent_at.get_mut(usize::from(seq)) {
            *t = now.0.max(1) & !ANSWERED;
        }
        Some(p)
    }

    fn reply(&mut self, p: &Packet, now: u64, name: &str) {
        let ip = p.l3_bytes();
        let Some(hlen) = header_len(ip) else {
            return;
        };
        if ip[9] != 1 || ip.len() < hlen + 8 || ip[hlen] != 0 || be16(ip, hlen + 4) != self.ident {
            return;
        }
        let seq = be16(ip, hlen + 6);
        let Some(t) = self.sent_at.get_mut(usize::from(seq)) else {
            return;
        };
        if *t == 0 {
            return;
        }
        if *t & ANSWERED != 0 {
            self.duplicates += 1;
        }
        let rtt = now.saturating_sub(*t & !ANSWERED);
        *t |= ANSWERED;
        self.received += 1;
        self.rtt = (self.rtt.0.min(rtt), self.rtt.1.max(rtt), self.rtt.2 + rtt);
        if self.verbose {
            let us = rtt / 1000;
            eprintln!(
                "{name}: {} bytes from {}: icmp_seq={seq} ttl={} time={}.{:03} ms",
                usize::from(be16(ip, 2)).saturating_sub(hlen + 8),
                Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
                ip[8],
                us / 1000,
                us % 1000
            );
        }
    }
}

impl Element for ICMPPingSource {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.limit.is_some_and(|l| self.count >= l) {
            if self.stop {
                cx.request_stop();
            }
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let now = cx.now();
        let due = *self.next.get_or_insert(now.0);
        if now.0 < due {
            cx.schedule_at(Timestamp(due));
            return TaskResult::Waiting;
        }
        self.next = Some(due.saturating_add(self.interval).max(now.0));
        if let Some(p) = self.request(now) {
            self.count += 1;
            cx.push_one(0, p);
        }
        TaskResult::Worked
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        for p in batch.iter() {
            self.reply(p, now, cx.name());
        }
        batch.clear();
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("received", self.received);
        s.counter("duplicates", self.duplicates);
        let n = self.received.max(1);
        let min = if self.received == 0 { 0 } else { self.rtt.0 };
        s.counter("rtt_min", min / 1000);
        s.counter("rtt_max", self.rtt.1 / 1000);
        s.counter("rtt_avg", self.rtt.2 / n / 1000);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "active" => self.active = bool::from_arg(value)?,
            "limit" => self.limit = u64::try_from(i64::from_arg(value)?).ok(),
            "interval" => self.interval = Seconds::from_arg(value)?.0,
            "reset_counts" => {
                self.count = 0;
                self.received = 0;
                self.duplicates = 0;
                self.rtt = (u64::MAX, 0, 0);
                self.sent_at.iter_mut().for_each(|t| *t = 0);
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (active, limit, interval, reset_counts)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkicmpheader::Icmp;
    use crate::ip::header::testing::ip_checksum_ok;
    use crate::ip::transport::HeaderCheck;
    use bricks_runtime::testing::{make_element, Harness};

    /// The echo reply a host sends for `req`, TTL 64.
    fn answer(req: &[u8]) -> Vec<u8> {
        let mut r = req.to_vec();
        r[12..20].copy_from_slice(&[
            req[16], req[17], req[18], req[19], req[12], req[13], req[14], req[15],
        ]);
        r[8] = 64;
        r[20] = 0;
        r[22] = 0;
        r[23] = 0;
        let sum = !checksum::data(&r[20..]);
        r[22..24].copy_from_slice(&sum.to_be_bytes());
        r
    }

    #[test]
    fn sends_on_time_and_counts_replies() {
        let mut h = Harness::push(
            &CLASS,
            "10.0.0.1, 10.0.0.2, INTERVAL 0.5, IDENTIFIER 0x77, LIMIT 3, DATA abc, VERBOSE false",
            1,
            1,
        );
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(1_500_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 2);
        let first = &out[0];
        assert_eq!(
            &first[..20],
            &[0x45, 0, 0, 31, 0, 1, 0, 0, 200, 1, first[10], first[11], 10, 0, 0, 1, 10, 0, 0, 2]
        );
        assert!(ip_checksum_ok(first));
        assert!(Icmp::check(first).is_ok());
        assert_eq!(&first[20..22], &[8, 0]);
        assert_eq!(&first[24..31], &[0, 0x77, 0, 1, b'a', b'b', b'c']);
        assert_eq!(be16(&out[1], 26), 2);
        // The reply to the first arrives 20 ms after the second was sent;
        // it and a copy of it are counted.
        h.advance_to(Timestamp(1_520_000_000));
        let reply = answer(first);
        h.push_bytes(0, &reply);
        h.push_bytes(0, &reply);
        // Not ours: another identifier, a request.
        let mut other = reply.clone();
        other[25] = 0x78;
        h.push_bytes(0, &other);
        h.push_bytes(0, first);
        let s = h.stats();
        assert_eq!(s.get("count"), Some(2));
        assert_eq!(s.get("received"), Some(2));
        assert_eq!(s.get("duplicates"), Some(1));
        assert_eq!(s.get("rtt_min"), Some(520_000));
        assert_eq!(s.get("rtt_avg"), Some(520_000));
        h.advance_to(Timestamp(3_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.stats().get("received"), Some(0));
        assert!(h.write_handler("active", "maybe").is_err());
    }

    #[test]
    fn arguments() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("10.0.0.1").unwrap_err().contains("DST"));
        assert!(make("10.0.0.1, 10.0.0.2, INTERVAL 0").is_err());
        assert!(make("10.0.0.1, 10.0.0.2, IDENTIFIER 70000").is_err());
        assert!(make("10.0.0.1, 10.0.0.2, MIRROR true").is_err());
        assert!(make("SRC 10.0.0.1, DST 10.0.0.2, LIMIT 5, STOP true").is_ok());
    }
}
