//! `TCPDemux`: hands TCP segments to the connection they belong to, as
//! Click's experimental `elements/local/tcpdemux.cc`. Connections
//! (`TCPConn` elements) register their flow in the demultiplexer they find
//! upstream (Click's flow-based router context); a segment matches the
//! most specific registered flow: its own four-tuple, then the local
//! address and port, the local port, the local address, anything.
//!
//! The table is shared by every worker's instance and bounded by
//! CAPACITY: a connection that would exceed it is refused and counted.

use super::segment;
use arrayvec::ArrayVec;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `TCPDemux` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPDemux",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// The default bound on registered flows.
const DEFAULT_CAPACITY: usize = 1024;

static MANUAL: Manual = Manual {
    summary: "demultiplexes TCP flows",
    synopsis: "TCPDemux([CAPACITY])",
    description: "Sends each incoming TCP/IP segment (the IP header at the network \
        header annotation, else at the start) to the output of the flow it belongs to, \
        as the TCPConn elements downstream registered them: a connecting TCPConn \
        registers its local address and port and its peer's, a listening one its local \
        address and port. A segment matches, in this order, the flow of its own \
        addresses and ports (seen from this side: destination as local), its destination \
        address and port, its destination port, its destination address, and a flow of \
        all zeros. Segments of no registered flow are dropped and counted, as are \
        packets that hold no TCP segment.\n\n\
        Click's element is an experiment with one output, where every TCPConn registers; \
        its table has no bound and it prints a line per unknown segment. bricks bounds \
        the table at CAPACITY flows (a bricks addition; a TCPConn asked to register \
        beyond it fails its `ctrl` write) and counts instead of printing. The table is \
        one for all workers.",
    ports: "one push input; one push output",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned, at least 1",
        default: Some("1024"),
        doc: "most flows registered at once (bricks)",
    }],
    counters: &[
        ("unknown", "segments of no registered flow (dropped)"),
        ("drops", "packets that hold no TCP segment (dropped)"),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["TCPConn", "TCPAck", "TCPBuffer"],
};

/// A flow as TCPConn registers it: local address and port, then the
/// peer's (Click's `IPFlowID` of an outgoing packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Flow {
    pub local: Ipv4Addr,
    pub lport: u16,
    pub remote: Ipv4Addr,
    pub rport: u16,
}

/// The registered flows, shared by every worker's instance and by the
/// TCPConn elements that register in them.
#[derive(Debug)]
pub(crate) struct FlowTable {
    flows: Mutex<HashMap<Flow, u16>>,
    capacity: usize,
}

impl FlowTable {
    fn lock(&self) -> MutexGuard<'_, HashMap<Flow, u16>> {
        self.flows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `flow` for output `port`; false when it is there already
    /// or the table is full (Click's `add_flow`).
    pub fn add(&self, flow: Flow, port: u16) -> bool {
        let mut t = self.lock();
        if t.contains_key(&flow) || t.len() >= self.capacity {
            return false;
        }
        t.insert(flow, port);
        true
    }

    /// Forgets `flow`; false when it was not there.
    pub fn remove(&self, flow: &Flow) -> bool {
        self.lock().remove(flow).is_some()
    }

    /// The output of the segment from `src:sport` to `dst:dport`.
    fn find(
        t: &HashMap<Flow, u16>,
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
    ) -> Option<u16> {
        let any = Ipv4Addr::UNSPECIFIED;
        [
            (dst, dport, src, sport),
            (dst, dport, any, 0),
            (any, dport, any, 0),
            (dst, 0, any, 0),
            (any, 0, any, 0),
        ]
        .into_iter()
        .find_map(|(local, lport, remote, rport)| {
            t.get(&Flow {
                local,
                lport,
                remote,
                rport,
            })
            .copied()
        })
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(DEFAULT_CAPACITY);
    if capacity == 0 {
        return Err(ArgError::new("CAPACITY must be at least 1"));
    }
    let table = args.shared(|_| {
        Ok(FlowTable {
            flows: Mutex::new(HashMap::new()),
            capacity,
        })
    })?;
    Ok(Box::new(TCPDemux {
        table,
        unknown: 0,
        drops: 0,
    }))
}

/// Demultiplexes TCP segments by registered flow.
#[derive(Debug)]
pub struct TCPDemux {
    table: Arc<FlowTable>,
    unknown: u64,
    drops: u64,
}

impl Element for TCPDemux {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let noutputs = cx.noutputs();
        let mut outs: ArrayVec<u16, MAX_BATCH> = ArrayVec::new();
        {
            let t = self.table.lock();
            for p in batch.iter() {
                let out = match segment::locate_in(p) {
                    Ok(s) => {
                        let d = p.data();
                        let found = FlowTable::find(&t, s.src(d), s.sport(d), s.dst(d), s.dport(d));
                        match found.filter(|&o| usize::from(o) < noutputs) {
                            Some(o) => o,
                            None => {
                                self.unknown += 1;
                                u16::MAX
                            }
                        }
                    }
                    Err(_) => {
                        self.drops += 1;
                        u16::MAX
                    }
                };
                outs.push(out);
            }
        }
        cx.push_classified_by(batch, &outs, |_, o| {
            (o != u16::MAX).then_some(usize::from(o))
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("unknown", self.unknown);
        s.counter("drops", self.drops);
    }
}

/// The table of the TCPDemux upstream of input `input` of the element
/// being configured (Click's `visit_upstream` for a TCPDemux).
pub(crate) fn upstream_table(args: &Args<'_>, input: usize) -> Result<Arc<FlowTable>, ArgError> {
    args.shared_by_flow::<FlowTable>(input, true, &[CLASS.name])
        .map_err(ArgError::new)?
        .into_iter()
        .next()
        .ok_or_else(|| ArgError::new("need at least 1 upstream TCPDemux"))
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, FlowRefs, Rig};
    use super::super::segment::ACK;
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn seg(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        datagram(src, dst, sport, dport, 1, 1, ACK, &[], b"x")
    }

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        }
    }

    fn flow(local: [u8; 4], lport: u16, remote: [u8; 4], rport: u16) -> Flow {
        Flow {
            local: local.into(),
            lport,
            remote: remote.into(),
            rport,
        }
    }

    #[test]
    fn matches_the_most_specific_flow() {
        let t = FlowTable {
            flows: Mutex::new(HashMap::new()),
            capacity: 8,
        };
        let me = [10, 0, 0, 2];
        let peer = [10, 0, 0, 1];
        assert!(t.add(flow([0; 4], 0, [0; 4], 0), 4));
        assert!(t.add(flow(me, 0, [0; 4], 0), 3));
        assert!(t.add(flow([0; 4], 80, [0; 4], 0), 2));
        assert!(t.add(flow(me, 80, [0; 4], 0), 1));
        assert!(t.add(flow(me, 80, peer, 4000), 0));
        assert!(!t.add(flow(me, 80, peer, 4000), 9));
        let f = |src: [u8; 4], sport, dst: [u8; 4], dport| {
            FlowTable::find(&t.lock(), src.into(), sport, dst.into(), dport)
        };
        assert_eq!(f(peer, 4000, me, 80), Some(0));
        assert_eq!(f(peer, 4001, me, 80), Some(1));
        assert_eq!(f(peer, 4000, [10, 0, 0, 3], 80), Some(2));
        assert_eq!(f(peer, 4000, me, 81), Some(3));
        assert_eq!(f(peer, 4000, [10, 0, 0, 3], 81), Some(4));
        assert!(t.remove(&flow([0; 4], 0, [0; 4], 0)));
        assert!(!t.remove(&flow([0; 4], 0, [0; 4], 0)));
        assert_eq!(f(peer, 4000, [10, 0, 0, 3], 81), None);
    }

    #[test]
    fn the_table_is_bounded() {
        let t = FlowTable {
            flows: Mutex::new(HashMap::new()),
            capacity: 2,
        };
        assert!(t.add(flow([1; 4], 1, [2; 4], 2), 0));
        assert!(t.add(flow([1; 4], 2, [2; 4], 2), 0));
        assert!(!t.add(flow([1; 4], 3, [2; 4], 2), 0));
        assert!(t.remove(&flow([1; 4], 1, [2; 4], 2)));
        assert!(t.add(flow([1; 4], 3, [2; 4], 2), 0));
    }

    #[test]
    fn forwards_registered_flows_and_counts_the_rest() {
        let mut r = Rig::new(&CLASS, "", ports(), &FlowRefs::default());
        let t = r.shared::<FlowTable>();
        assert!(t.add(flow([10, 0, 0, 2], 80, [10, 0, 0, 1], 4000), 0));
        let good = seg([10, 0, 0, 1], 4000, [10, 0, 0, 2], 80);
        let other = seg([10, 0, 0, 1], 4001, [10, 0, 0, 2], 80);
        let mut udp = good.clone();
        udp[9] = 17;
        r.push(0, &[&good, &other, &udp, &good[..30], &good]);
        assert_eq!(r.take(0), vec![good.clone(), good]);
        assert_eq!(r.counter("unknown"), 1);
        assert_eq!(r.counter("drops"), 2);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("").is_ok());
        assert!(m("CAPACITY 5").is_ok());
        assert!(m("0").is_err());
    }
}
