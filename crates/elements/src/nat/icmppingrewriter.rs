//! `ICMPPingRewriter`: rewrites ICMP echo requests and replies (Click's `ICMPPingRewriter`). The engine is in
//! [`super::rewriter`]; this file is the class and its manual.

use super::rewriter::{self, Kind};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `ICMPPingRewriter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMPPingRewriter",
    ports: "1-/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "rewrites ICMP echo requests and replies",
    synopsis: "ICMPPingRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])",
    description: "Rewrites the addresses and identifier of ICMP echo requests (RFC 792) and of their replies, patching the IP and ICMP checksums: the identifier plays the part of a port. A mapping is made by an echo request only; an echo reply of no mapping is handled as its input's spec says, without a mapping. Each INPUTSPEC says what input i does with a packet of no mapping: `drop` (or `discard`); `pass OUTPUT` (or `passthrough`, `nochange`): out of OUTPUT unchanged, no mapping; `keep FOUTPUT ROUTPUT`: a mapping that changes nothing, the flow leaving by FOUTPUT and its replies by ROUTPUT; `pattern PATTERN FOUTPUT ROUTPUT`: the flow is rewritten by PATTERN and leaves by FOUTPUT, and its replies are rewritten back and leave by ROUTPUT. PATTERN is `SADDR SPORT DADDR DPORT` or `SADDR DADDR IDENTIFIER`, the identifier range searched as IPRewriter's port range. Other packets are dropped and counted unless on a `pass` input. The mapping table is shared by every worker: a flow and its reply may arrive on different cores. Handlers: `table` (and `tcp_table`, `udp_table`) lists mappings as Click does, `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT`; `patterns` and `patternN` print the input specs with their mapping counts, and writing `patternN` replaces input N's spec and removes the mappings it made (as Click's); `tcp_lookup` and `udp_lookup`, read with `SADDR SPORT DADDR DPORT`, give what a mapping rewrites that flow to; `capacity` reads and writes the capacity (at most the configured one); `clear` removes this rewriter's mappings. ",
    ports: "n push inputs, one per INPUTSPEC; push outputs as the specs name",
    keywords: &[
        Keyword {
            name: "TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("300"),
            doc: "lifetime of an idle mapping",
        },
        Keyword {
            name: "GUARANTEE",
            ty: "duration (seconds when no unit)",
            default: Some("5"),
            doc: "a mapping is not evicted for a new flow until idle this long",
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
    example: "ICMPPingSource(10.0.0.1, 10.0.0.2, LIMIT 1)\n\
        -> rw :: ICMPPingRewriter(pattern 2.0.0.2 - 0-65535# 0 1, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["IPRewriter", "ICMPPingResponder"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    rewriter::make(Kind::Ping, args, ports)
}
