//! `HostEtherFilter`: does what an Ethernet card does for one address on
//! receive: classifies each frame by its destination address (the packet
//! type annotation, Linux's `skb->pkt_type`) and drops frames meant for
//! other hosts.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::PacketType;
use bricks_wire::ethernet::{EthernetAddress, HEADER_LEN};

/// The `HostEtherFilter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HostEtherFilter",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops Ethernet frames sent to other hosts",
    synopsis: "HostEtherFilter(ETHER [, DROP_OWN, DROP_OTHER, KEYWORDS])",
    description: "Acts like the receive filter of an Ethernet card whose address is \
        ETHER. Sets each frame's packet type annotation from its destination address: \
        HOST (ETHER itself), BROADCAST (ff:ff:ff:ff:ff:ff), MULTICAST (any other group \
        address) or OTHERHOST (someone else's unicast address). Frames for other hosts \
        are filtered when DROP_OTHER is true (the default); frames whose source is ETHER \
        (our own frames looped back) are filtered when DROP_OWN is true. Filtered frames \
        go to output 1 if it is connected and are dropped otherwise. Frames too short to \
        hold an Ethernet header at OFFSET are treated the same way. Every filtered frame \
        is counted by reason, whichever way it leaves. The write handler `ether` changes \
        ETHER while the router runs.",
    ports: "one input; output 0 agnostic (accepted frames); optional output 1 push \
        (filtered frames)",
    keywords: &[
        Keyword {
            name: "ETHER",
            ty: "Ethernet address",
            default: None,
            doc: "this host's address",
        },
        Keyword {
            name: "DROP_OWN",
            ty: "boolean",
            default: Some("false"),
            doc: "filter frames whose source address is ETHER",
        },
        Keyword {
            name: "DROP_OTHER",
            ty: "boolean",
            default: Some("true"),
            doc: "filter frames unicast to another address",
        },
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: Some("0"),
            doc: "the Ethernet header starts OFFSET bytes into the packet",
        },
    ],
    counters: &[
        ("own", "frames filtered because their source is ETHER"),
        (
            "other_host",
            "frames filtered because they are unicast to another host",
        ),
        (
            "runts",
            "frames too short for an Ethernet header at OFFSET, filtered",
        ),
    ],
    example: "InfiniteSource(DATA \\<52 54 00 aa 00 01 52 54 00 bb 00 02 08 00>, LIMIT 1) \
        -> f :: HostEtherFilter(52:54:00:aa:00:01) -> Discard; f[1] -> Discard;",
    see_also: &["EtherEncap", "ARPResponder", "Classifier"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let addr: EthernetAddress = args.read_mp("ETHER")?;
    let drop_own: bool = args.read_p("DROP_OWN")?.unwrap_or(false);
    let drop_other: bool = args.read_p("DROP_OTHER")?.unwrap_or(true);
    let offset: usize = args.read("OFFSET")?.unwrap_or(0);
    if offset > bricks_packet::MAX_FRAME {
        return Err(ArgError::new(format!(
            "OFFSET {offset} is beyond the largest frame ({} bytes)",
            bricks_packet::MAX_FRAME
        )));
    }
    Ok(Box::new(HostEtherFilter {
        addr: addr.0,
        drop_own,
        drop_other,
        offset,
        has_reject: ports.noutputs() > 1,
        own: 0,
        other_host: 0,
        runts: 0,
    }))
}

/// Classifies frames by destination address and filters others' frames.
#[derive(Debug)]
pub struct HostEtherFilter {
    addr: [u8; 6],
    drop_own: bool,
    drop_other: bool,
    offset: usize,
    has_reject: bool,
    own: u64,
    other_host: u64,
    runts: u64,
}

impl HostEtherFilter {
    #[inline]
    fn reject(&self) -> Option<usize> {
        self.has_reject.then_some(1)
    }

    #[inline]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(h) = p.data().get(self.offset..self.offset + HEADER_LEN) else {
            self.runts += 1;
            return self.reject();
        };
        let (dst, src) = (&h[..6], &h[6..12]);
        if self.drop_own && src == self.addr {
            self.own += 1;
            return self.reject();
        }
        let ty = if dst == self.addr {
            PacketType::Host
        } else if dst == [0xff; 6] {
            PacketType::Broadcast
        } else if dst[0] & 0x01 != 0 {
            PacketType::Multicast
        } else {
            PacketType::OtherHost
        };
        p.anno_mut().packet_type = ty;
        if ty == PacketType::OtherHost && self.drop_other {
            self.other_host += 1;
            return self.reject();
        }
        Some(0)
    }
}

impl Element for HostEtherFilter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("own", self.own);
        s.counter("other_host", self.other_host);
        s.counter("runts", self.runts);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "ether" => {
                self.addr = EthernetAddress::from_arg(value.trim())?.0;
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (ether)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::{A_ECHO_B, A_MLD_REPORT, A_REQUEST_B, B_REPLY_A};
    use bricks_runtime::testing::{make_element, Harness};

    fn types(h: &mut Harness, port: usize) -> Vec<PacketType> {
        h.take(port).iter().map(|p| p.anno().packet_type).collect()
    }

    #[test]
    fn sets_packet_type_from_destination() {
        // As host B (52:54:00:bb:00:02): A's echo is for us, A's request is
        // broadcast, A's MLD report multicast; B's own reply to A is for
        // another host and is filtered.
        let mut h = Harness::push(&CLASS, "52:54:00:bb:00:02", 1, 2);
        for f in [&A_ECHO_B[..], &A_REQUEST_B, &A_MLD_REPORT, &B_REPLY_A] {
            h.push_bytes(0, f);
        }
        assert_eq!(
            types(&mut h, 0),
            [
                PacketType::Host,
                PacketType::Broadcast,
                PacketType::Multicast
            ]
        );
        assert_eq!(types(&mut h, 1), [PacketType::OtherHost]);
        assert_eq!(h.stats().get("other_host"), Some(1));
    }

    #[test]
    fn other_hosts_kept_when_not_dropping() {
        let mut h = Harness::push(&CLASS, "52:54:00:bb:00:02, false, false", 1, 1);
        h.push_bytes(0, &B_REPLY_A);
        assert_eq!(types(&mut h, 0), [PacketType::OtherHost]);
    }

    #[test]
    fn drop_own_and_unconnected_reject() {
        // One output: filtered frames are dropped (and counted).
        let mut h = Harness::push(&CLASS, "52:54:00:aa:00:01, DROP_OWN true", 1, 1);
        h.push_bytes(0, &A_REQUEST_B);
        h.push_bytes(0, &B_REPLY_A);
        assert_eq!(types(&mut h, 0), [PacketType::Host]);
        assert_eq!(h.stats().get("own"), Some(1));
    }

    #[test]
    fn offset_and_runts() {
        let mut h = Harness::push(&CLASS, "52:54:00:aa:00:01, OFFSET 4", 1, 2);
        let mut f = vec![0xee; 4];
        f.extend_from_slice(&B_REPLY_A);
        h.push_bytes(0, &f);
        h.push_bytes(0, &B_REPLY_A[..13]);
        h.push_bytes(0, &f[..17]);
        assert_eq!(types(&mut h, 0), [PacketType::Host]);
        assert_eq!(h.take(1).len(), 2);
        assert_eq!(h.stats().get("runts"), Some(2));
    }

    #[test]
    fn write_handler_changes_address() {
        let mut h = Harness::push(&CLASS, "52:54:00:bb:00:02", 1, 2);
        h.write_handler("ether", "52:54:00:aa:00:01").unwrap();
        h.push_bytes(0, &B_REPLY_A);
        assert_eq!(types(&mut h, 0), [PacketType::Host]);
        assert!(h.write_handler("ether", "x").is_err());
    }

    #[test]
    fn arguments_are_checked() {
        assert!(make_element(&CLASS, "", &PortInfo::default())
            .unwrap_err()
            .contains("ETHER"));
        assert!(
            make_element(&CLASS, "1:2:3:4:5:6, maybe", &PortInfo::default())
                .unwrap_err()
                .contains("DROP_OWN")
        );
        assert!(make_element(&CLASS, "1:2:3:4:5:6, OFFSET 99999", &PortInfo::default()).is_err());
    }
}
