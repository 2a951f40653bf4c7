//! `ARPFaker`: periodically sends an ARP reply claiming an IP address for
//! an Ethernet address (Click's `elements/ethernet/arpfaker.cc`): the
//! reply is RFC 826's, built as Click's `ARPResponder::make_response`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use bricks_wire::EthernetAddress;
use std::net::Ipv4Addr;

/// The `ARPFaker` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ARPFaker",
    ports: "0/1",
    processing: "/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "periodically generates an ARP reply",
    synopsis: "ARPFaker(DSTIP, DSTETH, SRCIP, SRCETH)",
    description: "Sends an ARP reply to DSTIP at DSTETH claiming that SRCIP has the \
        Ethernet address SRCETH: a 42-byte frame from SRCETH to DSTETH, ARP operation 2 \
        (RFC 826) with sender SRCETH/SRCIP and target DSTETH/DSTIP. The first reply leaves \
        one second after the router starts, then one every 10 seconds, as in Click (its \
        manual says every 10 seconds). ARPResponder, which answers queries, is usually \
        what is wanted.",
    ports: "no inputs; one push output",
    keywords: &[
        Keyword {
            name: "DSTIP",
            ty: "IPv4 address",
            default: None,
            doc: "the target's address; positional",
        },
        Keyword {
            name: "DSTETH",
            ty: "Ethernet address",
            default: None,
            doc: "the target's Ethernet address; positional",
        },
        Keyword {
            name: "SRCIP",
            ty: "IPv4 address",
            default: None,
            doc: "the address claimed; positional",
        },
        Keyword {
            name: "SRCETH",
            ty: "Ethernet address",
            default: None,
            doc: "the Ethernet address it is claimed for; positional",
        },
    ],
    counters: &[("count", "replies sent")],
    example: "ARPFaker(18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c) \
        -> Discard;",
    see_also: &["ARPResponder", "ARPQuerier"],
};

/// The first reply, after the router starts.
const FIRST: u64 = 1_000_000_000;
/// Between replies.
const PERIOD: u64 = 10_000_000_000;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dst_ip: Ipv4Addr = args.read_mp("DSTIP")?;
    let dst_eth: EthernetAddress = args.read_mp("DSTETH")?;
    let src_ip: Ipv4Addr = args.read_mp("SRCIP")?;
    let src_eth: EthernetAddress = args.read_mp("SRCETH")?;
    Ok(Box::new(ARPFaker {
        frame: arp_reply(dst_eth.0, dst_ip, src_eth.0, src_ip),
        next: None,
        count: 0,
    }))
}

/// An Ethernet-framed ARP reply from `src` to `target` (Click's
/// `ARPResponder::make_response`): sender `src`, target `target`.
pub(crate) fn arp_reply(
    target_eth: [u8; 6],
    target_ip: Ipv4Addr,
    src_eth: [u8; 6],
    src_ip: Ipv4Addr,
) -> [u8; 42] {
    let mut f = [0u8; 42];
    f[0..6].copy_from_slice(&target_eth);
    f[6..12].copy_from_slice(&src_eth);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    // Hardware Ethernet (1), protocol IPv4, lengths 6 and 4, reply (2).
    f[14..22].copy_from_slice(&[0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02]);
    f[22..28].copy_from_slice(&src_eth);
    f[28..32].copy_from_slice(&src_ip.octets());
    f[32..38].copy_from_slice(&target_eth);
    f[38..42].copy_from_slice(&target_ip.octets());
    f
}

/// Sends a fake ARP reply now and then.
#[derive(Debug)]
pub struct ARPFaker {
    frame: [u8; 42],
    /// When the next reply is due (ns on the router's clock), once the
    /// task has first run.
    next: Option<u64>,
    count: u64,
}

impl Element for ARPFaker {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let now = cx.now().0;
        let due = *self.next.get_or_insert(now.saturating_add(FIRST));
        if now < due {
            cx.schedule_at(Timestamp(due));
            return TaskResult::Waiting;
        }
        // Never a burst after a late start: the next is a period from now
        // at the earliest.
        self.next = Some(due.saturating_add(PERIOD).max(now));
        let mut b = Batch::new();
        if let Ok(mut p) = Packet::from_slice(&self.frame) {
            p.anno_mut().timestamp = cx.now();
            let _ = b.push(p);
            self.count += 1;
        }
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// Click's manual example, as tcpdump shows it: `ARP, Reply
    /// 18.26.4.99 is-at 00:a0:c9:9c:fd:9c, length 28`.
    const EXAMPLE: [u8; 42] = [
        0x00, 0xe0, 0x2b, 0x0b, 0x1a, 0x00, 0x00, 0xa0, 0xc9, 0x9c, 0xfd, 0x9c, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x00, 0xa0, 0xc9, 0x9c, 0xfd, 0x9c, 18, 26, 4,
        99, 0x00, 0xe0, 0x2b, 0x0b, 0x1a, 0x00, 18, 26, 4, 1,
    ];

    #[test]
    fn sends_after_one_second_then_every_ten() {
        let mut h = Harness::push(
            &CLASS,
            "18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c",
            0,
            1,
        );
        let s = |x: u64| Timestamp(x * 1_000_000_000);
        h.advance_to(s(100));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), [s(101)]);
        h.advance_to(s(101));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take_bytes(0), [EXAMPLE.to_vec()]);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(s(110));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(s(111));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("count"), Some(2));
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("1.2.3.4, 0:1:2:3:4:5, 1.2.3.5").is_err());
        assert!(m("1.2.3.4, 0:1:2:3:4, 1.2.3.5, 0:1:2:3:4:6").is_err());
        assert!(m("1.2.3, 0:1:2:3:4:5, 1.2.3.5, 0:1:2:3:4:6").is_err());
    }
}
