//! `ARPQuerier`: encapsulates IPv4 packets in Ethernet headers whose
//! destination it finds with ARP (RFC 826), holding packets while it asks.
//!
//! The datapath is here; the table, its limits and timing rules are in
//! [`super::arp_table`]. The mappings are shared by every worker's
//! instance (`Args::shared`), because an ARP reply reaches whichever worker
//! the NIC steered it to; the packets waiting for a reply stay on the
//! worker that received them (one core per packet, RouteBricks §4.2).
//!
//! A worker learns that another one resolved an address it waits for from
//! the table's generation counter: it looks at every batch (one atomic
//! load of a line that changes only when a mapping does) and, while it
//! holds packets and shares the table, on a timer every
//! [`RECHECK_INTERVAL`] in case no batch comes. The check on every batch
//! also keeps held packets ahead of newer ones for the same address; the
//! timer only covers a worker that receives nothing more, and costs the
//! same load when nothing changed.

use super::arp_table::{
    ArpTable, Hold, Learn, Limits, Lookup, Neighbours, Refusal, Snapshot, MAX_ENTRY_CAPACITY,
    RECHECK_INTERVAL, SEC,
};
use super::arp_table_element::SharedArpTable;
use super::{header_words, push_header_words};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use bricks_wire::arp::{ArpOperation, ArpPacket, ArpRepr, ETHERNET_IPV4_LEN};
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::ipv4::Ipv4Cidr;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

/// The `ARPQuerier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ARPQuerier",
    ports: "2/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

const KEYWORDS: [&str; 14] = [
    "IP",
    "ETH",
    "CAPACITY",
    "ENTRY_CAPACITY",
    "ENTRY_PACKET_CAPACITY",
    "CAPACITY_SLIM_FACTOR",
    "TIMEOUT",
    "POLL_TIMEOUT",
    "BROADCAST",
    "BROADCAST_POLL",
    "RETRIES",
    "QUERY_RATE",
    "TABLE",
    "LEARN_OFF_SUBNET",
];

static MANUAL: Manual = Manual {
    summary: "encapsulates IP packets in Ethernet headers found via ARP",
    synopsis: "ARPQuerier(IP, ETH [, KEYWORDS])\nARPQuerier(IP/LEN, ETH [, KEYWORDS])\n\
        ARPQuerier(IP ETH [, KEYWORDS])",
    description: "Handles the sending side of ARP (RFC 826) for one interface whose \
        IPv4 address is IP and Ethernet address ETH. \
        \n\nInput 0 takes IPv4 packets (no Ethernet header) whose destination IP \
        annotation holds the next hop, as set by a route lookup or GetIPAddress; when the \
        annotation is 0.0.0.0 the IP header's destination is used instead (bricks; Click \
        drops such packets). If the next hop's Ethernet address is known, the packet gets \
        an Ethernet header (type 0x0800, source ETH) and leaves on output 0. Otherwise it \
        is held and an ARP request for the next hop is broadcast. Packets for \
        255.255.255.255 and for the subnet's broadcast address go to ff:ff:ff:ff:ff:ff, \
        packets for IPv4 multicast groups to 01:00:5e plus the group's low 23 bits (RFC \
        1112), both without a query; packets whose next hop is 0.0.0.0 are dropped. \
        \n\nInput 1 takes ARP packets with their Ethernet header; the neighbours it \
        learns are this interface's only, even when a configuration copies every \
        interface's ARP frames to every ARPQuerier (Click's IP router does, with a Tee). \
        A frame is used only if its Ethernet destination is ETH or broadcast (a frame \
        for another interface's address is counted in `other_interface`), its sender's \
        Ethernet address is a unicast address other than ETH (`bad_mac`), and its \
        sender's IP address is in IP's subnet when IP has a prefix length, as in \
        `10.0.0.1/24` (`off_subnet`), except that a reply sent to ETH may still resolve \
        an off-subnet address this element is asking about (a route's next hop outside \
        the subnet, which Click resolves too) unless LEARN_OFF_SUBNET is false. Senders with a 0.0.0.0, broadcast (limited or \
        subnet), multicast or our own IP address are never recorded (`arp_ignored`). \
        A reply sent to ETH updates an existing entry: it resolves an address this \
        element asked about, sending the packets held for it in the order they \
        arrived, or renews (and, if the neighbour moved, changes) a known one. Entries \
        are only made for addresses the element asked about, or for the sender of a \
        request for IP when IP has a prefix length (RFC 826's merge, as Linux does); \
        anything else is `unsolicited`. A broadcast frame (a gratuitous reply or a \
        request) cannot be told apart from a copy of another interface's, so it \
        never resolves a query nor changes a known Ethernet address; it only renews \
        an entry whose address it confirms (Click learns from every reply). \
        \n\nQueries leave on output 1 if the element has two outputs, on output 0 otherwise. \
        At most 10 queries a second go out for one address, and one every 2 seconds once \
        10 in a row went unanswered (Click): only packets send queries. With RETRIES, \
        while packets wait the query is also retried every second unless a packet sent \
        one in that second; when RETRIES retries have gone unanswered for a second, the \
        waiting packets are dropped (bricks, after Linux). With RETRIES 0, the default, \
        what waits is dropped two seconds after the first packet came (Click keeps it \
        until the entry expires). A known entry older than POLL_TIMEOUT is renewed: the next packet that \
        uses it also sends a query, to the known address unless BROADCAST_POLL is true. \
        Entries expire TIMEOUT after they were last confirmed. \
        \n\nThe table holds at most ENTRY_CAPACITY entries, the addresses being \
        queried included; a new entry evicts the oldest unresolved one first, then \
        the oldest resolved one (static entries are never evicted). At most \
        QUERY_RATE queries a second leave the interface, renewals included; an \
        address whose query the rate refused gets no entry and is tried again at the \
        next retry (`query_rate_limited`). Learning, evicting and expiring cost the \
        same whatever the table's size, and never make a packet wait for a lock. \
        \n\nWrite handlers: `insert IP ETH` sets IP's entry to ETH as if learnt now (it \
        expires after TIMEOUT, as in Click), `insert IP ETH static` makes it a static \
        entry (never expires, never polled, not changed by ARP traffic; bricks); a \
        group, all-zero or our own Ethernet address is refused; either sends the \
        packets waiting for it at the next packet or timer; `delete IP` removes an \
        entry and drops its waiting packets; `clear` removes every entry (the counters are \
        kept, unlike Click); `ipaddr IP` and `broadcast IP` change those addresses. \
        \n\nThe table is shared by every worker running this element: a reply that reaches \
        one worker teaches them all, an address one worker resolved is not queried by \
        another, at most one worker sends each renewal query, and a query one worker sent \
        in the last 100 ms stands for all of them. Held packets stay on the worker that \
        received them; it sends them within a millisecond of the reply reaching any worker \
        (at once if it gets another packet first). `insert` and `delete` change the shared \
        table (a `delete` drops the packets held on the worker that runs it); `clear` \
        empties it and runs on every worker, each dropping its held packets. `TABLE t` \
        uses the entries of ARPTable `t`, shared with every querier naming it, and its \
        limits (the querier's CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY, \
        CAPACITY_SLIM_FACTOR and TIMEOUT then do nothing, as in Click).",
    ports: "input 0: IPv4 packets, push; input 1: ARP packets with Ethernet header, push; \
        output 0: Ethernet frames, push; optional output 1: ARP queries, push",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("2048"),
            doc: "most packets held in all while addresses are resolved; 0 for no limit",
        },
        Keyword {
            name: "ENTRY_CAPACITY",
            ty: "unsigned",
            default: Some("4096"),
            doc: "most table entries, unresolved ones included (unresolved, then the oldest \
                resolved, are evicted when full); 1 to 1048576 (Click's 0, no limit, is \
                refused)",
        },
        Keyword {
            name: "ENTRY_PACKET_CAPACITY",
            ty: "unsigned",
            default: Some("0"),
            doc: "most packets held for one address; 0 for no limit",
        },
        Keyword {
            name: "CAPACITY_SLIM_FACTOR",
            ty: "unsigned",
            default: Some("2"),
            doc: "when CAPACITY is exceeded, the oldest held packets are dropped until \
                CAPACITY - CAPACITY/CAPACITY_SLIM_FACTOR remain",
        },
        Keyword {
            name: "TIMEOUT",
            ty: "duration",
            default: Some("5min"),
            doc: "lifetime of a learnt entry; 0 for forever",
        },
        Keyword {
            name: "POLL_TIMEOUT",
            ty: "duration",
            default: Some("1min"),
            doc: "age after which using an entry also sends a renewal query; 0 for never",
        },
        Keyword {
            name: "BROADCAST",
            ty: "IPv4 address",
            default: Some("IP's subnet broadcast, or 255.255.255.255"),
            doc: "local broadcast address, sent to ff:ff:ff:ff:ff:ff",
        },
        Keyword {
            name: "BROADCAST_POLL",
            ty: "boolean",
            default: Some("false"),
            doc: "send renewal queries to the broadcast address instead of the known one",
        },
        Keyword {
            name: "RETRIES",
            ty: "unsigned",
            default: Some("0"),
            doc: "timer-driven retries, one a second while packets wait and none of them \
                sent a query, before held packets are dropped; 0, as Click, sends queries \
                only for packets and drops what waits two seconds after the first one came \
                (bricks extension)",
        },
        Keyword {
            name: "QUERY_RATE",
            ty: "unsigned",
            default: Some("256"),
            doc: "most ARP queries a second from this interface, with a burst of one \
                second's worth; 0 for no limit (bricks extension)",
        },
        Keyword {
            name: "TABLE",
            ty: "ARPTable element name",
            default: None,
            doc: "share that ARPTable's entries and limits instead of a table of its own",
        },
        Keyword {
            name: "LEARN_OFF_SUBNET",
            ty: "boolean",
            default: Some("true"),
            doc: "with IP/LEN, believe a reply sent to ETH from outside the subnet when it \
                answers this querier's own pending query (Click learns every reply; routes \
                to a next hop outside the subnet need this); it never makes nor changes an \
                entry. False ignores every off-subnet sender (bricks extension)",
        },
    ],
    counters: &[
        (
            "queries",
            "ARP requests sent, retries and renewals included",
        ),
        ("responses", "ARP replies recorded in the table"),
        ("broadcasts", "IP packets sent to ff:ff:ff:ff:ff:ff"),
        ("drops", "IP packets dropped, all reasons below together"),
        ("no_dst", "IP packets without a next hop (0.0.0.0)"),
        (
            "no_reply",
            "held packets dropped after RETRIES unanswered retries",
        ),
        (
            "hold_overflow",
            "held packets dropped for CAPACITY, ENTRY_PACKET_CAPACITY or ENTRY_CAPACITY",
        ),
        (
            "expired",
            "held packets dropped because their entry expired",
        ),
        (
            "cleared",
            "held packets dropped by the delete and clear handlers",
        ),
        ("no_headroom", "IP packets without 14 bytes of headroom"),
        (
            "held_at_shutdown",
            "packets still held when the router stopped",
        ),
        (
            "bad_arp",
            "frames on input 1 that are not Ethernet/IPv4 ARP",
        ),
        (
            "arp_ignored",
            "ARP packets on input 1 that taught nothing, all reasons",
        ),
        (
            "other_interface",
            "ARP frames sent to another Ethernet address than ETH (another interface's)",
        ),
        (
            "bad_mac",
            "ARP frames whose sender is a group, all-zero or our own Ethernet address",
        ),
        (
            "off_subnet",
            "ARP frames whose sender is outside IP's subnet",
        ),
        (
            "unsolicited",
            "ARP frames about an address not asked about, or broadcasts that would \
            change a known mapping",
        ),
        (
            "table_full",
            "new entries refused because ENTRY_CAPACITY static entries fill the table",
        ),
        (
            "evictions",
            "entries evicted to make room for new ones (worker 0 reports them)",
        ),
        (
            "query_rate_limited",
            "queries not sent because QUERY_RATE was used up",
        ),
        ("entries", "entries in the table now"),
        ("count", "the same as entries (Click's handler name)"),
        ("held", "packets held now"),
        ("length", "the same as held (Click's handler name)"),
    ],
    example:
        "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 00 00 00 0a 00 00 01 0a 00 00 02>, \
        LIMIT 2) -> q :: ARPQuerier(10.0.0.1/24, 52:54:00:aa:00:01, TIMEOUT 10min) -> Discard; \
        Idle -> [1]q;",
    see_also: &["ARPResponder", "EtherEncap", "HostEtherFilter"],
};

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(ArpQuerier::from_args(args, ports)?))
}

impl ArpQuerier {
    /// What the XDP fast path needs to send as this querier would: its
    /// Ethernet address (the frames' source), the shared entries and how
    /// long a learnt one lives (ns; 0 for ever).
    pub(crate) fn fast_path_view(&self) -> (EthernetAddress, Arc<Neighbours>, u64) {
        (
            self.my_eth,
            self.table.neighbours().clone(),
            self.table.limits().timeout,
        )
    }

    /// Builds the element from its arguments (what the class's `make`
    /// does, without the box).
    pub fn from_args(args: &mut Args<'_>, ports: &PortInfo) -> Result<ArpQuerier, ArgError> {
        let defaults = Limits::default();
        let capacity: usize = args.read("CAPACITY")?.unwrap_or(defaults.capacity);
        let entry_capacity: usize = args
            .read("ENTRY_CAPACITY")?
            .unwrap_or(defaults.entry_capacity);
        if entry_capacity == 0 || entry_capacity > MAX_ENTRY_CAPACITY {
            return Err(ArgError::new(format!(
                "ENTRY_CAPACITY must be 1 to {MAX_ENTRY_CAPACITY}, not {entry_capacity}"
            ))
            .with_help(
                "the table has a fixed size (Click's 0, no limit, lets one host fill memory); \
                 leave ENTRY_CAPACITY out for 4096",
            ));
        }
        let query_rate: u32 = args.read("QUERY_RATE")?.unwrap_or(defaults.query_rate);
        let entry_packet_capacity: usize = args.read("ENTRY_PACKET_CAPACITY")?.unwrap_or(0);
        let slim_factor: usize = args
            .read("CAPACITY_SLIM_FACTOR")?
            .unwrap_or(defaults.slim_factor);
        if slim_factor == 0 {
            return Err(ArgError::new("CAPACITY_SLIM_FACTOR cannot be zero"));
        }
        let timeout: Option<Duration> = args.read("TIMEOUT")?;
        let poll_timeout: Option<Duration> = args.read("POLL_TIMEOUT")?;
        let broadcast: Option<Ipv4Addr> = args.read("BROADCAST")?;
        let broadcast_poll: bool = args.read("BROADCAST_POLL")?.unwrap_or(false);
        let retries: u32 = args.read("RETRIES")?.unwrap_or(defaults.retries);
        let learn_off_subnet: bool = args.read("LEARN_OFF_SUBNET")?.unwrap_or(true);
        let table_of: Option<Arc<SharedArpTable>> = if args.has_keyword("TABLE") {
            Some(args.read_shared_of_mp::<SharedArpTable>("TABLE", "ARPTable")?)
        } else {
            None
        };
        let (ip, eth) = read_addresses(args)?;
        if ip.address().is_unspecified() {
            return Err(ArgError::new("IP cannot be 0.0.0.0"));
        }
        let limits = Limits {
            capacity,
            entry_capacity,
            entry_packet_capacity,
            slim_factor,
            timeout: timeout.map_or(defaults.timeout, duration_ns),
            poll_timeout: poll_timeout.map_or(defaults.poll_timeout, duration_ns),
            retries,
            query_rate,
        };
        // With TABLE, the ARPTable's entries and limits (as in Click, the
        // querier's own table keywords then do nothing); without, one
        // table for every worker's instance of this element.
        let (limits, neighbours) = match table_of {
            Some(t) => (t.limits, Arc::clone(&t.neighbours)),
            None => (
                limits,
                args.shared(|_| Ok(Neighbours::new(entry_capacity, query_rate)))?,
            ),
        };
        Ok(ArpQuerier {
            subnet: (ip.prefix_len() < 32).then(|| ip.network()),
            my_ip: ip.address(),
            my_eth: eth,
            bcast: broadcast.unwrap_or_else(|| ip.broadcast().unwrap_or(Ipv4Addr::BROADCAST)),
            broadcast_poll,
            learn_off_subnet,
            query_port: ports.noutputs().max(1) - 1,
            table: ArpTable::with_neighbours(limits, neighbours),
            timer_at: None,
            recheck_at: None,
            worker: None,
            now: Timestamp(0),
            c: Counters::default(),
        })
    }
}

/// Reads IP and ETH: two arguments (`IP[/LEN], ETH`), keywords, or one
/// argument holding both words (the place of Click's AddressInfo `NAME`).
fn read_addresses(args: &mut Args<'_>) -> Result<(Ipv4Cidr, EthernetAddress), ArgError> {
    let mut ip: Option<Ipv4Cidr> = args.read("IP")?;
    let mut eth: Option<EthernetAddress> = args.read("ETH")?;
    let parse_ip = |t: &str, span| {
        Ipv4Cidr::from_arg(t.trim()).map_err(|why| {
            ArgError::at(
                span,
                format!("bad argument IP: expected {}, {why}", Ipv4Cidr::TYPE),
            )
        })
    };
    let parse_eth = |t: &str, span| {
        EthernetAddress::from_arg(t.trim()).map_err(|why| {
            ArgError::at(
                span,
                format!(
                    "bad argument ETH: expected {}, {why}",
                    EthernetAddress::TYPE
                ),
            )
        })
    };
    let mut positional = Vec::new();
    for (text, span) in args.rest() {
        if text.trim().is_empty() {
            continue;
        }
        if let (Some(k), _) = bricks_config::split_keyword(text) {
            let e = ArgError::at(span, format!("unknown keyword {k}"));
            return Err(match bricks_config::suggest(k, KEYWORDS) {
                Some(s) => e.with_help(format!("did you mean {s}?")),
                None => e.with_help(format!("keywords: {}", KEYWORDS.join(", "))),
            });
        }
        positional.push((text, span));
    }
    let mut rest = positional.into_iter();
    if ip.is_none() {
        if let Some((text, span)) = rest.next() {
            let words: Vec<&str> = text.split_ascii_whitespace().collect();
            match (words.as_slice(), eth) {
                ([i, e], None) => {
                    ip = Some(parse_ip(i, span)?);
                    eth = Some(parse_eth(e, span)?);
                }
                _ => ip = Some(parse_ip(text, span)?),
            }
        }
    }
    if eth.is_none() {
        if let Some((text, span)) = rest.next() {
            eth = Some(parse_eth(text, span)?);
        }
    }
    if let Some((_, span)) = rest.next() {
        return Err(ArgError::at(span, "too many arguments").with_help("arguments: IP, ETH"));
    }
    let ip = ip.ok_or_else(|| ArgError::new("missing mandatory argument IP"))?;
    let eth = eth.ok_or_else(|| ArgError::new("missing mandatory argument ETH"))?;
    Ok((ip, eth))
}

#[derive(Debug, Default)]
struct Counters {
    queries: u64,
    responses: u64,
    broadcasts: u64,
    no_dst: u64,
    no_headroom: u64,
    held_at_shutdown: u64,
    bad_arp: u64,
    arp_ignored: u64,
    other_interface: u64,
    bad_mac: u64,
    off_subnet: u64,
    unsolicited: u64,
}

/// Resolves next hops with ARP and encapsulates IPv4 packets.
#[derive(Debug)]
pub struct ArpQuerier {
    /// IP's subnet, when IP was given with a prefix length: the only
    /// senders learnt.
    subnet: Option<Ipv4Cidr>,
    my_ip: Ipv4Addr,
    my_eth: EthernetAddress,
    bcast: Ipv4Addr,
    broadcast_poll: bool,
    learn_off_subnet: bool,
    /// Output for queries: the last one.
    query_port: usize,
    table: ArpTable,
    /// The earliest timer asked for retries and expiry, not yet run.
    timer_at: Option<u64>,
    /// The look for addresses other workers resolved, if one is asked for.
    recheck_at: Option<u64>,
    /// The worker this instance runs on, once it has run: the one on
    /// worker 0 reports the shared entries, so that sums over workers
    /// count them once.
    worker: Option<usize>,
    /// The clock at the last push or timer, for [`ArpQuerier::table`].
    now: Timestamp,
    c: Counters,
}

/// The Ethernet address of an IPv4 multicast group (RFC 1112 §6.4).
fn multicast_eth(ip: Ipv4Addr) -> EthernetAddress {
    let o = ip.octets();
    EthernetAddress([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]])
}

/// The next hop: the annotation, or the IP header's destination when the
/// annotation is unset.
#[inline]
fn next_hop(p: &Packet) -> Ipv4Addr {
    let a = p.anno().dst_ip;
    if !a.is_unspecified() {
        return a;
    }
    let h = p.l3_bytes();
    match h.get(..20) {
        Some(h) if h[0] >> 4 == 4 => Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// Whether `eth` can be a neighbour's address on the interface `me`: a
/// unicast address, not all-zero and not the interface's own.
fn neighbour_mac(eth: EthernetAddress, me: EthernetAddress) -> bool {
    eth.is_unicast() && eth != EthernetAddress::UNSPECIFIED && eth != me
}

impl ArpQuerier {
    /// The ARP table as text: one `IP OK ETH AGE` line per entry (Click's
    /// `table` handler), `static` appended for static entries, oldest
    /// first, ages as of the element's last packet or timer.
    pub fn table(&self) -> String {
        self.table.text(self.now.0)
    }

    /// Asks for `run_timer` at `at` unless an earlier run is already due.
    fn arm(&mut self, cx: &mut Context<'_>, at: u64) {
        if self.timer_at.is_none_or(|t| at < t) {
            cx.schedule_at(Timestamp(at));
            self.timer_at = Some(at);
        }
    }

    /// While packets wait here and other workers share the table, asks
    /// for a look at it soon: the reply may reach another worker, and this
    /// one may get no packet to make it look. Alone, a worker learns every
    /// reply itself and needs no such timer.
    fn arm_recheck(&mut self, cx: &mut Context<'_>, now: u64) {
        if self.recheck_at.is_none() && self.table.held() > 0 && self.table.shared_with_others() {
            let at = now.saturating_add(RECHECK_INTERVAL);
            cx.schedule_at(Timestamp(at));
            self.recheck_at = Some(at);
        }
    }

    /// An ARP request for `target`, sent to `dst`.
    fn query(&mut self, target: Ipv4Addr, dst: EthernetAddress, stamp: Timestamp) -> Packet {
        let mut q = Packet::new();
        // A fresh buffer has room for far more than 42 bytes.
        let _ = q.put_back(HEADER_LEN + ETHERNET_IPV4_LEN);
        let d = q.data_mut();
        d[..6].copy_from_slice(&dst.0);
        d[6..12].copy_from_slice(&self.my_eth.0);
        d[12..14].copy_from_slice(&EtherType::ARP.0.to_be_bytes());
        ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: self.my_eth,
            source_protocol_addr: self.my_ip,
            target_hardware_addr: EthernetAddress::UNSPECIFIED,
            target_protocol_addr: target,
        }
        .emit(&mut ArpPacket::new_unchecked(&mut d[HEADER_LEN..]));
        q.anno_mut().timestamp = stamp;
        self.c.queries += 1;
        q
    }

    /// Adds the Ethernet header for `dst` to `p` and appends it to `out`,
    /// pushing `out` first if it is full.
    #[inline]
    fn send(&mut self, mut p: Packet, dst: EthernetAddress, out: &mut Batch, cx: &mut Context<'_>) {
        if p.push_front(HEADER_LEN).is_err() {
            self.c.no_headroom += 1;
            return;
        }
        if let Some(h) = p.data_mut().first_chunk_mut::<HEADER_LEN>() {
            h[..6].copy_from_slice(&dst.0);
            h[6..12].copy_from_slice(&self.my_eth.0);
            h[12..].copy_from_slice(&EtherType::IPV4.0.to_be_bytes());
        }
        if let Err(p) = out.push(p) {
            cx.push(0, out);
            let _ = out.push(p);
        }
    }

    fn send_all(
        &mut self,
        held: VecDeque<Packet>,
        dst: EthernetAddress,
        out: &mut Batch,
        cx: &mut Context<'_>,
    ) {
        for p in held {
            self.send(p, dst, out, cx);
        }
    }

    /// Sends packets that waited for addresses resolved since the last
    /// call: learnt on another worker, or inserted by hand.
    fn flush_resolved(&mut self, cx: &mut Context<'_>) {
        let resolved = self.table.take_resolved(self.now.0);
        if resolved.is_empty() {
            return;
        }
        let mut out = Batch::new();
        for (eth, held) in resolved {
            self.send_all(held, eth, &mut out, cx);
        }
        cx.push(0, &mut out);
    }

    /// Adds the Ethernet header, in place, to the packets at the start of
    /// `batch` whose next hop is settled (see [`ArpTable::settled_in`])
    /// and that have room for it, and returns how many it did: all of them,
    /// in the rule. Stops at the first other packet, which the caller
    /// handles as before; while this worker holds packets it does none, as
    /// they would have to leave first. A run of packets for one next hop
    /// looks it up once.
    #[inline]
    fn send_settled(&self, batch: &mut Batch, snap: &Snapshot, now: u64) -> usize {
        if self.table.held() != 0 {
            return 0;
        }
        let mut header = [0u8; HEADER_LEN];
        header[6..12].copy_from_slice(&self.my_eth.0);
        header[12..].copy_from_slice(&EtherType::IPV4.0.to_be_bytes());
        // The header as two overlapping words, which stay in registers
        // and are written with two stores (as an array, it was written in
        // four or five pieces).
        let mut words = header_words(&header);
        let mut last = Ipv4Addr::UNSPECIFIED;
        for (done, p) in batch.iter_mut().enumerate() {
            let dst = next_hop(p);
            if dst.is_unspecified() {
                return done;
            }
            if dst != last {
                let Some(eth) = self.table.settled_in(snap, dst, now) else {
                    return done;
                };
                header[..6].copy_from_slice(&eth.0);
                words = header_words(&header);
                last = dst;
            }
            if push_header_words(p, words).is_err() {
                return done;
            }
        }
        batch.len()
    }

    /// Notes the time and worker at the start of a push or timer.
    fn enter(&mut self, cx: &Context<'_>) -> Timestamp {
        let now = cx.now();
        self.now = now;
        self.worker = Some(cx.worker());
        now
    }

    fn handle_ip(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        self.flush_resolved(cx);
        // One load of the shared table for the whole batch.
        let snap = self.table.snapshot();
        let done = self.send_settled(batch, &snap, now.0);
        if done == batch.len() {
            // Nothing waits here (`send_settled` asks), so no packet was
            // held, no query made and no recheck is due.
            return cx.push(0, batch);
        }
        let mut out = Batch::new();
        // At most one query per input packet, so this cannot overflow.
        let mut queries = Batch::new();
        let mut retry_at: Option<u64> = None;
        for (i, p) in batch.drain().enumerate() {
            if i < done {
                // Headed by `send_settled`; `out` is as large as `batch`.
                let _ = out.push(p);
                continue;
            }
            let dst = next_hop(&p);
            if dst.is_unspecified() {
                self.c.no_dst += 1;
                continue;
            }
            match self.table.lookup_in(&snap, dst, now.0) {
                Lookup::Known { eth, poll } => {
                    // Resolved on another worker during this batch:
                    // what waited here leaves first.
                    if let Some(held) = self.table.take_waiting(dst) {
                        self.send_all(held, eth, &mut out, cx);
                    }
                    if poll {
                        let to = if self.broadcast_poll {
                            EthernetAddress::BROADCAST
                        } else {
                            eth
                        };
                        let q = self.query(dst, to, p.anno().timestamp);
                        let _ = queries.push(q);
                    }
                    self.send(p, eth, &mut out, cx);
                }
                Lookup::Unknown if dst == Ipv4Addr::BROADCAST || dst == self.bcast => {
                    self.c.broadcasts += 1;
                    self.send(p, EthernetAddress::BROADCAST, &mut out, cx);
                }
                Lookup::Unknown if dst.is_multicast() => {
                    self.send(p, multicast_eth(dst), &mut out, cx);
                }
                Lookup::Unknown => {
                    let stamp = p.anno().timestamp;
                    if let Hold::Queued {
                        query,
                        retry_at: at,
                    } = self.table.hold(dst, p, now.0)
                    {
                        if query {
                            let q = self.query(dst, EthernetAddress::BROADCAST, stamp);
                            let _ = queries.push(q);
                        }
                        retry_at = Some(retry_at.map_or(at, |t| t.min(at)));
                    }
                }
            }
        }
        drop(snap);
        if let Some(at) = retry_at {
            self.arm(cx, at);
        }
        self.arm_recheck(cx, now.0);
        cx.push(self.query_port, &mut queries);
        cx.push(0, &mut out);
    }

    /// Retries, gives up, expires, and asks for the next time.
    fn run_due(&mut self, cx: &mut Context<'_>, now: Timestamp) {
        let work = self.table.run_timer(now.0);
        let mut queries = Batch::new();
        for ip in work.queries {
            let q = self.query(ip, EthernetAddress::BROADCAST, now);
            if let Err(q) = queries.push(q) {
                cx.push(self.query_port, &mut queries);
                let _ = queries.push(q);
            }
        }
        cx.push(self.query_port, &mut queries);
        // Expiry only frees memory (lookups check ages themselves), so
        // sweeps are at least a second apart; retries are exact.
        let sweep = work.next_expiry.map(|t| t.max(now.0.saturating_add(SEC)));
        let next = match (work.next_retry, sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = next {
            self.arm(cx, at);
        }
    }

    /// Reads an Ethernet/IPv4 ARP frame: (Ethernet destination, operation,
    /// sender MAC, sender IP, target IP).
    #[allow(clippy::type_complexity)]
    fn parse_arp(
        d: &[u8],
    ) -> Option<(
        EthernetAddress,
        ArpOperation,
        EthernetAddress,
        Ipv4Addr,
        Ipv4Addr,
    )> {
        if d.len() < HEADER_LEN + ETHERNET_IPV4_LEN || d[12..14] != EtherType::ARP.0.to_be_bytes() {
            return None;
        }
        let arp = ArpPacket::new_unchecked(&d[HEADER_LEN..]);
        match ArpRepr::parse(&arp).ok()? {
            ArpRepr::EthernetIpv4 {
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_protocol_addr,
                ..
            } => Some((
                EthernetAddress([d[0], d[1], d[2], d[3], d[4], d[5]]),
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_protocol_addr,
            )),
        }
    }

    /// Whether `eth` may be a neighbour's address: unicast, not all-zero,
    /// not ours.
    fn good_mac(&self, eth: EthernetAddress) -> bool {
        neighbour_mac(eth, self.my_eth)
    }

    /// What an ARP frame from the wire may do to the table, or the counter
    /// for why it may do nothing.
    fn classify_arp(
        &mut self,
        dst: EthernetAddress,
        op: ArpOperation,
        sha: EthernetAddress,
        spa: Ipv4Addr,
        tpa: Ipv4Addr,
    ) -> Option<Learn> {
        if dst != self.my_eth && !dst.is_broadcast() {
            self.c.other_interface += 1;
            return None;
        }
        if !self.good_mac(sha) {
            self.c.bad_mac += 1;
            return None;
        }
        if spa.is_unspecified()
            || spa.is_broadcast()
            || spa == self.bcast
            || spa.is_multicast()
            || spa == self.my_ip
        {
            return None;
        }
        if self.subnet.is_some_and(|n| !n.contains_addr(&spa)) {
            // With LEARN_OFF_SUBNET, a reply sent to us alone may answer
            // our own query for an off-subnet next hop (Click learns
            // these; its tests route to them); it can only resolve what we
            // asked about, never make or change an entry.
            if self.learn_off_subnet && op == ArpOperation::Reply && dst == self.my_eth {
                return Some(Learn::Answer);
            }
            self.c.off_subnet += 1;
            return None;
        }
        let for_us = op == ArpOperation::Request && tpa == self.my_ip;
        match op {
            ArpOperation::Request if for_us && self.subnet.is_some() => Some(Learn::Create),
            _ if dst.is_broadcast() => Some(Learn::Refresh),
            ArpOperation::Reply | ArpOperation::Request => Some(Learn::Update),
            ArpOperation::Unknown(_) => None,
        }
    }

    fn handle_arp(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        self.flush_resolved(cx);
        let mut out = Batch::new();
        let mut learnt = false;
        for p in batch.drain() {
            let Some((dst, op, sha, spa, tpa)) = Self::parse_arp(p.data()) else {
                self.c.bad_arp += 1;
                continue;
            };
            let Some(how) = self.classify_arp(dst, op, sha, spa, tpa) else {
                self.c.arp_ignored += 1;
                continue;
            };
            match self.table.resolve(spa, sha, now.0, how) {
                Ok(held) => {
                    if op == ArpOperation::Reply {
                        self.c.responses += 1;
                    }
                    learnt = true;
                    self.send_all(held, sha, &mut out, cx);
                }
                Err(r) => {
                    if how == Learn::Answer {
                        // Not an answer to anything we asked.
                        self.c.off_subnet += 1;
                    } else if r == Refusal::Unsolicited {
                        self.c.unsolicited += 1;
                    }
                    self.c.arp_ignored += 1;
                }
            }
        }
        let timeout = self.table.limits().timeout;
        if learnt && timeout != 0 {
            self.arm(cx, now.0.saturating_add(timeout).saturating_add(1));
        }
        cx.push(0, &mut out);
    }
}

impl Element for ArpQuerier {
    /// Hot swap (Click's `ARPQuerier::take_state`): the counters, and,
    /// when both share one neighbour table (the arguments did not change,
    /// or both name the same ARPTable), this worker's packets waiting for
    /// replies with their retries; the table itself is already the same.
    /// A querier with a table of its own takes the old table's usable
    /// entries that it would have learnt itself (on its subnet), as if
    /// confirmed now; packets waiting in the old
    /// one are dropped with it.
    fn take_state(&mut self, old: &mut dyn Element, cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<ArpQuerier>(old) else {
            return;
        };
        self.c = std::mem::take(&mut old.c);
        if !Arc::ptr_eq(self.table.neighbours(), old.table.neighbours()) {
            let now = cx.now().0;
            for (ip, eth, _confirmed, fixed) in old.table.usable(now) {
                // Off the subnet only an answer to this querier's own
                // query is believed: the new one asks again.
                if self.subnet.is_some_and(|s| !s.contains_addr(&ip)) {
                    continue;
                }
                if fixed {
                    let _ = self.table.insert_static(ip, eth, now);
                } else {
                    // Never held packets: the table is new. Learnt now,
                    // not when confirmed: expiry queues stay in time order.
                    let _ = self.table.learn(ip, eth, now);
                }
            }
            return;
        }
        if (self.my_ip, self.my_eth) != (old.my_ip, old.my_eth) {
            return;
        }
        std::mem::swap(&mut self.table, &mut old.table);
        self.now = old.now;
        self.worker = old.worker;
        // The old graph's timers are gone: ask again.
        if let Some(at) = old.timer_at {
            self.arm(cx, at);
        }
        if old.recheck_at.is_some() {
            let now = cx.now().0;
            self.arm_recheck(cx, now);
        }
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if port == 0 {
            self.handle_ip(batch, cx);
        } else {
            self.handle_arp(batch, cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        if self.recheck_at.is_some_and(|t| t <= now.0) {
            self.recheck_at = None;
        }
        // Alone, every call does the whole work, as it always has. Shared,
        // a call for a recheck only looks at the table: sweeping it every
        // millisecond would cost a scan of every entry.
        let due = !self.table.shared_with_others() || self.timer_at.is_some_and(|t| t <= now.0);
        self.flush_resolved(cx);
        if due {
            self.timer_at = None;
            self.run_due(cx, now);
        }
        self.arm_recheck(cx, now.0);
    }

    fn stats(&self, s: &mut Stats) {
        let d = self.table.drops();
        let c = &self.c;
        s.counter("queries", c.queries);
        s.counter("responses", c.responses);
        s.counter("broadcasts", c.broadcasts);
        s.counter(
            "drops",
            d.total() + c.no_dst + c.no_headroom + c.held_at_shutdown,
        );
        s.counter("no_dst", c.no_dst);
        s.counter("no_reply", d.no_reply);
        s.counter("hold_overflow", d.hold_overflow);
        s.counter("expired", d.expired);
        s.counter("cleared", d.cleared);
        s.counter("no_headroom", c.no_headroom);
        s.counter("held_at_shutdown", c.held_at_shutdown);
        s.counter("bad_arp", c.bad_arp);
        s.counter("arp_ignored", c.arp_ignored);
        s.counter("other_interface", c.other_interface);
        s.counter("bad_mac", c.bad_mac);
        s.counter("off_subnet", c.off_subnet);
        s.counter("unsolicited", c.unsolicited);
        s.counter("table_full", d.table_full);
        s.counter("query_rate_limited", d.query_rate_limited);
        // Shared entries once for all workers (by worker 0's instance).
        let (entries, evictions) = if self.worker.is_none_or(|w| w == 0) {
            let n = self.table.neighbours();
            (
                n.len() as u64,
                n.work()
                    .evictions
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
        } else {
            (0, 0)
        };
        s.counter("evictions", evictions);
        s.counter("entries", entries);
        s.counter("count", entries);
        s.counter("held", self.table.held() as u64);
        s.counter("length", self.table.held() as u64);
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        self.worker = Some(cx.worker());
        self.c.held_at_shutdown += self.table.discard_held() as u64;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "table" => Some(self.table()),
            // Click's `stats`: drops and queries in two lines.
            "stats" => {
                let d = self.table.drops();
                let c = &self.c;
                let killed = d.total() + c.no_dst + c.no_headroom + c.held_at_shutdown;
                Some(format!(
                    "{killed} packets killed\n{} ARP queries sent\n",
                    c.queries
                ))
            }
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 7] = [
            Handler::r("table"),
            Handler::r("stats"),
            Handler::w("insert"),
            Handler::w("delete"),
            Handler::w("clear"),
            Handler::w("ipaddr"),
            Handler::w("broadcast"),
        ];
        &HANDLERS
    }

    /// `insert` and `delete` change the shared table, so one worker runs
    /// them; `clear` runs on every worker, each dropping its held packets.
    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "insert" | "delete")
    }

    /// An `insert` is stamped with the time now, not that of the last
    /// packet this worker saw, and `table` shows ages as of now, where a
    /// caller has the time (a Script, DriverManager or ControlSocket
    /// write).
    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        match (write, handler) {
            (true, "insert") => self.now = cx.now(),
            (false, "table") => return Some(Ok(self.table.text(cx.now().0))),
            _ => {}
        }
        None
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        let ip = |w: &str| Ipv4Addr::from_arg(w).map_err(|e| format!("expected IPv4 address, {e}"));
        match (handler, words.as_slice()) {
            ("insert", _) => {
                let me = self.my_eth;
                let ok = |eth: EthernetAddress| {
                    if neighbour_mac(eth, me) {
                        Ok(())
                    } else {
                        Err(format!(
                            "{eth} cannot be a neighbour's address: give a unicast address, \
                             not all-zero and not this interface's own ({me})"
                        ))
                    }
                };
                let now = self.now.0;
                self.table.insert_handler(value, now, ok)
            }
            ("delete", [i]) => {
                let a = ip(i)?;
                if self.table.remove(a) {
                    Ok(())
                } else {
                    Err(format!("no ARP entry for {a}"))
                }
            }
            ("delete", _) => Err("expected `IP`".into()),
            ("clear", _) => {
                self.table.clear();
                Ok(())
            }
            ("ipaddr", [i]) => {
                let a = ip(i)?;
                if a.is_unspecified() {
                    return Err("the address cannot be 0.0.0.0".into());
                }
                self.my_ip = a;
                self.subnet = self
                    .subnet
                    .map(|n| Ipv4Cidr::new(a, n.prefix_len()).network());
                Ok(())
            }
            ("broadcast", [i]) => {
                self.bcast = ip(i)?;
                Ok(())
            }
            ("ipaddr" | "broadcast", _) => Err("expected `IP`".into()),
            _ => Err(format!(
                "no write handler `{handler}` (insert, delete, clear, ipaddr, broadcast)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::*;
    use bricks_element::{Edge, Graph, Processing, SharedSlot, WorkerState};
    use bricks_runtime::testing::{make_element, Harness};
    use std::sync::{Arc, Mutex};

    const T0: u64 = 1_000 * SEC;

    /// Host A's querier, at T0.
    fn querier(args: &str, outputs: usize) -> Harness {
        let mut h = Harness::new(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![Processing::Push; 2],
                outputs: vec![Processing::Push; outputs],
            },
        );
        h.advance_to(Timestamp(T0));
        h
    }

    fn a_querier() -> Harness {
        querier("10.0.0.1/24, 52:54:00:aa:00:01", 2)
    }

    fn at(h: &mut Harness, ns: u64) {
        h.advance_to(Timestamp(ns));
    }

    /// Makes B known the only way ARP traffic can: A asks, B answers.
    fn learn_b(h: &mut Harness) {
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
        h.push_bytes(1, &B_REPLY_A);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
    }

    fn tagged(tag: u8, next_hop: Ipv4Addr) -> Packet {
        let mut ip = echo_ip().to_vec();
        ip[20] = tag;
        ip_packet(&ip, next_hop)
    }

    #[test]
    fn unknown_next_hop_sends_linux_query_then_reply_releases_linux_frame() {
        let mut h = a_querier();
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        // The query is byte for byte the one A's kernel sent.
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("held"), Some(1));
        // B's real reply releases the packet as A's kernel framed it.
        h.push_bytes(1, &B_REPLY_A);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        let s = h.stats();
        assert_eq!(
            (s.get("queries"), s.get("responses"), s.get("held")),
            (Some(1), Some(1), Some(0))
        );
        // Known now: the next packet goes straight out.
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        assert!(h.take(1).is_empty());
    }

    #[test]
    fn settled_run_then_other_packets_agree_with_one_at_a_time() {
        let unknown = Ipv4Addr::new(10, 0, 0, 9);
        let bcast = Ipv4Addr::new(10, 0, 0, 255);
        let hops = [B_IP, B_IP, unknown, B_IP, bcast, B_IP];
        let packets = || hops.iter().enumerate().map(|(i, &d)| tagged(i as u8, d));
        let mut batched = a_querier();
        learn_b(&mut batched);
        batched.push_packets(0, packets());
        let mut single = a_querier();
        learn_b(&mut single);
        for p in packets() {
            single.push_packets(0, [p]);
        }
        let out = batched.take_bytes(0);
        assert_eq!(out, single.take_bytes(0));
        assert_eq!(batched.take_bytes(1), single.take_bytes(1));
        assert_eq!(
            out.iter().map(|f| f[34]).collect::<Vec<_>>(),
            [0, 1, 3, 4, 5]
        );
        for f in [&out[0], &out[1], &out[2], &out[4]] {
            assert_eq!(f[..14], A_ECHO_B[..14]);
        }
        assert_eq!(out[3][..6], [0xff; 6]);
        assert_eq!(batched.stats().get("held"), Some(1));
    }

    #[test]
    fn held_packets_leave_in_order() {
        let mut h = a_querier();
        h.push_packets(0, (0..5).map(|i| tagged(i, B_IP)));
        h.push_packets(0, (5..300).map(|i| tagged(i as u8, B_IP)));
        assert_eq!(h.take(1).len(), 1);
        h.push_bytes(1, &padded(&B_REPLY_A));
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 300);
        for (i, f) in out.iter().enumerate() {
            assert_eq!(f[..14], A_ECHO_B[..14]);
            assert_eq!(f[34], i as u8);
        }
    }

    #[test]
    fn one_output_carries_queries_too() {
        let mut h = querier("10.0.0.1, 52:54:00:aa:00:01", 1);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_REQUEST_B.to_vec()]);
    }

    #[test]
    fn queries_are_rate_limited() {
        let mut h = a_querier();
        h.push_packets(0, (0..10).map(|i| tagged(i, B_IP)));
        at(&mut h, T0 + 50_000_000);
        h.push_packets(0, [tagged(10, B_IP)]);
        assert_eq!(h.take(1).len(), 1, "one query within 100 ms");
        at(&mut h, T0 + 100_000_000);
        h.push_packets(0, [tagged(11, B_IP)]);
        assert_eq!(h.take(1).len(), 1, "a second one after 100 ms");
        assert_eq!(h.stats().get("queries"), Some(2));
    }

    #[test]
    fn retries_then_drops_as_no_reply() {
        let mut h = querier("10.0.0.1/24, 52:54:00:aa:00:01, RETRIES 2", 2);
        let nobody = Ipv4Addr::new(10, 0, 0, 9);
        h.push_packets(0, [tagged(1, nobody), tagged(2, nobody)]);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_UNKNOWN.to_vec()]);
        assert_eq!(h.timers(), [Timestamp(T0 + SEC)]);
        at(&mut h, T0 + SEC);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_UNKNOWN.to_vec()]);
        at(&mut h, T0 + 2 * SEC);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_UNKNOWN.to_vec()]);
        at(&mut h, T0 + 3 * SEC);
        assert!(h.take(1).is_empty());
        let s = h.stats();
        assert_eq!(s.get("no_reply"), Some(2));
        assert_eq!(s.get("drops"), Some(2));
        assert_eq!(s.get("held"), Some(0));
        assert_eq!(s.get("queries"), Some(3));
        // A late reply still teaches the address.
        let mut late = B_REPLY_A;
        late[31] = 9;
        h.push_bytes(1, &late);
        h.push_packets(0, [tagged(3, nobody)]);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn entry_expires_after_timeout() {
        let mut h = querier(
            "10.0.0.1/24, 52:54:00:aa:00:01, TIMEOUT 30, POLL_TIMEOUT 0",
            2,
        );
        learn_b(&mut h);
        assert_eq!(h.stats().get("entries"), Some(1));
        at(&mut h, T0 + 30 * SEC);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take(0).len(), 1, "still valid at exactly TIMEOUT");
        at(&mut h, T0 + 31 * SEC);
        assert_eq!(h.stats().get("entries"), Some(0), "swept by the timer");
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
    }

    #[test]
    fn renewal_poll_is_unicast_after_poll_timeout() {
        let mut h = querier("10.0.0.1/24, 52:54:00:aa:00:01, POLL_TIMEOUT 60", 2);
        learn_b(&mut h);
        at(&mut h, T0 + 59 * SEC);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take(0).len(), 1);
        assert!(h.take(1).is_empty());
        at(&mut h, T0 + 60 * SEC);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP), ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take(0).len(), 2, "packets still flow while renewing");
        let mut unicast = A_REQUEST_B;
        unicast[..6].copy_from_slice(&B_MAC.0);
        assert_eq!(h.take_bytes(1), vec![unicast.to_vec()]);

        let mut h = querier("10.0.0.1/24, 52:54:00:aa:00:01, BROADCAST_POLL true", 2);
        learn_b(&mut h);
        at(&mut h, T0 + 61 * SEC);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
    }

    #[test]
    fn hold_capacity_overflow_is_counted() {
        let mut h2 = querier("10.0.0.1/24, 52:54:00:aa:00:01, CAPACITY 4", 2);
        h2.push_packets(0, (0..5).map(|i| tagged(i, B_IP)));
        let s = h2.stats();
        assert_eq!(s.get("hold_overflow"), Some(3));
        assert_eq!(s.get("held"), Some(2));
        h2.push_bytes(1, &B_REPLY_A);
        let tags: Vec<u8> = h2.take_bytes(0).iter().map(|f| f[34]).collect();
        assert_eq!(tags, [3, 4], "the oldest packets were dropped");

        let mut h3 = querier("10.0.0.1/24, 52:54:00:aa:00:01, ENTRY_PACKET_CAPACITY 2", 2);
        h3.push_packets(0, (0..5).map(|i| tagged(i, B_IP)));
        assert_eq!(h3.stats().get("hold_overflow"), Some(3));
        h3.push_bytes(1, &B_REPLY_A);
        let tags: Vec<u8> = h3.take_bytes(0).iter().map(|f| f[34]).collect();
        assert_eq!(tags, [0, 1], "new packets are refused per entry");
    }

    #[test]
    fn broadcast_and_multicast_next_hops() {
        let mut h = a_querier();
        let bc = [0xff; 6];
        h.push_packets(
            0,
            [
                ip_packet(echo_ip(), Ipv4Addr::BROADCAST),
                ip_packet(echo_ip(), Ipv4Addr::new(10, 0, 0, 255)),
                ip_packet(echo_ip(), Ipv4Addr::new(239, 129, 2, 3)),
            ],
        );
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0][..6], bc);
        assert_eq!(out[1][..6], bc);
        assert_eq!(out[2][..6], [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
        assert_eq!(out[0][6..14], A_ECHO_B[6..14]);
        assert!(h.take(1).is_empty());
        assert_eq!(h.stats().get("broadcasts"), Some(2));
        // With a /32 only 255.255.255.255 is broadcast; BROADCAST overrides.
        let mut h = querier("10.0.0.1, 52:54:00:aa:00:01, BROADCAST 10.0.0.127", 2);
        h.push_packets(0, [ip_packet(echo_ip(), Ipv4Addr::new(10, 0, 0, 127))]);
        assert_eq!(h.take_bytes(0)[0][..6], bc);
    }

    #[test]
    fn unset_annotation_uses_ip_destination() {
        let mut h = a_querier();
        h.push_packets(0, [Packet::from_slice(echo_ip()).unwrap()]);
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
        // No annotation and no IPv4 header: dropped as having no next hop.
        h.push_packets(
            0,
            [
                Packet::from_slice(&[0x60; 40]).unwrap(),
                Packet::from_slice(&[]).unwrap(),
            ],
        );
        assert_eq!(h.stats().get("no_dst"), Some(2));
    }

    #[test]
    fn static_insert_and_delete() {
        let mut h = a_querier();
        h.write_handler("insert", "10.0.0.2 52:54:00:bb:00:02 static")
            .unwrap();
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        assert!(h.take(1).is_empty());
        // ARP cannot move a static entry.
        let mut spoof = B_REPLY_A;
        spoof[22..28].copy_from_slice(&[0x52, 0x54, 0, 0xee, 0xee, 0xee]);
        h.push_bytes(1, &spoof);
        assert_eq!(h.stats().get("arp_ignored"), Some(1));
        at(&mut h, T0 + 3600 * SEC);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        h.write_handler("delete", "10.0.0.2").unwrap();
        assert!(h.write_handler("delete", "10.0.0.2").is_err());
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 1);
    }

    /// A batch for known neighbours is framed in one pass: each packet
    /// gets its own next hop's address as the next hops change within
    /// the batch, and a packet without room for the header is dropped and
    /// counted, the rest still framed and in order.
    #[test]
    fn a_batch_for_known_neighbours_is_framed_per_next_hop() {
        let mut h = a_querier();
        let c_ip = Ipv4Addr::new(10, 0, 0, 3);
        h.write_handler("insert", "10.0.0.2 52:54:00:bb:00:02 static")
            .unwrap();
        h.write_handler("insert", "10.0.0.3 52:54:00:cc:00:03 static")
            .unwrap();
        let to = [B_IP, c_ip, c_ip, B_IP, B_IP, c_ip];
        let batch = (1..=6u8).map(|tag| {
            let mut p = tagged(tag, to[usize::from(tag) - 1]);
            if tag == 5 {
                p.set_head_offset(4).unwrap();
                assert!(p.headroom() < HEADER_LEN);
            }
            p
        });
        h.push_packets(0, batch.collect::<Vec<_>>());
        let framed = h.take_bytes(0);
        let tags: Vec<u8> = framed.iter().map(|f| f[34]).collect();
        assert_eq!(tags, [1, 2, 3, 4, 6]);
        for f in &framed {
            let mac: &[u8] = if f[34] == 1 || f[34] == 4 {
                &[0x52, 0x54, 0, 0xbb, 0, 2]
            } else {
                &[0x52, 0x54, 0, 0xcc, 0, 3]
            };
            assert_eq!(&f[..6], mac, "packet {}", f[34]);
            assert_eq!(&f[6..12], &[0x52, 0x54, 0, 0xaa, 0, 1]);
            assert_eq!(&f[12..14], &[0x08, 0x00]);
            assert_eq!(&f[14..], tagged(f[34], B_IP).data());
        }
        assert!(h.take(1).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
    }

    #[test]
    fn static_insert_releases_waiting_packets() {
        let mut h = a_querier();
        h.push_packets(0, [tagged(1, B_IP)]);
        h.write_handler("insert", "10.0.0.2 52:54:00:bb:00:02")
            .unwrap();
        h.push_packets(0, [tagged(2, B_IP)]);
        let tags: Vec<u8> = h.take_bytes(0).iter().map(|f| f[34]).collect();
        assert_eq!(tags, [1, 2]);
    }

    #[test]
    fn broadcast_arp_only_confirms_known_entries() {
        let mut h = a_querier();
        // Not in the table: a gratuitous request teaches nothing.
        h.push_bytes(1, &B_GRATUITOUS);
        assert_eq!(h.stats().get("entries"), Some(0));
        assert_eq!(h.stats().get("unsolicited"), Some(1));
        // Pending: a broadcast may be another interface's copy, so it does
        // not answer our query; B's reply to us does.
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        h.take(1);
        h.push_bytes(1, &B_GRATUITOUS);
        assert!(h.take(0).is_empty());
        h.push_bytes(1, &B_REPLY_A);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        // Known: an announcement of the same MAC renews it, one of another
        // MAC is refused.
        h.push_bytes(1, &B_GRATUITOUS);
        let mut moved = B_GRATUITOUS;
        moved[11] = 0x99;
        moved[27] = 0x99;
        h.push_bytes(1, &moved);
        assert_eq!(h.stats().get("unsolicited"), Some(3));
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        // B moved and says so to us: traffic follows.
        let mut reply = B_REPLY_A;
        reply[11] = 0x99;
        reply[27] = 0x99;
        h.push_bytes(1, &reply);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0)[0][5], 0x99);
    }

    #[test]
    fn unsolicited_reply_is_ignored() {
        let mut h = a_querier();
        h.push_bytes(1, &B_REPLY_A);
        let s = h.stats();
        assert_eq!(
            (s.get("unsolicited"), s.get("responses"), s.get("entries")),
            (Some(1), Some(0), Some(0))
        );
        // B is still unknown: a packet for it asks.
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
    }

    #[test]
    fn off_subnet_sender_is_ignored() {
        let mut h = querier("10.0.0.1/24, 52:54:00:aa:00:01, LEARN_OFF_SUBNET false", 2);
        // A next hop outside 10.0.0.0/24 (a bad route) is asked about, but
        // with LEARN_OFF_SUBNET false its answer is not believed.
        let far = Ipv4Addr::new(192, 168, 7, 2);
        h.push_packets(0, [ip_packet(echo_ip(), far)]);
        assert_eq!(h.take(1).len(), 1);
        let mut reply = B_REPLY_A;
        reply[28..32].copy_from_slice(&far.octets());
        h.push_bytes(1, &reply);
        let mut request = A_REQUEST_B;
        request[6..12].copy_from_slice(&B_MAC.0);
        request[22..28].copy_from_slice(&B_MAC.0);
        request[28..32].copy_from_slice(&far.octets());
        request[38..42].copy_from_slice(&A_IP.octets());
        h.push_bytes(1, &request);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!((s.get("off_subnet"), s.get("held")), (Some(2), Some(1)));
    }

    #[test]
    fn learn_off_subnet_resolves_only_our_own_query() {
        // The default, as LEARN_OFF_SUBNET true.
        let mut h = a_querier();
        let far = Ipv4Addr::new(192, 168, 7, 2);
        // A reply for an address never asked about makes no entry.
        let mut reply = B_REPLY_A;
        reply[28..32].copy_from_slice(&far.octets());
        h.push_bytes(1, &reply);
        assert_eq!(h.stats().get("entries"), Some(0));
        assert_eq!(h.stats().get("off_subnet"), Some(1));
        // Asked, the unicast reply resolves it and the packet leaves.
        h.push_packets(0, [ip_packet(echo_ip(), far)]);
        assert_eq!(h.take(1).len(), 1);
        h.push_bytes(1, &reply);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0][..6], &B_MAC.0);
        // The same reply broadcast, or a claim of another MAC, changes
        // nothing.
        let mut other = reply;
        other[6..12].copy_from_slice(&[0x52, 0x54, 0, 0x66, 0x66, 0x66]);
        other[22..28].copy_from_slice(&[0x52, 0x54, 0, 0x66, 0x66, 0x66]);
        h.push_bytes(1, &other);
        let mut bcast = other;
        bcast[..6].copy_from_slice(&[0xff; 6]);
        h.push_bytes(1, &bcast);
        h.push_packets(0, [ip_packet(echo_ip(), far)]);
        assert_eq!(&h.take_bytes(0)[0][..6], &B_MAC.0);
        assert_eq!(h.stats().get("off_subnet"), Some(3));
    }

    #[test]
    fn stats_and_table_handlers() {
        let mut h = a_querier();
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(
            h.read_handler("stats").unwrap(),
            "0 packets killed\n1 ARP queries sent\n"
        );
        assert!(h.read_handler("table").unwrap().starts_with("10.0.0.2 0 "));
    }

    #[test]
    fn without_a_prefix_only_asked_addresses_are_learnt() {
        // IP without a prefix length: no subnet to check, so requests for
        // us make no entries; answers to our queries still resolve.
        let mut h = querier("10.0.0.2, 52:54:00:bb:00:02", 2);
        h.push_bytes(1, &A_REQUEST_B);
        assert_eq!(h.stats().get("entries"), Some(0));
        assert_eq!(h.stats().get("unsolicited"), Some(1));
        let mut h = querier("10.0.0.1, 52:54:00:aa:00:01", 2);
        learn_b(&mut h);
        assert_eq!(h.stats().get("responses"), Some(1));
    }

    /// Two interfaces' queriers, with every ARP reply copied to both (as
    /// Click's IP router and bricks' demo router do): a frame for one
    /// interface never teaches the other.
    #[test]
    fn reply_at_the_other_interfaces_querier_is_ignored() {
        let mut if0 = a_querier();
        let mut if1 = querier("10.0.1.1/24, 52:54:00:aa:01:01", 2);
        let if1_mac = [0x52, 0x54, 0x00, 0xaa, 0x01, 0x01];
        learn_b(&mut if0);
        // An attacker on interface 1's LAN claims interface 0's gateway B,
        // in a reply to interface 1's address...
        let attacker = [0x52, 0x54, 0x00, 0x66, 0x66, 0x66];
        let mut claim = B_REPLY_A;
        claim[..6].copy_from_slice(&if1_mac);
        claim[6..12].copy_from_slice(&attacker);
        claim[22..28].copy_from_slice(&attacker);
        claim[32..38].copy_from_slice(&if1_mac);
        claim[38..42].copy_from_slice(&[10, 0, 1, 1]);
        // ... and broadcast to everyone.
        let mut broadcast = claim;
        broadcast[..6].copy_from_slice(&[0xff; 6]);
        for f in [claim, broadcast] {
            if0.push_bytes(1, &f);
            if1.push_bytes(1, &f);
        }
        assert_eq!(if0.stats().get("other_interface"), Some(1));
        assert_eq!(if0.stats().get("unsolicited"), Some(1));
        assert_eq!(if1.stats().get("off_subnet"), Some(2));
        assert_eq!(if1.stats().get("entries"), Some(0));
        // Interface 0's traffic still goes to B.
        if0.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(if0.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        // A genuine answer to interface 1's own query, copied to interface
        // 0's querier too, teaches interface 1 only.
        let c = Ipv4Addr::new(10, 0, 1, 2);
        if1.push_packets(0, [ip_packet(echo_ip(), c)]);
        assert_eq!(if1.take(1).len(), 1);
        let mut answer = claim;
        answer[28..32].copy_from_slice(&c.octets());
        if0.push_bytes(1, &answer);
        if1.push_bytes(1, &answer);
        assert_eq!(if0.stats().get("other_interface"), Some(2));
        assert_eq!(if1.take_bytes(0)[0][..6], attacker);
        assert_eq!(if1.stats().get("responses"), Some(1));
    }

    #[test]
    fn bad_sender_macs_are_refused() {
        let mut h = a_querier();
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        h.take(1);
        for mac in [
            [0u8; 6],
            [0xff; 6],
            [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
            A_MAC.0,
        ] {
            let mut f = B_REPLY_A;
            f[22..28].copy_from_slice(&mac);
            h.push_bytes(1, &f);
        }
        let s = h.stats();
        assert_eq!((s.get("bad_mac"), s.get("held")), (Some(4), Some(1)));
        assert!(h.take(0).is_empty());
        for mac in [
            "00:00:00:00:00:00",
            "ff:ff:ff:ff:ff:ff",
            "01:00:5e:00:00:01",
            "52:54:00:aa:00:01",
        ] {
            let e = h
                .write_handler("insert", &format!("10.0.0.2 {mac}"))
                .unwrap_err();
            assert!(e.contains("cannot be a neighbour's address"), "{e}");
        }
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn table_is_bounded_and_evicts() {
        let mut h = querier(
            "10.0.0.1/16, 52:54:00:aa:00:01, ENTRY_CAPACITY 4, QUERY_RATE 0",
            2,
        );
        learn_b(&mut h);
        h.push_packets(
            0,
            (0..100u32).map(|i| ip_packet(echo_ip(), Ipv4Addr::from_bits(0x0a00_0100 + i))),
        );
        let s = h.stats();
        assert_eq!(s.get("entries"), Some(4));
        assert_eq!(s.get("count"), Some(4));
        assert_eq!(s.get("length"), s.get("held"));
        assert_eq!(s.get("evictions"), Some(97));
        assert_eq!(h.take(1).len(), 100);
        // Unresolved entries went first: B is still known.
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
    }

    #[test]
    fn queries_are_limited_per_interface() {
        let mut h = querier("10.0.0.1/16, 52:54:00:aa:00:01, QUERY_RATE 5, RETRIES 2", 2);
        h.push_packets(
            0,
            (0..20u32).map(|i| ip_packet(echo_ip(), Ipv4Addr::from_bits(0x0a00_0100 + i))),
        );
        assert_eq!(h.take(1).len(), 5);
        let s = h.stats();
        assert_eq!(s.get("query_rate_limited"), Some(15));
        assert_eq!(s.get("entries"), Some(5));
        assert_eq!(s.get("held"), Some(20));
        // A second later the bucket has refilled; the retries ask for the
        // rest, five a second.
        at(&mut h, T0 + SEC);
        assert_eq!(h.take(1).len(), 5);
    }

    #[test]
    fn requests_for_us_teach_the_sender() {
        let mut h = querier("10.0.0.2/24, 52:54:00:bb:00:02", 2);
        h.push_bytes(1, &A_REQUEST_B);
        h.push_packets(0, [ip_packet(echo_ip(), A_IP)]);
        let out = h.take_bytes(0);
        assert_eq!(out[0][..12], B_REPLY_A[..12]);
        let mut other = A_REQUEST_B;
        other[41] = 7;
        other[31] = 5;
        h.push_bytes(1, &other);
        assert_eq!(h.stats().get("entries"), Some(1));
    }

    #[test]
    fn bad_arp_on_input_1() {
        let mut h = a_querier();
        let mut group = B_REPLY_A;
        group[22] = 0x01;
        let mut zero = B_REPLY_A;
        zero[28..32].copy_from_slice(&[0; 4]);
        let mut mine = B_REPLY_A;
        mine[31] = 1;
        let mut subnet_broadcast = B_REPLY_A;
        subnet_broadcast[31] = 255;
        for f in [&B_REPLY_A[..41], &A_ECHO_B[..], &[0u8; 3][..]] {
            h.push_bytes(1, f);
        }
        for f in [group, zero, mine, subnet_broadcast] {
            h.push_bytes(1, &f);
        }
        let s = h.stats();
        assert_eq!(s.get("bad_arp"), Some(3));
        assert_eq!(s.get("arp_ignored"), Some(4));
        assert_eq!(s.get("bad_mac"), Some(1));
        assert_eq!(s.get("entries"), Some(0));
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
    }

    #[test]
    fn held_packets_counted_at_shutdown() {
        let mut h = a_querier();
        h.push_packets(0, (0..3).map(|i| tagged(i, B_IP)));
        h.shutdown();
        let s = h.stats();
        assert_eq!(s.get("held_at_shutdown"), Some(3));
        assert_eq!(s.get("held"), Some(0));
        assert_eq!(s.get("drops"), Some(3));
    }

    #[test]
    fn clear_drops_waiting_packets() {
        let mut h = a_querier();
        h.push_packets(0, (0..3).map(|i| tagged(i, B_IP)));
        h.push_bytes(1, &padded(&B_REPLY_A));
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.stats().get("cleared"), Some(0));
        h.push_packets(0, (0..3).map(|i| tagged(i, Ipv4Addr::new(10, 0, 0, 3))));
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.stats().get("cleared"), Some(3));
        assert_eq!(h.stats().get("entries"), Some(0));
    }

    #[test]
    fn address_handlers() {
        let mut h = a_querier();
        h.write_handler("ipaddr", "10.0.0.5").unwrap();
        h.write_handler("broadcast", "10.0.0.9").unwrap();
        assert!(h.write_handler("ipaddr", "0.0.0.0").is_err());
        assert!(h.write_handler("insert", "10.0.0.2").is_err());
        assert!(h.write_handler("frobnicate", "").is_err());
        h.push_packets(0, [ip_packet(echo_ip(), Ipv4Addr::new(10, 0, 0, 9))]);
        assert_eq!(h.take_bytes(0)[0][..6], [0xff; 6]);
        h.push_packets(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(h.take_bytes(1)[0][28..32], [10, 0, 0, 5]);
    }

    #[test]
    fn table_text() {
        let parsed = bricks_runtime::testing::parse_args("10.0.0.1/24, 52:54:00:aa:00:01").unwrap();
        let mut q =
            ArpQuerier::from_args(&mut Args::new(&parsed, None), &PortInfo::default()).unwrap();
        assert_eq!(q.table(), "");
        q.write_handler("insert", "10.0.0.3 52:54:00:cc:00:03 static")
            .unwrap();
        q.write_handler("insert", "10.0.0.2 52:54:00:bb:00:02")
            .unwrap();
        // Oldest first, as Click's age list.
        assert_eq!(
            q.table(),
            "10.0.0.3 1 52-54-00-CC-00-03 0.000 static\n10.0.0.2 1 52-54-00-BB-00-02 0.000\n"
        );
        assert!(q
            .write_handler("insert", "10.0.0.2 52:54:00:bb:00:02 fixed")
            .is_err());
        q.write_handler("clear", "").unwrap();
        assert_eq!(q.table(), "");
    }

    #[test]
    fn argument_forms() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        let err = |a: &str| make_element(&CLASS, a, &PortInfo::default()).unwrap_err();
        ok("10.0.0.1, 52:54:00:aa:00:01").unwrap();
        ok("10.0.0.1/24, 52:54:00:aa:00:01, CAPACITY 0, TIMEOUT 0").unwrap();
        ok("10.0.0.1/255.255.255.0 52:54:00:aa:00:01").unwrap();
        ok("IP 10.0.0.1, ETH 52:54:00:aa:00:01").unwrap();
        ok("10.0.0.1, ETH 52:54:00:aa:00:01, POLL_TIMEOUT 30s, RETRIES 5").unwrap();
        assert!(err("10.0.0.1").contains("missing mandatory argument ETH"));
        assert!(err("").contains("missing mandatory argument IP"));
        assert!(err("10.0.0.1, 52:54:00:aa:00:01, 3").contains("too many"));
        assert!(err("10.0.0.1, 52:54:00:aa").contains("ETH"));
        assert!(err("10.0.0.x, 52:54:00:aa:00:01").contains("IP"));
        assert!(err("0.0.0.0, 52:54:00:aa:00:01").contains("0.0.0.0"));
        assert!(err("10.0.0.1, 52:54:00:aa:00:01, CAPACITY_SLIM_FACTOR 0").contains("zero"));
        assert!(err("10.0.0.1, 52:54:00:aa:00:01, TABLE t").contains("TABLE"));
        assert!(err("10.0.0.1, 52:54:00:aa:00:01, ENTRY_CAPACITY 0").contains("1 to 1048576"));
        ok("10.0.0.1, 52:54:00:aa:00:01, ENTRY_CAPACITY 10, QUERY_RATE 0").unwrap();
        let e = make_element(
            &CLASS,
            "10.0.0.1, 52:54:00:aa:00:01, TIMOUT 5",
            &PortInfo::default(),
        );
        assert!(e.unwrap_err().contains("unknown keyword TIMOUT"));
    }

    /// Records what one output sends.
    struct Sink(Arc<Mutex<Vec<Packet>>>);

    impl Element for Sink {
        fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            self.0.lock().unwrap().extend(batch.drain());
        }
    }

    /// One worker's instance of host A's querier, made with the slot that
    /// every worker's instance of the element shares (as `Plan::instantiate`
    /// does), both outputs captured.
    struct Worker {
        graph: Graph,
        state: WorkerState,
        out: [Arc<Mutex<Vec<Packet>>>; 2],
    }

    impl Worker {
        fn new(slot: &SharedSlot, worker: usize, workers: usize) -> Worker {
            let parsed =
                bricks_runtime::testing::parse_args("10.0.0.1/24, 52:54:00:aa:00:01").unwrap();
            let ports = PortInfo {
                inputs: vec![Processing::Push; 2],
                outputs: vec![Processing::Push; 2],
            };
            let mut args = Args::new(&parsed, None).with_shared(slot);
            let q = ArpQuerier::from_args(&mut args, &ports).unwrap();
            args.complete().unwrap();
            let out: [Arc<Mutex<Vec<Packet>>>; 2] = Default::default();
            let to = |element| Edge { element, port: 0 };
            let graph = Graph::new(
                vec![
                    Box::new(q),
                    Box::new(Sink(out[0].clone())),
                    Box::new(Sink(out[1].clone())),
                ],
                vec!["q".into(), "out0".into(), "out1".into()],
                vec![
                    vec![to(1), to(2)].into_boxed_slice(),
                    Box::default(),
                    Box::default(),
                ],
                vec![
                    vec![Edge::NONE, Edge::NONE].into_boxed_slice(),
                    Box::default(),
                    Box::default(),
                ],
            );
            let mut state = WorkerState::new(worker, workers);
            state.now = Timestamp(T0);
            Worker { graph, state, out }
        }

        fn push(&mut self, port: usize, packets: impl IntoIterator<Item = Packet>) {
            let mut b = Batch::new();
            for p in packets {
                b.push(p).unwrap();
            }
            self.graph
                .with_element(0, &mut self.state, |e, cx| e.push(port, &mut b, cx));
        }

        fn push_bytes(&mut self, port: usize, frame: &[u8]) {
            self.push(port, [Packet::from_slice(frame).unwrap()]);
        }

        /// Sets the clock and runs the timer if one is due.
        fn advance_to(&mut self, ns: u64) {
            let t = Timestamp(ns);
            self.state.now = t;
            if self.state.timer_requests.iter().any(|&(at, _)| at <= t) {
                self.state.timer_requests.retain(|&(at, _)| at > t);
                self.graph
                    .with_element(0, &mut self.state, |e, cx| e.run_timer(cx));
            }
        }

        fn timers(&self) -> Vec<u64> {
            let mut t: Vec<u64> = self.state.timer_requests.iter().map(|r| r.0 .0).collect();
            t.sort_unstable();
            t
        }

        fn take_bytes(&mut self, port: usize) -> Vec<Vec<u8>> {
            let v = std::mem::take(&mut *self.out[port].lock().unwrap());
            v.iter().map(|p| p.data().to_vec()).collect()
        }

        fn stats(&self) -> Stats {
            self.graph.stats(0)
        }

        /// Makes B known: this worker asks, B answers.
        fn learn_b(&mut self) {
            self.push(0, [ip_packet(echo_ip(), B_IP)]);
            assert_eq!(self.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
            self.push_bytes(1, &B_REPLY_A);
            assert_eq!(self.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        }

        fn write_handler(&self, handler: &str, value: &str) -> Result<(), String> {
            self.graph.write_handler(0, handler, value)
        }

        fn handler_is_shared(&self, handler: &str) -> bool {
            self.graph
                .with_element_ref(0, |e| e.handler_is_shared(handler))
        }
    }

    /// Workers 0 and 1 of a two-worker router.
    fn two_workers() -> (Worker, Worker) {
        let slot = SharedSlot::new();
        (Worker::new(&slot, 0, 2), Worker::new(&slot, 1, 2))
    }

    fn tags(frames: &[Vec<u8>]) -> Vec<u8> {
        frames.iter().map(|f| f[34]).collect()
    }

    #[test]
    fn reply_on_one_worker_releases_packets_held_on_another() {
        let (mut a, mut b) = two_workers();
        b.push(0, [tagged(1, B_IP), tagged(2, B_IP)]);
        assert_eq!(b.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
        assert_eq!(b.stats().get("held"), Some(2));
        // B's reply is steered to worker A, which held nothing.
        a.push_bytes(1, &B_REPLY_A);
        assert!(a.take_bytes(0).is_empty());
        assert_eq!(a.stats().get("responses"), Some(1));
        // No packet comes to B: its recheck timer sends what it held.
        assert_eq!(b.timers()[0], T0 + RECHECK_INTERVAL);
        b.advance_to(T0 + RECHECK_INTERVAL);
        let out = b.take_bytes(0);
        assert_eq!(tags(&out), [1, 2]);
        assert!(out.iter().all(|f| f[..14] == A_ECHO_B[..14]));
        let s = b.stats();
        assert_eq!((s.get("held"), s.get("drops")), (Some(0), Some(0)));
        // Nothing held: no more rechecks, only the give-up timer is left.
        assert_eq!(b.timers(), [T0 + 2 * SEC]);
        b.advance_to(T0 + 2 * SEC);
        assert!(
            b.take_bytes(1).is_empty(),
            "no retry for a resolved address"
        );
    }

    #[test]
    fn held_packets_leave_before_newer_ones_on_another_worker() {
        let (mut a, mut b) = two_workers();
        b.push(0, [tagged(1, B_IP), tagged(2, B_IP)]);
        a.push_bytes(1, &B_REPLY_A);
        // B's next packet comes before its timer: the held ones go first.
        b.push(0, [tagged(3, B_IP)]);
        assert_eq!(tags(&b.take_bytes(0)), [1, 2, 3]);
        assert_eq!(b.stats().get("held"), Some(0));
    }

    #[test]
    fn workers_do_not_repeat_each_others_queries() {
        let (mut a, mut b) = two_workers();
        // Resolved on A: B sends at once, without a query.
        a.learn_b();
        b.push(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(b.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        assert!(b.take_bytes(1).is_empty());
        assert_eq!(b.stats().get("queries"), Some(0));
        // Being resolved by A: B's packet waits on A's query.
        let nobody = Ipv4Addr::new(10, 0, 0, 9);
        a.push(0, [tagged(1, nobody)]);
        assert_eq!(a.take_bytes(1), vec![A_REQUEST_UNKNOWN.to_vec()]);
        b.advance_to(T0 + SEC / 100);
        b.push(0, [tagged(2, nobody)]);
        assert!(b.take_bytes(1).is_empty());
        assert_eq!(b.stats().get("held"), Some(1));
    }

    #[test]
    fn renewal_poll_goes_out_once_for_all_workers() {
        let (mut a, mut b) = two_workers();
        a.learn_b();
        a.advance_to(T0 + 60 * SEC);
        b.advance_to(T0 + 60 * SEC);
        a.push(0, [ip_packet(echo_ip(), B_IP)]);
        b.push(0, [ip_packet(echo_ip(), B_IP)]);
        let mut unicast = A_REQUEST_B;
        unicast[..6].copy_from_slice(&B_MAC.0);
        assert_eq!(a.take_bytes(1), vec![unicast.to_vec()]);
        assert!(b.take_bytes(1).is_empty());
        assert_eq!(a.take_bytes(0).len() + b.take_bytes(0).len(), 2);
    }

    #[test]
    fn static_insert_on_one_worker_is_seen_by_another() {
        let (a, mut b) = two_workers();
        assert!(a.handler_is_shared("insert") && a.handler_is_shared("delete"));
        assert!(!a.handler_is_shared("clear") && !a.handler_is_shared("ipaddr"));
        b.push(0, [tagged(1, B_IP)]);
        b.take_bytes(1);
        a.write_handler("insert", "10.0.0.2 52:54:00:bb:00:02 static")
            .unwrap();
        b.advance_to(T0 + RECHECK_INTERVAL);
        assert_eq!(tags(&b.take_bytes(0)), [1]);
        b.push(0, [ip_packet(echo_ip(), B_IP)]);
        assert_eq!(b.take_bytes(0), vec![A_ECHO_B.to_vec()]);
        assert!(b.take_bytes(1).is_empty());
        // Deleted on A: B has to ask again.
        a.write_handler("delete", "10.0.0.2").unwrap();
        b.push(0, [ip_packet(echo_ip(), B_IP)]);
        assert!(b.take_bytes(0).is_empty());
        assert_eq!(b.take_bytes(1), vec![A_REQUEST_B.to_vec()]);
    }

    #[test]
    fn shared_entries_are_counted_once_over_workers() {
        let (mut a, mut b) = two_workers();
        a.learn_b();
        b.push(0, [ip_packet(echo_ip(), Ipv4Addr::new(10, 0, 0, 9))]);
        // Worker 0 reports the shared entries, B's Pending one included:
        // the sum is the two addresses.
        assert_eq!(a.stats().get("entries"), Some(2));
        assert_eq!(b.stats().get("entries"), Some(0));
    }
}
