//! The flow table of Hardekopf et al. §3-§4: one record per reserved flow,
//! shared by every worker, filled and emptied by the control plane while
//! traffic flows.
//!
//! Two ways to find a packet's record (§3, "flow classification"):
//!
//! - **Tagging**: the packet carries its flow ID (an MPLS label in
//!   bricks), which indexes a direct array of CAPACITY records. One
//!   memory reference; a flow is refused only when its ID is beyond the
//!   array.
//! - **Matching**: the 5-tuple is hashed onto one of BUCKETS chains of
//!   records. A chain holds at most `k` records (the paper's maximum chain
//!   length): a new flow hashed onto a bucket that already holds `k` is
//!   refused and counted, so no lookup ever reads more than `k` records.
//!   [`crate::model`] gives the memory this costs against tagging.
//!
//! A record is 8 words (64 bytes, one cache line, the paper's hash entry
//! of 8 words): a header (live bit and chain link), the key (2 words),
//! the reserved rate, the route (next hop and output, for route selection
//! "look"), and the per-flow state (packets, bytes, last deadline; the
//! paper's 2 words of flow state plus a byte count).
//!
//! # Synchronisation
//!
//! Readers (the workers' classifiers) take no lock and write nothing but
//! per-flow state. Writers (the control plane: the flow file, `add` and
//! `remove`) are serialised by a mutex that readers never touch.
//!
//! - Tag mode: a record is filled with relaxed stores, then published by
//!   a release store of its live bit; a reader's acquire load of the live
//!   bit makes the fields visible. Removal clears the live bit.
//! - Match mode: each bucket has a sequence number (a seqlock). A writer
//!   makes it odd, changes the chain (links a fully written record at the
//!   head, or unlinks one), and makes it even again with a release store.
//!   A reader loads it (acquire), walks at most `k` records, and keeps the
//!   result only if the number is unchanged after an acquire fence;
//!   otherwise it walks again. A record unlinked and reused for another
//!   flow therefore cannot mislead a reader that was on it: its old
//!   bucket's number changed. Every field is an atomic, so a torn read is
//!   never undefined behaviour, only a retry. Freed records are reused
//!   oldest first. After [`MAX_RETRIES`] walks spoilt by writers (a writer
//!   changing the bucket all the time, or descheduled by the kernel in
//!   the middle of a change) a reader takes the writers' mutex and walks
//!   alone: it waits, but never misses a flow (`slow_lookups` counts
//!   these).
//! - A packet carries its record's index from the classifier to the
//!   elements after it (`FlowLookup`, `VirtualClock`). If its flow is
//!   removed in between and the record reused by a new flow, those
//!   elements read the new flow's record. Freed records are reused oldest
//!   first, so this needs CAPACITY minus the live flows further adds
//!   while the packet is between two elements of one worker's batch;
//!   a generation number in the annotation would close it entirely.
//! - Per-flow state: `fetch_add` (relaxed) for the meters, a
//!   compare-and-swap loop for the last deadline (Virtual Clock needs
//!   `max(now, last) + size/rate` as one step, and two workers may carry
//!   packets of one flow). Relaxed suffices: each counter is a single
//!   location whose read-modify-writes are totally ordered, and nothing
//!   else is published through it.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The highest reserved rate a flow may have: 1 Tbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// The most records a table may have (a tag table of this many records
/// is 256 MiB).
pub const MAX_CAPACITY: u32 = 1 << 22;

/// The longest chain a match table may allow.
pub const MAX_K: u32 = 64;

/// Walks a reader makes before it gives a lookup up (see the module doc).
pub const MAX_RETRIES: u32 = 1024;

/// Words in a record, for memory-reference accounting.
pub const RECORD_WORDS: u64 = 8;

/// A 5-tuple: the key of a flow in match mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Source port (0 for protocols without ports).
    pub sport: u16,
    /// Destination port (0 for protocols without ports).
    pub dport: u16,
    /// IP protocol.
    pub proto: u8,
}

impl FiveTuple {
    /// The tuple as the two key words of a record. The second word's low
    /// bit is set, so that no tuple has the key of an empty record.
    #[inline(always)]
    pub fn words(&self) -> (u64, u64) {
        let a = (u64::from(u32::from(self.src)) << 32) | u64::from(u32::from(self.dst));
        let b = (u64::from(self.sport) << 48)
            | (u64::from(self.dport) << 32)
            | (u64::from(self.proto) << 24)
            | 1;
        (a, b)
    }
}

/// How a packet names its flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowKey {
    /// A flow ID carried by the packet (tag mode).
    Tag(u32),
    /// The packet's 5-tuple (match mode).
    Tuple(FiveTuple),
}

impl core::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FlowKey::Tag(t) => write!(f, "tag {t}"),
            FlowKey::Tuple(t) => {
                let proto = match t.proto {
                    6 => "tcp".to_string(),
                    17 => "udp".to_string(),
                    1 => "icmp".to_string(),
                    132 => "sctp".to_string(),
                    136 => "udplite".to_string(),
                    p => format!("proto {p}"),
                };
                if crate::file::has_ports(t.proto) {
                    write!(f, "{proto} {}:{} {}:{}", t.src, t.sport, t.dst, t.dport)
                } else {
                    write!(f, "{proto} {} {}", t.src, t.dst)
                }
            }
        }
    }
}

/// One flow as the control plane gives it (a line of the flow file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSpec {
    /// How packets name it.
    pub key: FlowKey,
    /// Its reserved rate in bit/s, 1 to [`MAX_RATE_BPS`].
    pub rate: u64,
    /// The next hop for route selection "look", if any.
    pub next_hop: Option<Ipv4Addr>,
    /// The output port for route selection "look".
    pub output: u16,
}

/// How the table finds records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A direct array indexed by flow ID.
    Tag,
    /// A hash table of 5-tuples with chains of at most `k` records.
    Match,
}

/// Why a flow could not be added or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowError {
    /// The key is already in the table.
    Duplicate(FlowKey),
    /// Every record is in use (match mode), or the tag is beyond the
    /// array (tag mode).
    Full(FlowKey),
    /// The flow's bucket already holds `k` records.
    Chain(FlowKey, u32),
    /// A tag given to a match table, or a 5-tuple to a tag table.
    WrongKind(FlowKey, Mode),
    /// The rate is 0 or above [`MAX_RATE_BPS`].
    Rate(u64),
    /// No such flow to remove.
    NotFound(FlowKey),
}

impl core::fmt::Display for FlowError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FlowError::Duplicate(k) => write!(f, "{k} is already in the table"),
            FlowError::Full(FlowKey::Tag(t)) => {
                write!(f, "tag {t} is beyond the table (raise CAPACITY)")
            }
            FlowError::Full(k) => write!(f, "{k}: the table is full (raise CAPACITY)"),
            FlowError::Chain(k, n) => write!(
                f,
                "{k}: its bucket already holds {n} flows, the most K allows (raise K or BUCKETS)"
            ),
            FlowError::WrongKind(k, Mode::Tag) => {
                write!(f, "{k}: a tag table (MODE tag) takes `tag N` keys")
            }
            FlowError::WrongKind(k, Mode::Match) => {
                write!(f, "{k}: a match table (MODE match) takes 5-tuple keys")
            }
            FlowError::Rate(r) => write!(f, "rate {r} bit/s is not between 1 and 1 Tbit/s"),
            FlowError::NotFound(k) => write!(f, "{k} is not in the table"),
        }
    }
}

impl std::error::Error for FlowError {}

const LIVE: u64 = 1 << 63;
/// Route word: output port in bits 0-15, next hop in 16-47, its
/// presence in bit 48.
const HAS_NEXT_HOP: u64 = 1 << 48;
/// The chain link in a header: record index + 1, 0 at the end.
const LINK: u64 = 0xffff_ffff;

/// One flow's record: 8 words, one cache line.
#[derive(Default)]
#[repr(C, align(64))]
struct Record {
    /// Live bit and, in match mode, the next record of the chain.
    head: AtomicU64,
    key_a: AtomicU64,
    key_b: AtomicU64,
    rate: AtomicU64,
    /// Next hop, its presence bit, and the output port.
    route: AtomicU64,
    packets: AtomicU64,
    bytes: AtomicU64,
    /// The last deadline given to a packet of the flow, in ns.
    deadline: AtomicU64,
}

/// A match-mode bucket: the chain head and the seqlock number.
#[derive(Default)]
struct Bucket {
    seq: AtomicU32,
    /// Record index + 1, 0 when empty.
    first: AtomicU32,
}

/// What the control plane keeps to itself (under the mutex).
struct Control {
    /// Free records, oldest freed first (match mode).
    free: VecDeque<u32>,
    /// Records in each bucket's chain (match mode).
    lengths: Vec<u8>,
}

/// Counters of the control plane.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableCounters {
    /// Flows in the table now.
    pub flows: u64,
    /// Flows added.
    pub adds: u64,
    /// Flows removed.
    pub removes: u64,
    /// Flows refused because the table was full or the tag beyond it.
    pub rejected_full: u64,
    /// Flows refused because their bucket held `k` already.
    pub rejected_chain: u64,
    /// Lookups that met a writer on [`MAX_RETRIES`] walks in a row and
    /// waited for the control plane's lock.
    pub slow_lookups: u64,
}

/// What a lookup found, and how many records it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The record's index, if the flow is in the table.
    pub index: Option<u32>,
    /// Records read (a walk that had to be repeated counts every record).
    pub probes: u32,
}

/// The route of a flow: where "look" sends its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The next hop, if the flow has one.
    pub next_hop: Option<Ipv4Addr>,
    /// The output port.
    pub output: u16,
}

/// A flow's meters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meters {
    /// Packets seen.
    pub packets: u64,
    /// Bytes seen.
    pub bytes: u64,
    /// The last deadline given, in ns.
    pub deadline: u64,
}

/// The flow table. See the module documentation.
pub struct FlowTable {
    mode: Mode,
    k: u32,
    capacity: u32,
    seed: u64,
    records: Box<[Record]>,
    buckets: Box<[Bucket]>,
    control: Mutex<Control>,
    flows: AtomicU64,
    adds: AtomicU64,
    removes: AtomicU64,
    rejected_full: AtomicU64,
    rejected_chain: AtomicU64,
    slow_lookups: AtomicU64,
}

impl core::fmt::Debug for FlowTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FlowTable")
            .field("mode", &self.mode)
            .field("capacity", &self.capacity)
            .field("k", &self.k)
            .field("buckets", &self.buckets.len())
            .field("flows", &self.flows.load(Ordering::Relaxed))
            .finish()
    }
}

/// A 64-bit mix of two words (a multiply-xorshift finaliser, as in
/// splitmix64), keyed by the table's seed so that an attacker who does not
/// know the seed cannot aim flows at one bucket.
#[inline(always)]
fn mix(a: u64, b: u64, seed: u64) -> u64 {
    let mut h = a ^ seed;
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= b;
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

impl FlowTable {
    /// A tag table of `capacity` records: flow IDs 0 to `capacity - 1`.
    pub fn tag(capacity: u32) -> FlowTable {
        FlowTable::new(Mode::Tag, capacity, 1, 0, 0)
    }

    /// A match table of `capacity` records in `buckets` chains of at most
    /// `k` (`buckets` 0: the next power of two at or above `capacity`),
    /// hashed with `seed`.
    pub fn matching(capacity: u32, k: u32, buckets: u32, seed: u64) -> FlowTable {
        FlowTable::new(Mode::Match, capacity, k, buckets, seed)
    }

    fn new(mode: Mode, capacity: u32, k: u32, buckets: u32, seed: u64) -> FlowTable {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let k = k.clamp(1, MAX_K);
        let nb = match mode {
            Mode::Tag => 0,
            Mode::Match if buckets == 0 => capacity.next_power_of_two(),
            Mode::Match => buckets.min(MAX_CAPACITY),
        };
        FlowTable {
            mode,
            k,
            capacity,
            seed,
            records: (0..capacity).map(|_| Record::default()).collect(),
            buckets: (0..nb).map(|_| Bucket::default()).collect(),
            control: Mutex::new(Control {
                free: (0..if mode == Mode::Match { capacity } else { 0 }).collect(),
                lengths: vec![0; nb as usize],
            }),
            flows: AtomicU64::new(0),
            adds: AtomicU64::new(0),
            removes: AtomicU64::new(0),
            rejected_full: AtomicU64::new(0),
            rejected_chain: AtomicU64::new(0),
            slow_lookups: AtomicU64::new(0),
        }
    }

    /// How the table finds records.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Records in the table.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The longest chain (match mode).
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Buckets (match mode; 0 in tag mode).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The control plane's counters.
    pub fn counters(&self) -> TableCounters {
        TableCounters {
            flows: self.flows.load(Ordering::Relaxed),
            adds: self.adds.load(Ordering::Relaxed),
            removes: self.removes.load(Ordering::Relaxed),
            rejected_full: self.rejected_full.load(Ordering::Relaxed),
            rejected_chain: self.rejected_chain.load(Ordering::Relaxed),
            slow_lookups: self.slow_lookups.load(Ordering::Relaxed),
        }
    }

    #[inline(always)]
    fn bucket_of(&self, a: u64, b: u64) -> usize {
        // Lemire's multiply-shift: any number of buckets, no division.
        ((u128::from(mix(a, b, self.seed)) * self.buckets.len() as u128) >> 64) as usize
    }

    /// The bucket a 5-tuple hashes to (match mode), for tests and models.
    pub fn bucket_of_tuple(&self, t: &FiveTuple) -> usize {
        let (a, b) = t.words();
        self.bucket_of(a, b)
    }

    /// The record of flow ID `tag` (tag mode): one memory reference.
    #[inline(always)]
    pub fn lookup_tag(&self, tag: u32) -> Option<u32> {
        let r = self.records.get(tag as usize)?;
        (r.head.load(Ordering::Acquire) & LIVE != 0).then_some(tag)
    }

    /// The record of a 5-tuple (match mode): at most `k` records read per
    /// walk. Never blocks.
    #[inline(always)]
    pub fn lookup_tuple(&self, t: &FiveTuple) -> Found {
        let (a, b) = t.words();
        let mut probes = 0;
        let Some(bucket) = self.buckets.get(self.bucket_of(a, b)) else {
            return Found {
                index: None,
                probes,
            };
        };
        for _ in 0..MAX_RETRIES {
            let s1 = bucket.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let found = self.walk(bucket, a, b, &mut probes);
            fence(Ordering::Acquire);
            if bucket.seq.load(Ordering::Relaxed) == s1 {
                return Found {
                    index: found,
                    probes,
                };
            }
        }
        // A writer was in this bucket on every walk (or was descheduled
        // in the middle of a change): wait for it, then walk alone.
        self.slow_lookups.fetch_add(1, Ordering::Relaxed);
        let _ctl = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let found = self.walk(bucket, a, b, &mut probes);
        Found {
            index: found,
            probes,
        }
    }

    /// One walk of a chain, at most `k` records.
    #[inline(always)]
    fn walk(&self, bucket: &Bucket, a: u64, b: u64, probes: &mut u32) -> Option<u32> {
        let mut link = u64::from(bucket.first.load(Ordering::Acquire));
        let mut steps = 0;
        while link != 0 && steps < self.k {
            let i = (link - 1) as u32;
            let r = self.records.get(i as usize)?;
            *probes += 1;
            steps += 1;
            if r.key_a.load(Ordering::Relaxed) == a && r.key_b.load(Ordering::Relaxed) == b {
                return Some(i);
            }
            link = r.head.load(Ordering::Relaxed) & LINK;
        }
        None
    }

    /// A record's route. Out-of-range indexes give no next hop and port 0.
    #[inline(always)]
    pub fn route(&self, index: u32) -> Route {
        let w = self
            .records
            .get(index as usize)
            .map_or(0, |r| r.route.load(Ordering::Relaxed));
        Route {
            next_hop: (w & HAS_NEXT_HOP != 0).then(|| Ipv4Addr::from((w >> 16) as u32)),
            output: w as u16,
        }
    }

    /// A record's reserved rate in bit/s (0 for a bad index).
    #[inline(always)]
    pub fn rate(&self, index: u32) -> u64 {
        self.records
            .get(index as usize)
            .map_or(0, |r| r.rate.load(Ordering::Relaxed))
    }

    /// Counts one packet of `bytes` bytes for the flow of record `index`.
    #[inline(always)]
    pub fn meter(&self, index: u32, bytes: u64) {
        if let Some(r) = self.records.get(index as usize) {
            r.packets.fetch_add(1, Ordering::Relaxed);
            r.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Virtual Clock (Zhang, 1990): the deadline of a packet of `bytes`
    /// bytes arriving at `now` ns, `max(now, last) + bytes * 8 / rate`
    /// rounded up ([`crate::deadline::virtual_clock`], so a deadline is
    /// never early), stored as the flow's last deadline in one atomic step. `None` for
    /// a bad index.
    #[inline(always)]
    pub fn stamp_deadline(&self, index: u32, now: u64, bytes: u64) -> Option<u64> {
        let r = self.records.get(index as usize)?;
        let rate = r.rate.load(Ordering::Relaxed).max(1);
        let mut new = 0;
        let _ = r
            .deadline
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                new = crate::deadline::virtual_clock(now, last, bytes, rate);
                Some(new)
            });
        Some(new)
    }

    /// A record's meters.
    pub fn meters(&self, index: u32) -> Meters {
        self.records
            .get(index as usize)
            .map_or(Meters::default(), |r| Meters {
                packets: r.packets.load(Ordering::Relaxed),
                bytes: r.bytes.load(Ordering::Relaxed),
                deadline: r.deadline.load(Ordering::Relaxed),
            })
    }

    fn fill(r: &Record, spec: &FlowSpec, a: u64, b: u64) {
        r.key_a.store(a, Ordering::Relaxed);
        r.key_b.store(b, Ordering::Relaxed);
        r.rate.store(spec.rate, Ordering::Relaxed);
        let route = match spec.next_hop {
            Some(h) => (u64::from(u32::from(h)) << 16) | HAS_NEXT_HOP | u64::from(spec.output),
            None => u64::from(spec.output),
        };
        r.route.store(route, Ordering::Relaxed);
        r.packets.store(0, Ordering::Relaxed);
        r.bytes.store(0, Ordering::Relaxed);
        r.deadline.store(0, Ordering::Relaxed);
    }

    /// Adds a flow; its record index on success. Safe while packets flow.
    pub fn add(&self, spec: &FlowSpec) -> Result<u32, FlowError> {
        if spec.rate == 0 || spec.rate > MAX_RATE_BPS {
            return Err(FlowError::Rate(spec.rate));
        }
        let mut ctl = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let r = match (self.mode, spec.key) {
            (Mode::Tag, FlowKey::Tag(t)) => {
                let Some(r) = self.records.get(t as usize) else {
                    self.rejected_full.fetch_add(1, Ordering::Relaxed);
                    return Err(FlowError::Full(spec.key));
                };
                if r.head.load(Ordering::Relaxed) & LIVE != 0 {
                    return Err(FlowError::Duplicate(spec.key));
                }
                Self::fill(r, spec, u64::from(t), 0);
                r.head.store(LIVE, Ordering::Release);
                Ok(t)
            }
            (Mode::Match, FlowKey::Tuple(t)) => {
                let (a, b) = t.words();
                let bi = self.bucket_of(a, b);
                let bucket = &self.buckets[bi];
                let mut link = u64::from(bucket.first.load(Ordering::Relaxed));
                while link != 0 {
                    let r = &self.records[(link - 1) as usize];
                    if r.key_a.load(Ordering::Relaxed) == a && r.key_b.load(Ordering::Relaxed) == b
                    {
                        return Err(FlowError::Duplicate(spec.key));
                    }
                    link = r.head.load(Ordering::Relaxed) & LINK;
                }
                if u32::from(ctl.lengths[bi]) >= self.k {
                    self.rejected_chain.fetch_add(1, Ordering::Relaxed);
                    return Err(FlowError::Chain(spec.key, self.k));
                }
                let Some(i) = ctl.free.pop_front() else {
                    self.rejected_full.fetch_add(1, Ordering::Relaxed);
                    return Err(FlowError::Full(spec.key));
                };
                let r = &self.records[i as usize];
                let s = bucket.seq.load(Ordering::Relaxed);
                bucket.seq.store(s.wrapping_add(1), Ordering::Relaxed);
                fence(Ordering::Release);
                Self::fill(r, spec, a, b);
                r.head.store(
                    LIVE | u64::from(bucket.first.load(Ordering::Relaxed)),
                    Ordering::Relaxed,
                );
                bucket.first.store(i + 1, Ordering::Release);
                bucket.seq.store(s.wrapping_add(2), Ordering::Release);
                ctl.lengths[bi] += 1;
                Ok(i)
            }
            (mode, key) => return Err(FlowError::WrongKind(key, mode)),
        };
        self.flows.fetch_add(1, Ordering::Relaxed);
        self.adds.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Removes a flow; its packets are unknown from now on. Safe while
    /// packets flow.
    pub fn remove(&self, key: &FlowKey) -> Result<(), FlowError> {
        let mut ctl = self.control.lock().unwrap_or_else(|e| e.into_inner());
        match (self.mode, *key) {
            (Mode::Tag, FlowKey::Tag(t)) => {
                let r = self
                    .records
                    .get(t as usize)
                    .filter(|r| r.head.load(Ordering::Relaxed) & LIVE != 0)
                    .ok_or(FlowError::NotFound(*key))?;
                r.head.store(0, Ordering::Release);
            }
            (Mode::Match, FlowKey::Tuple(t)) => {
                let (a, b) = t.words();
                let bi = self.bucket_of(a, b);
                let bucket = &self.buckets[bi];
                let mut prev: Option<&Record> = None;
                let mut link = u64::from(bucket.first.load(Ordering::Relaxed));
                loop {
                    if link == 0 {
                        return Err(FlowError::NotFound(*key));
                    }
                    let i = (link - 1) as u32;
                    let r = &self.records[i as usize];
                    let next = r.head.load(Ordering::Relaxed) & LINK;
                    if r.key_a.load(Ordering::Relaxed) == a && r.key_b.load(Ordering::Relaxed) == b
                    {
                        let s = bucket.seq.load(Ordering::Relaxed);
                        bucket.seq.store(s.wrapping_add(1), Ordering::Relaxed);
                        fence(Ordering::Release);
                        match prev {
                            Some(p) => {
                                let h = p.head.load(Ordering::Relaxed);
                                p.head.store((h & !LINK) | next, Ordering::Relaxed);
                            }
                            None => bucket.first.store(next as u32, Ordering::Relaxed),
                        }
                        r.head.store(next, Ordering::Relaxed);
                        r.key_a.store(0, Ordering::Relaxed);
                        r.key_b.store(0, Ordering::Relaxed);
                        bucket.seq.store(s.wrapping_add(2), Ordering::Release);
                        ctl.lengths[bi] -= 1;
                        ctl.free.push_back(i);
                        break;
                    }
                    prev = Some(r);
                    link = next;
                }
            }
            (mode, key) => return Err(FlowError::WrongKind(key, mode)),
        }
        self.flows.fetch_sub(1, Ordering::Relaxed);
        self.removes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The record of `key`, whichever the mode (control plane and tests).
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        match (self.mode, key) {
            (Mode::Tag, FlowKey::Tag(t)) => self.lookup_tag(*t),
            (Mode::Match, FlowKey::Tuple(t)) => self.lookup_tuple(t).index,
            _ => None,
        }
    }

    /// Every live flow, as `(record index, spec)`, for `list` handlers.
    pub fn flows(&self) -> Vec<(u32, FlowSpec)> {
        let _ctl = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            if r.head.load(Ordering::Relaxed) & LIVE == 0 {
                continue;
            }
            let a = r.key_a.load(Ordering::Relaxed);
            let b = r.key_b.load(Ordering::Relaxed);
            let key = match self.mode {
                Mode::Tag => FlowKey::Tag(a as u32),
                Mode::Match => FlowKey::Tuple(FiveTuple {
                    src: Ipv4Addr::from((a >> 32) as u32),
                    dst: Ipv4Addr::from(a as u32),
                    sport: (b >> 48) as u16,
                    dport: (b >> 32) as u16,
                    proto: (b >> 24) as u8,
                }),
            };
            let route = self.route(i as u32);
            out.push((
                i as u32,
                FlowSpec {
                    key,
                    rate: r.rate.load(Ordering::Relaxed),
                    next_hop: route.next_hop,
                    output: route.output,
                },
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
