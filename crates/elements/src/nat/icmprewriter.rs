//! `ICMPRewriter`: translates ICMP errors (RFC 792: unreachable, source
//! quench, redirect, time exceeded, parameter problem) about packets a
//! rewriter translated, so that they reach the host that sent the
//! original packet and quote it as it sent it (RFC 3022 section 4.3,
//! RFC 5508). Click's `elements/icmp/icmprewriter.cc`.

use super::flow::{Tuple, PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use super::rewriter::{Shared, REWRITER_CLASSES};
use crate::ip::header::{be16, be32};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::sync::Arc;

/// The `ICMPRewriter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMPRewriter",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "rewrites ICMP errors by IP rewriter mappings",
    synopsis: "ICMPRewriter(MAPS [, KEYWORDS DST_ANNO, REPLY_ANNO])",
    description: "Expects IP packets. An ICMP error (destination unreachable, source \
        quench, redirect, time exceeded, parameter problem) quotes the header of the packet \
        it is about; when that packet was translated by one of the rewriters in MAPS (a \
        space-separated list of IPRewriter, TCPRewriter, UDPRewriter or ICMPPingRewriter \
        names), the error is rewritten to look like an error about the original packet: \
        its destination (when it is the translated address), the quoted addresses, ports \
        or echo identifier, and the quoted IP, TCP/UDP and outer ICMP checksums. Rewritten \
        errors leave by output 0; other ICMP packets (not errors, no mapping, quoted \
        header truncated) by output 1 if there is one, else they are dropped and counted; \
        packets that are not ICMP are dropped and counted. The outer ICMP checksum is \
        computed again over the message (errors are small and rare); the quoted transport \
        checksum, whose data is truncated, is patched (RFC 1624). Click's `NAME:OFFSET` \
        output offsets are not supported.",
    ports: "one push input; push output 0 (rewritten), optional push output 1 (others)",
    keywords: &[
        Keyword {
            name: "MAPS",
            ty: "space-separated rewriter names",
            default: None,
            doc: "the rewriters whose mappings are used, first match wins",
        },
        Keyword {
            name: "DST_ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "set the destination address annotation to a rewritten destination",
        },
        Keyword {
            name: "REPLY_ANNO",
            ty: "annotation name (PAINT)",
            default: None,
            doc: "an error about a reply packet gets the annotation the rewriter stored for \
                the flow (its REPLY_ANNO)",
        },
    ],
    counters: &[
        ("rewritten", "ICMP errors rewritten"),
        (
            "unmapped",
            "ICMP packets not rewritten (not errors, no mapping, truncated)",
        ),
        (
            "not_icmp",
            "packets that are not ICMP (or not IPv4), dropped",
        ),
    ],
    example:
        "InfiniteSource(DATA \\<68 69>, LIMIT 1) -> UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 53)\n\
        -> rw :: IPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;\n\
        Idle -> ICMPRewriter(rw) -> Discard;",
    see_also: &["IPRewriter", "ICMPPingRewriter", "ICMPError"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let names: String = args.read_mp("MAPS")?;
    let dst_anno = args.read::<bool>("DST_ANNO")?.unwrap_or(true);
    let reply_paint = match args.read::<String>("REPLY_ANNO")? {
        None => false,
        Some(a) if a == "PAINT" => true,
        Some(a) => {
            return Err(ArgError::new(format!(
                "REPLY_ANNO {a}: only PAINT is supported"
            )))
        }
    };
    let mut maps = Vec::new();
    for name in names.split_whitespace() {
        let sh: Arc<Shared> = args
            .shared_of_name(name, REWRITER_CLASSES)
            .map_err(|why| ArgError::new(format!("MAPS: {why}")))?;
        maps.push(sh);
    }
    if maps.is_empty() {
        return Err(ArgError::new("no IP rewriters supplied"));
    }
    Ok(Box::new(ICMPRewriter {
        maps,
        dst_anno,
        reply_paint,
        two_outputs: ports.noutputs() > 1,
        rewritten: 0,
        unmapped: 0,
        not_icmp: 0,
    }))
}

/// One worker's instance.
pub struct ICMPRewriter {
    maps: Vec<Arc<Shared>>,
    dst_anno: bool,
    /// REPLY_ANNO PAINT: an error about a reply gets the flow's paint.
    reply_paint: bool,
    two_outputs: bool,
    rewritten: u64,
    unmapped: u64,
    not_icmp: u64,
}

impl core::fmt::Debug for ICMPRewriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ICMPRewriter").finish()
    }
}

/// What happened to a packet.
enum Verdict {
    Rewritten,
    Unmapped,
    NotIcmp,
}

impl ICMPRewriter {
    fn handle(&self, p: &mut Packet, now_ms: u64) -> Verdict {
        let ip = p.l3_bytes_mut();
        if ip.len() < 20 || ip[0] >> 4 != 4 {
            return Verdict::NotIcmp;
        }
        let ihl = usize::from(ip[0] & 15) * 4;
        if ihl < 20 || ip.len() < ihl + 8 || ip[9] != PROTO_ICMP {
            return Verdict::NotIcmp;
        }
        let end = usize::from(be16(ip, 2)).clamp(ihl, ip.len());
        let (outer, icmp) = ip[..end].split_at_mut(ihl);
        if icmp.len() < 8 + 20 || !matches!(icmp[0], 3 | 4 | 5 | 11 | 12) {
            return Verdict::Unmapped;
        }
        let q = &mut icmp[8..];
        let qihl = usize::from(q[0] & 15) * 4;
        if q[0] >> 4 != 4 || qihl < 20 || q.len() < qihl {
            return Verdict::Unmapped;
        }
        let proto = q[9];
        let first = be16(q, 6) & 0x1fff == 0;
        let (qsrc, qdst) = (be32(q, 12), be32(q, 16));
        let mut search = Tuple {
            saddr: qdst,
            daddr: qsrc,
            sport: 0,
            dport: 0,
        };
        let transport = first && q.len() >= qihl + 8;
        match proto {
            PROTO_TCP | PROTO_UDP if transport => {
                search.sport = be16(q, qihl + 2);
                search.dport = be16(q, qihl);
            }
            PROTO_ICMP if first && q.len() >= qihl + 6 && q[qihl] == 8 => {
                search.sport = be16(q, qihl + 4);
                search.dport = search.sport;
            }
            _ => return Verdict::Unmapped,
        }
        let Some(e) = self.maps.iter().find_map(|m| m.find(search, proto, now_ms)) else {
            return Verdict::Unmapped;
        };
        let new = e.new;
        // The error's destination, when it is the translated address.
        if be32(outer, 16) == search.daddr && new.daddr != search.daddr {
            let sum = checksum::update32(be16(outer, 10), search.daddr, new.daddr);
            outer[16..20].copy_from_slice(&new.daddr.to_be_bytes());
            outer[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        // The quoted packet, as the original host sent it.
        let mut qsum = be16(q, 10);
        qsum = checksum::update32(qsum, qsrc, new.daddr);
        qsum = checksum::update32(qsum, qdst, new.saddr);
        q[10..12].copy_from_slice(&qsum.to_be_bytes());
        q[12..16].copy_from_slice(&new.daddr.to_be_bytes());
        q[16..20].copy_from_slice(&new.saddr.to_be_bytes());
        let t = qihl;
        match proto {
            PROTO_TCP | PROTO_UDP => {
                let (osp, odp) = (be16(q, t), be16(q, t + 2));
                let at = if proto == PROTO_TCP { t + 16 } else { t + 6 };
                let has_sum = q.len() >= at + 2 && !(proto == PROTO_UDP && be16(q, at) == 0);
                if has_sum {
                    let mut s = be16(q, at);
                    s = checksum::update32(s, qsrc, new.daddr);
                    s = checksum::update32(s, qdst, new.saddr);
                    s = checksum::update(s, osp, new.dport);
                    s = checksum::update(s, odp, new.sport);
                    if proto == PROTO_UDP && s == 0 {
                        s = 0xffff;
                    }
                    q[at..at + 2].copy_from_slice(&s.to_be_bytes());
                }
                q[t..t + 2].copy_from_slice(&new.dport.to_be_bytes());
                q[t + 2..t + 4].copy_from_slice(&new.sport.to_be_bytes());
            }
            _ => {
                // The quoted echo request's identifier and checksum.
                let old = be16(q, t + 4);
                if q.len() >= t + 4 {
                    let s = checksum::update(be16(q, t + 2), old, new.dport);
                    q[t + 2..t + 4].copy_from_slice(&s.to_be_bytes());
                }
                q[t + 4..t + 6].copy_from_slice(&new.dport.to_be_bytes());
            }
        }
        icmp[2] = 0;
        icmp[3] = 0;
        let sum = !checksum::data(icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let dst = be32(outer, 16);
        let a = p.anno_mut();
        if self.dst_anno {
            a.dst_ip = dst.into();
        }
        if let (true, Some(paint)) = (self.reply_paint, e.reply_anno) {
            a.paint = paint;
        }
        Verdict::Rewritten
    }
}

impl Element for ICMPRewriter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now_ms = cx.now().0 / 1_000_000;
        let two = self.two_outputs;
        let mut c = (0u64, 0u64, 0u64);
        cx.push_classified(batch, |p| match self.handle(p, now_ms) {
            Verdict::Rewritten => {
                c.0 += 1;
                Some(0)
            }
            Verdict::Unmapped => {
                c.1 += 1;
                two.then_some(1)
            }
            Verdict::NotIcmp => {
                c.2 += 1;
                None
            }
        });
        self.rewritten += c.0;
        self.unmapped += c.1;
        self.not_icmp += c.2;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("rewritten", self.rewritten);
        s.counter("unmapped", self.unmapped);
        s.counter("not_icmp", self.not_icmp);
    }
}
