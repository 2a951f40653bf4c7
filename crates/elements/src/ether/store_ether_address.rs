//! `StoreEtherAddress`: writes a fixed Ethernet address into each packet,
//! at the source or destination of its Ethernet header or at any offset
//! (Click's element of the same name). With one per output of a
//! `RoundRobinSwitch` it is Bianco et al.'s ODB balancer: the destination
//! MAC rewritten to one L3 router's per output.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::ethernet::EthernetAddress;

/// The `StoreEtherAddress` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StoreEtherAddress",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores an Ethernet address in each packet",
    synopsis: "StoreEtherAddress(ADDR, OFFSET)",
    description: "Writes the Ethernet address ADDR into each packet at byte OFFSET. OFFSET may \
        be `src` or `dst`, which mean 6 and 0: the source and destination addresses of the \
        Ethernet header at the start of the packet. A packet too short to hold 6 bytes at \
        OFFSET is sent to output 1 if it is connected, else dropped and counted. The write \
        handler `addr` changes ADDR while the router runs.",
    ports: "one input; output 0 agnostic; optional output 1 push (packets too short)",
    keywords: &[
        Keyword {
            name: "ADDR",
            ty: "Ethernet address",
            default: None,
            doc: "the address to store",
        },
        Keyword {
            name: "OFFSET",
            ty: "src, dst or unsigned integer",
            default: None,
            doc: "where to store it",
        },
    ],
    counters: &[(
        "short",
        "packets too short for the address (to output 1, or dropped)",
    )],
    example: "InfiniteSource(DATA \\<00 00 00 00 00 00 52 54 00 00 00 01 08 00 \
        45 00 00 14 00 00 00 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> StoreEtherAddress(02:4d:53:00:00:00, dst) -> Discard;",
    see_also: &["EtherEncap", "EtherRewrite", "RoundRobinSwitch"],
};

/// Where the address goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Offset(usize);

impl FromArg for Offset {
    const TYPE: &'static str = "src, dst or unsigned integer";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "src" => Ok(Offset(6)),
            "dst" => Ok(Offset(0)),
            t => usize::from_arg(t).map(Offset),
        }
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let addr: EthernetAddress = args.read_mp("ADDR")?;
    let Offset(offset) = args.read_mp("OFFSET")?;
    if offset > bricks_packet::MAX_FRAME {
        return Err(ArgError::new(format!(
            "OFFSET {offset} is beyond the largest frame ({} bytes)",
            bricks_packet::MAX_FRAME
        )));
    }
    Ok(Box::new(StoreEtherAddress {
        addr: addr.0,
        offset,
        has_short_output: ports.noutputs() > 1,
        short: 0,
    }))
}

/// Writes a fixed address at a fixed offset.
#[derive(Debug)]
pub struct StoreEtherAddress {
    addr: [u8; 6],
    offset: usize,
    has_short_output: bool,
    short: u64,
}

impl StoreEtherAddress {
    #[inline(always)]
    fn store(&mut self, p: &mut Packet) -> Option<usize> {
        let at = self.offset;
        match p.data_mut().get_mut(at..at + 6) {
            Some(d) => {
                d.copy_from_slice(&self.addr);
                Some(0)
            }
            None => {
                self.short += 1;
                self.has_short_output.then_some(1)
            }
        }
    }
}

impl Element for StoreEtherAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.store(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.store(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("short", self.short);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "addr" => {
                self.addr = EthernetAddress::from_arg(value.trim())?.0;
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (addr)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::A_ECHO_B;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn stores_at_dst_src_and_offsets() {
        let mut h = Harness::push(&CLASS, "02:4d:53:01:02:00, dst", 1, 1);
        h.push_bytes(0, &A_ECHO_B);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][..6], &[2, 0x4d, 0x53, 1, 2, 0]);
        assert_eq!(&out[0][6..], &A_ECHO_B[6..], "nothing else changes");

        let mut h = Harness::push(&CLASS, "ADDR 02:00:00:00:00:09, OFFSET SRC", 1, 1);
        h.push_bytes(0, &A_ECHO_B);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][6..12], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(&out[0][..6], &A_ECHO_B[..6]);

        let mut h = Harness::push(&CLASS, "02:00:00:00:00:09, 3", 1, 1);
        h.push_bytes(0, &[0xee; 9]);
        assert_eq!(
            h.take_bytes(0),
            vec![vec![0xee, 0xee, 0xee, 2, 0, 0, 0, 0, 9]]
        );
    }

    #[test]
    fn short_packets_to_output_one_or_dropped() {
        let mut h = Harness::push(&CLASS, "02:00:00:00:00:09, src", 1, 2);
        h.push_packets(
            0,
            [
                Packet::from_slice(&[1; 11]).unwrap(),
                Packet::from_slice(&[1; 12]).unwrap(),
            ],
        );
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.take(0).len(), 1);
        let mut h = Harness::push(&CLASS, "02:00:00:00:00:09, src", 1, 1);
        h.push_bytes(0, &[1; 11]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("short"), Some(1));
    }

    #[test]
    fn pull_path_stores() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "02:00:00:00:00:09, dst", ports);
        h.feed(0, [Packet::from_slice(&A_ECHO_B).unwrap()]);
        let got = h.pull(0, 4);
        assert_eq!(&got[0].data()[..6], &[2, 0, 0, 0, 0, 9]);
    }

    #[test]
    fn the_address_changes_at_run_time() {
        let mut h = Harness::push(&CLASS, "02:00:00:00:00:09, dst", 1, 1);
        h.write_handler("addr", "02:00:00:00:00:0a").unwrap();
        assert!(h.write_handler("addr", "nope").is_err());
        assert!(h.write_handler("offset", "0").is_err());
        h.push_bytes(0, &A_ECHO_B);
        assert_eq!(&h.take_bytes(0)[0][..6], &[2, 0, 0, 0, 0, 10]);
    }

    #[test]
    fn arguments_are_checked() {
        let p = PortInfo::default();
        assert!(make_element(&CLASS, "02:00:00:00:00:09", &p)
            .unwrap_err()
            .contains("OFFSET"));
        assert!(make_element(&CLASS, "02:00:00:00:00:09, middle", &p)
            .unwrap_err()
            .contains("OFFSET"));
        assert!(make_element(&CLASS, "02:00:00:00:00, dst", &p)
            .unwrap_err()
            .contains("ADDR"));
        assert!(make_element(&CLASS, "02:00:00:00:00:09, 9999", &p).is_err());
    }
}
