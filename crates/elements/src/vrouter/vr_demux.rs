//! `VRDemux`: hands each Ethernet frame to its virtual router by a
//! demultiplexing tag (Egi et al. §3.2: "a MAC address, VLAN tag, MPLS
//! label or IP tunnel address"), in the same time for one router as for a
//! thousand.
//!
//! Software demultiplexing scales to many routers on one box (the paper's
//! Fig. 16) only if finding a frame's router does not grow with their
//! number. VLAN IDs index a 4096-entry array directly; MAC addresses, MPLS
//! labels and IPv4 tunnel addresses go through a [`TagTable`], an
//! open-addressed table built at configuration time (see its module for
//! why not SipHash). Frames are classified a batch at a time with
//! `Context::push_classified`, so a batch bound for one router moves on
//! whole.

use super::tag_table::TagTable;
use super::{
    be16_at, is_mpls, is_vlan_tpid, payload_type_at, ETHERTYPE_AT, ETHERTYPE_IPV4, ETHER_LEN,
};
use bricks_config::Span;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::PerPacket;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::mpls::LABEL_MAX;
use std::net::Ipv4Addr;

/// The `VRDemux` class.
pub static CLASS: ElementClass = ElementClass {
    name: "VRDemux",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "hands each frame to its virtual router by a VLAN ID, MAC address, MPLS label or \
        IP tunnel address",
    synopsis: "VRDemux(BY MODE, TAG OUTPUT, TAG OUTPUT, ..., KEYWORDS UNKNOWN, NOTAG, BROADCAST)",
    description: "Sends each Ethernet frame to the output of the virtual router its tag names, \
        and sets the packet's virtual router annotation to that output. Each positional \
        argument is a pair `TAG OUTPUT`; several tags may share an output, but a tag may name \
        only one. What a tag is depends on BY:

- `vlan`: the VLAN ID (1 to 4094) of the frame's outer 802.1Q or 802.1ad tag. An untagged \
frame, or one tagged with VLAN ID 0 (priority only), carries no tag.
- `mac`: the destination MAC address, a unicast one (a group address as a tag is \
refused). Broadcast and multicast destinations follow BROADCAST: `drop` (the default), \
`replicate` (a copy to every output that some tag names, \
in order with the other frames of each output; note that one frame becomes as many copies \
as there are routers), or an output number (a default router that answers ARP for all).
- `mpls`: the top label (0 to 1048575) of an MPLS stack (type 0x8847 or 0x8848, after at \
most one VLAN tag). Any other type carries no tag.
- `ipip`: the destination address of an outer IPv4 header with protocol 4 (IP-in-IP), \
right after the Ethernet header or after one VLAN tag. Other frames (ARP for the tunnel \
endpoints, IPv4 of other protocols) carry no tag.

A frame whose tag no pair names goes to output UNKNOWN if it is given, else it is dropped \
and counted. A frame that carries no tag of the kind goes to output NOTAG if it is given, \
else it is dropped and counted. A malformed tag (a frame shorter than an Ethernet header, \
a truncated VLAN tag or MPLS entry, an outer IPv4 header that is truncated, not version 4, \
or whose lengths disagree with the frame) is dropped and counted. The element has as many \
outputs as the highest output named plus one, and every output must be named by a pair, \
UNKNOWN, NOTAG or BROADCAST and be connected. Finding a frame's output costs the same for \
one router as for thousands: VLAN IDs index an array, other tags a hash table sized when \
the router starts.",
    ports: "one push input; one push output per virtual router (plus UNKNOWN, NOTAG and \
        BROADCAST outputs)",
    keywords: &[
        Keyword {
            name: "BY",
            ty: "vlan, mac, mpls or ipip",
            default: None,
            doc: "the kind of tag",
        },
        Keyword {
            name: "UNKNOWN",
            ty: "output number",
            default: Some("drop"),
            doc: "where frames whose tag no pair names go",
        },
        Keyword {
            name: "NOTAG",
            ty: "output number",
            default: Some("drop"),
            doc: "where frames that carry no tag of the kind go (not with BY mac)",
        },
        Keyword {
            name: "BROADCAST",
            ty: "drop, replicate or output number",
            default: Some("drop"),
            doc: "what happens to broadcast and multicast frames (BY mac only)",
        },
    ],
    counters: &[
        (
            "outN",
            "frames sent to output N (listed for outputs that got frames)",
        ),
        (
            "unknown_tag",
            "frames whose tag no pair names, dropped (no UNKNOWN)",
        ),
        (
            "no_tag",
            "frames carrying no tag of the kind, dropped (no NOTAG)",
        ),
        (
            "malformed",
            "frames with a truncated or malformed tag, dropped",
        ),
        (
            "broadcast_drops",
            "broadcast and multicast frames dropped (BY mac, BROADCAST drop)",
        ),
        (
            "replicated",
            "broadcast and multicast frames copied to every router (BROADCAST replicate)",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 81 00 00 14 08 00 \
        45 00 00 14 00 00 40 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 2) \
        -> vr :: VRDemux(BY vlan, 10 0, 20 1, 30 1, UNKNOWN 2); \
        vr[0] -> Discard; vr[1] -> VLANDecap -> Discard; vr[2] -> Discard;",
    see_also: &[
        "VLANDecap",
        "MPLSPop",
        "StripIPHeader",
        "Classifier",
        "RoundRobinSched",
    ],
};

/// What a tag is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The outer VLAN ID.
    Vlan,
    /// The destination MAC address.
    Mac,
    /// The top MPLS label.
    Mpls,
    /// The outer destination of an IP-in-IP datagram.
    IpIp,
}

impl FromArg for Mode {
    const TYPE: &'static str = "vlan, mac, mpls or ipip";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "vlan" => Ok(Mode::Vlan),
            "mac" | "ether" => Ok(Mode::Mac),
            "mpls" => Ok(Mode::Mpls),
            "ipip" => Ok(Mode::IpIp),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// Highest output number: the vrouter annotation is 16 bits and the
/// classifier reserves one value.
const MAX_OUTPUT: usize = u16::MAX as usize - 1;

/// An output number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Output(u16);

impl FromArg for Output {
    const TYPE: &'static str = "output number";
    fn from_arg(text: &str) -> Result<Self, String> {
        match usize::from_arg(text) {
            Ok(v) if v <= MAX_OUTPUT => Ok(Output(v as u16)),
            Ok(v) => Err(format!("found {v}, above {MAX_OUTPUT}")),
            Err(e) => Err(e),
        }
    }
}

/// What happens to broadcast and multicast frames in mac mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broadcast {
    Drop,
    Replicate,
    To(u16),
}

impl FromArg for Broadcast {
    const TYPE: &'static str = "drop, replicate or an output number";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "drop" => Ok(Broadcast::Drop),
            "replicate" => Ok(Broadcast::Replicate),
            _ => Output::from_arg(text)
                .map(|o| Broadcast::To(o.0))
                .map_err(|_| format!("found `{text}`")),
        }
    }
}

/// Parses the tag of a pair for `mode`, as a table key.
fn parse_tag(mode: Mode, text: &str) -> Result<u64, String> {
    match mode {
        Mode::Vlan => match u16::from_arg(text) {
            Ok(v) if (1..=4094).contains(&v) => Ok(u64::from(v)),
            _ => Err(format!("expected a VLAN ID (1 to 4094), found `{text}`")),
        },
        Mode::Mac => match EthernetAddress::from_arg(text) {
            Ok(a) if a.0[0] & 1 == 0 => Ok(mac_key(&a.0)),
            // A group frame is never looked up: BROADCAST decides.
            Ok(_) => Err(format!(
                "`{text}` is a group (multicast or broadcast) address: a router is named \
                 by a unicast MAC address, and group frames follow BROADCAST"
            )),
            Err(_) => Err(format!("expected a MAC address, found `{text}`")),
        },
        Mode::Mpls => match u32::from_arg(text) {
            Ok(v) if v <= LABEL_MAX => Ok(u64::from(v)),
            _ => Err(format!(
                "expected an MPLS label (0 to 1048575), found `{text}`"
            )),
        },
        Mode::IpIp => Ipv4Addr::from_arg(text)
            .map(|a| u64::from(u32::from(a)))
            .map_err(|_| format!("expected an IPv4 address, found `{text}`")),
    }
}

/// A MAC address as a 48-bit key.
#[inline(always)]
fn mac_key(m: &[u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, m[0], m[1], m[2], m[3], m[4], m[5]])
}

/// One `TAG OUTPUT` argument, parsed.
struct Pair {
    key: u64,
    out: u16,
    text: String,
    span: Span,
    /// 1-based position among the pairs, for messages.
    number: usize,
}

fn read_pair(mode: Mode, text: &str, span: Span, number: usize) -> Result<Pair, ArgError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [tag, out] = words[..] else {
        let mut e = ArgError::at(span, format!("expected `TAG OUTPUT`, found `{text}`"));
        if words
            .first()
            .is_some_and(|w| w.len() > 1 && w.bytes().all(|c| c.is_ascii_uppercase() || c == b'_'))
        {
            e = e.with_help("keywords: BY, UNKNOWN, NOTAG, BROADCAST");
        } else {
            e = e.with_help("each pair is a tag and an output number, like `10 0`");
        }
        return Err(e);
    };
    let key = parse_tag(mode, tag).map_err(|m| ArgError::at(span, m))?;
    let out = Output::from_arg(out)
        .map_err(|m| ArgError::at(span, format!("bad output in `{text}`: {m}")))?;
    Ok(Pair {
        key,
        out: out.0,
        text: tag.to_string(),
        span,
        number,
    })
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mode: Mode = args.read_m("BY")?;
    let unknown: Option<Output> = args.read("UNKNOWN")?;
    let notag: Option<Output> = args.read("NOTAG")?;
    let broadcast: Option<Broadcast> = args.read("BROADCAST")?;
    if mode == Mode::Mac && notag.is_some() {
        return Err(ArgError::new("NOTAG does not apply to BY mac")
            .with_help("every frame has a destination address; see BROADCAST and UNKNOWN"));
    }
    if mode != Mode::Mac && broadcast.is_some() {
        return Err(ArgError::new("BROADCAST applies to BY mac only")
            .with_help("with other tags a broadcast frame goes by its tag like any other"));
    }
    let mut pairs = Vec::new();
    for (i, (text, span)) in args.rest().into_iter().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        pairs.push(read_pair(mode, text, span, i + 1)?);
    }
    if pairs.is_empty() {
        return Err(
            ArgError::new("no `TAG OUTPUT` pair").with_help("e.g. `VRDemux(BY vlan, 10 0, 20 1)`")
        );
    }
    // One tag, one output. Checked with a scratch map: configuration
    // time, any hasher will do.
    let mut seen: std::collections::HashMap<u64, usize> = Default::default();
    for (i, p) in pairs.iter().enumerate() {
        if let Some(&j) = seen.get(&p.key) {
            let first = &pairs[j];
            if first.out != p.out {
                return Err(ArgError::at(
                    p.span,
                    format!(
                        "tag {} is mapped to output {} by pair {} (`{} {}`) and to output {} by pair {}",
                        p.text, first.out, first.number, first.text, first.out, p.out, p.number
                    ),
                )
                .with_help("a tag belongs to one virtual router; remove one of the pairs"));
            }
        } else {
            seen.insert(p.key, i);
        }
    }
    // Outputs: 0 to the highest named, each named by something.
    let broadcast = broadcast.unwrap_or(Broadcast::Drop);
    let mut named = vec![false; MAX_OUTPUT + 1];
    let mut mark = |o: u16| named[usize::from(o)] = true;
    pairs.iter().for_each(|p| mark(p.out));
    unknown.iter().for_each(|o| mark(o.0));
    notag.iter().for_each(|o| mark(o.0));
    if let Broadcast::To(o) = broadcast {
        mark(o);
    }
    let noutputs = named.iter().rposition(|&n| n).map_or(0, |h| h + 1);
    if let Some(gap) = named[..noutputs].iter().position(|&n| !n) {
        return Err(ArgError::new(format!(
            "output {gap} is named by no pair (outputs 0 to {} are used)",
            noutputs - 1
        ))
        .with_help(
            "outputs are numbered from 0 without gaps; UNKNOWN and NOTAG name outputs too",
        ));
    }
    if ports.noutputs() != noutputs {
        let have = ports.noutputs();
        return Err(if have < noutputs {
            ArgError::new(format!(
                "output {} is named but not connected ({have} connected)",
                noutputs - 1
            ))
            .with_help(format!(
                "VRDemux needs outputs 0 to {} connected",
                noutputs - 1
            ))
        } else {
            ArgError::new(format!(
                "output {} is connected but named by no pair, UNKNOWN or NOTAG",
                have - 1
            ))
            .with_help(format!("the pairs name outputs 0 to {}", noutputs - 1))
        });
    }
    let mut vlan = Vec::new();
    let mut table = TagTable::new(&[]);
    match mode {
        Mode::Vlan => {
            vlan = vec![VlanSlot::NONE; 4096];
            for p in &pairs {
                vlan[p.key as usize].out = p.out;
            }
        }
        _ => {
            let entries: Vec<(u64, u32)> =
                pairs.iter().map(|p| (p.key, u32::from(p.out))).collect();
            table = TagTable::new(&entries);
        }
    }
    let mut tagged_outputs: Vec<u16> = pairs.iter().map(|p| p.out).collect();
    tagged_outputs.sort_unstable();
    tagged_outputs.dedup();
    Ok(Box::new(VRDemux {
        mode,
        vlan: vlan.into_boxed_slice(),
        table,
        unknown: unknown.map(|o| o.0),
        notag: notag.map(|o| o.0),
        broadcast,
        tagged_outputs: tagged_outputs.into_boxed_slice(),
        per_output: vec![0; noutputs].into_boxed_slice(),
        unknown_tag: 0,
        no_tag: 0,
        malformed: 0,
        broadcast_drops: 0,
        replicated: 0,
    }))
}

/// No output: a VLAN ID no pair names.
const NONE: u16 = u16::MAX;

/// A VLAN ID's output and the packets counted for it, side by side: the
/// count a frame adds to is in the cache line its lookup read, as in a
/// [`TagTable`].
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct VlanSlot {
    out: u16,
    count: u64,
}

impl VlanSlot {
    const NONE: VlanSlot = VlanSlot {
        out: NONE,
        count: 0,
    };
}

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// A configured tag, for this output.
    Router(u16),
    /// A tag no pair names.
    Unknown,
    /// No tag of the kind.
    Absent,
    /// A truncated or malformed tag.
    Malformed,
    /// A broadcast or multicast destination (mac mode).
    Group,
}

/// Demultiplexes frames to virtual routers.
#[derive(Debug)]
pub struct VRDemux {
    mode: Mode,
    /// By VLAN ID, its output ([`NONE`] for none) and count; empty
    /// unless BY vlan.
    vlan: Box<[VlanSlot]>,
    table: TagTable,
    unknown: Option<u16>,
    notag: Option<u16>,
    broadcast: Broadcast,
    /// Every output some pair names, ascending: where replicas go.
    tagged_outputs: Box<[u16]>,
    /// Frames by output, but those a tag's slot counts (in `vlan` and
    /// `table`).
    per_output: Box<[u64]>,
    unknown_tag: u64,
    no_tag: u64,
    malformed: u64,
    broadcast_drops: u64,
    replicated: u64,
}

impl VRDemux {
    /// Reads the tag of frame `d`, a tag of kind `mode` (this element's:
    /// a parameter so that each kind's classifier is compiled on its own,
    /// small enough to be inlined into the loop over the batch), and
    /// counts the frame for a configured one.
    #[inline(always)]
    fn tag(&mut self, table: &mut TagTable, mode: Mode, d: &[u8]) -> Tag {
        match mode {
            Mode::Vlan => {
                // The usual frame holds a whole tag (TPID, TCI and the
                // type it carries): one length check for it. A shorter
                // frame is untagged if its type says so, else malformed.
                let Some(w) = tag_word(d) else {
                    return match be16_at(d, ETHERTYPE_AT) {
                        Some(t) if !is_vlan_tpid(t) => Tag::Absent,
                        _ => Tag::Malformed,
                    };
                };
                if !is_vlan_tpid((w >> 16) as u16) {
                    return Tag::Absent;
                }
                let vid = (w & 0xfff) as usize;
                if vid == 0 {
                    return Tag::Absent;
                }
                match self.vlan.get_mut(vid) {
                    Some(slot) if slot.out != NONE => {
                        slot.count += 1;
                        Tag::Router(slot.out)
                    }
                    _ => Tag::Unknown,
                }
            }
            Mode::Mac => {
                let Some(h) = d.first_chunk::<ETHER_LEN>() else {
                    return Tag::Malformed;
                };
                // The destination as [`mac_key`] makes it, from one load
                // of the header's first eight bytes.
                let first: &[u8; 8] = h.first_chunk().unwrap_or(&[0; 8]);
                let key = u64::from_be_bytes(*first) >> 16;
                // The group bit tested in the key itself: the compiler then
                // knows the key is below the table's end marker (all ones,
                // the broadcast address) and drops that test.
                if key & (1 << 40) != 0 {
                    return Tag::Group;
                }
                lookup(table, key)
            }
            Mode::Mpls => {
                let Some(at) = payload_type_at(d, 1) else {
                    return Tag::Malformed;
                };
                if !is_mpls(be16_at(d, at).unwrap_or(0)) {
                    return Tag::Absent;
                }
                match d.get(at + 2..at + 6) {
                    Some(e) => lookup(
                        table,
                        u64::from(u32::from_be_bytes([e[0], e[1], e[2], e[3]]) >> 12),
                    ),
                    None => Tag::Malformed,
                }
            }
            Mode::IpIp => {
                let Some(at) = payload_type_at(d, 1) else {
                    return Tag::Malformed;
                };
                if be16_at(d, at) != Some(ETHERTYPE_IPV4) {
                    return Tag::Absent;
                }
                let ip = d.get(at + 2..).unwrap_or(&[]);
                let Some(h) = ip.first_chunk::<20>() else {
                    return Tag::Malformed;
                };
                let hlen = usize::from(h[0] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
                if h[0] >> 4 != 4 || hlen < 20 || total < hlen || total > ip.len() {
                    return Tag::Malformed;
                }
                if h[9] != 4 {
                    return Tag::Absent;
                }
                lookup(
                    table,
                    u64::from(u32::from_be_bytes([h[16], h[17], h[18], h[19]])),
                )
            }
        }
    }

    /// The output of `p` (setting its annotation), or `None` to drop it.
    /// Group frames under BROADCAST replicate never get here.
    #[inline(always)]
    fn classify(&mut self, table: &mut TagTable, p: &mut Packet) -> Option<usize> {
        let out = self.output_as(table, self.mode, p);
        (out != NONE).then_some(usize::from(out))
    }

    /// [`VRDemux::classify`] with the mode, this element's, known at the
    /// call, as an output number: [`NONE`] for a frame that is dropped
    /// (outputs are at most [`MAX_OUTPUT`]).
    #[inline(always)]
    fn output_as(&mut self, table: &mut TagTable, mode: Mode, p: &mut Packet) -> u16 {
        let out = match self.tag(table, mode, p.data()) {
            Tag::Router(o) => {
                // Counted in its tag's slot.
                p.anno_mut().vrouter = o;
                return o;
            }
            Tag::Unknown => match self.unknown {
                Some(o) => o,
                None => {
                    self.unknown_tag += 1;
                    return NONE;
                }
            },
            Tag::Absent => match self.notag {
                Some(o) => o,
                None => {
                    self.no_tag += 1;
                    return NONE;
                }
            },
            Tag::Malformed => {
                self.malformed += 1;
                return NONE;
            }
            Tag::Group => match self.broadcast {
                Broadcast::To(o) => o,
                Broadcast::Drop | Broadcast::Replicate => {
                    self.broadcast_drops += 1;
                    return NONE;
                }
            },
        };
        self.deliver(p, out);
        out
    }

    /// Annotates `p` for output `out` and counts it by output: for the
    /// frames no tag's slot counts (defaults and replicas).
    #[inline(always)]
    fn deliver(&mut self, p: &mut Packet, out: u16) {
        p.anno_mut().vrouter = out;
        if let Some(c) = self.per_output.get_mut(usize::from(out)) {
            *c += 1;
        }
    }

    /// Runs `f` with the tag table moved out of the element for its
    /// duration: a local table's size and slots stay in registers over a
    /// batch, where the element's were loaded again after every packet's
    /// count and annotation were written.
    #[inline(always)]
    fn with_table<R>(&mut self, f: impl FnOnce(&mut Self, &mut TagTable) -> R) -> R {
        let mut table = std::mem::take(&mut self.table);
        let r = f(self, &mut table);
        self.table = table;
        r
    }

    /// The frames dropped so far, whatever the reason: every frame a
    /// classification does not count here has an output.
    #[inline(always)]
    fn dropped(&self) -> u64 {
        self.unknown_tag + self.no_tag + self.malformed + self.broadcast_drops
    }

    /// Whether `p` is replicated rather than classified.
    #[inline(always)]
    fn replicates(&self, p: &Packet) -> bool {
        self.broadcast == Broadcast::Replicate
            && p.data().len() >= ETHER_LEN
            && p.data()[0] & 1 != 0
    }

    /// Classifies the frames between group frames a run at a time, and
    /// sends each group frame to every router in between: every output
    /// sees its frames in arrival order.
    fn push_replicating(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut run = Batch::new();
        for p in batch.drain() {
            if !self.replicates(&p) {
                // Cannot fail: the run holds fewer frames than the batch.
                let _ = run.push(p);
                continue;
            }
            if !run.is_empty() {
                self.with_table(|e, t| cx.push_classified(&mut run, |q| e.classify(t, q)));
            }
            self.replicated += 1;
            let outs = std::mem::take(&mut self.tagged_outputs);
            let mut p = Some(p);
            for (i, &o) in outs.iter().enumerate() {
                let mut q = if i + 1 == outs.len() {
                    match p.take() {
                        Some(q) => q,
                        None => break,
                    }
                } else {
                    match &p {
                        Some(orig) => orig.duplicate(),
                        None => break,
                    }
                };
                self.deliver(&mut q, o);
                cx.push_one(usize::from(o), q);
            }
            self.tagged_outputs = outs;
        }
        if !run.is_empty() {
            self.with_table(|e, t| cx.push_classified(&mut run, |q| e.classify(t, q)));
        }
    }

    /// The router of every frame of `batch`, counted for all of them,
    /// when they all carry one configured tag by destination MAC address
    /// or VLAN ID and are long enough to have it; `None` otherwise (the
    /// frames then go one by one, which counts what is not a router's).
    #[inline(always)]
    fn one_router(&mut self, batch: &Batch) -> Option<u16> {
        let n = batch.len() as u64;
        match self.mode {
            Mode::Mac => {
                // The destination as `tag` reads it; a frame too short
                // for a header reads as a key no table holds.
                let key = crate::route::table::one_key(batch, |p| {
                    p.data()
                        .first_chunk::<ETHER_LEN>()
                        .and_then(|h| h.first_chunk::<8>())
                        .map_or(u64::MAX, |b| u64::from_be_bytes(*b) >> 16)
                })?;
                if key & (1 << 40) != 0 {
                    return None;
                }
                self.table.get_counted_by(key, n).map(|o| o as u16)
            }
            Mode::Vlan => {
                // 0, no VLAN type, for a frame too short for the tag.
                let w = crate::route::table::one_key(batch, |p| tag_word(p.data()).unwrap_or(0))?;
                let vid = (w & 0xfff) as usize;
                if !is_vlan_tpid((w >> 16) as u16) || vid == 0 {
                    return None;
                }
                let slot = self.vlan.get_mut(vid).filter(|s| s.out != NONE)?;
                slot.count += n;
                Some(slot.out)
            }
            Mode::Mpls | Mode::IpIp => None,
        }
    }
}

/// The type and the tag's control field of frame `d` as one word (one
/// load, where the two fields were put together bytewise), when the
/// frame is long enough for a whole tag: TPID, TCI and the type it
/// carries (one length check).
#[inline(always)]
fn tag_word(d: &[u8]) -> Option<u32> {
    let h = d.first_chunk::<{ ETHER_LEN + 4 }>()?;
    let at = ETHERTYPE_AT;
    Some(u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]))
}

/// The router of `key` in `table`, counting the frame.
#[inline(always)]
fn lookup(table: &mut TagTable, key: u64) -> Tag {
    match table.get_counted(key) {
        Some(o) => Tag::Router(o as u16),
        None => Tag::Unknown,
    }
}

impl Element for VRDemux {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.broadcast == Broadcast::Replicate && batch.iter().any(|p| self.replicates(p)) {
            self.push_replicating(batch, cx);
        } else {
            // A batch of one router's frames (one tag: all traffic to a
            // router carries its MAC address or VLAN) goes on whole,
            // looked up once, as a lookup element's batch of one
            // destination does.
            if let Some(o) = self.one_router(batch) {
                for p in batch.iter_mut() {
                    p.anno_mut().vrouter = o;
                }
                return cx.push(usize::from(o), batch);
            }
            // Every frame's output first, in a loop of one kind of tag
            // (the classifier inlined into it, its kind fixed); then the
            // batch is split by them. Classified inside the split, the
            // loop kept the split's state on the stack: 58 instructions
            // a frame where this takes 44.
            let mut outs = PerPacket::<u16>::new();
            let dropped = self.dropped();
            self.with_table(|e, t| match e.mode {
                Mode::Mac => outs.gather_mut(batch, |p| e.output_as(t, Mode::Mac, p)),
                Mode::Vlan => outs.gather_mut(batch, |p| e.output_as(t, Mode::Vlan, p)),
                Mode::Mpls => outs.gather_mut(batch, |p| e.output_as(t, Mode::Mpls, p)),
                Mode::IpIp => outs.gather_mut(batch, |p| e.output_as(t, Mode::IpIp, p)),
            });
            // Every frame not counted dropped has a configured output.
            let kept = self.dropped() == dropped;
            cx.push_by_kept_outputs(batch, &outs, kept);
        }
    }

    fn stats(&self, s: &mut Stats) {
        let mut per_output = self.per_output.to_vec();
        let slots = self.vlan.iter().map(|v| (u32::from(v.out), v.count));
        for (out, n) in slots.chain(self.table.counts()) {
            if let Some(c) = per_output.get_mut(out as usize) {
                *c += n;
            }
        }
        for (i, &n) in per_output.iter().enumerate() {
            if n != 0 {
                s.counter(format!("out{i}"), n);
            }
        }
        s.counter("unknown_tag", self.unknown_tag);
        s.counter("no_tag", self.no_tag);
        s.counter("malformed", self.malformed);
        if self.mode == Mode::Mac {
            s.counter("broadcast_drops", self.broadcast_drops);
            s.counter("replicated", self.replicated);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{
        ipip, labelled, tagged, to_mac, ARP_REQUEST, IPV4_UDP, MPLS_TCP,
    };
    use bricks_runtime::testing::{make_element, Harness};
    use proptest::prelude::*;

    /// 1,024 routers: tag `tag(i)` to output `i`.
    fn many(mode: &str, tag: impl Fn(usize) -> String) -> String {
        let pairs: Vec<String> = (0..1024).map(|i| format!("{} {i}", tag(i))).collect();
        format!("BY {mode}, {}", pairs.join(", "))
    }

    fn mac(i: usize) -> [u8; 6] {
        [0x02, 0, 0, 0, (i >> 8) as u8, i as u8]
    }

    fn mac_text(m: [u8; 6]) -> String {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    }

    /// Pushes `frames` in one batch and checks that frame `k` left by
    /// output `outs[k]` with its annotation set, and nowhere else.
    fn check_routes(h: &mut Harness, noutputs: usize, frames: &[Vec<u8>], outs: &[usize]) {
        h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let mut got = vec![Vec::new(); noutputs];
        for (o, g) in got.iter_mut().enumerate() {
            for p in h.take(o) {
                assert_eq!(usize::from(p.anno().vrouter), o);
                g.push(p.data().to_vec());
            }
        }
        let mut want = vec![Vec::new(); noutputs];
        for (f, &o) in frames.iter().zip(outs) {
            want[o].push(f.clone());
        }
        assert_eq!(got, want);
    }

    #[test]
    fn a_batch_of_one_router_goes_on_whole_counted_for_every_frame() {
        // By MAC address: 20 frames for router 1, one batch.
        let args = format!("BY mac, {} 0, {} 1", mac_text(mac(0)), mac_text(mac(1)));
        let mut h = Harness::push(&CLASS, &args, 1, 2);
        let f = to_mac(&IPV4_UDP, mac(1));
        check_routes(&mut h, 2, &vec![f.clone(); 20], &[1; 20]);
        let s = h.stats();
        assert_eq!((s.get("out1"), s.get("out0")), (Some(20), None));
        // The same tag and one frame too short for a header: that frame
        // is malformed, the others go on.
        let mut frames = vec![f.clone(); 5];
        frames[3].truncate(10);
        h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        assert_eq!(h.take_bytes(1), vec![f.clone(); 4]);
        assert_eq!(h.stats().get("malformed"), Some(1));
        assert_eq!(h.stats().get("out1"), Some(24));
        // One unknown address for the whole batch: each frame counted.
        let stranger = to_mac(&IPV4_UDP, [0x02, 9, 9, 9, 9, 9]);
        h.push_packets(0, (0..7).map(|_| Packet::from_slice(&stranger).unwrap()));
        assert!(h.take_bytes(0).is_empty() && h.take_bytes(1).is_empty());
        assert_eq!(h.stats().get("unknown_tag"), Some(7));

        // By VLAN: 20 frames of VLAN 20, one batch; then a batch of VLAN 0
        // (priority tags: no tag) and one of an unknown VLAN.
        let mut h = Harness::push(&CLASS, "BY vlan, 10 0, 20 1, NOTAG 0", 1, 2);
        let f = tagged(&IPV4_UDP, &[(0x8100, 20)]);
        check_routes(&mut h, 2, &vec![f; 20], &[1; 20]);
        let prio = tagged(&IPV4_UDP, &[(0x8100, 0x6000)]);
        check_routes(&mut h, 2, &vec![prio; 3], &[0; 3]);
        let unknown = tagged(&IPV4_UDP, &[(0x8100, 30)]);
        h.push_packets(0, (0..4).map(|_| Packet::from_slice(&unknown).unwrap()));
        let s = h.stats();
        assert_eq!((s.get("out1"), s.get("out0")), (Some(20), Some(3)));
        assert_eq!(s.get("unknown_tag"), Some(4));
    }

    #[test]
    fn vlan_1024_routers() {
        let args = many("vlan", |i| (i + 1).to_string());
        let mut h = Harness::push(&CLASS, &args, 1, 1024);
        // Every router, in a scrambled order, over several batches.
        let order: Vec<usize> = (0..1024).map(|k| (k * 389) % 1024).collect();
        let frames: Vec<Vec<u8>> = order
            .iter()
            .map(|&i| tagged(&IPV4_UDP, &[(0x8100, 0x6000 | (i as u16 + 1))]))
            .collect();
        check_routes(&mut h, 1024, &frames, &order);
        let s = h.stats();
        for i in 0..1024 {
            assert_eq!(s.get(&format!("out{i}")), Some(1), "out{i}");
        }
        // Drops and output 0 mixed into a batch spread over many outputs.
        let mut frames = Vec::new();
        let mut outs = Vec::new();
        for k in 0..200usize {
            let i = (k * 37) % 1024;
            frames.push(tagged(&IPV4_UDP, &[(0x8100, i as u16 + 1)]));
            outs.push(i);
            if k % 3 == 0 {
                frames.push(tagged(&IPV4_UDP, &[(0x8100, 4000)]));
                outs.push(usize::MAX);
            }
            if k % 10 == 0 {
                frames.push(tagged(&IPV4_UDP, &[(0x8100, 1)]));
                outs.push(0);
            }
        }
        h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let mut want = vec![Vec::new(); 1024];
        for (f, &o) in frames.iter().zip(&outs) {
            if o != usize::MAX {
                want[o].push(f.clone());
            }
        }
        for (o, w) in want.iter().enumerate() {
            assert_eq!(&h.take_bytes(o), w, "output {o}");
        }
        assert_eq!(h.stats().get("unknown_tag"), Some(67));
        // An 802.1ad outer tag counts the same; a Q-in-Q frame goes by
        // its outer tag.
        let qinq = tagged(&IPV4_UDP, &[(0x88a8, 700), (0x8100, 5)]);
        check_routes(&mut h, 1024, &[qinq], &[699]);
    }

    /// Demultiplexers behind a demultiplexer, in a running router: each
    /// inner one splits the batches it receives while the outer one is
    /// still between outputs, and every frame still reaches its counter,
    /// once.
    #[test]
    fn demultiplexers_in_series_split_their_batches_independently() {
        use bricks_config::{Source, SourceMap};
        use bricks_runtime::{build, Engine};
        use std::fmt::Write as _;
        const OUTER: usize = 24;
        const INNER: usize = 20;
        const SOURCES: usize = 96;
        const EACH: usize = 7;
        let hex = |f: &[u8]| f.iter().map(|b| format!("\\<{b:02x}>")).collect::<String>();
        let mut conf = String::from("rr :: RoundRobinSched; rr -> Unqueue(BURST 256) -> outer;\n");
        let vlans: Vec<String> = (0..OUTER).map(|v| format!("{} {v}", v + 1)).collect();
        let _ = writeln!(conf, "outer :: VRDemux(BY vlan, {});", vlans.join(", "));
        let macs: Vec<String> = (0..INNER)
            .map(|m| format!("{} {m}", mac_text(mac(m))))
            .collect();
        for v in 0..OUTER {
            let _ = writeln!(
                conf,
                "outer[{v}] -> in{v} :: VRDemux(BY mac, {});",
                macs.join(", ")
            );
            for m in 0..INNER {
                let _ = writeln!(conf, "in{v}[{m}] -> c{v}_{m} :: Counter -> Discard;");
            }
        }
        // Sources in a scrambled order: a batch holds many routers, some
        // several times.
        let mut want = vec![vec![0u64; INNER]; OUTER];
        for j in 0..SOURCES {
            let (v, m) = ((j * 7) % OUTER, (j * 11) % INNER);
            want[v][m] += EACH as u64;
            let f = tagged(&to_mac(&IPV4_UDP, mac(m)), &[(0x8100, v as u16 + 1)]);
            let _ = writeln!(
                conf,
                "InfiniteSource(DATA \"{}\", LIMIT {EACH}, STOP false) -> [{j}]rr;",
                hex(&f)
            );
        }
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<test>".into(),
                text: conf.clone(),
            },
        )
        .unwrap_or_else(|d| panic!("{}", map.render(&d[0])));
        let plan =
            build(&router, &crate::registry()).unwrap_or_else(|d| panic!("{}", map.render(&d[0])));
        let mut engine = Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        let summary = engine.run();
        for (v, row) in want.iter().enumerate() {
            for (m, &n) in row.iter().enumerate() {
                let got = summary
                    .elements
                    .iter()
                    .find(|e| e.name == format!("c{v}_{m}"))
                    .and_then(|e| e.stats.get("count"))
                    .unwrap_or(0);
                assert_eq!(got, n, "router {v}, inner router {m}");
            }
        }
    }

    #[test]
    fn mac_1024_routers() {
        let args = many("mac", |i| mac_text(mac(i)));
        let mut h = Harness::push(&CLASS, &args, 1, 1024);
        let order: Vec<usize> = (0..1024).rev().collect();
        let frames: Vec<Vec<u8>> = order.iter().map(|&i| to_mac(&IPV4_UDP, mac(i))).collect();
        check_routes(&mut h, 1024, &frames, &order);
        let s = h.stats();
        for i in 0..1024 {
            assert_eq!(s.get(&format!("out{i}")), Some(1), "out{i}");
        }
        h.push_bytes(0, &to_mac(&IPV4_UDP, mac(1024)));
        assert_eq!(h.stats().get("unknown_tag"), Some(1));
    }

    /// An output's count adds its tags' slots and the frames sent there
    /// for no tag of its own.
    #[test]
    fn counts_by_output_add_up_tags_and_defaults() {
        for (mode, tag) in [
            ("mac", (|i| mac_text(mac(i))) as fn(usize) -> String),
            ("vlan", |i| i.to_string()),
        ] {
            let args = format!(
                "BY {mode}, {} 0, {} 0, {} 1, UNKNOWN 1",
                tag(1),
                tag(2),
                tag(3)
            );
            let mut h = Harness::push(&CLASS, &args, 1, 2);
            for i in [1, 2, 2, 3, 4] {
                let f = match mode {
                    "mac" => to_mac(&IPV4_UDP, mac(i)),
                    _ => tagged(&IPV4_UDP, &[(0x8100, i as u16)]),
                };
                h.push_bytes(0, &f);
            }
            let s = h.stats();
            assert_eq!(s.get("out0"), Some(3), "{mode}");
            assert_eq!(
                s.get("out1"),
                Some(2),
                "{mode}: tag 3 and the unknown tag 4"
            );
        }
    }

    #[test]
    fn mpls_1024_routers() {
        let label = |i: usize| (i * 1021 + 16) as u32;
        let args = many("mpls", |i| label(i).to_string());
        let mut h = Harness::push(&CLASS, &args, 1, 1024);
        let order: Vec<usize> = (0..1024).collect();
        let frames: Vec<Vec<u8>> = order
            .iter()
            .map(|&i| labelled(&IPV4_UDP, &[(label(i), 0, 64), (7, 0, 64)]))
            .collect();
        check_routes(&mut h, 1024, &frames, &order);
        // The top label decides, behind a VLAN tag too.
        let f = tagged(&labelled(&IPV4_UDP, &[(label(9), 1, 3)]), &[(0x8100, 4)]);
        check_routes(&mut h, 1024, &[f], &[9]);
    }

    #[test]
    fn ipip_1024_routers() {
        let addr = |i: usize| [10, 255, (i >> 8) as u8, i as u8];
        let args = many("ipip", |i| {
            let a = addr(i);
            format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
        });
        let mut h = Harness::push(&CLASS, &args, 1, 1024);
        let order: Vec<usize> = (0..1024).map(|k| (k * 7) % 1024).collect();
        let frames: Vec<Vec<u8>> = order.iter().map(|&i| ipip(addr(i))).collect();
        check_routes(&mut h, 1024, &frames, &order);
        // After one VLAN tag.
        check_routes(
            &mut h,
            1024,
            &[tagged(&ipip(addr(3)), &[(0x8100, 9)])],
            &[3],
        );
    }

    #[test]
    fn unknown_notag_and_malformed() {
        let mut h = Harness::push(&CLASS, "BY vlan, 10 0, 20 1, UNKNOWN 2, NOTAG 3", 1, 4);
        let frames = vec![
            tagged(&IPV4_UDP, &[(0x8100, 10)]),
            tagged(&IPV4_UDP, &[(0x8100, 11)]),
            IPV4_UDP.to_vec(),
            tagged(&IPV4_UDP, &[(0x8100, 0x2000)]), // VLAN 0: priority only
            tagged(&IPV4_UDP, &[(0x8100, 20)]),
            ARP_REQUEST.to_vec(),
        ];
        check_routes(&mut h, 4, &frames, &[0, 2, 3, 3, 1, 3]);
        // Malformed: shorter than an Ethernet header, a truncated tag
        // (with its type, half or all of its control field, or no type
        // after it).
        let t = tagged(&IPV4_UDP, &[(0x8100, 10)]);
        for len in [0, 13, 14, 15, 16, 17] {
            h.push_bytes(0, &t[..len]);
        }
        // An untagged header with no payload is no tag, not a bad one.
        for len in [14, 15] {
            h.push_bytes(0, &IPV4_UDP[..len]);
        }
        let s = h.stats();
        assert_eq!(s.get("malformed"), Some(6));
        assert_eq!(s.get("unknown_tag"), Some(0));
        assert_eq!(s.get("no_tag"), Some(0));
        assert_eq!(
            (s.get("out0"), s.get("out1"), s.get("out2"), s.get("out3")),
            (Some(1), Some(1), Some(1), Some(5))
        );
        // Without UNKNOWN and NOTAG, both are dropped and counted.
        let mut h = Harness::push(&CLASS, "BY vlan, 10 0", 1, 1);
        h.push_bytes(0, &tagged(&IPV4_UDP, &[(0x8100, 11)]));
        h.push_bytes(0, &IPV4_UDP);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!((s.get("unknown_tag"), s.get("no_tag")), (Some(1), Some(1)));
        assert_eq!(s.get("out0"), None);
    }

    #[test]
    fn mpls_and_ipip_absent_and_malformed() {
        let mut h = Harness::push(&CLASS, "BY mpls, 29 0, NOTAG 1", 1, 2);
        check_routes(&mut h, 2, &[MPLS_TCP.to_vec(), IPV4_UDP.to_vec()], &[0, 1]);
        for f in [&MPLS_TCP[..17], &tagged(&MPLS_TCP, &[(0x8100, 1)])[..15]] {
            h.push_bytes(0, f);
        }
        assert_eq!(h.stats().get("malformed"), Some(2));

        let mut h = Harness::push(&CLASS, "BY ipip, 10.0.0.1 0, NOTAG 1", 1, 2);
        let good = ipip([10, 0, 0, 1]);
        // Plain UDP and ARP carry no tunnel.
        check_routes(
            &mut h,
            2,
            &[good.clone(), IPV4_UDP.to_vec(), ARP_REQUEST.to_vec()],
            &[0, 1, 1],
        );
        let mut bad = Vec::new();
        bad.push(good[..14 + 19].to_vec()); // truncated header
        let mut v = good.clone();
        v[14] = 0x65; // version 6
        bad.push(v);
        let mut v = good.clone();
        v[14] = 0x44; // header length 16
        bad.push(v);
        let mut v = good.clone();
        v[16..18].copy_from_slice(&2000u16.to_be_bytes()); // longer than the frame
        bad.push(v);
        let mut v = good.clone();
        v[16..18].copy_from_slice(&19u16.to_be_bytes()); // shorter than the header
        bad.push(v);
        for f in &bad {
            h.push_bytes(0, f);
        }
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
        assert_eq!(h.stats().get("malformed"), Some(5));
        // Ethernet padding after the datagram is fine.
        let mut padded = good.clone();
        padded.extend([0; 10]);
        check_routes(&mut h, 2, &[padded], &[0]);
    }

    #[test]
    fn broadcast_drop_and_default_router() {
        let a = mac_text(mac(1));
        let mut h = Harness::push(&CLASS, &format!("BY mac, {a} 0"), 1, 1);
        h.push_bytes(0, &ARP_REQUEST);
        h.push_bytes(0, &to_mac(&IPV4_UDP, [0x01, 0, 0x5e, 0, 0, 1]));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("broadcast_drops"), Some(2));
        let mut h = Harness::push(&CLASS, &format!("BY mac, {a} 0, BROADCAST 1"), 1, 2);
        check_routes(
            &mut h,
            2,
            &[ARP_REQUEST.to_vec(), to_mac(&IPV4_UDP, mac(1))],
            &[1, 0],
        );
    }

    #[test]
    fn replication_keeps_order_per_output() {
        let (a, b, c) = (mac(1), mac(2), mac(3));
        let args = format!(
            "BY mac, {} 0, {} 1, {} 2, {} 1, UNKNOWN 3, BROADCAST replicate",
            mac_text(a),
            mac_text(b),
            mac_text(c),
            mac_text(mac(4))
        );
        let mut h = Harness::push(&CLASS, &args, 1, 4);
        let ua = to_mac(&IPV4_UDP, a);
        let ub = to_mac(&IPV4_UDP, b);
        let uc = to_mac(&IPV4_UDP, c);
        let b1 = ARP_REQUEST.to_vec();
        let mut b2 = to_mac(&IPV4_UDP, [0x33, 0x33, 0, 0, 0, 1]);
        b2[20] = 0xee; // tell the two group frames apart
        let unknown = to_mac(&IPV4_UDP, mac(9));
        let frames = [&ua, &b1, &ub, &uc, &unknown, &b2, &ua];
        h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let out = |h: &mut Harness, o: usize| {
            let ps = h.take(o);
            assert!(ps.iter().all(|p| usize::from(p.anno().vrouter) == o));
            ps.iter().map(|p| p.data().to_vec()).collect::<Vec<_>>()
        };
        assert_eq!(
            out(&mut h, 0),
            vec![ua.clone(), b1.clone(), b2.clone(), ua.clone()]
        );
        assert_eq!(out(&mut h, 1), vec![b1.clone(), ub.clone(), b2.clone()]);
        assert_eq!(out(&mut h, 2), vec![b1.clone(), uc.clone(), b2.clone()]);
        // UNKNOWN is not a router: no copies.
        assert_eq!(out(&mut h, 3), vec![unknown]);
        let s = h.stats();
        assert_eq!(s.get("replicated"), Some(2));
        assert_eq!(s.get("out0"), Some(4));
        assert_eq!(s.get("out1"), Some(3));
        // A batch of group frames only.
        h.push_packets(0, [Packet::from_slice(&b1).unwrap()]);
        assert_eq!(out(&mut h, 2), vec![b1.clone()]);
        assert_eq!(h.stats().get("replicated"), Some(3));
    }

    #[test]
    fn a_tag_on_two_outputs_is_refused() {
        let e =
            make_element(&CLASS, "BY vlan, 10 0, 20 1, 10 1", &PortInfo::default()).unwrap_err();
        assert!(e.contains("tag 10"), "{e}");
        assert!(e.contains("output 0 by pair 1"), "{e}");
        assert!(e.contains("output 1 by pair 3"), "{e}");
        let e = make_element(
            &CLASS,
            "BY mac, 02:00:00:00:00:01 0, 02-00-00-00-00-01 1",
            &PortInfo::default(),
        )
        .unwrap_err();
        assert!(e.contains("output 0") && e.contains("output 1"), "{e}");
        // The same pair twice is harmless.
        assert!(Harness::try_new(
            &CLASS,
            "BY ipip, 10.0.0.1 0, 10.0.0.1 0",
            PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![bricks_element::Processing::Push],
            }
        )
        .is_ok());
    }

    #[test]
    fn outputs_are_checked() {
        let ports = |n: usize| PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; n],
        };
        let make = |a: &str, n: usize| make_element(&CLASS, a, &ports(n)).map(|_| ());
        assert!(make("BY vlan, 10 0, 20 2", 3)
            .unwrap_err()
            .contains("output 1 is named by no pair"));
        assert!(make("BY vlan, 10 0, 20 1", 1)
            .unwrap_err()
            .contains("not connected"));
        assert!(make("BY vlan, 10 0, 20 1", 3)
            .unwrap_err()
            .contains("output 2 is connected"));
        assert!(make("BY vlan, 10 0, UNKNOWN 1, NOTAG 2", 3).is_ok());
        assert!(make("BY mac, 2:0:0:0:0:1 0, BROADCAST 1", 2).is_ok());
    }

    #[test]
    fn arguments_are_checked() {
        let one = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let make = |a: &str| make_element(&CLASS, a, &one).map(|_| ());
        assert!(make("10 0").unwrap_err().contains("BY"));
        assert!(make("BY vxlan, 10 0").unwrap_err().contains("BY"));
        assert!(make("BY vlan")
            .unwrap_err()
            .contains("no `TAG OUTPUT` pair"));
        for bad in ["0 0", "4095 0", "x 0", "10", "10 0 1", "10 -1", "10 65535"] {
            let e = make(&format!("BY vlan, {bad}")).unwrap_err();
            assert!(
                e.contains(bad.split(' ').next().unwrap()) || e.contains("TAG"),
                "{bad}: {e}"
            );
        }
        assert!(make("BY mpls, 1048576 0")
            .unwrap_err()
            .contains("MPLS label"));
        assert!(make("BY mpls, 1048575 0").is_ok());
        assert!(make("BY mac, 1:2:3 0").unwrap_err().contains("MAC"));
        for group in [
            "ff:ff:ff:ff:ff:ff",
            "01:00:5e:00:00:01",
            "33:33:00:00:00:01",
        ] {
            let e = make(&format!("BY mac, {group} 0")).unwrap_err();
            assert!(e.contains("group") && e.contains(group), "{e}");
        }
        assert!(make("BY ipip, 10.0.0 0").unwrap_err().contains("IPv4"));
        assert!(make("BY mac, 2:0:0:0:0:1 0, NOTAG 0")
            .unwrap_err()
            .contains("NOTAG"));
        assert!(make("BY vlan, 10 0, BROADCAST drop")
            .unwrap_err()
            .contains("BROADCAST"));
        assert!(make("BY mac, 2:0:0:0:0:1 0, BROADCAST some").is_err());
        assert!(make("BY vlan, 10 0, UNKNWN 0").is_err());
    }

    /// What a frame's output should be, found the slow way: wire views
    /// for parsing and a scan of the pairs in order.
    fn naive(
        mode: Mode,
        pairs: &[(u64, u16)],
        unknown: Option<u16>,
        notag: Option<u16>,
        broadcast: Option<u16>,
        f: &[u8],
    ) -> Result<u16, &'static str> {
        use bricks_wire::ethernet::{EtherType, EthernetFrame};
        use bricks_wire::ipv4::Ipv4Packet;
        use bricks_wire::mpls::MplsPacket;
        use bricks_wire::vlan::VlanPacket;
        let eth = EthernetFrame::new_checked(f).map_err(|_| "malformed")?;
        let find = |key: u64| -> Result<u16, &'static str> {
            match pairs.iter().find(|p| p.0 == key) {
                Some(p) => Ok(p.1),
                None => unknown.ok_or("unknown_tag"),
            }
        };
        let absent = || notag.ok_or("no_tag");
        // The payload and its type behind at most one tag.
        let untag = || -> Result<(EtherType, &[u8]), &'static str> {
            let t = eth.ethertype();
            if t == EtherType::VLAN || t == EtherType::QINQ {
                let v = VlanPacket::new_checked(eth.payload()).map_err(|_| "malformed")?;
                Ok((v.ethertype(), v.payload()))
            } else {
                Ok((t, eth.payload()))
            }
        };
        match mode {
            Mode::Mac => {
                let dst = eth.dst_addr().0;
                if dst[0] & 1 == 1 {
                    return broadcast.ok_or("broadcast_drops");
                }
                find(mac_key(&dst))
            }
            Mode::Vlan => {
                let t = eth.ethertype();
                if t != EtherType::VLAN && t != EtherType::QINQ {
                    return absent();
                }
                let v = VlanPacket::new_checked(eth.payload()).map_err(|_| "malformed")?;
                if v.vid() == 0 {
                    return absent();
                }
                find(u64::from(v.vid()))
            }
            Mode::Mpls => {
                let (t, payload) = untag()?;
                if t != EtherType::MPLS_UNICAST && t != EtherType::MPLS_MULTICAST {
                    return absent();
                }
                let e = MplsPacket::new_checked(payload).map_err(|_| "malformed")?;
                find(u64::from(e.label()))
            }
            Mode::IpIp => {
                let (t, payload) = untag()?;
                if t != EtherType::IPV4 {
                    return absent();
                }
                let ip = Ipv4Packet::new_checked(payload).map_err(|_| "malformed")?;
                if ip.version() != 4 {
                    return Err("malformed");
                }
                if u8::from(ip.next_header()) != 4 {
                    return absent();
                }
                find(u64::from(u32::from(ip.dst_addr())))
            }
        }
    }

    /// A frame whose tag is drawn from a small set, so that hits, misses
    /// and every malformation happen often.
    fn frame_strategy() -> impl Strategy<Value = Vec<u8>> {
        let small_tag = 0u32..6;
        (0u8..8, small_tag, 0usize..80, any::<u8>(), any::<bool>()).prop_map(
            |(kind, tag, cut, byte, vlan)| {
                let mut f = match kind {
                    0 => tagged(&IPV4_UDP, &[(0x8100, tag as u16)]),
                    1 => to_mac(&IPV4_UDP, [2, 0, 0, 0, 0, tag as u8]),
                    2 => to_mac(&ARP_REQUEST, [0xff; 6]),
                    3 => labelled(&IPV4_UDP, &[(tag, 0, 9)]),
                    4 => ipip([10, 0, 0, tag as u8]),
                    5 => IPV4_UDP.to_vec(),
                    6 => {
                        let mut f = ipip([10, 0, 0, tag as u8]);
                        // Another protocol, often a neighbour of 4.
                        f[14 + 9] = [3, 5, 17, byte][usize::from(byte >> 6)];
                        f
                    }
                    _ => tagged(&IPV4_UDP, &[(0x88a8, tag as u16)]),
                };
                if vlan && kind != 0 && kind != 7 {
                    f = tagged(&f, &[(0x8100, 1 + tag as u16)]);
                }
                if cut < f.len() && byte & 3 == 0 {
                    f.truncate(cut);
                }
                if byte & 0xc == 4 && f.len() > 14 {
                    // Damage one byte of the header or tag.
                    let at = 12 + usize::from(byte >> 4) % 12;
                    if at < f.len() {
                        f[at] ^= byte | 1;
                    }
                }
                f
            },
        )
    }

    fn key_text(mode: Mode, t: u32) -> String {
        match mode {
            Mode::Vlan => (t + 1).to_string(),
            Mode::Mac => mac_text([2, 0, 0, 0, 0, t as u8]),
            Mode::Mpls => t.to_string(),
            Mode::IpIp => format!("10.0.0.{t}"),
        }
    }

    proptest! {
        #[test]
        fn agrees_with_a_linear_scan(
            mode in prop_oneof![Just(Mode::Vlan), Just(Mode::Mac), Just(Mode::Mpls), Just(Mode::IpIp)],
            tags in proptest::collection::btree_map(0u32..6, 0u16..4, 1..6),
            extra in 0u8..4,
            frames in proptest::collection::vec(frame_strategy(), 1..40),
        ) {
            // Outputs 0..=3 named by pairs; UNKNOWN / NOTAG / BROADCAST
            // take the next ones when `extra` asks for them.
            let mut outs: Vec<u16> = tags.values().copied().collect();
            outs.sort_unstable();
            outs.dedup();
            // Renumber the outputs 0..k so that none is left unnamed.
            let renum = |o: u16| outs.iter().position(|&x| x == o).unwrap() as u16;
            let pairs: Vec<(u64, u16)> = tags
                .iter()
                .map(|(&t, &o)| {
                    let key = parse_tag(mode, &key_text(mode, t)).unwrap();
                    (key, renum(o))
                })
                .collect();
            let mut next = outs.len() as u16;
            let mut args = format!("BY {mode:?}").to_lowercase().replace("by ", "BY ");
            for (&t, &o) in &tags {
                args += &format!(", {} {}", key_text(mode, t), renum(o));
            }
            let mut take = |name: &str, args: &mut String| {
                let o = next;
                next += 1;
                *args += &format!(", {name} {o}");
                Some(o)
            };
            let unknown = if extra & 1 != 0 { take("UNKNOWN", &mut args) } else { None };
            let (notag, broadcast) = if mode == Mode::Mac {
                (None, if extra & 2 != 0 { take("BROADCAST", &mut args) } else { None })
            } else {
                (if extra & 2 != 0 { take("NOTAG", &mut args) } else { None }, None)
            };
            let n = usize::from(next);
            let mut h = Harness::push(&CLASS, &args, 1, n);
            let mut want = vec![Vec::new(); n];
            let mut drops: std::collections::HashMap<&str, u64> = Default::default();
            for f in &frames {
                match naive(mode, &pairs, unknown, notag, broadcast, f) {
                    Ok(o) => want[usize::from(o)].push(f.clone()),
                    Err(why) => *drops.entry(why).or_default() += 1,
                }
            }
            h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
            for (o, w) in want.iter().enumerate() {
                prop_assert_eq!(&h.take_bytes(o), w, "output {} of {}", o, args);
            }
            let s = h.stats();
            for why in ["malformed", "unknown_tag", "no_tag", "broadcast_drops"] {
                prop_assert_eq!(
                    s.get(why).unwrap_or(0),
                    drops.get(why).copied().unwrap_or(0),
                    "{} with {}", why, args
                );
            }
        }
    }
}
