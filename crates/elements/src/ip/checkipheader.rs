//! `CheckIPHeader`: the validity checks a router applies to every IPv4
//! datagram it receives (RFC 1812 section 5.2.2), and the source address
//! filter of section 5.3.7, with the martian filter of sections 5.3.7 and
//! 4.2.2.11 on request.

use super::header::{be16, be32, is_multicast_or_reserved, AddressList, PrefixList};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `CheckIPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckIPHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks IPv4 headers (RFC 1812 section 5.2.2)",
    synopsis: "CheckIPHeader([OFFSET, KEYWORDS INTERFACES, BADSRC, GOODDST, BADDST, \
        MARTIANS, CHECKSUM, VERBOSE, DETAILS])",
    description: "Expects IPv4 packets whose header starts OFFSET bytes into the data. \
        Performs the checks RFC 1812 section 5.2.2 requires of a router before it \
        processes a datagram: the packet holds at least 20 bytes, the version is 4, the \
        header length is at least 5 words, the total length is at least the header \
        length and no more than the packet length, and the header checksum is correct. \
        The source address must be a unicast address (RFC 1812 section 5.3.7): \
        multicast and class E sources, which include the limited broadcast \
        255.255.255.255, are always refused; addresses listed in BADSRC (directed \
        broadcasts of the router's subnets) are refused unless the destination is \
        one of the GOODDST addresses. Destinations listed in BADDST are refused.\n\n\
        With MARTIANS true (a bricks extension; Click leaves destinations to the routing \
        table) the addresses RFC 1812 says a router must not forward are refused too, as \
        Linux refuses its martians: sources on network 0 (0/8, unless the destination \
        is one of GOODDST, the router itself) or on the loopback network 127/8, and \
        sources equal to one of the router's own INTERFACES addresses (someone forging \
        the router's address); destinations on network 0, on 127/8 or in class E \
        (240/4) other than the limited broadcast 255.255.255.255. The limited broadcast, \
        the local network control block 224.0.0.0/24 and the subnet broadcasts stay \
        legitimate destinations for the router itself: the routing table sends them to \
        the host, never out of an interface.\n\n\
        Valid packets are trimmed to the IP total length \
        (Ethernet padding goes), get their network header annotation set to the IP \
        header and their destination annotation set to the IP destination, and leave \
        on output 0. Invalid packets leave on output 1 if it is connected and are \
        dropped otherwise; either way they are counted by reason.\n\n\
        As in Click, a single unnamed argument that is not a number is the deprecated \
        BADSRC2 list, which also refuses 0.0.0.0 and 255.255.255.255 as sources, and \
        may be followed by OFFSET.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push)",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned integer",
            default: Some("0"),
            doc: "where the IP header starts in the packet data",
        },
        Keyword {
            name: "INTERFACES",
            ty: "space-separated IPv4 prefixes (ADDR/LEN)",
            default: None,
            doc: "the router's interface addresses. Acts as a BADSRC of each subnet's \
                broadcast and network address plus 0.0.0.0 and 255.255.255.255, and a \
                GOODDST of the interface addresses",
        },
        Keyword {
            name: "BADSRC",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "source addresses to refuse (but see GOODDST); added to what \
                INTERFACES gives",
        },
        Keyword {
            name: "GOODDST",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "destinations exempt from the BADSRC check (a host that does not know \
                its address yet may send from 0.0.0.0 to the router)",
        },
        Keyword {
            name: "BADDST",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "destination addresses to refuse (a bricks extension), for instance the \
                directed broadcasts of subnets elsewhere that must not be forwarded",
        },
        Keyword {
            name: "MARTIANS",
            ty: "boolean",
            default: Some("false"),
            doc: "also refuse the martian sources and destinations above (a bricks \
                extension; the shipped router configurations set it)",
        },
        Keyword {
            name: "CHECKSUM",
            ty: "boolean",
            default: Some("true"),
            doc: "whether to verify the header checksum; the other checks always run",
        },
        Keyword {
            name: "VERBOSE",
            ty: "boolean",
            default: Some("false"),
            doc: "accepted for compatibility with Click; bricks reports bad packets \
                through its counters, never per packet",
        },
        Keyword {
            name: "DETAILS",
            ty: "boolean",
            default: Some("false"),
            doc: "accepted for compatibility with Click; the per-reason counters are \
                always kept",
        },
    ],
    counters: &[
        (
            "drops",
            "invalid packets, whatever the reason (sent to output 1 or dropped)",
        ),
        (
            "truncated",
            "shorter than 20 bytes or than the IP total length",
        ),
        ("bad_version", "version field not 4"),
        ("bad_header_length", "header length below 5 words"),
        ("bad_length", "total length below the header length"),
        ("bad_checksum", "header checksum wrong"),
        ("bad_source", "source address not a valid unicast address"),
        (
            "martian_source",
            "MARTIANS: source on network 0 or 127, or one of the router's own",
        ),
        (
            "martian_destination",
            "MARTIANS: destination on network 0 or 127, or in class E",
        ),
        ("bad_destination", "destination listed in BADDST"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> c :: CheckIPHeader(INTERFACES 10.0.0.2/24) -> Discard; \
        c[1] -> Discard;",
    see_also: &["MarkIPHeader", "GetIPAddress", "StaticIPLookup", "Strip"],
};

/// Why CheckIPHeader refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Fewer than 20 bytes, or fewer than the total length announces.
    Truncated,
    /// The version field is not 4.
    BadVersion,
    /// The header length is below 5 words (20 bytes).
    BadHeaderLength,
    /// The total length is below the header length.
    BadLength,
    /// The header checksum is wrong.
    BadChecksum,
    /// The source is multicast, class E, or in the BADSRC list.
    BadSource,
    /// MARTIANS: the source is on network 0 or 127, or the router's own.
    MartianSource,
    /// MARTIANS: the destination is on network 0 or 127, or class E.
    MartianDestination,
    /// The destination is in the BADDST list.
    BadDestination,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 9] = [
        DropReason::Truncated,
        DropReason::BadVersion,
        DropReason::BadHeaderLength,
        DropReason::BadLength,
        DropReason::BadChecksum,
        DropReason::BadSource,
        DropReason::MartianSource,
        DropReason::MartianDestination,
        DropReason::BadDestination,
    ];

    /// The name of the counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::BadVersion => "bad_version",
            DropReason::BadHeaderLength => "bad_header_length",
            DropReason::BadLength => "bad_length",
            DropReason::BadChecksum => "bad_checksum",
            DropReason::BadSource => "bad_source",
            DropReason::MartianSource => "martian_source",
            DropReason::MartianDestination => "martian_destination",
            DropReason::BadDestination => "bad_destination",
        }
    }

    /// What is wrong, in words.
    pub const fn text(self) -> &'static str {
        match self {
            DropReason::Truncated => "packet shorter than its IP header or IP length",
            DropReason::BadVersion => "bad IP version",
            DropReason::BadHeaderLength => "bad IP header length",
            DropReason::BadLength => "bad IP length",
            DropReason::BadChecksum => "bad IP checksum",
            DropReason::BadSource => "bad source address",
            DropReason::MartianSource => {
                "martian source address (network 0, loopback or the router's own)"
            }
            DropReason::MartianDestination => {
                "martian destination address (network 0, loopback or class E)"
            }
            DropReason::BadDestination => "destination address listed in BADDST",
        }
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

/// The directed broadcast address of subnet `p` and its all-zeros form
/// (RFC 1812 section 5.3.7, RFC 919), neither of which a host sends from;
/// none for a /31 or /32, where every address is a host (RFC 3021).
fn subnet_special_addresses(p: &bricks_wire::Ipv4Cidr) -> impl Iterator<Item = Ipv4Addr> {
    let net = p.network().address();
    p.broadcast().into_iter().chain(p.broadcast().map(|_| net))
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args, ports.noutputs() > 1)?))
}

/// Reads CheckIPHeader's arguments (IPInputCombo reads them too, after its
/// own COLOR); `has_reject` says whether output 1 exists.
pub(crate) fn configure(args: &mut Args<'_>, has_reject: bool) -> Result<CheckIPHeader, ArgError> {
    let interfaces: Option<PrefixList> = args.read("INTERFACES")?;
    let badsrc: Option<AddressList> = args.read("BADSRC")?;
    let gooddst: Option<AddressList> = args.read("GOODDST")?;
    let baddst: Option<AddressList> = args.read("BADDST")?;
    let martians: bool = args.read("MARTIANS")?.unwrap_or(false);
    let kw_offset: Option<usize> = args.read("OFFSET")?;
    let checksum: bool = args.read("CHECKSUM")?.unwrap_or(true);
    let _verbose: Option<bool> = args.read("VERBOSE")?;
    let _details: Option<bool> = args.read("DETAILS")?;

    let mut bad_src: Vec<Ipv4Addr> = Vec::new();
    let mut good_dst: Vec<Ipv4Addr> = Vec::new();
    let mut own: Vec<Ipv4Addr> = Vec::new();
    if let Some(ifs) = interfaces {
        for p in &ifs.0 {
            bad_src.extend(subnet_special_addresses(p));
            good_dst.push(p.address());
            own.push(p.address());
        }
        bad_src.push(Ipv4Addr::UNSPECIFIED);
        bad_src.push(Ipv4Addr::BROADCAST);
    }
    bad_src.extend(badsrc.map(|l| l.0).unwrap_or_default());
    good_dst.extend(gooddst.map(|l| l.0).unwrap_or_default());

    // Click's positional forms: `CheckIPHeader(OFFSET)` and the deprecated
    // `CheckIPHeader(BADSRC2 [, OFFSET])`.
    let mut offset = kw_offset;
    let rest = args.rest();
    let mut positional = rest.iter();
    if let Some(&(text, span)) = positional.next() {
        let text = text.trim();
        if let Ok(n) = usize::from_arg(text) {
            offset = offset.or(Some(n));
        } else {
            let old = AddressList::from_arg(text).map_err(|why| {
                ArgError::at(
                    span,
                    format!("bad argument OFFSET: expected unsigned integer, {why}"),
                )
            })?;
            bad_src.extend(old.0);
            bad_src.push(Ipv4Addr::UNSPECIFIED);
            bad_src.push(Ipv4Addr::BROADCAST);
            if let Some(&(text, span)) = positional.next() {
                let n = usize::from_arg(text.trim()).map_err(|why| {
                    ArgError::at(
                        span,
                        format!("bad argument OFFSET: expected unsigned integer, {why}"),
                    )
                })?;
                offset = offset.or(Some(n));
            }
        }
    }
    if let Some(&(_, span)) = positional.next() {
        return Err(
            ArgError::at(span, "too many arguments").with_help("arguments: OFFSET, then keywords")
        );
    }

    bad_src.sort_unstable();
    bad_src.dedup();
    good_dst.sort_unstable();
    good_dst.dedup();
    own.sort_unstable();
    own.dedup();
    let mut bad_dst = baddst.map(|l| l.0).unwrap_or_default();
    bad_dst.sort_unstable();
    bad_dst.dedup();
    let own: Box<[u32]> = own.into_iter().map(u32::from).collect();
    let bad_src: Box<[u32]> = bad_src.into_iter().map(u32::from).collect();
    let bad_dst: Box<[u32]> = bad_dst.into_iter().map(u32::from).collect();
    let src_filter = filter(
        bad_src
            .iter()
            .chain(if martians { own.iter() } else { [].iter() }),
    );
    Ok(CheckIPHeader {
        martians,
        own,
        src_filter,
        dst_filter: filter(bad_dst.iter()),
        bad_dst,
        offset: offset.unwrap_or(0),
        checksum,
        bad_src,
        good_dst: good_dst.into_iter().map(u32::from).collect(),
        has_reject,
        drops: [0; DropReason::ALL.len()],
    })
}

/// [`NET_BAD`]: no source in this net (class D and E, and martian).
const BAD_SOURCE: u8 = 1;
/// [`NET_BAD`]: no destination in this net (martian).
const BAD_DESTINATION: u8 = 2;

/// By an address's first byte, whether the test in line with the martian
/// rules on refuses it as a source or destination: net 0 and 127 either
/// way, 224 and above as a source, 240 and above as a destination (where
/// the full check then lets the limited broadcast through).
static NET_BAD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut net = 0;
    while net < 256 {
        let martian = net == 0 || net == 127;
        if martian || net >= 224 {
            t[net] |= BAD_SOURCE;
        }
        if martian || net >= 240 {
            t[net] |= BAD_DESTINATION;
        }
        net += 1;
    }
    t
};

/// The bit of a 64-bit filter that address `a` (host order) sets.
#[inline(always)]
fn filter_bit(a: u32) -> u64 {
    1 << filter_index(a)
}

/// Which bit of a 64-bit filter address `a` (host order) sets.
#[inline(always)]
fn filter_index(a: u32) -> u32 {
    a.wrapping_mul(0x9e37_79b1) >> 26
}

/// A one-word Bloom filter of `addrs`: an address whose bit is clear is in
/// none of them, so the common packet skips the list scans (a router's
/// lists hold a handful of addresses; a scan per list cost more than the
/// rest of the header check).
fn filter<'a>(addrs: impl Iterator<Item = &'a u32>) -> u64 {
    addrs.fold(0, |f, &a| f | filter_bit(a))
}

/// Checks IPv4 headers.
#[derive(Debug)]
pub struct CheckIPHeader {
    offset: usize,
    checksum: bool,
    /// Refused source addresses, host order.
    bad_src: Box<[u32]>,
    /// Destinations exempt from `bad_src`, host order.
    good_dst: Box<[u32]>,
    /// Refused destinations, host order.
    bad_dst: Box<[u32]>,
    /// Whether to refuse martian addresses.
    martians: bool,
    /// The router's own addresses (INTERFACES), host order.
    own: Box<[u32]>,
    /// [`filter`] of `bad_src`, and of `own` when `martians`.
    src_filter: u64,
    /// [`filter`] of `bad_dst`.
    dst_filter: u64,
    has_reject: bool,
    drops: [u64; DropReason::ALL.len()],
}

impl CheckIPHeader {
    /// Every address this element may refuse or treat apart, as a source
    /// or a destination (its lists, and its own addresses under
    /// MARTIANS), besides the fixed ranges (0/8, 127/8, 224/3) every fast
    /// path leaves to it; and whether it reads the header at offset 0.
    /// The XDP fast path sends packets from or to any of them up here.
    pub(crate) fn fast_path_view(&self) -> (Vec<Ipv4Addr>, bool) {
        let mut all: Vec<Ipv4Addr> = self
            .bad_src
            .iter()
            .chain(self.bad_dst.iter())
            .chain(if self.martians {
                self.own.iter()
            } else {
                [].iter()
            })
            .map(|&a| Ipv4Addr::from(a))
            .collect();
        all.sort_unstable();
        all.dedup();
        (all, self.offset == 0)
    }

    /// Turns the header checksum check on or off (CheckIPHeader2 has it
    /// off unless CHECKSUM says otherwise).
    pub(crate) fn set_checksum(&mut self, on: bool) {
        self.checksum = on;
    }

    /// Checks one packet; on success trims it and sets its annotations.
    #[inline(always)]
    pub fn check(&self, p: &mut Packet) -> Result<(), DropReason> {
        let data = p.data();
        let h = match data.get(self.offset..) {
            Some(h) if h.len() >= 20 => h,
            _ => return Err(DropReason::Truncated),
        };
        let ver_ihl = h[0];
        if ver_ihl >> 4 != 4 {
            return Err(DropReason::BadVersion);
        }
        let hlen = usize::from(ver_ihl & 0x0f) * 4;
        if hlen < 20 {
            return Err(DropReason::BadHeaderLength);
        }
        let len = usize::from(be16(h, 2));
        if len < hlen {
            return Err(DropReason::BadLength);
        }
        if len > h.len() {
            return Err(DropReason::Truncated);
        }
        if self.checksum && header_sum(h, hlen) != 0xffff {
            return Err(DropReason::BadChecksum);
        }
        let src = be32(h, 12);
        let dst = be32(h, 16);
        let src_listed = self.src_filter & filter_bit(src) != 0;
        if is_multicast_or_reserved(src)
            || (src_listed && self.bad_src.contains(&src) && !self.good_dst.contains(&dst))
        {
            return Err(DropReason::BadSource);
        }
        if self.martians {
            if let Some(r) = self.martian(src, dst, src_listed) {
                return Err(r);
            }
        }
        if self.dst_filter & filter_bit(dst) != 0 && self.bad_dst.contains(&dst) {
            return Err(DropReason::BadDestination);
        }
        let excess = h.len() - len;
        p.take_back(excess);
        p.set_network_header(self.offset);
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        Ok(())
    }

    /// The test in line of [`CheckIPHeader::check`]: whether `p` is a
    /// usual valid packet (a 20-byte header whose length fits the frame,
    /// a good checksum, addresses that no list and no martian rule can
    /// refuse), which it then trims and annotates as `check` does. Doing
    /// so again to the same packet changes nothing, so a batch that
    /// stops being usual part-way is checked again from its start.
    ///
    /// `MARTIANS` is `self.martians`, `SRC` and `DST` whether the source
    /// and destination filters are set, and `SUM` `self.checksum`, made
    /// constants so that each configuration's batch loop carries no test
    /// it cannot fail (Click's router, with INTERFACES, lists sources
    /// only).
    #[inline(always)]
    fn usual<const MARTIANS: bool, const SRC: bool, const DST: bool, const SUM: bool>(
        &self,
        p: &mut Packet,
    ) -> bool {
        let d = p.data();
        let Some(h) = d.get(self.offset..).and_then(|h| h.first_chunk::<20>()) else {
            return false;
        };
        let len = usize::from(be16(h, 2));
        let (src, dst) = (be32(h, 12), be32(h, 16));
        // The source's class D and E, and where on the martian rules (no
        // net 0 or 127 on either side, no class E destination; the
        // broadcast address is allowed, and left to the full check here),
        // by a table of the first bytes.
        let nets_usual = if MARTIANS {
            (NET_BAD[(src >> 24) as usize] & BAD_SOURCE)
                | (NET_BAD[(dst >> 24) as usize] & BAD_DESTINATION)
                == 0
        } else {
            !is_multicast_or_reserved(src)
        };
        let src_listed = if SRC {
            self.src_filter >> filter_index(src)
        } else {
            0
        };
        let dst_listed = if DST {
            self.dst_filter >> filter_index(dst)
        } else {
            0
        };
        let unlisted = (src_listed | dst_listed) & 1 == 0;
        let room = d.len() - self.offset;
        let usual = (h[0] == 0x45) & (len >= 20) & (len <= room) & nets_usual & unlisted
            && (!SUM || checksum::header20_ok(h));
        if usual {
            let excess = room - len;
            if excess != 0 {
                p.take_back(excess);
            }
            p.set_network_header(self.offset);
            p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        }
        usual
    }

    /// The constants of [`CheckIPHeader::usual`] for this configuration,
    /// as bits.
    #[inline(always)]
    fn mode(&self) -> usize {
        usize::from(self.martians) << 3
            | usize::from(self.src_filter != 0) << 2
            | usize::from(self.dst_filter != 0) << 1
            | usize::from(self.checksum)
    }

    /// Whether every packet of `batch` is [`CheckIPHeader::usual`] (each
    /// one trimmed and annotated), with the configuration's constants
    /// chosen once for the batch.
    #[inline(always)]
    fn all_usual(&self, batch: &mut Batch) -> bool {
        match self.mode() {
            0 => self.all_usual_with::<false, false, false, false>(batch),
            1 => self.all_usual_with::<false, false, false, true>(batch),
            2 => self.all_usual_with::<false, false, true, false>(batch),
            3 => self.all_usual_with::<false, false, true, true>(batch),
            4 => self.all_usual_with::<false, true, false, false>(batch),
            5 => self.all_usual_with::<false, true, false, true>(batch),
            6 => self.all_usual_with::<false, true, true, false>(batch),
            7 => self.all_usual_with::<false, true, true, true>(batch),
            8 => self.all_usual_with::<true, false, false, false>(batch),
            9 => self.all_usual_with::<true, false, false, true>(batch),
            10 => self.all_usual_with::<true, false, true, false>(batch),
            11 => self.all_usual_with::<true, false, true, true>(batch),
            12 => self.all_usual_with::<true, true, false, false>(batch),
            13 => self.all_usual_with::<true, true, false, true>(batch),
            14 => self.all_usual_with::<true, true, true, false>(batch),
            _ => self.all_usual_with::<true, true, true, true>(batch),
        }
    }

    /// [`CheckIPHeader::all_usual`] with the constants given.
    #[inline(always)]
    fn all_usual_with<const MARTIANS: bool, const SRC: bool, const DST: bool, const SUM: bool>(
        &self,
        batch: &mut Batch,
    ) -> bool {
        batch
            .iter_mut()
            .all(|p| self.usual::<MARTIANS, SRC, DST, SUM>(p))
    }

    /// The batch classified packet by packet, out of line: its scratch
    /// lists would otherwise give `push` a frame of kilobytes to set up
    /// for every batch, usual or not.
    #[inline(never)]
    #[cold]
    fn push_checked(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    /// [`CheckIPHeader::usual`] with the constants of this configuration.
    #[cfg(test)]
    fn usual_as_configured(&self, p: &mut Packet) -> bool {
        let mut b = Batch::new();
        let _ = b.push(core::mem::take(p));
        let usual = self.all_usual(&mut b);
        *p = b.drain().next().expect("the packet");
        usual
    }

    /// The martian check of RFC 1812 sections 5.3.7 and 4.2.2.11 on a
    /// source and destination (host order) that passed the others.
    #[inline]
    fn martian(&self, src: u32, dst: u32, src_listed: bool) -> Option<DropReason> {
        let (snet, dnet) = (src >> 24, dst >> 24);
        if (snet == 0 && !self.good_dst.contains(&dst))
            || snet == 127
            || (src_listed && self.own.contains(&src))
        {
            return Some(DropReason::MartianSource);
        }
        if dnet == 0 || dnet == 127 || (dst >= 0xf000_0000 && dst != u32::MAX) {
            return Some(DropReason::MartianDestination);
        }
        None
    }

    #[inline(always)]
    pub(crate) fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        match self.check(p) {
            Ok(()) => Some(0),
            Err(r) => {
                self.drops[r as usize] += 1;
                self.has_reject.then_some(1)
            }
        }
    }

    /// Invalid packets seen for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize]
    }
}

/// The ones' complement sum of the `hlen`-byte header at the start of `h`
/// (`hlen <= h.len()`), inlined for the usual 20 bytes.
#[inline(always)]
fn header_sum(h: &[u8], hlen: usize) -> u16 {
    match h.first_chunk::<20>() {
        Some(h20) if hlen == 20 => checksum::header20(h20),
        _ => checksum::data(&h[..hlen]),
    }
}

impl Element for CheckIPHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // A batch of usual packets (the rule on a router's input) is
        // checked in one loop with the test in line and goes out of
        // output 0 whole. At the first packet that is not usual, the
        // batch is classified packet by packet from its start.
        if self.all_usual(batch) {
            return cx.push(0, batch);
        }
        self.push_checked(batch, cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops.iter().sum());
        for r in DropReason::ALL {
            s.counter(r.counter(), self.drops[r as usize]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, fix_ip_checksum, udp};
    use bricks_runtime::testing::{make_element, Harness};

    fn run(args: &str, frame: &[u8]) -> Harness {
        let mut h = Harness::push(&CLASS, args, 1, 2);
        h.push_bytes(0, frame);
        h
    }

    fn expect_drop(args: &str, frame: &[u8], reason: DropReason) {
        let mut h = run(args, frame);
        assert!(h.take(0).is_empty(), "{reason:?} passed");
        assert_eq!(h.take_bytes(1), vec![frame.to_vec()], "{reason:?}");
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(1));
        for r in DropReason::ALL {
            assert_eq!(s.get(r.counter()), Some(u64::from(r == reason)), "{r:?}");
        }
    }

    /// The test in line and the full checks take the same decision and
    /// leave the packet the same, on addresses at the edges of every rule,
    /// under every option that changes what the test in line settles.
    #[test]
    fn usual_packets_and_the_full_checks_agree() {
        let addrs: Vec<[u8; 4]> = [
            "0.0.0.1",
            "1.2.3.4",
            "10.0.0.0",
            "10.0.0.1",
            "10.0.0.255",
            "127.0.0.1",
            "223.255.255.255",
            "224.0.0.1",
            "239.1.1.1",
            "240.0.0.1",
            "255.255.255.255",
        ]
        .iter()
        .map(|a| a.parse::<Ipv4Addr>().unwrap().octets())
        .collect();
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; 2],
        };
        for args in [
            "OFFSET 14",
            "OFFSET 14, CHECKSUM false",
            "OFFSET 14, MARTIANS true",
            "OFFSET 14, INTERFACES 10.0.0.1/24, MARTIANS true",
            "OFFSET 14, BADSRC 10.0.0.1 1.2.3.4, GOODDST 10.0.0.255",
            "OFFSET 14, BADDST 10.0.0.1",
            "OFFSET 14, BADSRC 10.0.0.1, BADDST 1.2.3.4, CHECKSUM false",
            "OFFSET 14, INTERFACES 10.0.0.1/24, BADDST 1.2.3.4, MARTIANS true",
        ] {
            let mut e = make_element(&CLASS, args, &ports).unwrap();
            let c = e.as_any_mut().downcast_mut::<CheckIPHeader>().unwrap();
            for src in &addrs {
                for dst in &addrs {
                    for vhl in [0x45, 0x46, 0x44, 0x55] {
                        for (pad, cut, bad_sum) in
                            [(0, 0, false), (3, 0, false), (0, 1, false), (0, 0, true)]
                        {
                            let mut ip = udp(8);
                            ip[12..16].copy_from_slice(src);
                            ip[16..20].copy_from_slice(dst);
                            ip[0] = vhl;
                            fix_ip_checksum(&mut ip);
                            if bad_sum {
                                ip[11] ^= 1;
                            }
                            let mut frame = vec![0xee; 14];
                            frame.extend(&ip);
                            frame.extend(std::iter::repeat_n(0, pad));
                            frame.truncate(frame.len() - cut);
                            let mut a = Packet::from_slice(&frame).unwrap();
                            let mut b = Packet::from_slice(&frame).unwrap();
                            let what =
                                format!("{args}: {src:?} {dst:?} {vhl:x} {pad} {cut} {bad_sum}");
                            if c.usual_as_configured(&mut a) {
                                assert_eq!(c.check(&mut b), Ok(()), "{what}");
                                assert_eq!(a.data(), b.data(), "{what}");
                                assert_eq!(a.anno().dst_ip, b.anno().dst_ip, "{what}");
                                assert_eq!(a.anno().l3_offset(), b.anno().l3_offset(), "{what}");
                                // Settled again, the packet stays as it is.
                                let before = a.data().to_vec();
                                assert!(c.usual_as_configured(&mut a), "{what}");
                                assert_eq!(a.data(), &before[..], "{what}");
                            } else {
                                assert_eq!(a.data(), &frame[..], "{what}");
                            }
                        }
                    }
                }
            }
            // The usual packet is settled in line, so the fast path is
            // taken at all.
            let mut ip = udp(8);
            ip[12..20].copy_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7]);
            fix_ip_checksum(&mut ip);
            let mut frame = vec![0xee; 14];
            frame.extend(ip);
            assert!(
                c.usual_as_configured(&mut Packet::from_slice(&frame).unwrap()),
                "{args}"
            );
        }
    }

    /// Pulled, the valid packets come out of output 0 in their order and
    /// the others are pushed out of output 1 in theirs, whatever the mix.
    #[test]
    fn pulled_mixed_batches_keep_their_order() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Pull],
            outputs: vec![
                bricks_element::Processing::Pull,
                bricks_element::Processing::Push,
            ],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        let mut frames = Vec::new();
        for i in 0..100u8 {
            let mut ip = udp(8);
            ip[4] = i;
            fix_ip_checksum(&mut ip);
            // Every third packet carries a bad checksum.
            if i % 3 == 0 {
                ip[11] ^= 1;
            }
            frames.push(ip);
        }
        h.feed(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let mut good = Vec::new();
        for _ in 0..10 {
            good.extend(h.pull(0, 32).into_iter().map(|p| p.data().to_vec()));
        }
        let want_good: Vec<Vec<u8>> = frames.iter().filter(|f| f[4] % 3 != 0).cloned().collect();
        let want_bad: Vec<Vec<u8>> = frames.iter().filter(|f| f[4] % 3 == 0).cloned().collect();
        assert_eq!(good, want_good);
        assert_eq!(h.take_bytes(1), want_bad);
    }

    #[test]
    fn valid_packet_passes_with_annotations() {
        let frame = echo_request();
        let mut h = run("", &frame);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &frame[..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(198, 51, 100, 7));
        assert_eq!(h.stats().get("drops"), Some(0));
    }

    #[test]
    fn ethernet_padding_is_trimmed_and_offset_honoured() {
        // A 14-byte Ethernet header in front, 6 bytes of padding behind a
        // 40-byte datagram, as on a minimum-size Ethernet frame.
        let mut frame = vec![0xee; 14];
        frame.extend(udp(12));
        frame.extend([0; 6]);
        let mut h = run("OFFSET 14", &frame);
        let out = h.take(0);
        assert_eq!(out[0].len(), 14 + 40);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].network_header().unwrap()[0], 0x45);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 1, 2, 3));
        // Positional OFFSET works too.
        let mut h = run("14", &frame);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn every_drop_reason() {
        let good = echo_request();
        expect_drop("", &good[..19], DropReason::Truncated);
        expect_drop("", &[], DropReason::Truncated);
        expect_drop("OFFSET 70", &good, DropReason::Truncated);

        let mut v6 = good.clone();
        v6[0] = 0x65;
        fix_ip_checksum(&mut v6);
        expect_drop("", &v6, DropReason::BadVersion);

        let mut short_hl = good.clone();
        short_hl[0] = 0x44;
        expect_drop("", &short_hl, DropReason::BadHeaderLength);

        let mut len_below_header = good.clone();
        len_below_header[2..4].copy_from_slice(&19u16.to_be_bytes());
        fix_ip_checksum(&mut len_below_header);
        expect_drop("", &len_below_header, DropReason::BadLength);

        let mut len_beyond_packet = good.clone();
        len_beyond_packet[2..4].copy_from_slice(&85u16.to_be_bytes());
        fix_ip_checksum(&mut len_beyond_packet);
        expect_drop("", &len_beyond_packet, DropReason::Truncated);

        // The header announces options the packet does not hold.
        let mut options_missing = good[..20].to_vec();
        options_missing[0] = 0x46;
        options_missing[2..4].copy_from_slice(&20u16.to_be_bytes());
        expect_drop("", &options_missing, DropReason::BadLength);

        let mut bad_sum = good.clone();
        bad_sum[11] ^= 1;
        expect_drop("", &bad_sum, DropReason::BadChecksum);

        for src in [[255, 255, 255, 255], [224, 0, 0, 5], [240, 1, 2, 3]] {
            let mut p = good.clone();
            p[12..16].copy_from_slice(&src);
            fix_ip_checksum(&mut p);
            expect_drop("", &p, DropReason::BadSource);
        }
    }

    #[test]
    fn checksum_false_skips_only_the_checksum() {
        let mut bad_sum = echo_request();
        bad_sum[11] ^= 1;
        let mut h = run("CHECKSUM false", &bad_sum);
        assert_eq!(h.take(0).len(), 1);
        let mut bad_version = bad_sum.clone();
        bad_version[0] = 0x55;
        expect_drop("CHECKSUM false", &bad_version, DropReason::BadVersion);
    }

    #[test]
    fn interfaces_give_bad_sources_and_good_destinations() {
        let args = "INTERFACES 18.26.4.1/24 1.0.0.1/8";
        let with = |src: [u8; 4], dst: [u8; 4]| {
            let mut p = echo_request();
            p[12..16].copy_from_slice(&src);
            p[16..20].copy_from_slice(&dst);
            fix_ip_checksum(&mut p);
            p
        };
        for src in [
            [18, 26, 4, 255],
            [18, 26, 4, 0],
            [1, 255, 255, 255],
            [1, 0, 0, 0],
            [0, 0, 0, 0],
        ] {
            expect_drop(args, &with(src, [1, 2, 3, 4]), DropReason::BadSource);
            // Addressed to the router itself: exempt (GOODDST).
            let mut h = run(args, &with(src, [18, 26, 4, 1]));
            assert_eq!(h.take(0).len(), 1, "{src:?}");
        }
        // The limited broadcast is never a valid source, GOODDST or not.
        expect_drop(args, &with([255; 4], [18, 26, 4, 1]), DropReason::BadSource);
        // An ordinary host passes.
        let mut h = run(args, &with([18, 26, 4, 7], [1, 2, 3, 4]));
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn badsrc_and_old_syntax() {
        let mut p = echo_request();
        p[12..16].copy_from_slice(&[10, 0, 0, 255]);
        fix_ip_checksum(&mut p);
        expect_drop("BADSRC 10.0.0.255", &p, DropReason::BadSource);
        let mut h = run("BADSRC 10.0.0.255, GOODDST 198.51.100.7", &p);
        assert_eq!(h.take(0).len(), 1);
        // Deprecated positional BADSRC2 also refuses 0.0.0.0.
        expect_drop("10.0.0.255", &p, DropReason::BadSource);
        let mut zero = echo_request();
        zero[12..16].copy_from_slice(&[0; 4]);
        fix_ip_checksum(&mut zero);
        expect_drop("10.0.0.255", &zero, DropReason::BadSource);
        let mut h = run("", &zero);
        assert_eq!(
            h.take(0).len(),
            1,
            "0.0.0.0 is refused only when configured"
        );
        // BADSRC2 followed by OFFSET.
        let mut framed = vec![0; 4];
        framed.extend(&p);
        let mut h = run("10.0.0.254, 4", &framed);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn the_address_filter_never_hides_a_listed_address() {
        let listed: Vec<u32> = (0..200u32)
            .map(|i| i.wrapping_mul(0x0101_0f31) ^ 0x0a00_0001)
            .collect();
        let f = super::filter(listed.iter());
        assert!(listed.iter().all(|&a| f & super::filter_bit(a) != 0));
        // A handful of addresses leaves most others clear.
        let few = super::filter([0x1a1a_0401u32, 0x0100_0001, 0x1a1a_04ff, 0].iter());
        let clear = (0..10_000u32)
            .filter(|i| few & super::filter_bit(i.wrapping_mul(2_654_435_761)) == 0)
            .count();
        assert!(clear > 8_000, "{clear}");
    }

    #[test]
    fn martians_by_reason() {
        let args = "INTERFACES 18.26.4.1/24 1.0.0.1/8, MARTIANS true";
        let with = |src: [u8; 4], dst: [u8; 4]| {
            let mut p = echo_request();
            p[12..16].copy_from_slice(&src);
            p[16..20].copy_from_slice(&dst);
            fix_ip_checksum(&mut p);
            p
        };
        let host = [18, 26, 4, 7];
        let far = [198, 51, 100, 7];
        for src in [
            [127, 0, 0, 1],
            [127, 255, 0, 9],
            [0, 1, 2, 3],
            [18, 26, 4, 1],
            [1, 0, 0, 1],
        ] {
            expect_drop(args, &with(src, far), DropReason::MartianSource);
            // Without MARTIANS, as in Click, they pass.
            let mut h = run("INTERFACES 18.26.4.1/24 1.0.0.1/8", &with(src, far));
            assert_eq!(h.take(0).len(), 1, "{src:?}");
        }
        // The router's own address is not a source even to the router.
        expect_drop(
            args,
            &with([18, 26, 4, 1], [18, 26, 4, 1]),
            DropReason::MartianSource,
        );
        for dst in [
            [127, 0, 0, 1],
            [0, 0, 0, 0],
            [0, 9, 9, 9],
            [240, 0, 0, 1],
            [255, 255, 255, 254],
        ] {
            expect_drop(args, &with(host, dst), DropReason::MartianDestination);
        }
        // Legitimate for the router itself: the limited broadcast, local
        // network control multicast, a subnet broadcast, 0.0.0.0 to the
        // router (GOODDST).
        for (src, dst) in [
            (host, [255, 255, 255, 255]),
            (host, [224, 0, 0, 5]),
            (host, [18, 26, 4, 255]),
            ([0, 0, 0, 0], [18, 26, 4, 1]),
            (host, far),
        ] {
            let mut h = run(args, &with(src, dst));
            assert_eq!(h.take(0).len(), 1, "{src:?} -> {dst:?}");
        }
        // The real bytes of a ping from 127.0.0.1 to 10.0.2.2 (Linux's
        // `ping -I lo`-style forgery): TTL 64, ident 0x1c46.
        let forged: [u8; 28] = [
            0x45, 0x00, 0x00, 0x1c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0x00, 0x00, 0x7f, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x02, 0x02, 0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,
        ];
        let mut forged = forged.to_vec();
        fix_ip_checksum(&mut forged);
        expect_drop("MARTIANS true", &forged, DropReason::MartianSource);
    }

    #[test]
    fn baddst_refuses_listed_destinations() {
        let mut p = echo_request();
        p[16..20].copy_from_slice(&[10, 2, 0, 255]);
        fix_ip_checksum(&mut p);
        expect_drop("BADDST 10.2.0.255 10.2.0.0", &p, DropReason::BadDestination);
        let mut h = run("BADDST 10.3.0.255", &p);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn unconnected_output_1_drops() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut bad = echo_request();
        bad[0] = 0x46;
        h.push_packets(
            0,
            [
                Packet::from_slice(&bad).unwrap(),
                Packet::from_slice(&echo_request()).unwrap(),
            ],
        );
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(h.stats().get("unconnected_drops"), None);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "INTERFACES 1.2.3.4/40", &ports).is_err());
        assert!(make_element(&CLASS, "BADSRC 1.2.3", &ports).is_err());
        assert!(make_element(&CLASS, "1.2.3.4, x", &ports).is_err());
        assert!(make_element(&CLASS, "1.2.3.4, 0, 3", &ports).is_err());
        assert!(make_element(&CLASS, "CHECKSUM maybe", &ports).is_err());
        assert!(make_element(&CLASS, "MARTIANS maybe", &ports).is_err());
        assert!(make_element(&CLASS, "BADDST 1.2.3", &ports).is_err());
        assert!(make_element(&CLASS, "OFFST 3", &ports)
            .unwrap_err()
            .contains("OFFST"));
    }
}
