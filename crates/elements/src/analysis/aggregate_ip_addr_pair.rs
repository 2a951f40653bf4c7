//! `AggregateIPAddrPair`: numbers IP address pairs in the aggregate
//! annotation and marks each packet's direction in the paint annotation
//! (Click's `elements/analysis/aggregateipaddrpair.cc`).
//!
//! A pair is its two addresses, either way round; it gets the next number
//! at its first packet and, with a TIMEOUT, a new one when it has been
//! idle longer than that. As AggregateIPFlows does, this element shares
//! its table between workers and bounds it: at most CAPACITY pairs
//! (Click's grows without bound). A new pair beyond CAPACITY, when reaping
//! expired pairs frees no room, is handled as Click handles a packet it
//! cannot number: it leaves by output 1, or is dropped.

use crate::ip::header::be32;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{Timestamp, MAX_BATCH};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `AggregateIPAddrPair` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateIPAddrPair",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: address pairs held at most.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;

static MANUAL: Manual = Manual {
    summary: "sets aggregate annotation based on IP source/destination address pair",
    synopsis: "AggregateIPAddrPair([KEYWORDS])",
    description: "Sets the aggregate annotation of every passing packet to a number for its \
        IP address pair: packets between the same two addresses, in either direction, get \
        the same number. Numbers are given in order from 1; the first packet of a pair is \
        painted 0, packets the other way 1 (the paint annotation). With TIMEOUT, a pair idle \
        longer than TIMEOUT seconds of packet time is forgotten and gets a new number at its \
        next packet; expired pairs are removed every REAP seconds of packet time. Time is \
        the packets' timestamps in whole seconds (with TIMEOUT, a packet without one gets \
        the router's clock, with a warning). Packets without a network header annotation \
        leave by output 1, or are dropped. Writing `clear` forgets every pair; later packets \
        get new numbers. The table is shared by every worker. Differences from Click: bricks \
        holds at most CAPACITY pairs (Click: until memory runs out); a new pair beyond that, \
        when reaping expired pairs frees no room, leaves by output 1 (or is dropped) and is \
        counted in `table_full`; a network header shorter than 20 bytes counts as none \
        (Click reads past it); bricks has no AggregateListener notifications (AggregateFirst \
        and AggregateLast accept NOTIFIER and do not use it; numbers are never reused before \
        2^32, so they let the same packets through).",
    ports: "one input, push or pull; output 0 like the input, output 1 (optional) push",
    keywords: &[
        Keyword {
            name: "TIMEOUT",
            ty: "duration (seconds)",
            default: Some("0 (never)"),
            doc: "how long an idle address pair is remembered",
        },
        Keyword {
            name: "REAP",
            ty: "duration (seconds)",
            default: Some("1200"),
            doc: "how often, in packet time, expired pairs are removed",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most address pairs held; from 1 to 67108864",
        },
    ],
    counters: &[
        ("flows", "address pairs held now"),
        ("table_full", "packets of a new pair refused because CAPACITY was reached"),
        ("no_ip", "packets without a network header (output 1 or dropped)"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 01 00 00 40 fd 00 00 12 1a 04 2c 0a 00 00 04>, LIMIT 2, STOP true)\n\
              -> MarkIPHeader -> ap :: AggregateIPAddrPair(TIMEOUT 60) -> Discard;\n\
              ap[1] -> Discard;",
    see_also: &["AggregateIPFlows", "AggregateCounter", "AggregateIP"],
};

/// An address pair, the lower address first (Click's `HostPair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HostPair {
    a: u32,
    b: u32,
}

impl HostPair {
    fn new(src: u32, dst: u32) -> HostPair {
        HostPair {
            a: src.min(dst),
            b: src.max(dst),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct FlowInfo {
    aggregate: u32,
    /// The last packet's second (kept with a TIMEOUT only, as in Click).
    last_sec: i64,
    /// The first packet went from the higher address to the lower.
    reverse: bool,
}

#[derive(Debug)]
struct State {
    map: HashMap<HostPair, FlowInfo>,
    next: u32,
    active_sec: i64,
    /// When the next reap is due; `None` before the first packet with a
    /// TIMEOUT (Click's `_gc_sec` 0).
    gc_sec: Option<i64>,
    /// The packet second of the last reap forced by a full table.
    full_reap_sec: Option<i64>,
    warned: bool,
    table_full: u64,
    no_ip: u64,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
}

fn secs(args: &mut Args<'_>, key: &'static str, default: u64) -> Result<i64, ArgError> {
    let d = args
        .read::<Duration>(key)?
        .unwrap_or(Duration::from_secs(default));
    Ok(d.as_secs().min(i64::MAX as u64 / 4) as i64)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let timeout = secs(args, "TIMEOUT", 0)?;
    let gc_interval = secs(args, "REAP", 20 * 60)?;
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let sh = args.shared(|_| {
        Ok(Shared {
            state: Mutex::new(State {
                map: HashMap::new(),
                next: 1,
                active_sec: 0,
                gc_sec: None,
                full_reap_sec: None,
                warned: false,
                table_full: 0,
                no_ip: 0,
            }),
        })
    })?;
    Ok(Box::new(AggregateIPAddrPair {
        sh,
        timeout,
        gc_interval,
        capacity,
        two_outputs: ports.noutputs() > 1,
    }))
}

/// One worker's AggregateIPAddrPair.
#[derive(Debug)]
pub struct AggregateIPAddrPair {
    sh: Arc<Shared>,
    /// Seconds; 0: pairs never expire.
    timeout: i64,
    gc_interval: i64,
    capacity: usize,
    two_outputs: bool,
}

fn timestamp_sec(p: &Packet) -> i64 {
    p.anno().timestamp.signed_nanos().div_euclid(1_000_000_000)
}

fn next_aggregate(st: &mut State) -> u32 {
    let a = st.next;
    // Click skips 0 when the counter wraps.
    st.next = st.next.wrapping_add(1).max(1);
    a
}

impl AggregateIPAddrPair {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.sh.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes the pairs idle past TIMEOUT at `active` (Click's `reap`
    /// loop; `SEC_OLDER(last, active - timeout)`).
    fn reap_pairs(&self, st: &mut State, active: i64) {
        let limit = active.saturating_sub(self.timeout);
        st.map.retain(|_, f| f.last_sec >= limit);
    }

    /// Click's `reap`: expired pairs go (not at the first call), and the
    /// next reap is due REAP seconds on.
    fn reap(&self, st: &mut State) {
        if st.gc_sec.is_some() {
            let active = st.active_sec;
            self.reap_pairs(st, active);
        }
        st.gc_sec = Some(st.active_sec.saturating_add(self.gc_interval));
    }

    /// Click's `simple_action`: the output for `p`, its annotations set.
    fn handle(&self, st: &mut State, p: &mut Packet, now: Timestamp) -> Option<usize> {
        let Some(ip) = p.network_header().and_then(|h| h.first_chunk::<20>()) else {
            st.no_ip += 1;
            return self.two_outputs.then_some(1);
        };
        let (src, dst) = (be32(ip, 12), be32(ip, 16));
        let hosts = HostPair::new(src, dst);
        let mut sec = 0;
        if self.timeout > 0 {
            if p.anno().timestamp.0 == 0 {
                if !st.warned {
                    eprintln!("AggregateIPAddrPair: warning: packet received without timestamp");
                    st.warned = true;
                }
                p.anno_mut().timestamp = now;
            }
            sec = timestamp_sec(p);
        }
        let fresh = |st: &mut State| FlowInfo {
            aggregate: next_aggregate(st),
            last_sec: sec,
            reverse: hosts.a != src,
        };
        let info = match st.map.get(&hosts).copied() {
            Some(f) if self.timeout > 0 && f.last_sec < sec.saturating_sub(self.timeout) => {
                fresh(st)
            }
            Some(f) => f,
            None => {
                if st.map.len() >= self.capacity {
                    // Reap once per second of packet time to make room.
                    let active = st.active_sec.max(sec);
                    if self.timeout > 0 && st.full_reap_sec != Some(active) {
                        st.full_reap_sec = Some(active);
                        self.reap_pairs(st, active);
                    }
                    if st.map.len() >= self.capacity {
                        st.table_full += 1;
                        return self.two_outputs.then_some(1);
                    }
                }
                fresh(st)
            }
        };
        let info = FlowInfo {
            last_sec: if self.timeout > 0 { sec } else { info.last_sec },
            ..info
        };
        st.map.insert(hosts, info);
        if self.timeout > 0 {
            st.active_sec = sec;
            if st.gc_sec.is_none_or(|g| sec > g) {
                self.reap(st);
            }
        }
        p.anno_mut().flow = info.aggregate;
        p.anno_mut().paint = u8::from(info.reverse ^ (hosts.a != src));
        Some(0)
    }
}

impl AggregateIPAddrPair {
    /// Numbers every packet of `b`, the table locked once; the outputs,
    /// `u16::MAX` for a packet to drop. Packets are pushed after the lock
    /// is released, so that nothing downstream runs under it.
    fn handle_batch(&self, b: &mut Batch, now: Timestamp, outs: &mut [u16; MAX_BATCH]) {
        let mut st = self.lock();
        for (p, o) in b.iter_mut().zip(outs.iter_mut()) {
            *o = self
                .handle(&mut st, p, now)
                .map_or(u16::MAX, |port| port as u16);
        }
    }
}

impl Element for AggregateIPAddrPair {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut outs = [0u16; MAX_BATCH];
        self.handle_batch(batch, cx.now(), &mut outs);
        cx.push_by_outputs(batch, &outs);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max.min(out.remaining()));
        if b.is_empty() {
            return;
        }
        let mut outs = [0u16; MAX_BATCH];
        self.handle_batch(&mut b, cx.now(), &mut outs);
        let mut other = Batch::new();
        for (p, &o) in b.drain().zip(outs.iter()) {
            let _ = match o {
                0 => out.push(p),
                1 => other.push(p),
                _ => Ok(()),
            };
        }
        if !other.is_empty() {
            cx.push(1, &mut other);
        }
    }

    fn stats(&self, s: &mut Stats) {
        let st = self.lock();
        s.counter("flows", st.map.len() as u64);
        s.counter("table_full", st.table_full);
        s.counter("no_ip", st.no_ip);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "clear"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("clear")];
        H
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        if handler != "clear" {
            return Err(format!("no write handler `{handler}` (clear)"));
        }
        // Click reaps as if the time were the end of time: every pair goes,
        // the reap schedule stays.
        self.lock().map.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    const H1: [u8; 4] = [18, 26, 4, 44];
    const H2: [u8; 4] = [10, 0, 0, 4];
    const H3: [u8; 4] = [192, 168, 1, 1];

    /// An IP header (protocol 253) from `src` to `dst` stamped `sec`, its
    /// network header annotated.
    fn ip(src: [u8; 4], dst: [u8; 4], sec: u64) -> Packet {
        let mut b = vec![
            0x45, 0, 0, 20, 0, 1, 0, 0, 64, 253, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(0);
        p.anno_mut().timestamp = Timestamp::from_parts(sec, 0);
        p
    }

    fn annos(h: &mut Harness, port: usize) -> Vec<(u32, u8)> {
        h.take(port)
            .iter()
            .map(|p| (p.anno().flow, p.anno().paint))
            .collect()
    }

    #[test]
    fn pairs_are_numbered_either_way_round() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(
            0,
            [
                ip(H1, H2, 1),
                ip(H2, H1, 2),
                ip(H2, H3, 3),
                ip(H3, H2, 4),
                ip(H1, H2, 5),
                ip(H1, H1, 6),
            ],
        );
        // H1 > H2: the first packet of pair 1 went high to low; paint 0
        // still marks its direction.
        assert_eq!(
            annos(&mut h, 0),
            vec![(1, 0), (1, 1), (2, 0), (2, 1), (1, 0), (3, 0)]
        );
        assert_eq!(h.stats().get("flows"), Some(3));
    }

    #[test]
    fn idle_pairs_time_out_and_are_reaped() {
        let mut h = Harness::push(&CLASS, "TIMEOUT 10, REAP 100", 1, 2);
        h.push_packets(0, [ip(H1, H2, 1000), ip(H2, H1, 1010), ip(H1, H2, 1021)]);
        assert_eq!(annos(&mut h, 0), vec![(1, 0), (1, 1), (2, 0)]);
        h.push_packets(0, [ip(H2, H3, 1022)]);
        assert_eq!(h.stats().get("flows"), Some(2));
        // 100 s later the reap removes both.
        h.push_packets(0, [ip(H3, H1, 1200)]);
        assert_eq!(annos(&mut h, 0), vec![(3, 0), (4, 0)]);
        assert_eq!(h.stats().get("flows"), Some(1));
        // Without TIMEOUT, pairs last.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [ip(H1, H2, 1), ip(H1, H2, 100_000)]);
        assert_eq!(annos(&mut h, 0), vec![(1, 0), (1, 0)]);
    }

    #[test]
    fn clear_forgets_every_pair() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [ip(H1, H2, 1)]);
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.stats().get("flows"), Some(0));
        h.push_packets(0, [ip(H2, H1, 2)]);
        assert_eq!(annos(&mut h, 0), vec![(1, 0), (2, 0)]);
    }

    #[test]
    fn capacity_bounds_the_pairs() {
        let mut h = Harness::push(&CLASS, "CAPACITY 2, TIMEOUT 5", 1, 2);
        h.push_packets(0, [ip(H1, H2, 10), ip(H1, H3, 10), ip(H2, H3, 10)]);
        assert_eq!(annos(&mut h, 0), vec![(1, 0), (2, 0)]);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("table_full"), Some(1));
        // Later the old pairs have expired: room again.
        h.push_packets(0, [ip(H2, H3, 20)]);
        assert_eq!(annos(&mut h, 0), vec![(3, 0)]);
        // Without output 1 the packet is dropped.
        let mut h = Harness::push(&CLASS, "CAPACITY 1", 1, 1);
        h.push_packets(0, [ip(H1, H2, 10), ip(H1, H3, 10)]);
        assert_eq!(annos(&mut h, 0), vec![(1, 0)]);
        assert_eq!(h.stats().get("table_full"), Some(1));
    }

    #[test]
    fn packets_without_ip_leave_by_output_1() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let unmarked = Packet::from_slice(ip(H1, H2, 1).data()).unwrap();
        let mut short = Packet::from_slice(&ip(H1, H2, 1).data()[..12]).unwrap();
        short.set_network_header(0);
        h.push_packets(0, [unmarked, short]);
        assert_eq!(h.take(1).len(), 2);
        assert_eq!(h.stats().get("no_ip"), Some(2));
    }

    #[test]
    fn packets_without_timestamps_get_the_clock() {
        let mut h = Harness::push(&CLASS, "TIMEOUT 10", 1, 1);
        let mut p = ip(H1, H2, 0);
        p.anno_mut().timestamp = Timestamp(0);
        h.push_packets(0, [p]);
        assert_ne!(h.take(0)[0].anno().timestamp, Timestamp(0));
    }

    #[test]
    fn pull_numbers_too() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull, Processing::Push],
            },
        );
        h.feed(0, [ip(H2, H1, 1), ip(H1, H2, 1)]);
        let got: Vec<(u32, u8)> = h
            .pull(0, 8)
            .iter()
            .map(|p| (p.anno().flow, p.anno().paint))
            .collect();
        assert_eq!(got, vec![(1, 0), (1, 1)]);
    }
}
