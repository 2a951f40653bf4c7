//! `HashClassifier`: flow classification by matching (Hardekopf et al.
//! §3.1): the packet's 5-tuple is hashed onto a chain of at most K
//! records of the flow table, so a lookup reads up to K records, and a
//! table that must refuse few flows needs more memory than a tag table
//! ([`bricks_qos::model`] has the paper's Fig. 2). bricks' own element;
//! Click has none.

use super::flow_table::{read_table, RECORD_WORDS};
use super::memrefs::{self, MemCount};
use crate::vrouter::{be16_at, payload_type_at, ETHERTYPE_IPV4};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_qos::file::has_ports;
use bricks_qos::flow::{FiveTuple, FlowTable, Mode};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// The `HashClassifier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HashClassifier",
    ports: "1/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "finds each packet's flow by its 5-tuple in a hash table",
    synopsis: "HashClassifier(TABLE [, METER bool, MEMREFS bool])",
    description: "Looks each IPv4 packet's 5-tuple (protocol, source and destination \
        address, and the ports of TCP, UDP, SCTP and UDP-Lite; 0 for other protocols) up in \
        TABLE, a FlowTable in MODE match: the tuple hashes onto one bucket whose chain holds \
        at most the table's K records. The IP header is the packet's network header when an \
        element such as CheckIPHeader set it, else the frame is taken as Ethernet (behind up \
        to two VLAN tags). A packet of a known flow gets the flow's record in its flow \
        annotation, is counted in the flow's meters (unless METER false) and leaves by \
        output 0. Other packets leave by output 1, or are dropped and counted when output 1 \
        is not connected: unknown flows, non-first fragments (they carry no ports), and \
        packets that are not IPv4 or shorter than their IP total length (Ethernet padding \
        beyond it is allowed).\
        \n\nWith MEMREFS true (or under `bricks run --memrefs`) the counters mem_packets, \
        mem_refs and mem_words count the table memory each packet costs (Hardekopf et al.'s \
        units, 32-bit words): the bucket (1 reference, 1 word) and each record of the chain \
        read (1 reference, 8 words each), for every packet with a 5-tuple; every packet is \
        counted in mem_packets.",
    ports: "one input; output 0 packets of known flows, output 1 (optional) the others; agnostic",
    keywords: &[
        Keyword {
            name: "TABLE",
            ty: "FlowTable element name",
            default: None,
            doc: "the flow table (MODE match); positional",
        },
        Keyword {
            name: "METER",
            ty: "boolean",
            default: Some("true"),
            doc: "count each packet in its flow's meters (packets, bytes)",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        ("classified", "packets of known flows, to output 0"),
        ("unknown", "packets of flows not in the table, to output 1"),
        (
            "fragments",
            "non-first fragments (no ports to match), to output 1",
        ),
        (
            "not_ip",
            "packets that are not IPv4, or shorter than their IP header says, to output 1",
        ),
        memrefs::PACKETS,
        memrefs::REFS,
        memrefs::WORDS,
    ],
    example: "ft :: FlowTable(MODE match, CAPACITY 1024, K 4, \
        FLOW udp 18.26.4.99:1024 1.0.0.2:1025 rate 10M via 10.0.0.2 output 0);\n\
        InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 32 00 00 \
        40 00 40 11 23 3d 12 1a 04 63 01 00 00 02 04 00 04 01 00 1e 00 00 00 00 00 00 00 00 \
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00>, LIMIT 3) \
        -> hc :: HashClassifier(ft) -> Discard;\nhc[1] -> Print(unknown) -> Discard;",
    see_also: &["FlowTable", "TagClassifier", "FlowLookup"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let table = read_table(args)?;
    let meter = args.read("METER")?.unwrap_or(true);
    let count = args.memrefs()?;
    if table.mode() != Mode::Match {
        return Err(ArgError::new(
            "TABLE is a FlowTable in MODE tag: HashClassifier needs MODE match",
        )
        .with_help("use TagClassifier for a tag table"));
    }
    Ok(if count {
        Box::new(HashClassifier::<true>::new(table, meter))
    } else {
        Box::new(HashClassifier::<false>::new(table, meter))
    })
}

/// Classifies by 5-tuple; with `M` it counts memory references.
pub struct HashClassifier<const M: bool = false> {
    table: Arc<FlowTable>,
    meter: bool,
    classified: u64,
    unknown: u64,
    fragments: u64,
    not_ip: u64,
    mem: MemCount,
}

impl<const M: bool> HashClassifier<M> {
    fn new(table: Arc<FlowTable>, meter: bool) -> HashClassifier<M> {
        HashClassifier {
            table,
            meter,
            classified: 0,
            unknown: 0,
            fragments: 0,
            not_ip: 0,
            mem: MemCount::default(),
        }
    }
}

/// Why a packet has no 5-tuple.
enum NoTuple {
    NotIp,
    Fragment,
}

/// The 5-tuple of the IPv4 header at the start of `ip`.
#[inline(always)]
fn tuple_of(ip: &[u8]) -> Result<FiveTuple, NoTuple> {
    let h = ip.get(..20).ok_or(NoTuple::NotIp)?;
    let ihl = usize::from(h[0] & 0xf) * 4;
    if h[0] >> 4 != 4 || ihl < 20 {
        return Err(NoTuple::NotIp);
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if total < ihl || ip.len() < total {
        return Err(NoTuple::NotIp);
    }
    let proto = h[9];
    let frag_off = u16::from_be_bytes([h[6], h[7]]) & 0x1fff;
    let (sport, dport) = if has_ports(proto) {
        if frag_off != 0 {
            return Err(NoTuple::Fragment);
        }
        let p = ip
            .get(ihl..(ihl + 4).min(total))
            .filter(|p| p.len() == 4)
            .ok_or(NoTuple::NotIp)?;
        (
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        )
    } else {
        (0, 0)
    };
    Ok(FiveTuple {
        src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        sport,
        dport,
        proto,
    })
}

/// The IPv4 header of `p`: its network header, or behind Ethernet.
#[inline(always)]
fn ip_header(p: &Packet) -> Option<&[u8]> {
    if let Some(ip) = p.network_header() {
        return Some(ip);
    }
    let d = p.data();
    let at = payload_type_at(d, 2)?;
    (be16_at(d, at)? == ETHERTYPE_IPV4).then(|| &d[at + 2..])
}

impl<const M: bool> HashClassifier<M> {
    #[inline(always)]
    fn classify(&mut self, p: &mut Packet) -> usize {
        if M {
            self.mem.packets += 1;
        }
        let t = match ip_header(p).map(tuple_of) {
            Some(Ok(t)) => t,
            Some(Err(NoTuple::Fragment)) => {
                self.fragments += 1;
                return 1;
            }
            _ => {
                self.not_ip += 1;
                return 1;
            }
        };
        let found = self.table.lookup_tuple(&t);
        if M {
            // The bucket, and each record of the chain read.
            self.mem.mem.add(
                1 + u64::from(found.probes),
                1 + RECORD_WORDS * u64::from(found.probes),
            );
        }
        match found.index {
            Some(i) => {
                if self.meter {
                    self.table.meter(i, p.len() as u64);
                }
                p.anno_mut().set_flow_record(i);
                self.classified += 1;
                0
            }
            None => {
                self.unknown += 1;
                1
            }
        }
    }
}

impl<const M: bool> Element for HashClassifier<M> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| Some(self.classify(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("classified", self.classified);
        s.counter("unknown", self.unknown);
        s.counter("fragments", self.fragments);
        s.counter("not_ip", self.not_ip);
        if M {
            self.mem.stats(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::testutil::{harness, table, try_harness};
    use crate::vrouter::testdata::{tagged, IPV4_UDP, MPLS_TCP, VLAN_TCP};
    use bricks_qos::flow::{FlowKey, FlowSpec};

    /// IPV4_UDP with source port `sport` (the UDP checksum is 0: none).
    fn udp_from(sport: u16) -> Vec<u8> {
        let mut f = IPV4_UDP.to_vec();
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f
    }

    fn flow(sport: u16) -> String {
        format!(
            "udp 18.26.4.99:{sport} 1.0.0.2:1025 rate 1M output {}",
            sport % 5
        )
    }

    #[test]
    fn known_and_unknown_flows() {
        let ft = table(&format!(
            "MODE match, CAPACITY 16, SEED 1, FLOW {}, FLOW tcp 172.27.202.142 69.22.148.226:80 rate 2M",
            flow(1024)
        ));
        let mut h = harness(&CLASS, "ft", &ft, 2);
        h.push_bytes(0, &IPV4_UDP);
        h.push_bytes(0, &udp_from(1026));
        // VLAN_TCP is 172.27.202.142:54498 -> 69.22.148.226:80: the ports
        // differ from the flow's (0 and 80), so it is unknown.
        h.push_bytes(0, &VLAN_TCP);
        h.push_bytes(0, &tagged(&IPV4_UDP, &[(0x8100, 7)]));
        h.push_bytes(0, &MPLS_TCP);
        h.push_bytes(0, &IPV4_UDP[..37]);
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        let rec = ft
            .find(&FlowKey::Tuple(FiveTuple {
                src: Ipv4Addr::new(18, 26, 4, 99),
                dst: Ipv4Addr::new(1, 0, 0, 2),
                sport: 1024,
                dport: 1025,
                proto: 17,
            }))
            .unwrap();
        assert!(out.iter().all(|p| p.anno().flow_record() == Some(rec)));
        assert_eq!(ft.meters(rec).packets, 2);
        assert_eq!(ft.meters(rec).bytes, 64 + 68);
        let s = h.stats();
        assert_eq!(s.get("classified"), Some(2));
        assert_eq!(s.get("unknown"), Some(2));
        assert_eq!(s.get("not_ip"), Some(2));
        assert_eq!(h.take(1).len(), 4);
    }

    #[test]
    fn fragments_and_the_network_header() {
        let ft = table(&format!("MODE match, SEED 2, FLOW {}", flow(1024)));
        let mut h = harness(&CLASS, "ft", &ft, 2);
        let mut frag = IPV4_UDP;
        frag[20] = 0x00;
        frag[21] = 0x10; // offset 16 bytes
        h.push_bytes(0, &frag);
        let mut first = IPV4_UDP;
        first[20] = 0x20; // MF, offset 0: ports are there
        h.push_bytes(0, &first);
        // A stripped packet with its network header set.
        let mut p = Packet::from_slice(&IPV4_UDP).unwrap();
        p.set_network_header(14);
        p.pull_front(14);
        h.push_packets(0, [p]);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("fragments"), Some(1));
    }

    #[test]
    fn chains_to_k_and_rejection_beyond() {
        // One bucket, K 3: three flows fit, the fourth is refused.
        let ft = table("MODE match, CAPACITY 16, K 3, BUCKETS 1, SEED 9");
        for s in 1..=4u16 {
            let r = ft.add(&bricks_qos::file::parse_flow(&flow(s)).unwrap());
            assert_eq!(r.is_ok(), s <= 3, "{s}");
        }
        assert_eq!(ft.counters().rejected_chain, 1);
        let mut h = harness(&CLASS, "ft, MEMREFS true", &ft, 2);
        for s in 1..=4u16 {
            h.push_bytes(0, &udp_from(s));
        }
        let out = h.take(0);
        assert_eq!(out.len(), 3);
        assert_eq!(h.take(1).len(), 1);
        // Chain newest first: flows 1, 2, 3 at depths 3, 2, 1; the
        // refused flow reads all three. Each packet: the bucket (1, 1)
        // and the records read (1, 8 each).
        let s = h.stats();
        assert_eq!(s.get("mem_packets"), Some(4));
        assert_eq!(s.get("mem_refs"), Some(4 + 3 + 2 + 1 + 3));
        assert_eq!(s.get("mem_words"), Some(4 + 8 * 9));
        // Not counting: no such counters.
        let mut off = harness(&CLASS, "ft", &ft, 2);
        off.push_bytes(0, &udp_from(1));
        assert_eq!(off.stats().get("mem_refs"), None);
        assert_eq!(off.stats().get("mem_packets"), None);
        // A removal makes room while the element keeps its table.
        ft.remove(&FlowKey::Tuple(FiveTuple {
            src: Ipv4Addr::new(18, 26, 4, 99),
            dst: Ipv4Addr::new(1, 0, 0, 2),
            sport: 2,
            dport: 1025,
            proto: 17,
        }))
        .unwrap();
        let f4: FlowSpec = bricks_qos::file::parse_flow(&flow(4)).unwrap();
        ft.add(&f4).unwrap();
        for s in 1..=4u16 {
            h.push_bytes(0, &udp_from(s));
        }
        assert_eq!(h.take(0).len(), 3);
        assert_eq!(h.take(1).len(), 1);
    }

    #[test]
    fn a_full_table_refuses() {
        let ft = table("MODE match, CAPACITY 2, K 8, SEED 4");
        for s in 1..=3u16 {
            let _ = ft.add(&bricks_qos::file::parse_flow(&flow(s)).unwrap());
        }
        assert_eq!(ft.counters().rejected_full, 1);
        let mut h = harness(&CLASS, "ft", &ft, 2);
        for s in 1..=3u16 {
            h.push_bytes(0, &udp_from(s));
        }
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("unknown"), Some(1));
    }

    #[test]
    fn a_tag_table_is_refused() {
        let ft = table("CAPACITY 4");
        let e = try_harness(&CLASS, "ft", &ft, 2).err().unwrap();
        assert!(e.contains("needs MODE match"), "{e}");
    }

    #[test]
    fn hostile_frames_never_panic() {
        let ft = table(&format!("MODE match, FLOW {}", flow(1024)));
        let mut h = harness(&CLASS, "ft", &ft, 1);
        for len in 0..=IPV4_UDP.len() {
            let mut f = IPV4_UDP[..len].to_vec();
            h.push_bytes(0, &f);
            if len > 14 {
                f[14] = 0x4f; // IHL 60 bytes, beyond the frame
                h.push_bytes(0, &f);
            }
        }
        assert_eq!(h.stats().get("classified"), Some(1));
    }
}

/// Two workers classify a steady flow while the control plane adds and
/// removes other flows of the same buckets: not one packet of the steady
/// flow is lost, whichever worker carries it.
#[cfg(test)]
mod two_workers {
    use crate::qos::testutil::run_workers;
    use crate::vrouter::testdata::IPV4_UDP;
    use bricks_runtime::{WorkerOptions, Workers};
    use std::sync::Arc;

    fn data(f: &[u8]) -> String {
        let hex: Vec<String> = f.iter().map(|b| format!("{b:02x}")).collect();
        format!("\\<{}>", hex.join(" "))
    }

    const N: u64 = 100_000;

    /// Two steady sources and a churning one; `active`: they start at
    /// once, else when their `active` handler is written.
    fn config(active: bool) -> String {
        let steady = data(&IPV4_UDP);
        let mut churn = IPV4_UDP;
        churn[34..36].copy_from_slice(&2000u16.to_be_bytes());
        let churn = data(&churn);
        format!(
            "ft :: FlowTable(MODE match, CAPACITY 64, K 8, BUCKETS 2, SEED 11,
                             FLOW udp 18.26.4.99:1024 1.0.0.2:1025 rate 1M);
             s0 :: InfiniteSource(DATA {steady}, LIMIT {N}, ACTIVE {active}) -> hc0 :: HashClassifier(ft)
                 -> Discard; hc0[1] -> Discard;
             s1 :: InfiniteSource(DATA {steady}, LIMIT {N}, ACTIVE {active}) -> hc1 :: HashClassifier(ft)
                 -> Discard; hc1[1] -> Discard;
             c1 :: InfiniteSource(DATA {churn}, LIMIT {N}, ACTIVE {active}) -> hc2 :: HashClassifier(ft)
                 -> Discard; hc2[1] -> Discard;
             StaticThreadSched(s0 0, s1 1, c1 1);"
        )
    }

    #[test]
    fn adds_and_removes_lose_no_packet_of_another_flow() {
        let plan = crate::qos::testutil::plan(&config(false));
        let opts = WorkerOptions {
            threads: 2,
            pin: false,
            ..WorkerOptions::default()
        };
        let w = Workers::start(Arc::new(plan), &opts).unwrap();
        let ctl = w.control();
        let mut changes = 0u32;
        let mut adds = 0u64;
        let started = std::time::Instant::now();
        // The sources start after the first round of adds, so that the
        // table is churning when the traffic starts, however slow the
        // machine.
        let mut active = false;
        while !w.finished() && changes < 20_000 && started.elapsed().as_secs() < 20 {
            if changes == 8 && !active {
                for s in ["s0", "s1", "c1"] {
                    ctl.write_handler(s, "active", "true").unwrap();
                }
                active = true;
            }
            let sport = 2000 + (changes % 8) as u16;
            let flow = format!("udp 18.26.4.99:{sport} 1.0.0.2:1025");
            let r = if (changes / 8).is_multiple_of(2) {
                ctl.write_handler("ft", "add", &format!("{flow} rate 64k"))
            } else {
                ctl.write_handler("ft", "remove", &flow)
            };
            if r.is_ok() {
                adds += u64::from((changes / 8).is_multiple_of(2));
                changes += 1;
            }
        }
        let all = w.join();
        let s = all.total;
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        // The two steady sources ran on different workers.
        let on = |w: usize, e: &str| {
            all.per_worker[w]
                .stats(e)
                .and_then(|s| s.get("classified"))
                .unwrap_or(0)
        };
        assert_eq!((on(0, "hc0"), on(1, "hc1")), (N, N));
        let get = |e: &str, c: &str| s.stats(e).and_then(|s| s.get(c)).unwrap_or(0);
        assert_eq!(get("hc0", "classified"), N, "{}", s.render());
        assert_eq!(get("hc1", "classified"), N, "{}", s.render());
        assert_eq!(get("hc0", "unknown") + get("hc1", "unknown"), 0);
        assert_eq!(
            get("hc2", "classified") + get("hc2", "unknown"),
            N,
            "{}",
            s.render()
        );
        // The round before the sources started; the rest overlapped the
        // traffic for as long as it lasted (on a loaded machine it may end
        // before another change).
        assert!(changes >= 8, "{changes} changes in 20 s");
        // Counted once, not once per worker.
        assert_eq!(get("ft", "adds"), 1 + adds);
    }

    #[test]
    fn both_workers_share_one_table() {
        let s = run_workers(&config(true), 2);
        let get = |e: &str, c: &str| s.total.stats(e).and_then(|s| s.get(c)).unwrap_or(0);
        assert_eq!(get("hc0", "classified") + get("hc1", "classified"), 2 * N);
        assert_eq!(get("hc2", "unknown"), N);
        assert_eq!(get("ft", "flows"), 1);
    }
}
