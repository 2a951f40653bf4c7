//! `IPsecEncap`: the outer IPv4 header of Click's IPsec tunnels
//! (`elements/ipsec/ipsecencap.cc`).

use crate::ip::ipencap::{protocol, PROTOCOLS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The `IPsecEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPsecEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in an IPv4 header to the destination annotation",
    synopsis: "IPsecEncap(PROTO)",
    description: "Click's element (elements/ipsec/ipsecencap.cc), the last of Click's \
        encapsulating IPsec chain (IPsecESPEncap() -> IPsecAuthHMACSHA1(0) -> IPsecAES(1) -> \
        IPsecEncap(50)). Prepends a 20-byte IPv4 header: version 4, header length 5, TOS 0, \
        the total length, an identification counting from 0 (one counter for every worker), \
        no flags, TTL 250, protocol PROTO, source 0.0.0.0, destination the packet's \
        destination address annotation (the tunnel's far end, the gateway RadixIPsecLookup \
        put there), and the checksum. The source is left to FixIPSrc: the element sets the \
        fix-IP-source annotation, as Click's does, and the network header annotation to the \
        new header. Click's manual lists SRC, DST, TTL, TOS and more, which its code never \
        read; bricks takes PROTO only, as Click's code does, and, as Click's code, no \
        handlers. A packet without 20 bytes of headroom is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "PROTO",
        ty: "IP protocol number or name (icmp, igmp, ipip, tcp, udp, ipv6, gre, esp, ah, \
            ospf, sctp)",
        default: None,
        doc: "the protocol field, 50 (esp) for ESP; positional",
    }],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 20 bytes of headroom",
    )],
    example: "InfiniteSource(LENGTH 40, LIMIT 1) -> SetIPAddress(18.26.4.1) -> IPsecEncap(50) \
        -> FixIPSrc(18.26.4.24) -> CheckIPHeader -> Discard;",
    see_also: &["IPsecESPEncap", "FixIPSrc", "IPEncap", "StripIPHeader"],
};

struct Proto(u8);

impl FromArg for Proto {
    const TYPE: &'static str = "IP protocol (0 to 255, or a name such as esp)";
    fn from_arg(text: &str) -> Result<Self, String> {
        protocol(text, PROTOCOLS).map(Proto)
    }
}

/// The identification counter every worker's instance shares (Click's
/// `_id`, one per element).
#[derive(Debug, Default)]
struct Ids(AtomicU32);

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let Proto(proto) = args.read_mp("PROTO")?;
    let ids = args.shared(|_| Ok(Ids::default()))?;
    let mut header = [0u8; 20];
    header[0] = 0x45;
    header[8] = 250;
    header[9] = proto;
    Ok(Box::new(IPsecEncap {
        header,
        ids,
        no_headroom: 0,
    }))
}

/// Click's `IPsecEncap`.
#[derive(Debug)]
pub struct IPsecEncap {
    header: [u8; 20],
    ids: Arc<Ids>,
    no_headroom: u64,
}

impl IPsecEncap {
    fn encap(&mut self, batch: &mut Batch) {
        let (header, ids) = (&self.header, &self.ids);
        let mut no_headroom = 0;
        batch.retain(|p: &mut Packet| {
            let dst = p.anno().dst_ip;
            let len = (p.len() + 20).min(usize::from(u16::MAX)) as u16;
            let ok = p
                .push_front_with(|h: &mut [u8; 20]| {
                    let id = ids.0.fetch_add(1, Ordering::Relaxed) as u16;
                    *h = *header;
                    h[2..4].copy_from_slice(&len.to_be_bytes());
                    h[4..6].copy_from_slice(&id.to_be_bytes());
                    h[16..20].copy_from_slice(&dst.octets());
                    let sum = !checksum::header20(h);
                    h[10..12].copy_from_slice(&sum.to_be_bytes());
                })
                .is_ok();
            if !ok {
                no_headroom += 1;
                return false;
            }
            p.set_network_header(0);
            let a = p.anno_mut();
            a.fix_ip_src = true;
            a.dst_ip = Ipv4Addr::from(dst.octets());
            true
        });
        self.no_headroom += no_headroom;
    }
}

impl Element for IPsecEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.encap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.encap(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_headroom", self.no_headroom);
    }
}
