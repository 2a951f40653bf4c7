//! `TCPRewriter`: rewrites TCP packets' addresses and ports (Click's `TCPRewriter`). The engine is in
//! [`super::rewriter`]; this file is the class and its manual.

use super::rewriter::{self, Kind};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `TCPRewriter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPRewriter",
    ports: "1-/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "rewrites TCP packets' addresses and ports",
    synopsis: "TCPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])",
    description: "Rewrites the addresses and ports of TCP packets (NAPT, RFC 3022), keeping the IP, TCP and UDP checksums right (RFC 1624). A packet whose flow (SA, SP, DA, DP, protocol) has a mapping is rewritten by it and leaves by its output; otherwise input i's INPUTSPEC decides. Each INPUTSPEC says what input i does with a packet of no mapping: `drop` (or `discard`); `pass OUTPUT` (or `passthrough`, `nochange`): out of OUTPUT unchanged, no mapping; `keep FOUTPUT ROUTPUT`: a mapping that changes nothing, the flow leaving by FOUTPUT and its replies by ROUTPUT; `pattern PATTERN FOUTPUT ROUTPUT`: the flow is rewritten by PATTERN and leaves by FOUTPUT, and its replies are rewritten back and leave by ROUTPUT. PATTERN is `SADDR SPORT DADDR DPORT`, `-` keeping a field. SPORT may be a range `L-H`: the port is chosen so that the reply flow is not already mapped, the packet's own port first, else at random; `L-H#` allocates sequentially, `L-H?` never prefers the packet's own. A range is searched for at most 256 candidates (Click searches it all), so a new flow costs O(1) even when the range is exhausted. Packets that are not TCP, later fragments and packets without 8 bytes of transport header are dropped (and counted) unless they came in on a `pass` input. The mapping table is shared by every worker: a flow and its reply may arrive on different cores. Handlers: `table` (and `tcp_table`, `udp_table`) lists mappings as Click does, `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT`; `patterns` and `patternN` print the input specs with their mapping counts, and writing `patternN` replaces input N's spec and removes the mappings it made (as Click's); `tcp_lookup` and `udp_lookup`, read with `SADDR SPORT DADDR DPORT`, give what a mapping rewrites that flow to; `capacity` reads and writes the capacity (at most the configured one); `clear` removes this rewriter's mappings. When an FTPPortMapper has changed the length of a flow's payload, the flow's later sequence numbers, the acknowledgements of its replies and their SACK blocks (RFC 2018) are shifted by the change, as Click's (at most 64 changes are remembered per flow, the oldest forgotten first), and `table` shows the flow's current shift as ` seq +N`.",
    ports: "n push inputs, one per INPUTSPEC; push outputs as the specs name",
    keywords: &[
        Keyword {
            name: "TCP_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("86400"),
            doc: "lifetime of an idle TCP mapping once payload has been seen both ways (also TIMEOUT)",
        },
        Keyword {
            name: "TCP_NODATA_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("300"),
            doc: "lifetime of an idle TCP mapping before payload has been seen both ways",
        },
        Keyword {
            name: "TCP_DONE_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("240"),
            doc: "lifetime of an idle TCP mapping after a FIN or RST",
        },
        Keyword {
            name: "TCP_GUARANTEE",
            ty: "duration (seconds when no unit)",
            default: Some("5"),
            doc: "a TCP mapping is not evicted for a new flow until idle this long (also GUARANTEE)",
        },
        Keyword {
            name: "REAP_INTERVAL",
            ty: "duration (seconds when no unit)",
            default: Some("900"),
            doc: "how often expired mappings are swept out (0: only as new flows come)",
        },
        Keyword {
            name: "MAPPING_CAPACITY",
            ty: "unsigned integer or rewriter name",
            default: Some("65536"),
            doc: "most flows the table holds; a full table refuses a new flow that finds no unguaranteed flow to evict (a mapping failure); the name of another rewriter shares its flow set and capacity. Also CAPACITY",
        },
        Keyword {
            name: "DST_ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "set the destination address annotation to the rewritten destination",
        },
        Keyword {
            name: "REPLY_ANNO",
            ty: "annotation name (PAINT)",
            default: None,
            doc: "remember this annotation of the packet that made a mapping and set it on every reply packet of the flow",
        },
    ],
    counters: &[
        ("mapped", "packets that matched a mapping"),
        ("created", "new mappings made"),
        ("passed", "packets sent unchanged by a `pass` input"),
        ("dropped", "packets of no mapping on a `drop` input"),
        (
            "failed",
            "new flows refused: table full of guaranteed flows, or no free port or address",
        ),
        ("not_ip", "packets that are not IPv4 (or truncated), dropped"),
        (
            "no_ports",
            "packets this rewriter cannot map (another protocol, a later fragment, no transport header) on an input other than `pass`, dropped",
        ),
        ("nmappings", "mappings made since start (first worker)"),
        ("table_size", "live mappings of this rewriter (first worker)"),
        ("mapping_failures", "new flows refused (first worker)"),
        (
            "size",
            "flows in the flow set, with rewriters sharing it (first worker)",
        ),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 28 00 00 00 00 40 06 66 ce 0a 00 00 01 0a 00 00 02 04 d2 00 50 00 00 00 01 00 00 00 00 50 02 20 00 76 bd 00 00>, LIMIT 1)\n\
        -> rw :: TCPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["IPRewriter", "UDPRewriter", "FTPPortMapper"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    rewriter::make(Kind::Tcp, args, ports)
}
