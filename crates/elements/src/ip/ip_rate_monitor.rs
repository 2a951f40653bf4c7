//! `IPRateMonitor`: packet or byte rates per address prefix, in a tree
//! that opens a finer level (/8, then /16, /24, /32) under a prefix whose
//! rate reaches a threshold (Click's `elements/ip/ipratemon.cc`, Gil,
//! Chen and Kohler's MULTOPS-style monitor). Each packet's forward rate
//! goes into its rate annotation for `Block`.
//!
//! Each tree node holds 256 counters, one per value of the next address
//! byte; a counter holds two rate EWMAs (Click's `RateEWMAX` with
//! stability shift 5, 10 bits of fraction, epochs of 8 ms): input 0
//! counts by source address, input 1 by destination. A packet walks at
//! most four levels, so its cost is constant. Memory is Click's MEMORY,
//! counted in bytes of the tree: a split or a new counter that would pass
//! it is not made, and once a second the oldest subtrees whose parent's
//! rates fell under THRESH are folded away. Unlike Click, a bound always
//! holds: without MEMORY (or with 0) it is [`DEFAULT_MEMORY_KB`].

use crate::standard::counter::unparse_real2;
use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword,
    Manual, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `IPRateMonitor` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPRateMonitor",
    ports: "1-2/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "measures coming and going IP traffic rates per address prefix",
    synopsis: "IPRateMonitor(TYPE, RATIO, THRESH [, MEMORY, ANNO])",
    description: "Counts packets (TYPE PACKETS) or bytes (TYPE BYTES, the IP length) per \
        second by address prefix: packets on input 0 by their IP source address, packets on \
        input 1 by their destination (the forward and the reverse rate of an address); each \
        leaves by the output of its input's number. Rates are kept per /8 first; when a \
        prefix's forward or reverse rate reaches THRESH (per second, as if RATIO were 1), \
        rates are kept for the next address byte under it too, down to single hosts. With \
        ANNO true (the default) each packet's rate annotation is set to the forward or \
        reverse rate of the finest prefix kept for its address, which Block reads: \
        `IPRateMonitor(PACKETS, 1, 100) -> Block(100)` sends packets of fast sources to \
        Block's output 1. RATIO (0 to 1) is the chance that a packet updates the rates. \
        \n\nMEMORY bounds the tree, in kilobytes (at least 100): a finer level or a new \
        counter that would pass it is not made, and once a second the oldest levels whose \
        prefix's rates fell under THRESH are folded away. Unlike Click, where MEMORY 0 (the \
        default) means unlimited, bricks then bounds the tree to 16384 kilobytes (`memmax` \
        still reads 0, as in Click). A packet whose counter cannot be made for lack of \
        memory gets the rate of its prefix one level up (Click leaves it unannotated). \
        Packets too short for an IP header pass unchanged and are counted as `short`. \
        Click also writes the reverse rate to a second annotation (for CompareBlock); \
        bricks has no such annotation and element. \
        \n\nHandlers as in Click: `look` prints the 8 ms epochs since the last reset, then \
        one line per prefix with a rate, `PREFIX<TAB>FORWARD<TAB>REVERSE`, finer prefixes \
        indented by a tab under theirs; `thresh` reads THRESH as scaled by RATIO; `mem` the \
        bytes the tree takes; `memmax` reads MEMORY in bytes and writes it in kilobytes \
        (folding at once when the tree is over it); `reset` forgets every rate; \
        `anno_level` takes `ADDR, LEVEL, SECONDS` (or the three separated by spaces, as \
        Click's manual writes them but Click refuses) and stops the tree from growing under the \
        prefix of ADDR at LEVEL (0 to 3: /8 to /32) for SECONDS, removing what is under it.",
    ports: "one or two agnostic inputs; as many agnostic outputs (or more)",
    keywords: &[
        Keyword {
            name: "TYPE",
            ty: "PACKETS or BYTES",
            default: None,
            doc: "what is counted; positional",
        },
        Keyword {
            name: "RATIO",
            ty: "real, 0 to 1",
            default: None,
            doc: "chance that a packet updates the rates; positional",
        },
        Keyword {
            name: "THRESH",
            ty: "integer",
            default: None,
            doc: "rate per second at which a prefix is split into finer ones; positional",
        },
        Keyword {
            name: "MEMORY",
            ty: "unsigned (kilobytes)",
            default: Some("0: 16384 in bricks"),
            doc: "most memory the tree takes; at least 100; positional",
        },
        Keyword {
            name: "ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "set the rate annotation; positional",
        },
    ],
    counters: &[(
        "short",
        "packets too short for an IP header, passed unchanged",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 0a 00 00 01 \
        0a 00 00 02 00 07 00 07 00 08 00 00>, LIMIT 5) \
        -> IPRateMonitor(PACKETS, 1, 100) -> b :: Block(100); b[0] -> Discard; b[1] -> Discard;",
    see_also: &["Block", "AggregateIPFlows"],
};

/// The tree's bound, in kilobytes, when MEMORY is not given or 0.
pub const DEFAULT_MEMORY_KB: usize = 16384;
/// Click's `MEMMAX_MIN`: a smaller MEMORY is raised to it.
const MEMORY_MIN_KB: usize = 100;
/// Click's RATIO of 1 in 16 bits of fraction.
const RATIO_ONE: u32 = 0x10000;
/// Epochs of 8 ms (Click's `click_jiffies() >> 3` at 1000 Hz): 125 a second.
const EPOCHS_PER_SECOND: i64 = 125;
const SCALE: u32 = 10;
const STABILITY: u32 = 5;
const NONE: u32 = u32::MAX;

/// Click's `RateEWMAX<FixedEWMAXParameters<5, 10>>` with two rates
/// (forward, reverse). 64-bit where Click's are 32-bit, so that byte
/// counts of fast links do not wrap.
#[derive(Debug, Clone, Copy)]
struct Ewma2 {
    epoch: u64,
    current: [i64; 2],
    avg: [i64; 2],
}

impl Ewma2 {
    fn new(epoch: u64) -> Ewma2 {
        Ewma2 {
            epoch,
            current: [0; 2],
            avg: [0; 2],
        }
    }

    /// Click's `DirectEWMAX::update` with an arithmetic right shift.
    fn step(avg: &mut i64, x: i64) {
        let xs = x.saturating_mul(1 << SCALE) + (1 << (STABILITY - 1));
        *avg += (xs - *avg) >> STABILITY;
    }

    fn update_time(&mut self, now: u64) {
        if now == self.epoch {
            return;
        }
        let gap = now.wrapping_sub(self.epoch).wrapping_sub(1);
        for i in 0..2 {
            Self::step(&mut self.avg[i], self.current[i]);
            // Click's `update_n(0, n)`: 100 or more empty epochs set 0.
            if gap >= 100 {
                self.avg[i] = 0;
            } else {
                for _ in 0..gap {
                    Self::step(&mut self.avg[i], 0);
                }
            }
            self.current[i] = 0;
        }
        self.epoch = now;
    }

    fn update(&mut self, delta: i64, which: usize, now: u64) {
        self.update_time(now);
        self.current[which] = self.current[which].saturating_add(delta);
    }

    /// Samples per second (Click's `(scaled_average * freq) >> scale`).
    fn rate(&self, which: usize) -> i32 {
        let r = self.avg[which].saturating_mul(EPOCHS_PER_SECOND) >> SCALE;
        r.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }
}

/// One address prefix's rates.
#[derive(Debug, Clone, Copy)]
struct Counter {
    ewma: Ewma2,
    /// The level under this prefix, or [`NONE`].
    next_level: u32,
    /// The epoch until which this prefix is not split (`anno_level`).
    anno_this: u64,
}

/// 256 counters, one per value of the next address byte; an entry of
/// the age list (oldest first) that folding walks.
#[derive(Debug)]
struct Level {
    /// The counter this level refines; [`NONE`] for the /8 level.
    parent: u32,
    prev: u32,
    next: u32,
    slots: Box<[u32; 256]>,
}

const COUNTER_BYTES: usize = std::mem::size_of::<Counter>();
const LEVEL_BYTES: usize = std::mem::size_of::<Level>() + 256 * 4;

/// The whole monitor's state, shared by every worker's instance.
#[derive(Debug)]
struct Tree {
    count_packets: bool,
    anno: bool,
    ratio: u32,
    thresh: i32,
    /// MEMORY in bytes as Click keeps it: 0 when not given.
    memmax: usize,
    counters: Vec<Counter>,
    free_counters: Vec<u32>,
    levels: Vec<Level>,
    free_levels: Vec<u32>,
    first: u32,
    last: u32,
    alloced: usize,
    resettime: u64,
    prev_fold: Option<u64>,
    /// The latest epoch a packet was seen in, and whether the clock is a
    /// trace's (then handlers read at that epoch).
    epoch: u64,
    trace: bool,
    seen: bool,
}

/// The base level's index.
const BASE: u32 = 0;

impl Tree {
    fn new(count_packets: bool, ratio: u32, thresh: i32, memory_kb: usize, anno: bool) -> Tree {
        let mut t = Tree {
            count_packets,
            anno,
            ratio,
            thresh,
            memmax: memory_kb.saturating_mul(1024),
            counters: Vec::new(),
            free_counters: Vec::new(),
            levels: Vec::new(),
            free_levels: Vec::new(),
            first: NONE,
            last: NONE,
            alloced: 0,
            resettime: 0,
            prev_fold: None,
            epoch: 0,
            trace: false,
            seen: false,
        };
        let base = t.new_level(NONE);
        debug_assert_eq!(base, BASE);
        t
    }

    /// The bound that always holds, in bytes.
    fn limit(&self) -> usize {
        if self.memmax != 0 {
            self.memmax
        } else {
            DEFAULT_MEMORY_KB * 1024
        }
    }

    /// A new level at the end of the age list.
    fn new_level(&mut self, parent: u32) -> u32 {
        let level = Level {
            parent,
            prev: self.last,
            next: NONE,
            slots: Box::new([NONE; 256]),
        };
        let i = match self.free_levels.pop() {
            Some(i) => {
                let mut level = level;
                // Reuse the freed level's table rather than allocate one.
                std::mem::swap(&mut level.slots, &mut self.levels[i as usize].slots);
                level.slots.fill(NONE);
                self.levels[i as usize] = level;
                i
            }
            None => {
                self.levels.push(level);
                (self.levels.len() - 1) as u32
            }
        };
        if self.last != NONE {
            self.levels[self.last as usize].next = i;
        } else {
            self.first = i;
        }
        self.last = i;
        self.alloced += LEVEL_BYTES;
        i
    }

    /// Click's `make_counter`: `None` when it would pass the bound.
    fn make_counter(
        &mut self,
        level: u32,
        byte: usize,
        from: Option<Ewma2>,
        now: u64,
    ) -> Option<u32> {
        if self.alloced + COUNTER_BYTES > self.limit() {
            return None;
        }
        let c = Counter {
            ewma: from.unwrap_or_else(|| Ewma2::new(now)),
            next_level: NONE,
            anno_this: 0,
        };
        let i = match self.free_counters.pop() {
            Some(i) => {
                self.counters[i as usize] = c;
                i
            }
            None => {
                self.counters.push(c);
                (self.counters.len() - 1) as u32
            }
        };
        self.levels[level as usize].slots[byte] = i;
        self.alloced += COUNTER_BYTES;
        Some(i)
    }

    /// Removes every counter of `level` with what is under them.
    fn clear_level(&mut self, level: u32) {
        for byte in 0..256 {
            let c = self.levels[level as usize].slots[byte];
            if c == NONE {
                continue;
            }
            let next = self.counters[c as usize].next_level;
            if next != NONE {
                self.delete_level(next);
            }
            self.free_counters.push(c);
            self.alloced -= COUNTER_BYTES;
            self.levels[level as usize].slots[byte] = NONE;
        }
    }

    /// Click's `~Stats`: removes `level` and everything under it, and
    /// returns its neighbours in the age list (`prev`, `next`) once
    /// removed. At most three levels deep.
    fn delete_level(&mut self, level: u32) -> (u32, u32) {
        self.clear_level(level);
        let l = &self.levels[level as usize];
        let (prev, next, parent) = (l.prev, l.next, l.parent);
        if prev != NONE {
            self.levels[prev as usize].next = next;
        } else {
            self.first = next;
        }
        if next != NONE {
            self.levels[next as usize].prev = prev;
        } else {
            self.last = prev;
        }
        if parent != NONE {
            self.counters[parent as usize].next_level = NONE;
        }
        self.free_levels.push(level);
        self.alloced -= LEVEL_BYTES;
        (prev, next)
    }

    /// Click's `update`: counts `val` for `addr` (host order) at every
    /// level kept, splits the finest if its rate reaches THRESH, folds
    /// once a second, and returns the forward and reverse rate of the
    /// finest prefix counted.
    fn update(&mut self, addr: u32, val: i64, forward: bool, count: bool, now: u64) -> (i32, i32) {
        let which = usize::from(!forward);
        let mut s = BASE;
        let mut bitshift: u32 = 24;
        let mut c = NONE;
        loop {
            let byte = ((addr >> bitshift) & 255) as usize;
            let mut here = self.levels[s as usize].slots[byte];
            if here == NONE {
                match self.make_counter(s, byte, None, now) {
                    Some(i) => here = i,
                    None => break,
                }
            }
            c = here;
            let counter = &mut self.counters[c as usize];
            if count {
                counter.ewma.update(val, which, now);
            }
            if counter.next_level == NONE || bitshift == 0 {
                break;
            }
            s = counter.next_level;
            bitshift -= 8;
        }
        let rates = |t: &Tree, c: u32| {
            let e = &t.counters[c as usize].ewma;
            (e.rate(0), e.rate(1))
        };
        let out = if c == NONE {
            (0, 0)
        } else if self.levels[s as usize].slots[((addr >> bitshift) & 255) as usize] != c {
            // No room for this prefix's counter: its parent's rates.
            rates(self, c)
        } else {
            let (fwd, rev) = rates(self, c);
            let thresh = self.thresh;
            if self.counters[c as usize].anno_this < now
                && (fwd >= thresh || rev >= thresh)
                && bitshift > 0
                && self.alloced + COUNTER_BYTES + LEVEL_BYTES <= self.limit()
            {
                let nl = self.new_level(c);
                self.levels[nl as usize].parent = c;
                let next_byte = ((addr >> (bitshift - 8)) & 255) as usize;
                let from = self.counters[c as usize].ewma;
                if self.make_counter(nl, next_byte, Some(from), now).is_some() {
                    self.counters[c as usize].next_level = nl;
                } else {
                    self.delete_level(nl);
                }
            }
            (fwd, rev)
        };
        let prev = *self.prev_fold.get_or_insert(now);
        if now.wrapping_sub(prev) >= EPOCHS_PER_SECOND as u64 {
            self.fold(i64::from(self.thresh), None, now);
            self.prev_fold = Some(now);
        }
        out
    }

    /// Click's `fold`: from one end of the age list (chosen at random,
    /// for fairness), removes the levels whose parent's scaled averages
    /// are both under `thresh`, until memory is under `target` (by
    /// default MEMORY, or 90% of what the tree takes when MEMORY is not
    /// given).
    fn fold(&mut self, thresh: i64, target: Option<usize>, now: u64) {
        let forward = click_random::random_between(0, 1) == 1;
        let target = target.unwrap_or(if self.memmax != 0 {
            self.memmax
        } else {
            self.alloced / 10 * 9
        });
        let mut s = if forward { self.first } else { self.last };
        while s != NONE {
            let parent = self.levels[s as usize].parent;
            if parent != NONE {
                let e = &mut self.counters[parent as usize].ewma;
                e.update(0, 0, now);
                if e.avg[0] < thresh && e.avg[1] < thresh {
                    let (prev, next) = self.delete_level(s);
                    if self.alloced < target {
                        break;
                    }
                    s = if forward { next } else { prev };
                    continue;
                }
            }
            let l = &self.levels[s as usize];
            s = if forward { l.next } else { l.prev };
        }
    }

    /// Click's `forced_fold`, bounded: THRESH rises by a fifth of itself
    /// per round; after 64 rounds everything but the /8 level may go.
    fn forced_fold(&mut self, now: u64) {
        let limit = self.limit();
        let perc = i64::from(self.thresh / 5).max(1);
        let mut thresh = i64::from(self.thresh);
        for _ in 0..64 {
            if self.alloced <= limit {
                return;
            }
            self.fold(thresh, Some(limit), now);
            thresh = thresh.saturating_add(perc);
        }
        while self.alloced > limit && self.first != self.last {
            self.fold(i64::MAX, Some(limit), now);
        }
    }

    /// Click's `set_anno_level`.
    fn set_anno_level(&mut self, addr: u32, mut level: u32, when: u64) {
        let mut s = BASE;
        for bitshift in [24u32, 16, 8, 0] {
            let c = self.levels[s as usize].slots[((addr >> bitshift) & 255) as usize];
            if c == NONE {
                return;
            }
            let next = self.counters[c as usize].next_level;
            if level == 0 {
                self.counters[c as usize].anno_this = when;
                if next != NONE {
                    self.delete_level(next);
                }
                return;
            }
            if next == NONE {
                return;
            }
            s = next;
            level -= 1;
        }
    }

    /// Click's `print`.
    fn print(&mut self, s: u32, ip: &str, now: u64, out: &mut String) {
        for i in 0..256 {
            let c = self.levels[s as usize].slots[i];
            if c == NONE {
                continue;
            }
            let e = &mut self.counters[c as usize].ewma;
            if e.avg[1] > 0 || e.avg[0] > 0 {
                let this_ip = if ip.is_empty() {
                    i.to_string()
                } else {
                    format!("{ip}.{i}")
                };
                e.update(0, 0, now);
                out.push_str(&this_ip);
                for which in 0..2 {
                    out.push('\t');
                    out.push_str(&unparse_real2(
                        e.avg[which].saturating_mul(EPOCHS_PER_SECOND),
                        SCALE,
                    ));
                }
                out.push('\n');
                let next = self.counters[c as usize].next_level;
                if next != NONE {
                    self.print(next, &format!("\t{this_ip}"), now, out);
                }
            }
        }
    }

    fn look(&mut self, now: u64) -> String {
        let mut out = format!("{}\n", now.saturating_sub(self.resettime));
        self.print(BASE, "", now, &mut out);
        out
    }

    fn reset(&mut self, now: u64) {
        self.clear_level(BASE);
        self.resettime = now;
    }

    /// The epoch a handler runs in: the router's clock, or the last
    /// packet's time in a trace.
    fn handler_epoch(&self) -> u64 {
        if self.trace || !self.seen {
            self.epoch
        } else {
            epoch_of(Timestamp::now()).max(self.epoch)
        }
    }
}

fn epoch_of(t: Timestamp) -> u64 {
    t.0 / 8_000_000
}

/// RATIO as Click's `FixedPointArg(16)` reads it.
fn parse_ratio(text: &str) -> Result<u32, String> {
    let v = f64::from_arg(text.trim())?;
    let fixed = (v * f64::from(RATIO_ONE)).round();
    if !(0.0..=f64::from(RATIO_ONE)).contains(&fixed) {
        return Err("ratio must be between 0 and 1".into());
    }
    Ok(fixed as u32)
}

/// An integer as Click's `IntArg` reads it into an `int`.
fn parse_int(text: &str) -> Result<i32, String> {
    let v = i64::from_arg(text.trim())?;
    i32::try_from(v).map_err(|_| format!("{v} is out of range for a 32-bit integer"))
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let what: String = args.read_mp("TYPE")?;
    let ratio: String = args.read_mp("RATIO")?;
    let thresh: String = args.read_mp("THRESH")?;
    let memory: usize = args.read_p("MEMORY")?.unwrap_or(0);
    let anno: bool = args.read_p("ANNO")?.unwrap_or(true);
    let count_packets = match what.to_ascii_uppercase().as_str() {
        "PACKETS" => true,
        "BYTES" => false,
        _ => {
            return Err(ArgError::new(
                "monitor type should be \"PACKETS\" or \"BYTES\"",
            ))
        }
    };
    let ratio = parse_ratio(&ratio).map_err(|e| ArgError::new(format!("RATIO: {e}")))?;
    let thresh = parse_int(&thresh).map_err(|e| ArgError::new(format!("THRESH: {e}")))?;
    if ports.noutputs() < ports.ninputs() {
        return Err(ArgError::new(format!(
            "IPRateMonitor needs an output for each input, not {} for {}",
            ports.noutputs(),
            ports.ninputs()
        )));
    }
    let memory = if memory != 0 && memory < MEMORY_MIN_KB {
        MEMORY_MIN_KB
    } else {
        memory
    };
    // THRESH as if RATIO were 1 (in 64 bits: Click's product may wrap).
    let thresh = ((i64::from(thresh) * i64::from(ratio)) >> 16) as i32;
    let tree = args.shared(|_| {
        Ok(Mutex::new(Tree::new(
            count_packets,
            ratio,
            thresh,
            memory,
            anno,
        )))
    })?;
    Ok(Box::new(IpRateMonitor { tree, short: 0 }))
}

/// One worker's instance; the tree is shared.
#[derive(Debug)]
pub struct IpRateMonitor {
    tree: Arc<Mutex<Tree>>,
    short: u64,
}

impl IpRateMonitor {
    fn lock(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn account(&mut self, port: usize, batch: &mut Batch, cx: &Context<'_>) {
        let now = epoch_of(cx.now());
        let trace = cx.trace_clock();
        let mut short = 0;
        let tree = Arc::clone(&self.tree);
        let mut t = tree.lock().unwrap_or_else(|e| e.into_inner());
        if !t.seen {
            t.seen = true;
            if t.resettime == 0 {
                t.resettime = now;
            }
        }
        t.epoch = t.epoch.max(now);
        t.trace = trace;
        for p in batch.iter_mut() {
            if !monitor(&mut t, port, p, now) {
                short += 1;
            }
        }
        drop(t);
        self.short += short;
    }
}

/// Counts one packet and sets its annotation; false for a packet too
/// short for an IP header.
#[inline]
fn monitor(t: &mut Tree, port: usize, p: &mut Packet, now: u64) -> bool {
    let Some(ip) = p.l3_bytes().first_chunk::<20>() else {
        return false;
    };
    let forward = port == 0;
    let at = if forward { 12 } else { 16 };
    let addr = u32::from_be_bytes([ip[at], ip[at + 1], ip[at + 2], ip[at + 3]]);
    let val = if t.count_packets {
        1
    } else {
        i64::from(u16::from_be_bytes([ip[2], ip[3]]))
    };
    // Click's draw: 16 random bits at most RATIO (always, at 1).
    let count = t.ratio >= 0xffff || (click_random::random() >> 5) & 0xffff <= t.ratio;
    let (fwd, _rev) = t.update(addr, val, forward, count, now);
    if t.anno {
        // Click's FWD_RATE_ANNO: the signed word Block reads as `flow`.
        p.anno_mut().flow = fwd as u32;
    }
    true
}

impl Element for IpRateMonitor {
    fn start(&mut self, cx: &mut Context<'_>) {
        let mut t = self.lock();
        if !t.seen && t.resettime == 0 {
            t.resettime = epoch_of(cx.now());
            t.epoch = t.resettime;
        }
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.account(port, batch, cx);
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(port, &mut b, max.min(out.remaining()));
        if b.is_empty() {
            return;
        }
        self.account(port, &mut b, cx);
        for p in b.drain() {
            let _ = out.push(p);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("short", self.short);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "thresh" => Some(self.lock().thresh.to_string()),
            "mem" => Some(self.lock().alloced.to_string()),
            "memmax" => Some(self.lock().memmax.to_string()),
            "look" => {
                // Click tries its spinlock and prints `unavailable` when
                // a packet holds it; a packet holds this lock for a batch
                // at most, so the handler waits for it.
                let mut t = self.lock();
                let now = t.handler_epoch();
                Some(t.look(now))
            }
            _ => None,
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "reset" | "memmax" | "anno_level")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let args = bricks_config::split_args(value);
        match handler {
            "reset" => {
                let mut t = self.lock();
                let now = t.handler_epoch();
                t.reset(now);
                drop(t);
                self.short = 0;
                Ok(())
            }
            "memmax" => {
                let [arg] = args.as_slice() else {
                    return Err("expecting 1 integer".into());
                };
                let kb = parse_int(arg).map_err(|_| "not an integer".to_string())?;
                // Click reads an `int`; a negative one wraps to a huge size.
                let kb = usize::try_from(kb).unwrap_or(usize::MAX / 1024);
                let kb = if kb != 0 && kb < MEMORY_MIN_KB {
                    MEMORY_MIN_KB
                } else {
                    kb
                };
                let mut t = self.lock();
                t.memmax = kb.saturating_mul(1024);
                if t.alloced > t.limit() {
                    let now = t.handler_epoch();
                    t.forced_fold(now);
                }
                Ok(())
            }
            "anno_level" => {
                // Click splits at commas only, so the form its manual
                // gives (`18.26.4.0 2 100`) fails there; bricks takes both.
                let args: Vec<String> = match args.as_slice() {
                    [one] => one.split_whitespace().map(str::to_string).collect(),
                    _ => args,
                };
                let [addr, level, when] = args.as_slice() else {
                    return Err("expecting 3 arguments".into());
                };
                let addr =
                    Ipv4Addr::from_arg(addr.trim()).map_err(|_| "not an IP address".to_string())?;
                let level = parse_int(level)
                    .ok()
                    .filter(|l| (0..4).contains(l))
                    .ok_or("2nd argument specifies a level, between 0 and 3, to annotate")?;
                let when = parse_int(when)
                    .ok()
                    .filter(|w| *w >= 1)
                    .ok_or("3rd argument specifies when this rule expires, must be > 0")?;
                let mut t = self.lock();
                let now = t.handler_epoch();
                let until = now + when as u64 * EPOCHS_PER_SECOND as u64;
                t.set_anno_level(u32::from(addr), level as u32, until);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (IPRateMonitor has `reset`, `memmax`, `anno_level`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("thresh"),
            Handler::r("look"),
            Handler::r("mem"),
            Handler::rw("memmax"),
            Handler::w("anno_level"),
            Handler::w("reset"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, udp};
    use crate::standard::block;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    /// 8 ms, one epoch.
    const EPOCH: u64 = 8_000_000;
    /// The test clock starts at epoch 1000.
    const T0: u64 = 1000 * EPOCH;

    /// A UDP datagram (IPv4, 40 bytes) from `src` to `dst`.
    fn dgram(src: [u8; 4], dst: [u8; 4]) -> Packet {
        let mut p = udp(12);
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        fix_ip_checksum(&mut p);
        Packet::from_slice(&p).unwrap()
    }

    fn monitor(args: &str) -> Harness {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.advance_to(Timestamp(T0));
        h.start();
        h
    }

    fn at_epoch(h: &mut Harness, epoch: u64) {
        h.advance_to(Timestamp(epoch * EPOCH));
    }

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [192, 168, 7, 9];
    const D: [u8; 4] = [172, 16, 0, 1];

    #[test]
    fn look_prints_clicks_format() {
        let mut t = Tree::new(true, RATIO_ONE, 1000, 0, true);
        t.resettime = 1000;
        t.update(0x0a00_0001, 1, true, true, 1000);
        t.update(0x0a00_0001, 1, true, true, 1001);
        t.update(0xc0a8_0709, 1, false, true, 1001);
        t.update(0xc0a8_0709, 1, false, true, 1002);
        // A new counter's rate is 0 until its first epoch closes; then
        // 1 sample per epoch gives 32/1024 per epoch, 3.906 per second,
        // and a second one 63/1024 (reading closes the epoch first).
        assert_eq!(t.look(1002), "2\n10\t7.69\t0\n192\t0\t3.906\n");
        // Reading decays the rates it prints, as Click's `update(0)`.
        assert_eq!(
            t.look(1003),
            "3\n10\t7.446\t0\n192\t0\t7.69\n",
            "one more epoch"
        );
        t.reset(1003);
        assert_eq!(t.look(1003), "0\n");
    }

    #[test]
    fn a_prefix_over_thresh_is_split_and_printed_indented() {
        let mut t = Tree::new(true, RATIO_ONE, 10, 0, true);
        // 4 packets an epoch from A: 500 a second, over 10 in a few epochs.
        for e in 0..50 {
            for _ in 0..4 {
                t.update(0x0a00_0001, 1, true, true, 1000 + e);
            }
        }
        let look = t.look(1050);
        let lines: Vec<&str> = look.lines().collect();
        assert_eq!(lines[0], "1050");
        assert!(lines[1].starts_with("10\t"), "{look}");
        assert!(lines[2].starts_with("\t10.0\t"), "{look}");
        assert!(lines[3].starts_with("\t\t10.0.0\t"), "{look}");
        assert!(lines[4].starts_with("\t\t\t10.0.0.1\t"), "{look}");
        assert_eq!(lines.len(), 5, "{look}");
        // The host's rate approaches 500 a second.
        let (fwd, rev) = t.update(0x0a00_0001, 0, true, false, 1050);
        assert!((300..=500).contains(&fwd), "{fwd}");
        assert_eq!(rev, 0);
        // anno_level stops the tree under 10/8 for 2 seconds.
        t.set_anno_level(0x0a00_0000, 0, 1050 + 250);
        assert_eq!(t.look(1050).lines().count(), 2);
        t.update(0x0a00_0001, 1, true, true, 1051);
        assert_eq!(t.look(1051).lines().count(), 2, "not split again");
        for e in 1301..1330 {
            for _ in 0..4 {
                t.update(0x0a00_0001, 1, true, true, e);
            }
        }
        assert_eq!(t.look(1330).lines().count(), 5, "split once expired");
    }

    #[test]
    fn monitor_then_block_splits_traffic_by_rate() {
        // Click's conf/demo.click pairing: the fast sender is blocked once
        // its rate passes Block's THRESH, the slow one never is.
        let mut mon = monitor("PACKETS, 1, 100");
        let mut blk = Harness::push(&block::CLASS, "100", 1, 2);
        let (mut a0, mut a1, mut b0, mut b1) = (0, 0, 0, 0);
        for e in 1000..1200u64 {
            at_epoch(&mut mon, e);
            let mut pkts: Vec<Packet> = (0..4).map(|_| dgram(A, D)).collect();
            if e % 10 == 0 {
                pkts.push(dgram(B, D));
            }
            mon.push_packets(0, pkts);
            blk.push_packets(0, mon.take(0));
            for (port, (a, b)) in [(0, (&mut a0, &mut b0)), (1, (&mut a1, &mut b1))] {
                for p in blk.take(port) {
                    if p.data()[12] == A[0] {
                        *a += 1;
                    } else {
                        *b += 1;
                    }
                }
            }
        }
        assert_eq!((b0, b1), (20, 0), "the slow sender always passes");
        assert_eq!(a0 + a1, 800);
        assert!(
            a0 < 60 && a1 > 740,
            "fast sender: {a0} passed, {a1} blocked"
        );
        // The last packet of A carries its rate, about 500 a second.
        at_epoch(&mut mon, 1200);
        mon.push_packets(0, [dgram(A, D)]);
        let rate = mon.take(0)[0].anno().flow as i32;
        assert!((400..=500).contains(&rate), "{rate}");
    }

    #[test]
    fn input_1_counts_by_destination_and_leaves_by_output_1() {
        let mut h = Harness::push(&CLASS, "BYTES, 1, 1000000", 2, 2);
        h.advance_to(Timestamp(T0));
        for e in 1000..1010 {
            at_epoch(&mut h, e);
            h.push_packets(1, [dgram(A, D)]);
        }
        let out = h.take(1);
        assert_eq!(out.len(), 10);
        assert!(h.take(0).is_empty());
        // Forward rate of 172/8 is 0: only its reverse rate grows.
        assert_eq!(out[9].anno().flow, 0);
        // Its reverse rate is the second column of `look` (see
        // look_prints_clicks_format); the forward one stays 0.
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn the_tree_is_bounded_against_spoofed_sources() {
        // THRESH 0: every prefix splits as soon as it is seen.
        let mut h = monitor("PACKETS, 1, 0, 100");
        let mut n: u32 = 0x0101_0101;
        for e in 0..40u64 {
            at_epoch(&mut h, 1000 + e * 50);
            let pkts: Vec<Packet> = (0..2000)
                .map(|_| {
                    n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    dgram(n.to_be_bytes(), D)
                })
                .collect();
            h.push_packets(0, pkts);
            assert_eq!(h.take(0).len(), 2000);
            let mem: usize = h.read_handler("mem").unwrap().parse().unwrap();
            assert!(mem <= 100 * 1024, "{mem}");
        }
        assert_eq!(h.read_handler("memmax").unwrap(), "102400");
        // Lowering MEMORY folds at once; 0 brings back the default bound
        // (and reads 0, as Click's unlimited).
        h.write_handler("memmax", "0").unwrap();
        assert_eq!(h.read_handler("memmax").unwrap(), "0");
        h.write_handler("memmax", "100").unwrap();
        let mem: usize = h.read_handler("mem").unwrap().parse().unwrap();
        assert!(mem <= 100 * 1024);
    }

    #[test]
    fn without_memory_the_default_bound_holds() {
        let mut t = Tree::new(true, RATIO_ONE, 0, 0, true);
        let mut n: u32 = 7;
        for i in 0..300_000u64 {
            n = n.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            t.update(n, 1, true, true, 1000 + i / 1000);
            assert!(t.alloced <= DEFAULT_MEMORY_KB * 1024);
        }
        assert!(t.levels.len() * LEVEL_BYTES <= DEFAULT_MEMORY_KB * 1024 + LEVEL_BYTES);
        // A full tree still annotates: with the parent prefix's rate.
        let (fwd, _) = t.update(n ^ 0xff, 1, true, true, 1300);
        assert!(fwd >= 0);
    }

    #[test]
    fn short_packets_pass_unannotated_and_are_counted() {
        let mut h = monitor("PACKETS, 1, 10");
        let mut p = Packet::from_slice(&[0x45, 0, 0, 20, 0, 0]).unwrap();
        p.anno_mut().flow = 7;
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().flow, 7);
        assert_eq!(h.stats().get("short"), Some(1));
    }

    #[test]
    fn anno_false_leaves_the_annotation() {
        let mut h = monitor("PACKETS, 1, 10, 0, false");
        for e in 1000..1100 {
            at_epoch(&mut h, e);
            let mut p = dgram(A, D);
            p.anno_mut().flow = 3;
            h.push_packets(0, [p]);
        }
        assert!(h.take(0).iter().all(|p| p.anno().flow == 3));
    }

    #[test]
    fn handlers_answer_as_clicks() {
        let mut h = monitor("PACKETS, 0.5, 256, 600");
        assert_eq!(h.read_handler("thresh").unwrap(), "128");
        assert_eq!(h.read_handler("memmax").unwrap(), "614400");
        assert_eq!(h.read_handler("look").unwrap(), "0\n");
        h.push_packets(0, [dgram(A, D)]);
        assert_eq!(
            h.write_handler("memmax", "1, 2").unwrap_err(),
            "expecting 1 integer"
        );
        assert_eq!(
            h.write_handler("memmax", "x").unwrap_err(),
            "not an integer"
        );
        assert_eq!(
            h.write_handler("memmax", "1 2").unwrap_err(),
            "not an integer"
        );
        h.write_handler("memmax", "5").unwrap();
        assert_eq!(h.read_handler("memmax").unwrap(), "102400");
        for (bad, msg) in [
            ("1.2.3.4 1", "expecting 3 arguments"),
            ("x 1 1", "not an IP address"),
            (
                "1.2.3.4 4 1",
                "2nd argument specifies a level, between 0 and 3, to annotate",
            ),
            (
                "1.2.3.4 1 0",
                "3rd argument specifies when this rule expires, must be > 0",
            ),
        ] {
            assert_eq!(h.write_handler("anno_level", bad).unwrap_err(), msg);
        }
        h.write_handler("anno_level", "10.0.0.0 0 100").unwrap();
        h.write_handler("anno_level", "10.0.0.0, 0, 100").unwrap();
        h.write_handler("reset", "").unwrap();
        assert!(h.write_handler("look", "").is_err());
        let mem: usize = h.read_handler("mem").unwrap().parse().unwrap();
        assert_eq!(mem, LEVEL_BYTES, "after reset only the /8 level is left");
    }

    #[test]
    fn arguments_are_checked() {
        let ports = |i: usize, o: usize| PortInfo {
            inputs: vec![Processing::Push; i],
            outputs: vec![Processing::Push; o],
        };
        for bad in [
            "FLOWS, 1, 10",
            "PACKETS, 1.5, 10",
            "PACKETS, -1, 10",
            "PACKETS, 1",
            "PACKETS, 1, lots",
            "PACKETS, 1, 10, 100, maybe",
            "PACKETS, 1, 10, 100, true, 3",
            // Click's pre-2000 argument list (conf/demo.click) is refused,
            // as by Click.
            "DST, PACKETS, 0, 10, 30",
        ] {
            assert!(make_element(&CLASS, bad, &ports(1, 1)).is_err(), "{bad}");
        }
        assert!(make_element(&CLASS, "bytes, 0, -5", &ports(1, 1)).is_ok());
        assert!(make_element(&CLASS, "PACKETS, 1, 10", &ports(2, 1)).is_err());
        assert!(make_element(&CLASS, "PACKETS, 1, 10", &ports(1, 2)).is_ok());
    }
}
