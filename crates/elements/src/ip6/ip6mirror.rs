//! `IP6Mirror`: turns an IPv6 packet from a to b into one from b to a,
//! swapping the TCP or UDP ports too (Click's `elements/ip6/ip6mirror.cc`).
//! The checksums need no change: the pseudo-header sums the same.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `IP6Mirror` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6Mirror",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "swaps IPv6 source and destination addresses",
    synopsis: "IP6Mirror",
    description: "Expects IPv6 packets, with the network header annotation set or the \
        header at the start of the data. Swaps the source and destination addresses \
        and, when the header is directly followed by TCP or UDP with at least 8 \
        bytes, the source and destination ports, as Click does. No checksum changes: \
        the pseudo-header's sum is the same whichever way round the addresses are. A \
        packet shorter than an IPv6 header is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("truncated", "packets shorter than an IPv6 header, dropped")],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 08 11 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02 \
        9c 40 00 35 00 08 00 00>, LIMIT 1) -> IP6Mirror -> Discard;",
    see_also: &["IPMirror", "ICMP6PingResponder"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(IP6Mirror { truncated: 0 }))
}

/// Mirrors IPv6 packets.
#[derive(Debug)]
pub struct IP6Mirror {
    truncated: u64,
}

impl IP6Mirror {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let ip = p.l3_bytes_mut();
        if ip.len() < 40 {
            self.truncated += 1;
            return None;
        }
        let (head, tail) = ip.split_at_mut(24);
        head[8..24].swap_with_slice(&mut tail[..16]);
        if matches!(ip[6], 6 | 17) && ip.len() >= 48 {
            let (sport, dport) = ip[40..44].split_at_mut(2);
            sport.swap_with_slice(dport);
        }
        Some(0)
    }
}

impl Element for IP6Mirror {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{icmp6_ok, udp, ECHO_REQUEST, HOST_A, HOST_B};
    use bricks_runtime::testing::Harness;

    #[test]
    fn swaps_addresses_and_ports() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let u = udp(4);
        h.push_bytes(0, &u);
        let out = h.take_bytes(0).pop().unwrap();
        assert_eq!(&out[8..24], &HOST_B);
        assert_eq!(&out[24..40], &HOST_A);
        assert_eq!(&out[40..44], &[0x00, 0x35, 0x9c, 0x40]);
        assert_eq!(&out[44..], &u[44..]);
        // ICMPv6: addresses only, the checksum still right.
        h.push_bytes(0, &ECHO_REQUEST);
        let out = h.take_bytes(0).pop().unwrap();
        assert_eq!(&out[40..], &ECHO_REQUEST[40..]);
        assert!(icmp6_ok(&out, 40));
    }

    #[test]
    fn short_packets() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &udp(0)[..44]);
        assert_eq!(h.take_bytes(0)[0][40..44], [0x9c, 0x40, 0x00, 0x35]);
        h.push_bytes(0, &udp(0)[..39]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("truncated"), Some(1));
    }
}
