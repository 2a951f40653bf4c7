//! Traffic splitting in software: which worker a received frame goes to.
//!
//! A multi-queue NIC splits traffic across cores three ways (NIC paper §3):
//! by a hash of the 5-tuple (RSS), by destination MAC (VMDq) and by exact
//! flow (Flow Director). Where the device cannot split, bricks' dispatcher
//! ([`crate::dispatch`], the paper's "serial NIC", §4.2) does the same in
//! software with this module, checking in the order a Flow Director NIC
//! does: an exact flow rule first, then a MAC rule, then RSS.
//!
//! - **RSS** is Microsoft's Toeplitz hash ("Verifying the RSS Hash
//!   Calculation") over source address, destination address, source port,
//!   destination port for TCP and UDP, and over the two addresses for other
//!   protocols and for fragments (so that every fragment of a datagram
//!   lands where its first one does). The low bits of the hash index an
//!   indirection table (RETA, [`DEFAULT_RETA_SIZE`] entries) whose entries
//!   name workers; `queues N` spreads the table over workers `0..N`, which
//!   is how the paper's wish list (§4.3, "runtime configuration") shrinks
//!   or grows the set of busy cores while traffic flows. Frames that are not
//!   IPv4 or IPv6 hash to 0 and so go to the worker of entry 0, as a NIC
//!   sends what it cannot parse to queue 0.
//! - **MAC rules** map a destination MAC to a worker (one virtual router or
//!   guest per worker).
//! - **Flow rules** map one TCP or UDP 5-tuple to a worker.
//!
//! The rules live in an immutable [`SteeringRules`] snapshot. A control
//! thread builds a new snapshot and publishes it with one pointer swap
//! (`arc-swap`); the dispatcher loads the current one once per batch and
//! never locks. A change therefore only decides where the *next* packets
//! go: nothing already handed to a worker moves, and nothing is lost.
//!
//! ## The symmetric key
//!
//! [`RssKey::SYMMETRIC`] is the 16-bit pattern `6d5a` repeated (Woo and
//! Park, "Scalable TCP Session Monitoring with Symmetric Receive-side
//! Scaling"). A Toeplitz hash XORs, for each set input bit `i`, the 32 key
//! bits starting at bit `i`; with a key of period 16 that window depends on
//! `i mod 16` only. Swapping source and destination moves address bits by
//! 32 (IPv4) or 128 (IPv6) positions and port bits by 16, all multiples of
//! 16, so `hash(a, b) == hash(b, a)`: both directions of a connection meet
//! at one worker, which a stateful function (NAT, a firewall) needs. The
//! price: the hash then depends only on the XOR of the input's 16-bit
//! words, so it has at most 65,536 values and flows whose words XOR to the
//! same value collide. That is plenty for a 128-entry table, not for
//! anything that needs a strong hash.

use arc_swap::{ArcSwap, Guard};
use bricks_packet::Batch;
use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Packet, Ipv6Packet, VlanPacket,
};
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// Length of an RSS key in bytes (Microsoft's, and most NICs').
pub const KEY_LEN: usize = 40;
/// Longest hash input: an IPv6 4-tuple (16 + 16 + 2 + 2 bytes). A 40-byte
/// key has a 32-bit window for every bit of it.
pub const MAX_INPUT_LEN: usize = KEY_LEN - 4;
/// Entries of the indirection table unless told otherwise (82599's size).
pub const DEFAULT_RETA_SIZE: usize = 128;
/// Most workers a [`Steering`] serves: a worker index is one byte in
/// [`Steering::classify_batch`]'s output.
pub const MAX_WORKERS: usize = 256;

/// IPv6 extension headers walked at most to find the TCP or UDP ports.
const MAX_IPV6_EXTENSIONS: usize = 4;

/// A 40-byte Toeplitz key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RssKey(pub [u8; KEY_LEN]);

impl RssKey {
    /// Microsoft's key, the one the published verification vectors use
    /// and the default of most drivers.
    pub const MICROSOFT: RssKey = RssKey([
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f,
        0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
    ]);

    /// `6d5a` repeated: `hash(a, b) == hash(b, a)` (see the module doc for
    /// why, and what it costs).
    pub const SYMMETRIC: RssKey = RssKey(symmetric_key());
}

const fn symmetric_key() -> [u8; KEY_LEN] {
    let mut key = [0; KEY_LEN];
    let mut i = 0;
    while i < KEY_LEN {
        key[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    key
}

impl Default for RssKey {
    fn default() -> Self {
        RssKey::MICROSOFT
    }
}

impl FromStr for RssKey {
    type Err = SteerError;

    /// 80 hexadecimal digits, optionally with `:` between bytes as
    /// `ethtool -x` prints them.
    fn from_str(s: &str) -> Result<RssKey, SteerError> {
        let digits: Vec<u8> = s.bytes().filter(|&b| b != b':').collect();
        let bad = || SteerError::BadKey(s.to_string());
        if digits.len() != 2 * KEY_LEN {
            return Err(bad());
        }
        let mut key = [0u8; KEY_LEN];
        for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(RssKey(key))
    }
}

impl fmt::Display for RssKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for RssKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RssKey({self})")
    }
}

/// The Toeplitz hash of one key, ready to use.
///
/// The definition walks the input bit by bit and XORs the 32-bit key
/// window at every set bit: 288 steps with a branch each for an IPv6
/// 4-tuple. But the windows a byte at input position `p` can select are
/// fixed by `p` and the key, so the XOR for each of its 256 values is
/// computed once, when the key is set: hashing is then one table load and
/// one XOR per input byte (12 for an IPv4 4-tuple, 36 for IPv6), the way
/// FreeBSD's and DPDK's software RSS do it. The tables take 36 x 1 KiB;
/// an IPv4 packet touches 12 of them, and rows are only read, so they stay
/// in the dispatcher core's cache.
pub struct Toeplitz {
    key: RssKey,
    table: Box<[[u32; 256]; MAX_INPUT_LEN]>,
}

/// The 32 key bits starting at bit `bit` (bit 0 is the first byte's most
/// significant).
fn window(key: &[u8; KEY_LEN], bit: usize) -> u32 {
    let (byte, shift) = (bit / 8, bit % 8);
    let wide = key[byte..byte + 5]
        .iter()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    (wide >> (8 - shift)) as u32
}

impl Toeplitz {
    /// Precomputes the per-byte tables of `key`.
    pub fn new(key: RssKey) -> Toeplitz {
        let mut table: Box<[[u32; 256]; MAX_INPUT_LEN]> = vec![[0u32; 256]; MAX_INPUT_LEN]
            .into_boxed_slice()
            .try_into()
            .expect("MAX_INPUT_LEN rows");
        for (pos, row) in table.iter_mut().enumerate() {
            let windows: [u32; 8] = core::array::from_fn(|bit| window(&key.0, pos * 8 + bit));
            for (value, slot) in row.iter_mut().enumerate() {
                *slot = (0..8)
                    .filter(|bit| value & (0x80 >> bit) != 0)
                    .fold(0, |h, bit| h ^ windows[bit]);
            }
        }
        Toeplitz { key, table }
    }

    /// The key.
    pub fn key(&self) -> &RssKey {
        &self.key
    }

    /// The hash of `input`.
    ///
    /// # Panics
    /// If `input` is longer than [`MAX_INPUT_LEN`] bytes.
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        assert!(
            input.len() <= MAX_INPUT_LEN,
            "Toeplitz input of {} bytes exceeds {MAX_INPUT_LEN}",
            input.len()
        );
        self.table
            .iter()
            .zip(input)
            .fold(0, |h, (row, &b)| h ^ row[usize::from(b)])
    }

    /// The hash contribution of `bytes` placed at input offset `OFFSET`:
    /// fixed sizes and offsets, so the loop unrolls without bounds checks.
    #[inline(always)]
    fn fold<const OFFSET: usize, const N: usize>(&self, bytes: &[u8; N]) -> u32 {
        let rows: &[[u32; 256]; N] = self.table[OFFSET..OFFSET + N]
            .try_into()
            .expect("constant range");
        let mut h = 0;
        for i in 0..N {
            h ^= rows[i][usize::from(bytes[i])];
        }
        h
    }

    /// The RSS hash of a parsed frame.
    #[inline]
    fn hash_tuple(&self, t: &Tuple) -> u32 {
        match t {
            Tuple::None => 0,
            Tuple::V4 { addrs, ports, .. } => {
                let h = self.fold::<0, 8>(addrs);
                match ports {
                    Some(p) => h ^ self.fold::<8, 4>(p),
                    None => h,
                }
            }
            Tuple::V6 { addrs, ports, .. } => {
                let h = self.fold::<0, 32>(addrs);
                match ports {
                    Some(p) => h ^ self.fold::<32, 4>(p),
                    None => h,
                }
            }
        }
    }
}

impl fmt::Debug for Toeplitz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toeplitz").field("key", &self.key).finish()
    }
}

/// What RSS hashes, in hash-input order, borrowed from the frame: in both
/// IPv4 and IPv6 the source and destination addresses are adjacent, and so
/// are the two ports, so nothing is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Tuple<'a> {
    /// Not IPv4 or IPv6, or too short to read.
    None,
    /// Source and destination address; the ports for unfragmented TCP and
    /// UDP.
    V4 {
        addrs: &'a [u8; 8],
        proto: u8,
        ports: Option<&'a [u8; 4]>,
    },
    /// The same for IPv6.
    V6 {
        addrs: &'a [u8; 32],
        proto: u8,
        ports: Option<&'a [u8; 4]>,
    },
}

impl<'a> Tuple<'a> {
    /// Reads an Ethernet frame, behind up to two VLAN tags.
    #[inline]
    fn parse(frame: &'a [u8]) -> Tuple<'a> {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return Tuple::None;
        };
        let mut ethertype = eth.ethertype();
        let mut l3 = eth.payload();
        // 802.1ad outside, 802.1Q inside: a NIC's RSS parser skips both.
        for _ in 0..2 {
            if ethertype != EtherType::VLAN && ethertype != EtherType::QINQ {
                break;
            }
            let Ok(tag) = VlanPacket::new_checked(l3) else {
                return Tuple::None;
            };
            ethertype = tag.ethertype();
            l3 = tag.payload();
        }
        match ethertype {
            EtherType::IPV4 => Tuple::parse_v4(l3),
            EtherType::IPV6 => Tuple::parse_v6(l3),
            _ => Tuple::None,
        }
    }

    #[inline]
    fn parse_v4(l3: &'a [u8]) -> Tuple<'a> {
        let Ok(ip) = Ipv4Packet::new_checked(l3) else {
            return Tuple::None;
        };
        // `check_len` passed: the fixed header is there.
        let Some(fixed) = l3.first_chunk::<{ bricks_wire::ipv4::HEADER_LEN }>() else {
            return Tuple::None;
        };
        if ip.version() != 4 {
            return Tuple::None;
        }
        let addrs = fixed[12..20].try_into().expect("8 bytes");
        let proto = ip.next_header();
        let ports = if is_tcp_or_udp(proto) && !ip.is_fragment() {
            ip.payload().first_chunk::<4>()
        } else {
            None
        };
        Tuple::V4 {
            addrs,
            proto: proto.0,
            ports,
        }
    }

    #[inline]
    fn parse_v6(l3: &'a [u8]) -> Tuple<'a> {
        let Ok(ip) = Ipv6Packet::new_checked(l3) else {
            return Tuple::None;
        };
        let Some(fixed) = l3.first_chunk::<{ bricks_wire::ipv6::HEADER_LEN }>() else {
            return Tuple::None;
        };
        if ip.version() != 6 {
            return Tuple::None;
        }
        let addrs = fixed[8..40].try_into().expect("32 bytes");
        let mut next = ip.next_header();
        let mut rest = ip.payload();
        let mut ports = None;
        // Hop-by-hop, routing and destination options headers may sit
        // before TCP or UDP. A fragment header ends the walk: fragments
        // hash on the addresses only, like IPv4 ones.
        for _ in 0..=MAX_IPV6_EXTENSIONS {
            match next {
                IpProtocol::TCP | IpProtocol::UDP => {
                    ports = rest.first_chunk::<4>();
                    break;
                }
                IpProtocol::HOPOPT | IpProtocol::IPV6_ROUTE | IpProtocol::IPV6_OPTS => {
                    let Some(&[nh, len]) = rest.first_chunk::<2>() else {
                        break;
                    };
                    let Some(after) = rest.get((usize::from(len) + 1) * 8..) else {
                        break;
                    };
                    next = IpProtocol(nh);
                    rest = after;
                }
                _ => break,
            }
        }
        Tuple::V6 {
            addrs,
            proto: next.0,
            ports,
        }
    }
}

#[inline(always)]
fn is_tcp_or_udp(p: IpProtocol) -> bool {
    p == IpProtocol::TCP || p == IpProtocol::UDP
}

/// The transport protocol of a flow rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlowProto {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl FlowProto {
    fn number(self) -> u8 {
        match self {
            FlowProto::Tcp => IpProtocol::TCP.0,
            FlowProto::Udp => IpProtocol::UDP.0,
        }
    }
}

impl fmt::Display for FlowProto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlowProto::Tcp => "tcp",
            FlowProto::Udp => "udp",
        })
    }
}

impl FromStr for FlowProto {
    type Err = SteerError;
    fn from_str(s: &str) -> Result<FlowProto, SteerError> {
        match s {
            "tcp" => Ok(FlowProto::Tcp),
            "udp" => Ok(FlowProto::Udp),
            _ => Err(SteerError::BadProto(s.to_string())),
        }
    }
}

/// One direction of a TCP or UDP flow: what a flow rule matches exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey {
    /// TCP or UDP.
    pub proto: FlowProto,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port; the same family as `src`.
    pub dst: SocketAddr,
}

/// A flow rule's tuple in the bytes a matching frame carries.
#[derive(Debug, Clone, Copy)]
struct RuleTuple {
    /// Source then destination address (IPv4: the first 8 bytes).
    addrs: [u8; 32],
    v6: bool,
    proto: u8,
    ports: [u8; 4],
}

impl RuleTuple {
    fn new(key: &FlowKey) -> RuleTuple {
        let mut t = RuleTuple {
            addrs: [0; 32],
            v6: key.src.is_ipv6(),
            proto: key.proto.number(),
            ports: [0; 4],
        };
        t.ports[..2].copy_from_slice(&key.src.port().to_be_bytes());
        t.ports[2..].copy_from_slice(&key.dst.port().to_be_bytes());
        match (key.src.ip(), key.dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                t.addrs[..4].copy_from_slice(&s.octets());
                t.addrs[4..8].copy_from_slice(&d.octets());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                t.addrs[..16].copy_from_slice(&s.octets());
                t.addrs[16..].copy_from_slice(&d.octets());
            }
            // Mixed families are refused when the rule is parsed.
            _ => {}
        }
        t
    }

    /// The tuple a matching frame parses to.
    fn as_tuple(&self) -> Tuple<'_> {
        if self.v6 {
            Tuple::V6 {
                addrs: &self.addrs,
                proto: self.proto,
                ports: Some(&self.ports),
            }
        } else {
            Tuple::V4 {
                addrs: self.addrs[..8].try_into().expect("8 bytes"),
                proto: self.proto,
                ports: Some(&self.ports),
            }
        }
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.proto, self.src, self.dst)
    }
}

/// The rules whose tuples share the low bits of their hash, with their
/// workers.
type FlowBucket = Box<[(RuleTuple, u8)]>;

/// Flow rules indexed by the RSS hash of their tuple, as Flow Director
/// indexes its perfect filters by a hash: the dispatcher has the hash
/// anyway, so a lookup is one bucket and usually one comparison.
#[derive(Clone, Default)]
struct FlowIndex {
    buckets: Box<[FlowBucket]>,
    mask: u32,
}

impl FlowIndex {
    fn build(rules: &BTreeMap<FlowKey, u8>, toeplitz: &Toeplitz) -> FlowIndex {
        if rules.is_empty() {
            return FlowIndex::default();
        }
        let size = (rules.len() * 2).next_power_of_two();
        let mut buckets = vec![Vec::new(); size];
        for (key, &worker) in rules {
            let t = RuleTuple::new(key);
            let h = toeplitz.hash_tuple(&t.as_tuple());
            buckets[h as usize & (size - 1)].push((t, worker));
        }
        FlowIndex {
            buckets: buckets.into_iter().map(Vec::into_boxed_slice).collect(),
            mask: (size - 1) as u32,
        }
    }

    #[inline(always)]
    fn get(&self, t: &Tuple, hash: u32) -> Option<u8> {
        if self.buckets.is_empty() {
            return None;
        }
        self.buckets[(hash & self.mask) as usize]
            .iter()
            .find(|(rule, _)| rule.as_tuple() == *t)
            .map(|&(_, w)| w)
    }
}

/// One immutable set of steering rules: what a dispatcher consults for a
/// batch.
#[derive(Clone)]
pub struct SteeringRules {
    workers: usize,
    toeplitz: Arc<Toeplitz>,
    queues: usize,
    reta: Box<[u8]>,
    reta_mask: u32,
    macs: Vec<([u8; 6], u8)>,
    flows: BTreeMap<FlowKey, u8>,
    flow_index: FlowIndex,
}

impl SteeringRules {
    fn new(workers: usize, reta_size: usize) -> SteeringRules {
        let mut rules = SteeringRules {
            workers,
            toeplitz: Arc::new(Toeplitz::new(RssKey::MICROSOFT)),
            queues: workers,
            reta: vec![0; reta_size].into_boxed_slice(),
            reta_mask: (reta_size - 1) as u32,
            macs: Vec::new(),
            flows: BTreeMap::new(),
            flow_index: FlowIndex::default(),
        };
        rules.set_queues(workers);
        rules
    }

    /// Spreads the indirection table over workers `0..n` round-robin.
    fn set_queues(&mut self, n: usize) {
        self.queues = n;
        for (i, e) in self.reta.iter_mut().enumerate() {
            *e = (i % n) as u8;
        }
    }

    /// Workers the rules may name.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Workers RSS spreads over (`queues N`).
    pub fn queues(&self) -> usize {
        self.queues
    }

    /// The Toeplitz key.
    pub fn key(&self) -> &RssKey {
        self.toeplitz.key()
    }

    /// The indirection table: entry `hash % len` names the worker.
    pub fn reta(&self) -> &[u8] {
        &self.reta
    }

    /// The RSS hash of an Ethernet frame (0 if it is not IPv4 or IPv6).
    #[inline]
    pub fn hash(&self, frame: &[u8]) -> u32 {
        self.toeplitz.hash_tuple(&Tuple::parse(frame))
    }

    /// The worker `frame` goes to: a flow rule's, else a MAC rule's, else
    /// the indirection table's entry for the RSS hash.
    #[inline]
    pub fn worker_for(&self, frame: &[u8]) -> usize {
        usize::from(self.steer(frame))
    }

    #[inline(always)]
    fn steer(&self, frame: &[u8]) -> u8 {
        // Without flow rules a MAC rule decides before any hashing.
        if self.flow_index.buckets.is_empty() {
            if let Some(w) = self.mac_rule(frame) {
                return w;
            }
            let h = self.hash(frame);
            return self.reta[(h & self.reta_mask) as usize];
        }
        let t = Tuple::parse(frame);
        let h = self.toeplitz.hash_tuple(&t);
        if let Some(w) = self.flow_index.get(&t, h) {
            return w;
        }
        if let Some(w) = self.mac_rule(frame) {
            return w;
        }
        self.reta[(h & self.reta_mask) as usize]
    }

    #[inline(always)]
    fn mac_rule(&self, frame: &[u8]) -> Option<u8> {
        if self.macs.is_empty() {
            return None;
        }
        let dst = frame.first_chunk::<6>()?;
        self.macs
            .binary_search_by(|(m, _)| m.cmp(dst))
            .ok()
            .map(|i| self.macs[i].1)
    }

    /// Writes the worker of each packet of `batch` to `out`, in order.
    ///
    /// # Panics
    /// If `out` is shorter than the batch.
    #[inline]
    pub fn classify_batch(&self, batch: &Batch, out: &mut [u8]) {
        assert!(out.len() >= batch.len(), "classify_batch: output too short");
        for (p, o) in batch.iter().zip(out.iter_mut()) {
            *o = self.steer(p.data());
        }
    }
}

impl fmt::Debug for SteeringRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// The rules as the commands that rebuild them, one a line.
impl fmt::Display for SteeringRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.key() {
            RssKey::MICROSOFT => writeln!(f, "key default")?,
            RssKey::SYMMETRIC => writeln!(f, "key symmetric")?,
            key => writeln!(f, "key {key}")?,
        }
        write!(f, "queues {}", self.queues)?;
        for (mac, w) in &self.macs {
            write!(f, "\nmac {} {w}", EthernetAddress(*mac))?;
        }
        for (flow, w) in &self.flows {
            write!(f, "\nflow {flow} {w}")?;
        }
        Ok(())
    }
}

/// One change to the steering rules, or a request to see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SteerCommand {
    /// `key HEX` | `key symmetric` | `key default`.
    Key(RssKey),
    /// `queues N`: spread RSS over workers `0..N`.
    Queues(usize),
    /// `mac ADDR WORKER`.
    Mac(EthernetAddress, usize),
    /// `mac del ADDR`.
    MacDel(EthernetAddress),
    /// `flow tcp|udp SRC:PORT DST:PORT WORKER`.
    Flow(FlowKey, usize),
    /// `flow del tcp|udp SRC:PORT DST:PORT`.
    FlowDel(FlowKey),
    /// `show`: the rules, as the commands that rebuild them.
    Show,
}

const USAGE_KEY: &str = "key HEX80 | key symmetric | key default";
const USAGE_QUEUES: &str = "queues N";
const USAGE_MAC: &str = "mac AA:BB:CC:DD:EE:FF WORKER | mac del AA:BB:CC:DD:EE:FF";
const USAGE_FLOW: &str =
    "flow tcp|udp SRC:PORT DST:PORT WORKER | flow del tcp|udp SRC:PORT DST:PORT";
const USAGE_SHOW: &str = "show";

impl FromStr for SteerCommand {
    type Err = SteerError;

    fn from_str(line: &str) -> Result<SteerCommand, SteerError> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&verb, args)) = words.split_first() else {
            return Err(SteerError::Empty);
        };
        match (verb, args) {
            ("key", ["default"]) => Ok(SteerCommand::Key(RssKey::MICROSOFT)),
            ("key", ["symmetric"]) => Ok(SteerCommand::Key(RssKey::SYMMETRIC)),
            ("key", [hex]) => Ok(SteerCommand::Key(hex.parse()?)),
            ("key", _) => Err(SteerError::Usage(USAGE_KEY)),
            ("queues", [n]) => Ok(SteerCommand::Queues(number("queues", n)?)),
            ("queues", _) => Err(SteerError::Usage(USAGE_QUEUES)),
            ("mac", ["del", mac]) => Ok(SteerCommand::MacDel(parse_mac(mac)?)),
            ("mac", [mac, worker]) if *mac != "del" => Ok(SteerCommand::Mac(
                parse_mac(mac)?,
                number("worker", worker)?,
            )),
            ("mac", _) => Err(SteerError::Usage(USAGE_MAC)),
            ("flow", ["del", proto, src, dst]) => {
                Ok(SteerCommand::FlowDel(parse_flow(proto, src, dst)?))
            }
            ("flow", [proto, src, dst, worker]) if *proto != "del" => Ok(SteerCommand::Flow(
                parse_flow(proto, src, dst)?,
                number("worker", worker)?,
            )),
            ("flow", _) => Err(SteerError::Usage(USAGE_FLOW)),
            ("show", []) => Ok(SteerCommand::Show),
            ("show", _) => Err(SteerError::Usage(USAGE_SHOW)),
            _ => Err(SteerError::UnknownCommand(verb.to_string())),
        }
    }
}

fn number(what: &'static str, text: &str) -> Result<usize, SteerError> {
    text.parse().map_err(|_| SteerError::BadNumber {
        what,
        given: text.to_string(),
    })
}

fn parse_mac(text: &str) -> Result<EthernetAddress, SteerError> {
    text.parse()
        .map_err(|_| SteerError::BadMac(text.to_string()))
}

fn parse_flow(proto: &str, src: &str, dst: &str) -> Result<FlowKey, SteerError> {
    let proto = proto.parse()?;
    let endpoint = |s: &str| -> Result<SocketAddr, SteerError> {
        s.parse()
            .map_err(|_| SteerError::BadEndpoint(s.to_string()))
    };
    let (src, dst) = (endpoint(src)?, endpoint(dst)?);
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(SteerError::MixedFamilies { src, dst });
    }
    Ok(FlowKey { proto, src, dst })
}

/// Why a steering command was refused. Nothing changes when one is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SteerError {
    /// The command line is empty.
    Empty,
    /// The first word is not a command.
    UnknownCommand(String),
    /// A command has the wrong words; the text is its usage.
    Usage(&'static str),
    /// A key that is not 40 bytes in hexadecimal.
    BadKey(String),
    /// A count or worker index that is not a number.
    BadNumber {
        /// What the number was for.
        what: &'static str,
        /// The text given.
        given: String,
    },
    /// `queues` outside `1..=workers`.
    QueuesOutOfRange {
        /// The count given.
        queues: usize,
        /// Workers there are.
        workers: usize,
    },
    /// A rule names a worker that does not exist.
    NoSuchWorker {
        /// The index given.
        worker: usize,
        /// Workers there are.
        workers: usize,
    },
    /// Not a MAC address.
    BadMac(String),
    /// A flow protocol other than `tcp` or `udp`.
    BadProto(String),
    /// Not `ADDRESS:PORT` (`[ADDRESS]:PORT` for IPv6).
    BadEndpoint(String),
    /// A flow from an IPv4 endpoint to an IPv6 one, or the reverse.
    MixedFamilies {
        /// The source given.
        src: SocketAddr,
        /// The destination given.
        dst: SocketAddr,
    },
    /// `mac del` of an address that has no rule.
    NoSuchMac(EthernetAddress),
    /// `flow del` of a flow that has no rule.
    NoSuchFlow(FlowKey),
}

impl fmt::Display for SteerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SteerError::Empty => {
                write!(f, "empty command: expected key, queues, mac, flow or show")
            }
            SteerError::UnknownCommand(w) => write!(
                f,
                "unknown command `{w}`: expected key, queues, mac, flow or show"
            ),
            SteerError::Usage(usage) => write!(f, "wrong arguments: usage: {usage}"),
            SteerError::BadKey(k) => write!(
                f,
                "bad key `{k}`: expected {KEY_LEN} bytes as {} hex digits \
                 (`:` between bytes allowed), `symmetric` or `default`",
                2 * KEY_LEN
            ),
            SteerError::BadNumber { what, given } => {
                write!(f, "bad {what} `{given}`: expected a number")
            }
            SteerError::QueuesOutOfRange { queues, workers } => write!(
                f,
                "queues {queues}: expected 1 to {workers} (the number of workers)"
            ),
            SteerError::NoSuchWorker { worker, workers } => write!(
                f,
                "worker {worker} does not exist: expected 0 to {}",
                workers - 1
            ),
            SteerError::BadMac(m) => write!(
                f,
                "bad MAC address `{m}`: expected six hex octets such as 02:00:00:00:00:01"
            ),
            SteerError::BadProto(p) => write!(f, "bad flow protocol `{p}`: expected tcp or udp"),
            SteerError::BadEndpoint(e) => write!(
                f,
                "bad endpoint `{e}`: expected ADDRESS:PORT such as 10.0.0.1:53 \
                 or [2001:db8::1]:53"
            ),
            SteerError::MixedFamilies { src, dst } => write!(
                f,
                "flow {src} -> {dst} mixes IPv4 and IPv6: expected both ends in one family"
            ),
            SteerError::NoSuchMac(m) => write!(f, "no rule for MAC {m} to delete"),
            SteerError::NoSuchFlow(k) => write!(f, "no rule for flow {k} to delete"),
        }
    }
}

impl std::error::Error for SteerError {}

/// The steering rules of one dispatcher, shared with the threads that
/// change them.
///
/// Readers (`worker_for`, `classify_batch`, `rules`) never lock and never
/// wait. Writers (`apply`, `execute`) take a mutex among themselves, copy
/// the current snapshot, change the copy and publish it, so concurrent
/// commands never lose each other's changes and a reader sees either all
/// of a command or none of it.
pub struct Steering {
    rules: ArcSwap<SteeringRules>,
    writer: Mutex<()>,
}

impl Steering {
    /// Rules for `workers` workers: Microsoft's key, RSS over all of them
    /// through a [`DEFAULT_RETA_SIZE`]-entry table, no MAC or flow rules.
    ///
    /// # Panics
    /// If `workers` is 0 or more than [`MAX_WORKERS`].
    pub fn new(workers: usize) -> Steering {
        Steering::with_reta_size(workers, DEFAULT_RETA_SIZE)
    }

    /// The same with an indirection table of `reta_size` entries.
    ///
    /// # Panics
    /// If `workers` is 0 or more than [`MAX_WORKERS`], or `reta_size` is
    /// not a power of two at least `workers`.
    pub fn with_reta_size(workers: usize, reta_size: usize) -> Steering {
        assert!(
            (1..=MAX_WORKERS).contains(&workers),
            "Steering: {workers} workers, expected 1 to {MAX_WORKERS}"
        );
        assert!(
            reta_size.is_power_of_two() && reta_size >= workers,
            "Steering: table of {reta_size} entries, expected a power of two at least {workers}"
        );
        Steering {
            rules: ArcSwap::from_pointee(SteeringRules::new(workers, reta_size)),
            writer: Mutex::new(()),
        }
    }

    /// Workers the rules may name.
    pub fn workers(&self) -> usize {
        self.rules.load().workers
    }

    /// The current rules. Hold them for a batch, not longer: a newer
    /// snapshot may already be in force.
    #[inline]
    pub fn rules(&self) -> Guard<Arc<SteeringRules>> {
        self.rules.load()
    }

    /// The worker `frame` goes to under the current rules.
    ///
    /// Each call loads the current snapshot, which costs more than the
    /// classification itself (about 16 ns against 13 in the benchmark): for
    /// more than one packet use [`classify_batch`](Self::classify_batch) or
    /// [`rules`](Self::rules).
    #[inline]
    pub fn worker_for(&self, frame: &[u8]) -> usize {
        self.rules.load().worker_for(frame)
    }

    /// Writes the worker of each packet of `batch` to `out`, all under one
    /// snapshot of the rules.
    ///
    /// # Panics
    /// If `out` is shorter than the batch.
    #[inline]
    pub fn classify_batch(&self, batch: &Batch, out: &mut [u8]) {
        self.rules.load().classify_batch(batch, out)
    }

    /// Parses one control command and applies it at once; returns a
    /// one-line confirmation (or, for `show`, the rules).
    pub fn apply(&self, command: &str) -> Result<String, SteerError> {
        self.execute(command.parse()?)
    }

    /// Applies a parsed command; see [`apply`](Self::apply).
    pub fn execute(&self, command: SteerCommand) -> Result<String, SteerError> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.rules.load_full();
        if command == SteerCommand::Show {
            return Ok(current.to_string());
        }
        let mut next = SteeringRules::clone(&current);
        let workers = next.workers;
        let check_worker = |worker: usize| {
            if worker < workers {
                Ok(worker as u8)
            } else {
                Err(SteerError::NoSuchWorker { worker, workers })
            }
        };
        let done = match command {
            SteerCommand::Key(key) => {
                next.toeplitz = Arc::new(Toeplitz::new(key));
                match key {
                    RssKey::MICROSOFT => "key default (Microsoft)".to_string(),
                    RssKey::SYMMETRIC => {
                        "key symmetric: both directions of a flow hash alike".to_string()
                    }
                    key => format!("key {key}"),
                }
            }
            SteerCommand::Queues(n) => {
                if n == 0 || n > workers {
                    return Err(SteerError::QueuesOutOfRange { queues: n, workers });
                }
                next.set_queues(n);
                format!(
                    "queues {n}: {} table entries over workers 0 to {}",
                    next.reta.len(),
                    n - 1
                )
            }
            SteerCommand::Mac(mac, worker) => {
                let w = check_worker(worker)?;
                match next.macs.binary_search_by(|(m, _)| m.cmp(&mac.0)) {
                    Ok(i) => next.macs[i].1 = w,
                    Err(i) => next.macs.insert(i, (mac.0, w)),
                }
                format!("mac {mac} -> worker {w}")
            }
            SteerCommand::MacDel(mac) => {
                let i = next
                    .macs
                    .binary_search_by(|(m, _)| m.cmp(&mac.0))
                    .map_err(|_| SteerError::NoSuchMac(mac))?;
                let (_, w) = next.macs.remove(i);
                format!("mac {mac} removed (was worker {w})")
            }
            SteerCommand::Flow(key, worker) => {
                let w = check_worker(worker)?;
                next.flows.insert(key, w);
                format!("flow {key} -> worker {w}")
            }
            SteerCommand::FlowDel(key) => {
                let w = next.flows.remove(&key).ok_or(SteerError::NoSuchFlow(key))?;
                format!("flow {key} removed (was worker {w})")
            }
            SteerCommand::Show => unreachable!("answered above"),
        };
        // The index depends on the key and the rules; rebuilding it on every
        // change keeps the two from ever disagreeing.
        next.flow_index = FlowIndex::build(&next.flows, &next.toeplitz);
        self.rules.store(Arc::new(next));
        Ok(done)
    }
}

impl fmt::Debug for Steering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Steering")
            .field(&**self.rules.load())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Packet;
    use bricks_wire::{EthernetRepr, Ipv4Addr, Ipv4Repr, Ipv6Addr, Ipv6Repr};
    use proptest::prelude::*;

    /// The bit-by-bit definition, to check the tables against.
    fn reference(key: &RssKey, input: &[u8]) -> u32 {
        let mut result = 0u32;
        let mut window = u32::from_be_bytes([key.0[0], key.0[1], key.0[2], key.0[3]]);
        let mut next_bit = 32;
        for &byte in input {
            for bit in 0..8 {
                if byte & (0x80 >> bit) != 0 {
                    result ^= window;
                }
                let incoming = (key.0[next_bit / 8] >> (7 - next_bit % 8)) & 1;
                window = window << 1 | u32::from(incoming);
                next_bit += 1;
            }
        }
        result
    }

    /// Microsoft's "Verifying the RSS Hash Calculation": destination,
    /// source, hash over addresses, hash over addresses and ports.
    const VECTORS_V4: [(&str, &str, u32, u32); 5] = [
        (
            "161.142.100.80:1766",
            "66.9.149.187:2794",
            0x323e8fc2,
            0x51ccc178,
        ),
        (
            "65.69.140.83:4739",
            "199.92.111.2:14230",
            0xd718262a,
            0xc626b0ea,
        ),
        (
            "12.22.207.184:38024",
            "24.19.198.95:12898",
            0xd2d0a5de,
            0x5c2b394a,
        ),
        (
            "209.142.163.6:2217",
            "38.27.205.30:48228",
            0x82989176,
            0xafc7327f,
        ),
        (
            "202.188.127.2:1303",
            "153.39.163.191:44251",
            0x5d1809c5,
            0x10e828a2,
        ),
    ];
    const VECTORS_V6: [(&str, &str, u32, u32); 3] = [
        (
            "[3ffe:2501:200:3::1]:1766",
            "[3ffe:2501:200:1fff::7]:2794",
            0x2cc18cd5,
            0x40207d3d,
        ),
        (
            "[ff02::1]:4739",
            "[3ffe:501:8::260:97ff:fe40:efab]:14230",
            0x0f0c461c,
            0xdde51bbf,
        ),
        (
            "[fe80::200:f8ff:fe21:67cf]:38024",
            "[3ffe:1900:4545:3:200:f8ff:fe21:67cf]:44251",
            0x4b61e985,
            0x02d1feef,
        ),
    ];

    const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

    /// An Ethernet frame carrying `l4` (a TCP or UDP header's first bytes,
    /// or anything) from `src` to `dst`.
    fn frame(dst_mac: [u8; 6], src: IpAddr, dst: IpAddr, proto: IpProtocol, l4: &[u8]) -> Vec<u8> {
        let (ethertype, ip_len) = match src {
            IpAddr::V4(_) => (EtherType::IPV4, 20),
            IpAddr::V6(_) => (EtherType::IPV6, 40),
        };
        let mut f = vec![0u8; 14 + ip_len + l4.len()];
        EthernetRepr {
            src_addr: EthernetAddress(SRC_MAC),
            dst_addr: EthernetAddress(dst_mac),
            ethertype,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Ipv4Repr {
                src_addr: s,
                dst_addr: d,
                next_header: proto,
                payload_len: l4.len(),
                hop_limit: 64,
                dscp_ecn: 0,
                ident: 0,
                dont_frag: true,
            }
            .emit(&mut Ipv4Packet::new_unchecked(&mut f[14..])),
            (IpAddr::V6(s), IpAddr::V6(d)) => Ipv6Repr {
                src_addr: s,
                dst_addr: d,
                next_header: proto,
                payload_len: l4.len(),
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0,
            }
            .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..])),
            _ => unreachable!("one family"),
        }
        f[14 + ip_len..].copy_from_slice(l4);
        f
    }

    /// A 20-byte TCP header (or 8-byte UDP) with the ports set.
    fn l4(proto: IpProtocol, sport: u16, dport: u16) -> Vec<u8> {
        let mut h = vec![0u8; if proto == IpProtocol::TCP { 20 } else { 8 }];
        h[..2].copy_from_slice(&sport.to_be_bytes());
        h[2..4].copy_from_slice(&dport.to_be_bytes());
        if proto == IpProtocol::TCP {
            h[12] = 5 << 4;
        } else {
            h[4..6].copy_from_slice(&8u16.to_be_bytes());
        }
        h
    }

    fn flow_frame(proto: IpProtocol, src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
        frame(
            DST_MAC,
            src.ip(),
            dst.ip(),
            proto,
            &l4(proto, src.port(), dst.port()),
        )
    }

    fn rules() -> SteeringRules {
        SteeringRules::new(4, DEFAULT_RETA_SIZE)
    }

    #[test]
    fn table_hash_matches_the_bitwise_definition() {
        let t = Toeplitz::new(RssKey::MICROSOFT);
        let input: Vec<u8> = (0..MAX_INPUT_LEN as u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        for len in 0..=MAX_INPUT_LEN {
            assert_eq!(
                t.hash(&input[..len]),
                reference(&RssKey::MICROSOFT, &input[..len])
            );
        }
    }

    #[test]
    fn microsoft_ipv4_vectors() {
        let r = rules();
        for (dst, src, addrs_only, with_ports) in VECTORS_V4 {
            let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
            // TCP: the 4-tuple.
            let tcp = flow_frame(IpProtocol::TCP, src, dst);
            assert_eq!(r.hash(&tcp), with_ports, "{src} -> {dst} tcp");
            // UDP too.
            let udp = flow_frame(IpProtocol::UDP, src, dst);
            assert_eq!(r.hash(&udp), with_ports, "{src} -> {dst} udp");
            // Another protocol: the addresses only.
            let icmp = frame(DST_MAC, src.ip(), dst.ip(), IpProtocol::ICMP, &[8, 0, 0, 0]);
            assert_eq!(r.hash(&icmp), addrs_only, "{src} -> {dst} icmp");
        }
    }

    #[test]
    fn microsoft_ipv6_vectors() {
        let r = rules();
        for (dst, src, addrs_only, with_ports) in VECTORS_V6 {
            let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
            let tcp = flow_frame(IpProtocol::TCP, src, dst);
            assert_eq!(r.hash(&tcp), with_ports, "{src} -> {dst} tcp");
            let other = frame(
                DST_MAC,
                src.ip(),
                dst.ip(),
                IpProtocol::ICMPV6,
                &[128, 0, 0, 0],
            );
            assert_eq!(r.hash(&other), addrs_only, "{src} -> {dst} icmpv6");
        }
    }

    #[test]
    fn ipv4_fragments_hash_on_addresses_only() {
        let r = rules();
        let (dst, src, addrs_only, _) = VECTORS_V4[0];
        let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
        let mut f = flow_frame(IpProtocol::UDP, src, dst);
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
            ip.set_more_frags(true);
            ip.fill_checksum();
        }
        assert_eq!(r.hash(&f), addrs_only);
    }

    #[test]
    fn ipv6_extension_headers_are_skipped_and_fragments_are_not() {
        let r = rules();
        let (dst, src, addrs_only, with_ports) = VECTORS_V6[0];
        let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
        // Hop-by-hop options (8 bytes: next header TCP, length 0, padding),
        // then TCP.
        let mut payload = vec![IpProtocol::TCP.0, 0, 1, 4, 0, 0, 0, 0];
        payload.extend(l4(IpProtocol::TCP, src.port(), dst.port()));
        let f = frame(DST_MAC, src.ip(), dst.ip(), IpProtocol::HOPOPT, &payload);
        assert_eq!(r.hash(&f), with_ports);
        // A fragment header: addresses only.
        let mut payload = vec![IpProtocol::TCP.0, 0, 0, 1, 0, 0, 0, 7];
        payload.extend(l4(IpProtocol::TCP, src.port(), dst.port()));
        let f = frame(DST_MAC, src.ip(), dst.ip(), IpProtocol::IPV6_FRAG, &payload);
        assert_eq!(r.hash(&f), addrs_only);
    }

    #[test]
    fn vlan_tags_are_skipped() {
        let r = rules();
        let (dst, src, _, with_ports) = VECTORS_V4[1];
        let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
        let plain = flow_frame(IpProtocol::TCP, src, dst);
        let mut tagged = plain[..12].to_vec();
        tagged.extend([0x81, 0x00, 0x00, 0x64]); // 802.1Q, VLAN 100
        tagged.extend(&plain[12..]);
        assert_eq!(r.hash(&tagged), with_ports);
    }

    #[test]
    fn non_ip_and_runts_hash_to_zero_and_go_to_entry_zero() {
        let r = rules();
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(r.hash(&arp), 0);
        assert_eq!(r.worker_for(&arp), usize::from(r.reta()[0]));
        assert_eq!(r.hash(&[0u8; 10]), 0);
        // IPv4 ethertype, header cut short.
        let mut runt = vec![0u8; 20];
        runt[12..14].copy_from_slice(&[0x08, 0x00]);
        runt[14] = 0x45;
        assert_eq!(r.hash(&runt), 0);
    }

    #[test]
    fn reta_spreads_over_active_queues() {
        let s = Steering::new(4);
        assert_eq!(s.rules().reta().len(), DEFAULT_RETA_SIZE);
        for n in 1..=4 {
            s.apply(&format!("queues {n}")).unwrap();
            let rules = s.rules();
            let mut counts = [0usize; 4];
            for &e in rules.reta() {
                counts[usize::from(e)] += 1;
            }
            for (w, &c) in counts.iter().enumerate() {
                if w < n {
                    let even = DEFAULT_RETA_SIZE / n;
                    assert!(c == even || c == even + 1, "queues {n}: worker {w} has {c}");
                } else {
                    assert_eq!(c, 0, "queues {n}: worker {w} is not active");
                }
            }
        }
        // Many flows land on every active worker and on no other.
        s.apply("queues 3").unwrap();
        let mut seen = [0usize; 4];
        for port in 0..1000u16 {
            let f = flow_frame(
                IpProtocol::UDP,
                SocketAddr::new(Ipv4Addr::new(10, 0, 0, 1).into(), 1024 + port),
                "10.0.0.2:53".parse().unwrap(),
            );
            seen[s.worker_for(&f)] += 1;
        }
        assert!(seen[..3].iter().all(|&c| c > 200), "{seen:?}");
        assert_eq!(seen[3], 0);
    }

    #[test]
    fn precedence_is_flow_then_mac_then_rss() {
        let s = Steering::new(4);
        let src: SocketAddr = "10.0.0.1:1000".parse().unwrap();
        let dst: SocketAddr = "10.0.0.2:53".parse().unwrap();
        let f = flow_frame(IpProtocol::UDP, src, dst);
        let rss = s.worker_for(&f);
        assert_eq!(
            rss,
            usize::from(s.rules().reta()[s.rules().hash(&f) as usize % DEFAULT_RETA_SIZE])
        );
        let mac_worker = (rss + 1) % 4;
        let flow_worker = (rss + 2) % 4;
        s.apply(&format!("mac 02:00:00:00:00:01 {mac_worker}"))
            .unwrap();
        assert_eq!(s.worker_for(&f), mac_worker);
        s.apply(&format!("flow udp {src} {dst} {flow_worker}"))
            .unwrap();
        assert_eq!(s.worker_for(&f), flow_worker);
        // The flow rule is exact: the reverse direction, another port or
        // TCP fall back to the MAC rule.
        let reverse = flow_frame(IpProtocol::UDP, dst, src);
        let tcp = flow_frame(IpProtocol::TCP, src, dst);
        let other_port = flow_frame(IpProtocol::UDP, "10.0.0.1:1001".parse().unwrap(), dst);
        for g in [&reverse, &tcp, &other_port] {
            assert_eq!(s.worker_for(g), mac_worker);
        }
        // A frame to another MAC falls back to RSS.
        let mut elsewhere = reverse.clone();
        elsewhere[5] = 0x99;
        let rules = s.rules();
        assert_eq!(
            s.worker_for(&elsewhere),
            usize::from(rules.reta()[rules.hash(&elsewhere) as usize % DEFAULT_RETA_SIZE])
        );
        drop(rules);
        s.apply(&format!("flow del udp {src} {dst}")).unwrap();
        assert_eq!(s.worker_for(&f), mac_worker);
        s.apply("mac del 02:00:00:00:00:01").unwrap();
        assert_eq!(s.worker_for(&f), rss);
    }

    #[test]
    fn flow_rules_match_ipv6_and_survive_a_key_change() {
        let s = Steering::new(8);
        let src: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let dst: SocketAddr = "[2001:db8::2]:50000".parse().unwrap();
        let f = flow_frame(IpProtocol::TCP, src, dst);
        s.apply(&format!("flow tcp {src} {dst} 7")).unwrap();
        // Many more rules, so that buckets hold several.
        for port in 0..100u16 {
            s.apply(&format!("flow tcp [2001:db8::3]:{port} {dst} 1"))
                .unwrap();
        }
        assert_eq!(s.worker_for(&f), 7);
        s.apply("key symmetric").unwrap();
        assert_eq!(s.worker_for(&f), 7);
        s.apply(&format!("key {}", "ab".repeat(KEY_LEN))).unwrap();
        assert_eq!(s.worker_for(&f), 7);
        let probe = flow_frame(IpProtocol::TCP, "[2001:db8::3]:42".parse().unwrap(), dst);
        assert_eq!(s.worker_for(&probe), 1);
    }

    #[test]
    fn classify_batch_agrees_with_worker_for() {
        let s = Steering::new(4);
        s.apply("mac 02:00:00:00:00:07 3").unwrap();
        let mut batch = Batch::new();
        let mut frames = Vec::new();
        for i in 0..32u16 {
            let mut f = flow_frame(
                IpProtocol::UDP,
                SocketAddr::new(Ipv4Addr::new(192, 0, 2, i as u8).into(), 5000 + i),
                "198.51.100.1:53".parse().unwrap(),
            );
            if i % 5 == 0 {
                f[5] = 0x07;
            }
            batch.push(Packet::from_slice(&f).unwrap()).unwrap();
            frames.push(f);
        }
        let mut out = [0u8; 32];
        s.classify_batch(&batch, &mut out);
        for (f, &w) in frames.iter().zip(&out) {
            assert_eq!(usize::from(w), s.worker_for(f));
        }
        assert!(out.iter().step_by(5).all(|&w| w == 3));
    }

    #[test]
    fn show_prints_commands_that_rebuild_the_rules() {
        let s = Steering::new(4);
        for cmd in [
            "key symmetric",
            "queues 3",
            "mac 02:00:00:00:00:01 2",
            "flow udp 10.0.0.1:1000 10.0.0.2:53 1",
            "flow tcp [2001:db8::1]:80 [2001:db8::2]:1234 0",
        ] {
            s.apply(cmd).unwrap();
        }
        let shown = s.apply("show").unwrap();
        assert_eq!(
            shown,
            "key symmetric\nqueues 3\nmac 02:00:00:00:00:01 2\n\
             flow tcp [2001:db8::1]:80 [2001:db8::2]:1234 0\n\
             flow udp 10.0.0.1:1000 10.0.0.2:53 1"
        );
        let copy = Steering::new(4);
        for line in shown.lines() {
            copy.apply(line).unwrap();
        }
        assert_eq!(copy.apply("show").unwrap(), shown);
        let custom =
            "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0011223344556677";
        s.apply(&format!("key {custom}")).unwrap();
        assert!(s
            .apply("show")
            .unwrap()
            .starts_with(&format!("key {custom}\n")));
        s.apply("key default").unwrap();
        assert!(s.apply("show").unwrap().starts_with("key default\n"));
    }

    #[test]
    fn confirmations_are_one_line() {
        let s = Steering::new(2);
        for cmd in [
            "key default",
            "key symmetric",
            "queues 1",
            "mac 02:00:00:00:00:01 1",
            "mac del 02:00:00:00:00:01",
            "flow udp 10.0.0.1:1 10.0.0.2:2 0",
            "flow del udp 10.0.0.1:1 10.0.0.2:2",
        ] {
            let text = s.apply(cmd).unwrap();
            assert!(!text.is_empty() && !text.contains('\n'), "{cmd}: {text}");
        }
    }

    #[test]
    fn ethtool_key_format_is_accepted() {
        let with_colons = RssKey::MICROSOFT
            .0
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(with_colons.parse::<RssKey>().unwrap(), RssKey::MICROSOFT);
        assert_eq!(
            "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
                .parse::<RssKey>()
                .unwrap(),
            RssKey::MICROSOFT
        );
    }

    #[test]
    fn malformed_commands_are_refused_and_change_nothing() {
        let s = Steering::new(4);
        let before = s.apply("show").unwrap();
        type Check = fn(&SteerError) -> bool;
        let cases: [(&str, Check); 18] = [
            ("", |e| *e == SteerError::Empty),
            ("   ", |e| *e == SteerError::Empty),
            ("frobnicate 1", |e| {
                matches!(e, SteerError::UnknownCommand(w) if w == "frobnicate")
            }),
            ("key", |e| *e == SteerError::Usage(USAGE_KEY)),
            ("key 6d5a", |e| matches!(e, SteerError::BadKey(_))),
            ("key zz5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa", |e| {
                matches!(e, SteerError::BadKey(_))
            }),
            ("queues", |e| *e == SteerError::Usage(USAGE_QUEUES)),
            ("queues two", |e| matches!(e, SteerError::BadNumber { what: "queues", .. })),
            ("queues 0", |e| {
                *e == SteerError::QueuesOutOfRange { queues: 0, workers: 4 }
            }),
            ("queues 5", |e| {
                *e == SteerError::QueuesOutOfRange { queues: 5, workers: 4 }
            }),
            ("mac 02:00:00:00:00:01", |e| *e == SteerError::Usage(USAGE_MAC)),
            ("mac 02:00:00:00:01 1", |e| matches!(e, SteerError::BadMac(_))),
            ("mac 02:00:00:00:00:01 4", |e| {
                *e == SteerError::NoSuchWorker { worker: 4, workers: 4 }
            }),
            ("mac del 02:00:00:00:00:09", |e| matches!(e, SteerError::NoSuchMac(_))),
            ("flow icmp 10.0.0.1:1 10.0.0.2:2 0", |e| {
                matches!(e, SteerError::BadProto(p) if p == "icmp")
            }),
            ("flow udp 10.0.0.1 10.0.0.2:2 0", |e| {
                matches!(e, SteerError::BadEndpoint(p) if p == "10.0.0.1")
            }),
            ("flow udp 10.0.0.1:1 [::1]:2 0", |e| {
                matches!(e, SteerError::MixedFamilies { .. })
            }),
            ("flow del udp 10.0.0.1:1 10.0.0.2:2", |e| {
                matches!(e, SteerError::NoSuchFlow(_))
            }),
        ];
        for (cmd, expected) in cases {
            let err = s.apply(cmd).unwrap_err();
            assert!(expected(&err), "{cmd:?}: {err:?}");
            let text = err.to_string();
            assert!(
                text.contains("expected") || text.contains("usage") || text.contains("no rule"),
                "{cmd:?}: `{text}` does not say what is expected"
            );
        }
        assert_eq!(
            s.apply("flow udp 10.0.0.1:1 10.0.0.2:2").unwrap_err(),
            SteerError::Usage(USAGE_FLOW)
        );
        assert_eq!(
            s.apply("show all").unwrap_err(),
            SteerError::Usage(USAGE_SHOW)
        );
        assert_eq!(s.apply("show").unwrap(), before);
    }

    #[test]
    #[should_panic(expected = "expected 1 to 256")]
    fn too_many_workers_is_a_programming_error() {
        let _ = Steering::new(257);
    }

    fn v4_endpoint() -> impl Strategy<Value = SocketAddr> {
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(a, p)| SocketAddr::new(Ipv4Addr::from(a).into(), p))
    }

    fn v6_endpoint() -> impl Strategy<Value = SocketAddr> {
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(a, p)| SocketAddr::new(Ipv6Addr::from(a).into(), p))
    }

    proptest! {
        #[test]
        fn tables_equal_the_definition_for_any_key(
            key in any::<[u8; KEY_LEN]>(),
            input in proptest::collection::vec(any::<u8>(), 0..=MAX_INPUT_LEN),
        ) {
            let key = RssKey(key);
            prop_assert_eq!(Toeplitz::new(key).hash(&input), reference(&key, &input));
        }

        #[test]
        fn symmetric_key_hashes_both_directions_alike_v4(
            a in v4_endpoint(), b in v4_endpoint(), tcp in any::<bool>(),
        ) {
            let s = Steering::new(8);
            s.apply("key symmetric").unwrap();
            let proto = if tcp { IpProtocol::TCP } else { IpProtocol::UDP };
            let (ab, ba) = (flow_frame(proto, a, b), flow_frame(proto, b, a));
            prop_assert_eq!(s.rules().hash(&ab), s.rules().hash(&ba));
            prop_assert_eq!(s.worker_for(&ab), s.worker_for(&ba));
            let (ab, ba) = (
                frame(DST_MAC, a.ip(), b.ip(), IpProtocol::ICMP, &[0; 8]),
                frame(DST_MAC, b.ip(), a.ip(), IpProtocol::ICMP, &[0; 8]),
            );
            prop_assert_eq!(s.rules().hash(&ab), s.rules().hash(&ba));
        }

        #[test]
        fn symmetric_key_hashes_both_directions_alike_v6(
            a in v6_endpoint(), b in v6_endpoint(),
        ) {
            let s = Steering::new(8);
            s.apply("key symmetric").unwrap();
            let (ab, ba) = (
                flow_frame(IpProtocol::TCP, a, b),
                flow_frame(IpProtocol::TCP, b, a),
            );
            prop_assert_eq!(s.rules().hash(&ab), s.rules().hash(&ba));
        }

        #[test]
        fn any_bytes_steer_to_a_real_worker(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let s = Steering::new(3);
            s.apply("flow udp 10.0.0.1:1 10.0.0.2:2 2").unwrap();
            s.apply("mac 02:00:00:00:00:01 1").unwrap();
            prop_assert!(s.worker_for(&bytes) < 3);
        }
    }

    #[test]
    fn default_key_is_not_symmetric() {
        let r = rules();
        let (dst, src, _, _) = VECTORS_V4[0];
        let (dst, src): (SocketAddr, SocketAddr) = (dst.parse().unwrap(), src.parse().unwrap());
        assert_ne!(
            r.hash(&flow_frame(IpProtocol::TCP, src, dst)),
            r.hash(&flow_frame(IpProtocol::TCP, dst, src))
        );
    }
}
