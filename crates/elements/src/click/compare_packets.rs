//! `ComparePackets`: compares the packets pulled from two inputs in pairs
//! (Click's `elements/test/comparepackets.cc`), to check that two paths
//! through a configuration produce the same packets.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `ComparePackets` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ComparePackets",
    ports: "2/2",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "compare packets in pairs",
    synopsis: "ComparePackets([TIMESTAMP])",
    description: "Compares the packets pulled from input 0 with those pulled from input \
        1, in pairs, as Click's ComparePackets: a packet pulled on output N comes from \
        input N, and is handed out once its partner from the other input has been pulled \
        and compared with it. A pair differs when the packets differ in length, data, \
        network header offset or presence, or (with TIMESTAMP) timestamp annotation. When \
        one input has no packet while nothing upstream of it may have any more (Click's \
        empty notifier) and the other input holds one, that counts as `more packets in` \
        the other input.\n\n\
        Handlers: `diffs`, the number of differing pairs; `diff_details`, a line per kind \
        of difference, `COUNT<TAB>REASON`; `all_same`, true while no pair differed. \
        bricks has no transport header annotation, so the `different network header \
        length` line is always 0 (Click compares the offsets between network and \
        transport headers). Unlike Click, which compares bytes past the end of the \
        shorter packet, bricks compares the common bytes.",
    ports: "two pull inputs; two pull outputs",
    keywords: &[Keyword {
        name: "TIMESTAMP",
        ty: "boolean",
        default: Some("true"),
        doc: "compare the timestamp annotations",
    }],
    counters: &[("diffs", "packet pairs that differed")],
    example: "a :: InfiniteSource(LIMIT 3) -> qa :: Queue; \
        b :: InfiniteSource(LIMIT 3) -> qb :: Queue; \
        qa -> [0] c :: ComparePackets(TIMESTAMP false) [0] -> Discard; \
        qb -> [1] c [1] -> Discard;",
    see_also: &["CheckPacket"],
};

/// The kinds of difference, in Click's order.
const REASONS: [&str; 8] = [
    "different length",
    "different data",
    "different timestamp",
    "different network header offset",
    "different network header length",
    "different network header presence",
    "more packets in [0]",
    "more packets in [1]",
];
const D_LEN: usize = 0;
const D_DATA: usize = 1;
const D_TIMESTAMP: usize = 2;
const D_NETOFF: usize = 3;
const D_NETHDR: usize = 5;
const D_MORE_PACKETS_0: usize = 6;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let timestamp = args.read("TIMESTAMP")?.unwrap_or(true);
    Ok(Box::new(ComparePackets {
        timestamp,
        held: [None, None],
        available: [true, true],
        diffs: 0,
        details: [0; 8],
    }))
}

/// Compares packets in pairs.
#[derive(Debug)]
pub struct ComparePackets {
    timestamp: bool,
    /// The packet held from each input (Click's `_p`).
    held: [Option<Packet>; 2],
    /// Whether each held packet still waits for its partner (Click's
    /// `_available`); false once compared, until it is handed out.
    available: [bool; 2],
    diffs: u64,
    details: [u64; 8],
}

impl ComparePackets {
    /// Records how `p` and `q` differ.
    fn check(&mut self, p: &Packet, q: &Packet) {
        let mut different = false;
        let mut count = |d: usize, c: bool| {
            if c {
                self.details[d] += 1;
                different = true;
            }
        };
        let (a, b) = (p.data(), q.data());
        count(D_LEN, a.len() != b.len());
        let n = a.len().min(b.len());
        count(D_DATA, a[..n] != b[..n]);
        count(
            D_TIMESTAMP,
            self.timestamp && p.anno().timestamp != q.anno().timestamp,
        );
        match (p.network_header_offset(), q.network_header_offset()) {
            (Some(x), Some(y)) => count(D_NETOFF, x != y),
            (None, None) => {}
            _ => count(D_NETHDR, true),
        }
        if different {
            self.diffs += 1;
        }
    }

    /// One pull on output `port`, as Click's `ComparePackets::pull`.
    fn pull_one(&mut self, port: usize, cx: &mut Context<'_>) -> Option<Packet> {
        let other = 1 - port;
        let mut retval = None;
        if self.held[port].is_some() {
            if self.available[port] {
                return None;
            }
            retval = self.held[port].take();
            self.available[port] = true;
        }
        let mut b = Batch::new();
        cx.pull(port, &mut b, 1);
        self.held[port] = b.pop();
        if self.held[port].is_none() {
            // Different numbers of packets upstream.
            if self.held[other].is_some() && self.available[other] && !cx.upstream_active(port) {
                self.details[D_MORE_PACKETS_0 + other] += 1;
                self.diffs += 1;
                self.available[other] = false;
            }
        } else if self.held[other].is_some() && self.available[other] {
            let [p, q] = std::mem::take(&mut self.held);
            if let (Some(p), Some(q)) = (&p, &q) {
                self.check(p, q);
            }
            self.held = [p, q];
            if retval.is_some() {
                self.available[port] = false;
            } else {
                retval = self.held[port].take();
            }
            self.available[other] = false;
        }
        retval
    }

    fn details_text(&self) -> String {
        REASONS
            .iter()
            .zip(self.details)
            .map(|(r, n)| format!("{n}\t{r}\n"))
            .collect()
    }
}

impl Element for ComparePackets {
    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        for _ in 0..max.min(out.remaining()) {
            match self.pull_one(port, cx) {
                Some(p) => {
                    let _ = out.push(p);
                }
                None => break,
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("diffs", self.diffs);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "diff_details" => Some(self.details_text()),
            "all_same" => Some((self.diffs == 0).to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("diffs"),
            Handler::r("diff_details"),
            Handler::r("all_same"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    fn harness(args: &str) -> Harness {
        Harness::new(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![Processing::Pull; 2],
                outputs: vec![Processing::Pull; 2],
            },
        )
    }

    fn pkt(data: &[u8]) -> Packet {
        Packet::from_slice(data).unwrap()
    }

    /// Pulls alternately from both outputs until neither gives a packet.
    fn drain(h: &mut Harness) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for _ in 0..100 {
            let x = h.pull(0, 1).len();
            let y = h.pull(1, 1).len();
            a += x;
            b += y;
            if x + y == 0 {
                break;
            }
        }
        (a, b)
    }

    #[test]
    fn same_packets_are_same() {
        let mut h = harness("");
        h.feed(0, [pkt(b"abcd"), pkt(b"efgh")]);
        h.feed(1, [pkt(b"abcd"), pkt(b"efgh")]);
        assert_eq!(drain(&mut h), (2, 2));
        assert_eq!(h.read_handler("diffs").unwrap(), "0");
        assert_eq!(h.read_handler("all_same").unwrap(), "true");
    }

    #[test]
    fn differences_are_counted_by_kind() {
        let mut h = harness("");
        let mut stamped = pkt(b"abcd");
        stamped.anno_mut().timestamp = Timestamp(5);
        let mut net = pkt(b"abcd");
        net.set_network_header(0);
        h.feed(0, [pkt(b"abcd"), pkt(b"abcd"), pkt(b"abcd"), pkt(b"abcd")]);
        h.feed(1, [pkt(b"abcde"), pkt(b"abXd"), stamped, net]);
        assert_eq!(drain(&mut h), (4, 4));
        assert_eq!(h.read_handler("diffs").unwrap(), "4");
        assert_eq!(h.read_handler("all_same").unwrap(), "false");
        assert_eq!(
            h.read_handler("diff_details").unwrap(),
            "1\tdifferent length\n1\tdifferent data\n1\tdifferent timestamp\n\
             0\tdifferent network header offset\n0\tdifferent network header length\n\
             1\tdifferent network header presence\n0\tmore packets in [0]\n\
             0\tmore packets in [1]\n"
        );
    }

    #[test]
    fn timestamps_can_be_ignored() {
        let mut h = harness("TIMESTAMP false");
        let mut stamped = pkt(b"abcd");
        stamped.anno_mut().timestamp = Timestamp(5);
        h.feed(0, [pkt(b"abcd")]);
        h.feed(1, [stamped]);
        drain(&mut h);
        assert_eq!(h.read_handler("diffs").unwrap(), "0");
    }

    // `more packets in` needs an upstream that says it is empty (a
    // Queue's notifier); the harness's feed never does, so that case is
    // tested end to end (crates/bricks/tests/click_misc.rs).

    #[test]
    fn packets_wait_for_their_partner() {
        let mut h = harness("");
        h.feed(0, [pkt(b"a"), pkt(b"b")]);
        // Input 1 has nothing yet: the first packet is held; asking again
        // pulls nothing more.
        assert!(h.pull(0, 4).is_empty());
        assert!(h.pull(0, 4).is_empty());
        h.feed(1, [pkt(b"a")]);
        // The partner arrives: the pair is compared, and the packet pulled
        // on output 1 is handed out; output 0's follows.
        assert_eq!(h.pull(1, 1).len(), 1);
        assert_eq!(h.pull(0, 1)[0].data(), b"a");
    }
}
