//! `MarkIPCE`: marks IP packets Congestion Experienced (RFC 3168 section
//! 5), as Click's `elements/ip/markipce.cc`.

use super::set_ip_dscp::set_tos;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `MarkIPCE` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MarkIPCE",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets IP packets' ECN field to Congestion Experienced",
    synopsis: "MarkIPCE([FORCE])",
    description: "Sets the ECN field of each IP packet to Congestion Experienced (3) and \
        updates the header checksum incrementally. Packets that are not ECN-capable (ECN \
        field 0) are dropped and counted, unless FORCE is true. The IP header is found at \
        the network header annotation, else at the start of the packet; a packet too short \
        for one is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "FORCE",
        ty: "boolean",
        default: Some("false"),
        doc: "mark packets that are not ECN-capable too; positional",
    }],
    counters: &[(
        "drops",
        "packets not ECN-capable (without FORCE) or too short",
    )],
    example: "InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000002>, LIMIT 1) \
        -> MarkIPHeader(0) -> MarkIPCE(FORCE true) \
        -> Print -> Discard;",
    see_also: &["SetIPDSCP", "RED"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let force = args.read_p("FORCE")?.unwrap_or(false);
    Ok(Box::new(MarkIPCE { force, drops: 0 }))
}

/// Marks packets CE.
#[derive(Debug)]
pub struct MarkIPCE {
    force: bool,
    drops: u64,
}

impl MarkIPCE {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let force = self.force;
        let mut drops = 0;
        b.retain(|p: &mut Packet| {
            let ip = p.l3_bytes_mut();
            let ok = match ip.get(1).map(|t| t & 3) {
                None => false,
                Some(0) if !force => false,
                Some(3) => ip.len() >= 20,
                Some(_) => set_tos(ip, ip[1] | 3),
            };
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for MarkIPCE {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, ip_checksum_ok, udp};
    use bricks_runtime::testing::Harness;

    fn with_ecn(ecn: u8) -> Vec<u8> {
        let mut f = udp(4);
        f[1] = ecn;
        fix_ip_checksum(&mut f);
        f
    }

    #[test]
    fn marks_ect_and_drops_not_ect() {
        // Click's test/ip/MarkIPCE-01: no, ect1, ect2, ce.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for ecn in 0..4 {
            h.push_bytes(0, &with_ecn(ecn));
        }
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 3);
        for f in &out {
            assert_eq!(f[1] & 3, 3);
            assert!(ip_checksum_ok(f));
        }
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    #[test]
    fn force_marks_everything() {
        let mut h = Harness::push(&CLASS, "FORCE true", 1, 1);
        for ecn in 0..4 {
            h.push_bytes(0, &with_ecn(ecn));
        }
        h.push_bytes(0, &[0x45, 0]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|f| f[1] & 3 == 3 && ip_checksum_ok(f)));
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
