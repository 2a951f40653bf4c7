//! `EtherSpanTree`: the spanning tree of IEEE 802.1D-1998 (clause 8, the
//! protocol; clause 9, the encoding of BPDUs) for a switch made of an
//! `EtherSwitch` between two `Suppressor`s, with the arguments and
//! handler of Click's `elements/etherswitch/spantree.cc`.
//!
//! The element takes each LAN's BPDUs on the input of that LAN's port and
//! sends its own out of the port's output (around the suppressors, so
//! that a blocked port still speaks the protocol). It puts each port in
//! its state through the suppressors and the switch: blocking and
//! listening suppress both directions; learning lets frames in, where the
//! switch learns their sources and drops them; forwarding lets both
//! through. While a topology change lasts, the switch keeps its
//! associations for the forward delay only (section 8.3.5).
//!
//! Three layers: [`Bpdu`] reads and writes the frames (802.3 length, LLC
//! 42 42 03, clause 9.3), [`Bridge`] is the protocol as the procedures of
//! clauses 8.6 to 8.8 state it, with time passed in and no I/O, and the
//! element holds one `Bridge` for every worker behind a lock (BPDUs are a
//! few a second) and runs its timers on the first worker.
//!
//! Click's implementation of the protocol is a simplification that does
//! not interoperate (it never sets the topology change flags, never
//! acknowledges, reads a notification as a configuration past its end,
//! and puts the bridge address in the identifier in host byte order);
//! bricks follows the standard, as the Linux bridge does, and keeps
//! Click's interface.

use super::ether_switch::Shared as SwitchTable;
use crate::standard::suppressor::Ports;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FixedRefs, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use bricks_wire::ethernet::EthernetAddress;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `EtherSpanTree` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherSpanTree",
    ports: "-/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "IEEE 802.1D spanning tree for an EtherSwitch",
    synopsis: "EtherSpanTree(ADDR, INPUT_SUPPRESSOR, OUTPUT_SUPPRESSOR, SWITCH [, KEYWORDS])",
    description: "Runs the spanning tree protocol of IEEE 802.1D-1998 for a switch made of \
        the EtherSwitch SWITCH between the Suppressors INPUT_SUPPRESSOR (upstream of it) and \
        OUTPUT_SUPPRESSOR (downstream), so that switches joined in loops agree on one tree \
        and frames do not circle. Port i of the element is port i of the switch: its input \
        takes the BPDUs received on that LAN (a `Classifier(14/4242, -)` picks them out: \
        802.3 frames with LLC 42 42 03) and its output sends this bridge's BPDUs to it, \
        straight to the device (not through OUTPUT_SUPPRESSOR). The suppressors and the \
        switch have at least as many ports as the element.\
        \n\nADDR is the bridge's address; with PRIORITY (Click's 0xDEAD, which makes this \
        bridge unlikely to be root) it makes the bridge identifier, which elects the root: \
        the lowest identifier heard wins. Each port is a root port (the best path to the \
        root), a designated port (this bridge is the best on that LAN) or blocked; ports \
        pass through listening and learning, FORWARD_DELAY each, before they forward. A \
        blocking or listening port drops what it receives and sends nothing but BPDUs (both \
        suppressors suppress it); a learning port lets frames in for the switch to learn \
        their sources, then drop them; a forwarding port passes both ways. The bridge sends \
        configuration BPDUs every HELLO_TIME while it is root, and relays the root's \
        otherwise; a port's information expires MAX_AGE after the root sent it. A port \
        that starts or stops forwarding is a topology change: notified towards the root \
        (Topology Change Notification BPDUs until acknowledged), announced by the root in \
        its BPDUs for MAX_AGE + FORWARD_DELAY, during which the switch keeps associations \
        for FORWARD_DELAY only. Bridges use the root's MAX_AGE, HELLO_TIME and \
        FORWARD_DELAY (values received outside the ranges below are taken as the nearest \
        bound); a port costs 1 (Click's). Timers run on the router's clock; on a capture's \
        clock (`--clock trace`, `--simtime`) they run as BPDUs arrive.\
        \n\nBPDUs that are malformed (short, not to 01:80:C2:00:00:00, a wrong 802.3 length \
        or LLC header, another protocol, a type other than configuration or notification, \
        or a message age not below its max age) are dropped and counted. Any station can \
        send BPDUs: one that claims a better identifier becomes root (as 802.1D says; \
        there is no BPDU guard).\
        \n\nHandlers: `msgs` (Click's): per port, the best configuration heard or sent on it \
        (bridge:port, TC flag, cost -> root, max age/hello/forward delay in seconds, in \
        hex), then the bridge's own; `root_id` and `bridge_id` as Linux writes them \
        (`8000.0a1b2c3d4e5f`); `port_states`: one line per port, its state and role. \
        Counters give the same as numbers (first worker).",
    ports: "any number of push inputs (BPDUs from each port), as many push outputs (BPDUs to it)",
    keywords: &[
        Keyword {
            name: "ADDR",
            ty: "Ethernet address",
            default: None,
            doc: "the bridge's address: BPDUs' source and the identifier's low 48 bits; positional",
        },
        Keyword {
            name: "INPUT_SUPPRESSOR",
            ty: "Suppressor element",
            default: None,
            doc: "the Suppressor before the switch; positional",
        },
        Keyword {
            name: "OUTPUT_SUPPRESSOR",
            ty: "Suppressor element",
            default: None,
            doc: "the Suppressor after the switch; positional",
        },
        Keyword {
            name: "SWITCH",
            ty: "EtherSwitch element",
            default: None,
            doc: "the switch; positional",
        },
        Keyword {
            name: "PRIORITY",
            ty: "unsigned 16-bit integer",
            default: Some("0xDEAD"),
            doc: "the identifier's high 16 bits: lower is more likely root (a bricks addition)",
        },
        Keyword {
            name: "MAX_AGE",
            ty: "duration, 6 to 40 s",
            default: Some("20"),
            doc: "how long a port's information lasts, when root (a bricks addition)",
        },
        Keyword {
            name: "HELLO_TIME",
            ty: "duration, 1 to 10 s",
            default: Some("2"),
            doc: "time between configuration BPDUs, when root (a bricks addition)",
        },
        Keyword {
            name: "FORWARD_DELAY",
            ty: "duration, 2 to 30 s",
            default: Some("15"),
            doc: "time in listening, then in learning, when root (a bricks addition)",
        },
    ],
    counters: &[
        ("bpdus", "configuration BPDUs received"),
        ("tcns", "topology change notification BPDUs received"),
        (
            "drops",
            "malformed BPDUs dropped (the sum of the next seven)",
        ),
        (
            "runt",
            "... shorter than their headers, 802.3 length or type needs",
        ),
        (
            "bad_address",
            "... not to the bridge group address 01:80:C2:00:00:00",
        ),
        (
            "bad_length",
            "... an 802.3 length that is an EtherType or too small",
        ),
        ("bad_llc", "... not LLC 42 42 03"),
        ("bad_protocol", "... a protocol identifier other than 0"),
        (
            "unknown_type",
            "... neither configuration (0) nor notification (0x80)",
        ),
        ("aged", "... a message age not below their max age"),
        ("sent_bpdus", "configuration BPDUs sent (first worker)"),
        ("sent_tcns", "notification BPDUs sent (first worker)"),
        (
            "tcas",
            "acknowledgements of this bridge's notifications (first worker)",
        ),
        (
            "topology_changes",
            "topology changes this bridge detected (first worker)",
        ),
        (
            "topology_change",
            "1 while a topology change is announced (first worker)",
        ),
        ("is_root", "1 when this bridge is root (first worker)"),
        (
            "root",
            "the root's identifier as a number: priority << 48 | address (first worker)",
        ),
        (
            "bridge",
            "this bridge's identifier as a number (first worker)",
        ),
        ("root_path_cost", "the cost to the root (first worker)"),
        (
            "root_port",
            "the root port, absent when root (first worker)",
        ),
        (
            "stateN",
            "port N: 1 listening, 2 learning, 3 forwarding, 4 blocking (Linux's numbers)",
        ),
    ],
    example: "// A two-port switch taking part in the spanning tree; here it hears \
        one BPDU from a\n// root (Linux's, 8000.a6:06:19:dc:f1:41) on port 0.\n\
        span :: EtherSpanTree(02:00:00:00:00:01, in, out, sw);\n\
        sw :: EtherSwitch; in :: Suppressor; out :: Suppressor;\n\
        InfiniteSource(DATA \\<01 80 c2 00 00 00 a6 06 19 dc f1 41 00 26 42 42 03 00 00 00 00 \
        00 80 00 a6 06 19 dc f1 41 00 00 00 00 80 00 a6 06 19 dc f1 41 80 01 00 00 06 00 01 00 \
        02 00>, LIMIT 1) -> c0 :: Classifier(14/4242, -);\n\
        Idle -> c1 :: Classifier(14/4242, -);\n\
        c0[0] -> [0]span[0] -> Discard; c1[0] -> [1]span[1] -> Discard;\n\
        c0[1] -> [0]in[0] -> [0]sw[0] -> [0]out[0] -> Discard;\n\
        c1[1] -> [1]in[1] -> [1]sw[1] -> [1]out[1] -> Discard;",
    see_also: &["EtherSwitch", "Suppressor", "Classifier"],
};

/// The Bridge Group Address, where BPDUs go (802.1D-1998 Table 7-9).
pub const BRIDGE_GROUP: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x00];
/// LLC header of the spanning tree protocol: DSAP, SSAP 0x42, UI.
const LLC_STP: [u8; 3] = [0x42, 0x42, 0x03];
/// Ethernet header and LLC.
const BPDU_AT: usize = 14 + LLC_STP.len();
/// A configuration BPDU's bytes (clause 9.3.1).
const CONFIG_LEN: usize = 35;
/// A Topology Change Notification BPDU's bytes (clause 9.3.2).
const TCN_LEN: usize = 4;
const TYPE_CONFIG: u8 = 0x00;
const TYPE_TCN: u8 = 0x80;
const FLAG_TC: u8 = 0x01;
const FLAG_TCA: u8 = 0x80;
/// The frames bricks sends: padded to Ethernet's minimum.
pub const FRAME_LEN: usize = 60;
/// Most ports an EtherSpanTree has (the Suppressor's bound); port
/// identifiers stay distinct.
const MAX_PORTS: usize = 1024;

/// One nanosecond-based second.
const SEC: u64 = 1_000_000_000;
/// Hold Time (Table 8-3): at most one configuration BPDU a second per port.
const HOLD_TIME: u64 = SEC;
/// The port identifier's priority (the default of 802.1D's Table 8-4).
const PORT_PRIORITY: u16 = 0x8000;
/// Path cost of every port (Click's increment).
const PATH_COST: u32 = 1;
/// Added to a relayed message age: one unit (1/256 s), as Linux.
const MESSAGE_AGE_INCREMENT: u16 = 1;
/// Ranges of the timers (802.1D-1998 Table 8-3; forward delay down to
/// 2 s as Linux allows). Received values are clamped into them.
const MAX_AGE_RANGE: (u64, u64) = (6 * SEC, 40 * SEC);
const HELLO_RANGE: (u64, u64) = (SEC, 10 * SEC);
const FORWARD_DELAY_RANGE: (u64, u64) = (2 * SEC, 30 * SEC);

/// BPDU time (units of 1/256 s) to nanoseconds.
fn ticks_to_ns(t: u16) -> u64 {
    u64::from(t) * SEC / 256
}

/// Nanoseconds to BPDU time, saturating.
fn ns_to_ticks(ns: u64) -> u16 {
    u16::try_from(u128::from(ns) * 256 / u128::from(SEC)).unwrap_or(u16::MAX)
}

/// A bridge identifier as Linux prints it: priority, a dot, the address.
pub fn id_text(id: u64) -> String {
    format!("{:04x}.{:012x}", id >> 48, id & 0xffff_ffff_ffff)
}

/// A configuration BPDU's parameters (clause 9.3.1); times in 1/256 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigBpdu {
    /// Topology Change flag.
    pub tc: bool,
    /// Topology Change Acknowledgment flag.
    pub tca: bool,
    /// Root Identifier.
    pub root: u64,
    /// Root Path Cost.
    pub cost: u32,
    /// Bridge Identifier of the sender.
    pub bridge: u64,
    /// Port Identifier of the sender's port.
    pub port: u16,
    /// Message Age.
    pub message_age: u16,
    /// Max Age.
    pub max_age: u16,
    /// Hello Time.
    pub hello_time: u16,
    /// Forward Delay.
    pub forward_delay: u16,
}

/// A BPDU of 802.1D-1998.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bpdu {
    /// A Configuration BPDU.
    Config(ConfigBpdu),
    /// A Topology Change Notification BPDU.
    Tcn,
}

/// Why a frame given as a BPDU is not one (the drop counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Shorter than its headers, its 802.3 length or its type's
    /// parameters.
    Runt,
    /// Not to the Bridge Group Address.
    BadAddress,
    /// An 802.3 length that is an EtherType or too short for a BPDU.
    BadLength,
    /// Not LLC 42 42 03.
    BadLlc,
    /// Protocol Identifier not 0.
    BadProtocol,
    /// A BPDU type other than configuration and notification (RSTP's 2).
    UnknownType,
    /// Message Age not below Max Age (clause 9.3.4): stale information.
    Aged,
}

impl Reject {
    const ALL: [Reject; 7] = [
        Reject::Runt,
        Reject::BadAddress,
        Reject::BadLength,
        Reject::BadLlc,
        Reject::BadProtocol,
        Reject::UnknownType,
        Reject::Aged,
    ];

    /// The counter that counts it.
    pub fn counter(self) -> &'static str {
        match self {
            Reject::Runt => "runt",
            Reject::BadAddress => "bad_address",
            Reject::BadLength => "bad_length",
            Reject::BadLlc => "bad_llc",
            Reject::BadProtocol => "bad_protocol",
            Reject::UnknownType => "unknown_type",
            Reject::Aged => "aged",
        }
    }
}

impl core::fmt::Display for Reject {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Reject::Runt => "too short for a BPDU",
            Reject::BadAddress => "not to the bridge group address",
            Reject::BadLength => "bad 802.3 length",
            Reject::BadLlc => "not LLC 42 42 03",
            Reject::BadProtocol => "protocol identifier not 0",
            Reject::UnknownType => "unknown BPDU type",
            Reject::Aged => "message age not below max age",
        })
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

impl Bpdu {
    /// Reads the BPDU in an Ethernet frame (802.3 header, LLC, BPDU;
    /// padding after the 802.3 length ignored), as clause 9.3.4
    /// validates it. Reads nothing past the frame.
    pub fn parse(frame: &[u8]) -> Result<Bpdu, Reject> {
        if frame.len() < BPDU_AT + TCN_LEN {
            return Err(Reject::Runt);
        }
        if frame[..6] != BRIDGE_GROUP {
            return Err(Reject::BadAddress);
        }
        let len = usize::from(be16(frame, 12));
        if !(LLC_STP.len() + TCN_LEN..=1500).contains(&len) {
            return Err(Reject::BadLength);
        }
        if 14 + len > frame.len() {
            return Err(Reject::Runt);
        }
        if frame[14..BPDU_AT] != LLC_STP {
            return Err(Reject::BadLlc);
        }
        let b = &frame[BPDU_AT..14 + len];
        if be16(b, 0) != 0 {
            return Err(Reject::BadProtocol);
        }
        // The version (b[2]) is not checked: 802.1D reads configuration
        // and notification BPDUs of any version.
        match b[3] {
            TYPE_TCN => Ok(Bpdu::Tcn),
            TYPE_CONFIG if b.len() < CONFIG_LEN => Err(Reject::Runt),
            TYPE_CONFIG => {
                let c = ConfigBpdu {
                    tc: b[4] & FLAG_TC != 0,
                    tca: b[4] & FLAG_TCA != 0,
                    root: be64(b, 5),
                    cost: be32(b, 13),
                    bridge: be64(b, 17),
                    port: be16(b, 25),
                    message_age: be16(b, 27),
                    max_age: be16(b, 29),
                    hello_time: be16(b, 31),
                    forward_delay: be16(b, 33),
                };
                if c.message_age >= c.max_age {
                    return Err(Reject::Aged);
                }
                Ok(Bpdu::Config(c))
            }
            _ => Err(Reject::UnknownType),
        }
    }

    /// The frame carrying this BPDU from `src`, padded to 60 bytes.
    pub fn emit(&self, src: [u8; 6]) -> [u8; FRAME_LEN] {
        let mut f = [0u8; FRAME_LEN];
        f[..6].copy_from_slice(&BRIDGE_GROUP);
        f[6..12].copy_from_slice(&src);
        f[14..BPDU_AT].copy_from_slice(&LLC_STP);
        let b = &mut f[BPDU_AT..];
        // Protocol identifier 0, version 0 (b[0..3] stay zero).
        let len = match self {
            Bpdu::Tcn => {
                b[3] = TYPE_TCN;
                TCN_LEN
            }
            Bpdu::Config(c) => {
                b[3] = TYPE_CONFIG;
                b[4] = if c.tc { FLAG_TC } else { 0 } | if c.tca { FLAG_TCA } else { 0 };
                b[5..13].copy_from_slice(&c.root.to_be_bytes());
                b[13..17].copy_from_slice(&c.cost.to_be_bytes());
                b[17..25].copy_from_slice(&c.bridge.to_be_bytes());
                b[25..27].copy_from_slice(&c.port.to_be_bytes());
                b[27..29].copy_from_slice(&c.message_age.to_be_bytes());
                b[29..31].copy_from_slice(&c.max_age.to_be_bytes());
                b[31..33].copy_from_slice(&c.hello_time.to_be_bytes());
                b[33..35].copy_from_slice(&c.forward_delay.to_be_bytes());
                CONFIG_LEN
            }
        };
        f[12..14].copy_from_slice(&((LLC_STP.len() + len) as u16).to_be_bytes());
        f
    }
}

/// A port's state (clause 8.4). There is no Disabled: the element has no
/// link state and every port takes part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    /// Receives BPDUs only.
    Blocking,
    /// On its way to forwarding: still blocks.
    Listening,
    /// Learns addresses, forwards nothing.
    Learning,
    /// Forwards.
    Forwarding,
}

impl PortState {
    /// Linux's number for the state (`/sys/class/net/*/brport/state`).
    pub fn code(self) -> u64 {
        match self {
            PortState::Listening => 1,
            PortState::Learning => 2,
            PortState::Forwarding => 3,
            PortState::Blocking => 4,
        }
    }

    /// The state's name, as Linux logs it.
    pub fn name(self) -> &'static str {
        match self {
            PortState::Blocking => "blocking",
            PortState::Listening => "listening",
            PortState::Learning => "learning",
            PortState::Forwarding => "forwarding",
        }
    }
}

/// The bridge's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// The address (BPDUs' source, the identifier's low 48 bits).
    pub addr: [u8; 6],
    /// The identifier's high 16 bits.
    pub priority: u16,
    /// Bridge Max Age, ns.
    pub max_age: u64,
    /// Bridge Hello Time, ns.
    pub hello_time: u64,
    /// Bridge Forward Delay, ns.
    pub forward_delay: u64,
    /// How many ports.
    pub ports: usize,
}

impl Params {
    /// Click's defaults for `addr` and `ports` ports.
    pub fn new(addr: [u8; 6], ports: usize) -> Params {
        Params {
            addr,
            priority: 0xdead,
            max_age: 20 * SEC,
            hello_time: 2 * SEC,
            forward_delay: 15 * SEC,
            ports,
        }
    }

    /// The bridge identifier.
    pub fn id(&self) -> u64 {
        let mut w = [0u8; 8];
        w[..2].copy_from_slice(&self.priority.to_be_bytes());
        w[2..].copy_from_slice(&self.addr);
        u64::from_be_bytes(w)
    }
}

/// A timer: its expiry (ns), or `None` when it is not running.
type Timer = Option<u64>;

fn due(t: Timer, now: u64) -> bool {
    t.is_some_and(|t| t <= now)
}

/// One port's protocol state (clause 8.5.5).
#[derive(Debug, Clone)]
struct Port {
    id: u16,
    path_cost: u32,
    state: PortState,
    designated_root: u64,
    designated_cost: u32,
    designated_bridge: u64,
    designated_port: u16,
    /// When the recorded information had message age 0 (ns).
    designated_at: u64,
    /// The recorded information's flags and times (for `msgs`).
    heard_tc: bool,
    heard_times: [u16; 3],
    topology_change_ack: bool,
    config_pending: bool,
    message_age_timer: Timer,
    forward_delay_timer: Timer,
    hold_timer: Timer,
}

/// What a bridge has sent (kept with the protocol state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Configuration BPDUs.
    pub bpdus: u64,
    /// Notifications.
    pub tcns: u64,
    /// Acknowledgements received for this bridge's notifications.
    pub tcas: u64,
    /// Topology changes detected.
    pub topology_changes: u64,
}

/// The spanning tree protocol of one bridge (clause 8.5 to 8.8): state
/// and procedures, with the time passed in. BPDUs to send collect in an
/// outbox ([`Bridge::take_outbox`]); every call does work in the number
/// of ports, whatever it is given.
#[derive(Debug, Clone)]
pub struct Bridge {
    params: Params,
    id: u64,
    designated_root: u64,
    root_path_cost: u32,
    root_port: Option<usize>,
    max_age: u64,
    hello_time: u64,
    forward_delay: u64,
    topology_change_detected: bool,
    topology_change: bool,
    hello_timer: Timer,
    tcn_timer: Timer,
    topology_change_timer: Timer,
    ports: Vec<Port>,
    outbox: Vec<(usize, Bpdu)>,
    sent: Sent,
}

fn clamp(v: u64, (lo, hi): (u64, u64)) -> u64 {
    v.clamp(lo, hi)
}

impl Bridge {
    /// A bridge initialised at `now` (clause 8.8.1): it believes itself
    /// root, every port listening, and has its first BPDUs in the outbox.
    pub fn new(params: Params, now: u64) -> Bridge {
        let id = params.id();
        let ports = (0..params.ports)
            .map(|i| Port {
                id: PORT_PRIORITY | (i as u16 + 1),
                path_cost: PATH_COST,
                state: PortState::Blocking,
                designated_root: id,
                designated_cost: 0,
                designated_bridge: id,
                designated_port: PORT_PRIORITY | (i as u16 + 1),
                designated_at: now,
                heard_tc: false,
                heard_times: [0; 3],
                topology_change_ack: false,
                config_pending: false,
                message_age_timer: None,
                forward_delay_timer: None,
                hold_timer: None,
            })
            .collect();
        let mut b = Bridge {
            params,
            id,
            designated_root: id,
            root_path_cost: 0,
            root_port: None,
            max_age: params.max_age,
            hello_time: params.hello_time,
            forward_delay: params.forward_delay,
            topology_change_detected: false,
            topology_change: false,
            hello_timer: None,
            tcn_timer: None,
            topology_change_timer: None,
            ports,
            outbox: Vec::new(),
            sent: Sent::default(),
        };
        b.port_state_selection(now);
        b.config_bpdu_generation(now);
        b.hello_timer = Some(now + b.hello_time);
        b
    }

    /// This bridge's identifier.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The root's identifier.
    pub fn root_id(&self) -> u64 {
        self.designated_root
    }

    /// Whether this bridge is root.
    pub fn is_root(&self) -> bool {
        self.designated_root == self.id
    }

    /// The root port, if not root.
    pub fn root_port(&self) -> Option<usize> {
        self.root_port
    }

    /// The cost of the path to the root.
    pub fn root_path_cost(&self) -> u32 {
        self.root_path_cost
    }

    /// Whether a topology change is being announced (the switch ages
    /// addresses fast meanwhile).
    pub fn topology_change(&self) -> bool {
        self.topology_change
    }

    /// The forward delay in use, ns.
    pub fn forward_delay(&self) -> u64 {
        self.forward_delay
    }

    /// The state of port `port`.
    pub fn state(&self, port: usize) -> Option<PortState> {
        self.ports.get(port).map(|p| p.state)
    }

    /// How many ports.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// Whether this bridge is the designated bridge of `port`'s LAN.
    pub fn is_designated(&self, port: usize) -> bool {
        self.ports
            .get(port)
            .is_some_and(|p| p.designated_bridge == self.id && p.designated_port == p.id)
    }

    /// What was sent and detected so far.
    pub fn sent(&self) -> Sent {
        self.sent
    }

    /// The BPDUs to send since the last call, by port.
    pub fn take_outbox(&mut self) -> Vec<(usize, Bpdu)> {
        std::mem::take(&mut self.outbox)
    }

    /// The earliest running timer.
    pub fn next_timer(&self) -> Option<u64> {
        let ports = self
            .ports
            .iter()
            .flat_map(|p| [p.message_age_timer, p.forward_delay_timer, p.hold_timer]);
        [self.hello_timer, self.tcn_timer, self.topology_change_timer]
            .into_iter()
            .chain(ports)
            .flatten()
            .min()
    }

    /// 8.6.1: sends a configuration BPDU on `p` unless the hold timer
    /// runs (then it goes when it stops).
    fn transmit_config(&mut self, p: usize, now: u64) {
        if self.ports[p].hold_timer.is_some_and(|t| t > now) {
            self.ports[p].config_pending = true;
            return;
        }
        let message_age = match self.root_port {
            None => 0,
            Some(r) => ns_to_ticks(now.saturating_sub(self.ports[r].designated_at))
                .saturating_add(MESSAGE_AGE_INCREMENT),
        };
        let max_age = ns_to_ticks(self.max_age);
        let port = &mut self.ports[p];
        let bpdu = ConfigBpdu {
            tc: self.topology_change,
            tca: port.topology_change_ack,
            root: self.designated_root,
            cost: self.root_path_cost,
            bridge: self.id,
            port: port.id,
            message_age,
            max_age,
            hello_time: ns_to_ticks(self.hello_time),
            forward_delay: ns_to_ticks(self.forward_delay),
        };
        if message_age < max_age {
            self.outbox.push((p, Bpdu::Config(bpdu)));
            self.sent.bpdus += 1;
            port.topology_change_ack = false;
            port.config_pending = false;
            port.hold_timer = Some(now + HOLD_TIME);
        }
    }

    /// 8.6.2: keeps what `c` says about `p`'s LAN.
    fn record_config_information(&mut self, p: usize, c: &ConfigBpdu, now: u64) {
        let age = ticks_to_ns(c.message_age);
        let max_age = clamp(ticks_to_ns(c.max_age), MAX_AGE_RANGE);
        let port = &mut self.ports[p];
        port.designated_root = c.root;
        port.designated_cost = c.cost;
        port.designated_bridge = c.bridge;
        port.designated_port = c.port;
        port.designated_at = now.saturating_sub(age);
        port.heard_tc = c.tc;
        port.heard_times = [c.max_age, c.hello_time, c.forward_delay];
        port.message_age_timer = Some(now + max_age.saturating_sub(age));
    }

    /// 8.6.3: the root's times (clamped into their ranges) and flag.
    fn record_config_timeout_values(&mut self, c: &ConfigBpdu) {
        self.max_age = clamp(ticks_to_ns(c.max_age), MAX_AGE_RANGE);
        self.hello_time = clamp(ticks_to_ns(c.hello_time), HELLO_RANGE);
        self.forward_delay = clamp(ticks_to_ns(c.forward_delay), FORWARD_DELAY_RANGE);
        self.topology_change = c.tc;
    }

    /// 8.6.4: a BPDU on every designated port.
    fn config_bpdu_generation(&mut self, now: u64) {
        for p in 0..self.ports.len() {
            if self.is_designated(p) {
                self.transmit_config(p, now);
            }
        }
    }

    /// 8.6.6: a notification on the root port.
    fn transmit_tcn(&mut self) {
        if let Some(r) = self.root_port {
            self.outbox.push((r, Bpdu::Tcn));
            self.sent.tcns += 1;
        }
    }

    /// 8.6.7.
    fn configuration_update(&mut self) {
        self.root_selection();
        self.designated_port_selection();
    }

    /// 8.6.8: the root port is the one with the best path to a root
    /// better than this bridge.
    fn root_selection(&mut self) {
        let key = |p: &Port| {
            (
                p.designated_root,
                p.designated_cost.saturating_add(p.path_cost),
                p.designated_bridge,
                p.designated_port,
                p.id,
            )
        };
        let best = (0..self.ports.len())
            .filter(|&i| !self.is_designated(i) && self.ports[i].designated_root < self.id)
            .min_by_key(|&i| key(&self.ports[i]));
        self.root_port = best;
        match best {
            None => {
                self.designated_root = self.id;
                self.root_path_cost = 0;
            }
            Some(r) => {
                let p = &self.ports[r];
                self.designated_root = p.designated_root;
                self.root_path_cost = p.designated_cost.saturating_add(p.path_cost);
            }
        }
    }

    /// 8.6.9: this bridge becomes designated where it offers better.
    fn designated_port_selection(&mut self) {
        for i in 0..self.ports.len() {
            let p = &self.ports[i];
            let better = self.is_designated(i)
                || p.designated_root != self.designated_root
                || self.root_path_cost < p.designated_cost
                || (self.root_path_cost == p.designated_cost
                    && (self.id < p.designated_bridge
                        || (self.id == p.designated_bridge && p.id < p.designated_port)));
            if better {
                self.become_designated_port(i);
            }
        }
    }

    /// 8.6.10.
    fn become_designated_port(&mut self, i: usize) {
        let (root, cost, id) = (self.designated_root, self.root_path_cost, self.id);
        let p = &mut self.ports[i];
        p.designated_root = root;
        p.designated_cost = cost;
        p.designated_bridge = id;
        p.designated_port = p.id;
    }

    /// 8.6.11: root and designated ports head for forwarding, the others
    /// block.
    fn port_state_selection(&mut self, now: u64) {
        for i in 0..self.ports.len() {
            if Some(i) == self.root_port {
                self.ports[i].config_pending = false;
                self.ports[i].topology_change_ack = false;
                self.make_forwarding(i, now);
            } else if self.is_designated(i) {
                self.ports[i].message_age_timer = None;
                self.make_forwarding(i, now);
            } else {
                self.ports[i].config_pending = false;
                self.ports[i].topology_change_ack = false;
                self.make_blocking(i, now);
            }
        }
    }

    /// 8.6.12.
    fn make_forwarding(&mut self, i: usize, now: u64) {
        let p = &mut self.ports[i];
        if p.state == PortState::Blocking {
            p.state = PortState::Listening;
            p.forward_delay_timer = Some(now + self.forward_delay);
        }
    }

    /// 8.6.13.
    fn make_blocking(&mut self, i: usize, now: u64) {
        let was = self.ports[i].state;
        if was != PortState::Blocking {
            if matches!(was, PortState::Forwarding | PortState::Learning) {
                self.topology_change_detection(now);
            }
            self.ports[i].state = PortState::Blocking;
            self.ports[i].forward_delay_timer = None;
        }
    }

    /// 8.6.14: the root announces a change; another bridge notifies the
    /// root, again every hello time until acknowledged.
    fn topology_change_detection(&mut self, now: u64) {
        if self.is_root() {
            self.topology_change = true;
            self.topology_change_timer =
                Some(now + self.params.max_age + self.params.forward_delay);
        } else if !self.topology_change_detected {
            self.transmit_tcn();
            self.tcn_timer = Some(now + self.params.hello_time);
        }
        self.topology_change_detected = true;
        self.sent.topology_changes += 1;
    }

    /// 8.6.15.
    fn topology_change_acknowledged(&mut self) {
        self.topology_change_detected = false;
        self.tcn_timer = None;
    }

    /// 8.6.16.
    fn acknowledge_topology_change(&mut self, p: usize, now: u64) {
        self.ports[p].topology_change_ack = true;
        self.transmit_config(p, now);
    }

    /// 8.6.2.2's test: whether `c` beats what `p` holds.
    fn supersedes_port_info(&self, p: usize, c: &ConfigBpdu) -> bool {
        let port = &self.ports[p];
        (c.root, c.cost) < (port.designated_root, port.designated_cost)
            || ((c.root, c.cost) == (port.designated_root, port.designated_cost)
                && (c.bridge < port.designated_bridge
                    || (c.bridge == port.designated_bridge
                        && (c.bridge != self.id || c.port <= port.designated_port))))
    }

    /// 8.7.1: a configuration BPDU on port `p`.
    pub fn received_config(&mut self, p: usize, c: &ConfigBpdu, now: u64) {
        if p >= self.ports.len() {
            return;
        }
        let was_root = self.is_root();
        if self.supersedes_port_info(p, c) {
            self.record_config_information(p, c, now);
            self.configuration_update();
            self.port_state_selection(now);
            if !self.is_root() && was_root {
                self.hello_timer = None;
                if self.topology_change_detected {
                    self.topology_change_timer = None;
                    self.transmit_tcn();
                    self.tcn_timer = Some(now + self.params.hello_time);
                }
            }
            if Some(p) == self.root_port {
                self.record_config_timeout_values(c);
                self.config_bpdu_generation(now);
                if c.tca {
                    if self.topology_change_detected {
                        self.sent.tcas += 1;
                    }
                    self.topology_change_acknowledged();
                }
            }
        } else if self.is_designated(p) {
            // 8.6.5: answer an inferior BPDU with this bridge's.
            self.transmit_config(p, now);
        }
    }

    /// 8.7.2: a notification on port `p`.
    pub fn received_tcn(&mut self, p: usize, now: u64) {
        if self.is_designated(p) {
            self.topology_change_detection(now);
            self.acknowledge_topology_change(p, now);
        }
    }

    /// 8.8.1's root bridge start (after 8.7.4's expiry made it root).
    fn become_root(&mut self, now: u64) {
        self.max_age = self.params.max_age;
        self.hello_time = self.params.hello_time;
        self.forward_delay = self.params.forward_delay;
        self.topology_change_detection(now);
        self.tcn_timer = None;
        self.config_bpdu_generation(now);
        self.hello_timer = Some(now + self.hello_time);
    }

    /// 8.7.3 to 8.7.8: runs every timer that has expired by `now`.
    pub fn tick(&mut self, now: u64) {
        // A timer restarted by another's expiry runs at least a second,
        // except a port's information that arrived older than the max
        // age it is kept for; a few rounds cover that.
        for _ in 0..4 {
            if self.next_timer().is_none_or(|t| t > now) {
                return;
            }
            for i in 0..self.ports.len() {
                if due(self.ports[i].message_age_timer, now) {
                    self.ports[i].message_age_timer = None;
                    let was_root = self.is_root();
                    self.become_designated_port(i);
                    self.configuration_update();
                    self.port_state_selection(now);
                    if self.is_root() && !was_root {
                        self.become_root(now);
                    }
                }
                if due(self.ports[i].forward_delay_timer, now) {
                    let p = &mut self.ports[i];
                    match p.state {
                        PortState::Listening => {
                            p.state = PortState::Learning;
                            p.forward_delay_timer = Some(now + self.forward_delay);
                        }
                        PortState::Learning => {
                            p.state = PortState::Forwarding;
                            p.forward_delay_timer = None;
                            if (0..self.ports.len())
                                .any(|j| self.ports[j].designated_bridge == self.id)
                            {
                                self.topology_change_detection(now);
                            }
                        }
                        _ => p.forward_delay_timer = None,
                    }
                }
                if due(self.ports[i].hold_timer, now) {
                    self.ports[i].hold_timer = None;
                    if self.ports[i].config_pending {
                        self.transmit_config(i, now);
                    }
                }
            }
            if due(self.tcn_timer, now) {
                self.transmit_tcn();
                self.tcn_timer = Some(now + self.params.hello_time);
            }
            if due(self.topology_change_timer, now) {
                self.topology_change_timer = None;
                self.topology_change_detected = false;
                self.topology_change = false;
            }
            if due(self.hello_timer, now) {
                self.config_bpdu_generation(now);
                self.hello_timer = Some(now + self.hello_time);
            }
        }
    }

    /// Click's `msgs`: each port's information, then the bridge's best.
    pub fn msgs(&self) -> String {
        let secs = |ns: u64| ns / SEC;
        let line = |out: &mut String,
                    bridge: u64,
                    port: u16,
                    tc: bool,
                    cost: u32,
                    root: u64,
                    t: [u64; 3]| {
            let _ = writeln!(
                out,
                " {:>16}:{:04x}: {}  {:x} -> {:>16}  m/h/d: {:x}/{:x}/{:x}",
                format!("{bridge:x}"),
                port,
                if tc { "TC" } else { "tc" },
                cost,
                format!("{root:x}"),
                t[0],
                t[1],
                t[2]
            );
        };
        let own = [
            secs(self.max_age),
            secs(self.hello_time),
            secs(self.forward_delay),
        ];
        let mut out = String::new();
        for (i, p) in self.ports.iter().enumerate() {
            let (tc, t) = if self.is_designated(i) {
                (self.topology_change, own)
            } else {
                (p.heard_tc, p.heard_times.map(|t| u64::from(t) / 256))
            };
            line(
                &mut out,
                p.designated_bridge,
                p.designated_port,
                tc,
                p.designated_cost,
                p.designated_root,
                t,
            );
        }
        let (bridge, port) = match self.root_port {
            Some(r) => (
                self.ports[r].designated_bridge,
                self.ports[r].designated_port,
            ),
            None => (self.id, 0),
        };
        line(
            &mut out,
            bridge,
            port,
            self.topology_change,
            self.root_path_cost,
            self.designated_root,
            own,
        );
        out
    }

    /// One line per port: its number, state and role.
    pub fn port_states(&self) -> String {
        let mut out = String::new();
        for (i, p) in self.ports.iter().enumerate() {
            let role = if Some(i) == self.root_port {
                "root"
            } else if self.is_designated(i) {
                "designated"
            } else {
                "blocked"
            };
            let _ = writeln!(out, "{i} {} {role}", p.state.name());
        }
        out
    }
}

/// What every worker's instance shares: the protocol, made when the
/// first worker starts.
#[derive(Debug)]
struct Shared {
    params: Params,
    bridge: Mutex<Option<Bridge>>,
}

fn read_timer(
    args: &mut Args<'_>,
    key: &'static str,
    default: u64,
    range: (u64, u64),
) -> Result<u64, ArgError> {
    let t: Option<Duration> = args.read(key)?;
    let ns = t.map_or(default, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
    if !(range.0..=range.1).contains(&ns) {
        return Err(ArgError::new(format!(
            "{key} {}s: from {} to {} seconds",
            ns as f64 / SEC as f64,
            range.0 / SEC,
            range.1 / SEC
        )));
    }
    Ok(ns)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let n = ports.ninputs();
    if ports.noutputs() != n {
        return Err(ArgError::new(format!(
            "EtherSpanTree needs as many outputs as inputs (one pair per port), not {} and {n}",
            ports.noutputs()
        )));
    }
    if n > MAX_PORTS {
        return Err(ArgError::new(format!(
            "EtherSpanTree has {n} ports; at most {MAX_PORTS}"
        )));
    }
    let addr: EthernetAddress = args.read_mp("ADDR")?;
    let input: Arc<Ports> = args.read_shared_of_mp("INPUT_SUPPRESSOR", "Suppressor")?;
    let output: Arc<Ports> = args.read_shared_of_mp("OUTPUT_SUPPRESSOR", "Suppressor")?;
    let switch: Arc<SwitchTable> = args.read_shared_of_mp("SWITCH", "EtherSwitch")?;
    let mut params = Params::new(addr.0, n);
    params.priority = args.read("PRIORITY")?.unwrap_or(params.priority);
    params.max_age = read_timer(args, "MAX_AGE", params.max_age, MAX_AGE_RANGE)?;
    params.hello_time = read_timer(args, "HELLO_TIME", params.hello_time, HELLO_RANGE)?;
    params.forward_delay = read_timer(
        args,
        "FORWARD_DELAY",
        params.forward_delay,
        FORWARD_DELAY_RANGE,
    )?;
    for (what, has) in [
        ("INPUT_SUPPRESSOR", input.len()),
        ("OUTPUT_SUPPRESSOR", output.len()),
        ("SWITCH", switch.lans()),
    ] {
        if has < n {
            return Err(ArgError::new(format!(
                "{what} has {has} ports, fewer than the EtherSpanTree's {n}"
            )));
        }
    }
    let sh = args.shared(|_| {
        Ok(Shared {
            params,
            bridge: Mutex::new(None),
        })
    })?;
    Ok(Box::new(EtherSpanTree {
        sh,
        input,
        output,
        switch,
        first_worker: true,
        timer_at: None,
        c: Counts::default(),
    }))
}

/// One worker's receive counters.
#[derive(Debug, Default)]
struct Counts {
    bpdus: u64,
    tcns: u64,
    rejected: [u64; Reject::ALL.len()],
}

/// One worker's instance.
#[derive(Debug)]
pub struct EtherSpanTree {
    sh: Arc<Shared>,
    input: Arc<Ports>,
    output: Arc<Ports>,
    switch: Arc<SwitchTable>,
    first_worker: bool,
    /// The timer this instance has asked for.
    timer_at: Option<u64>,
    c: Counts,
}

/// With several workers the first one runs the timers; one that another
/// worker's BPDU made earlier is found this late at most.
const POLL_OTHERS: u64 = SEC / 4;

impl EtherSpanTree {
    fn lock(&self) -> MutexGuard<'_, Option<Bridge>> {
        // A panic elsewhere cannot leave the protocol half-updated in a
        // way that matters more than stopping it would.
        self.sh.bridge.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts each port of the suppressors and the switch in its state.
    fn apply(&self, b: &Bridge) {
        for i in 0..b.ports() {
            let (pass_in, pass_out, learning) = match b.state(i) {
                Some(PortState::Learning) => (true, false, true),
                Some(PortState::Forwarding) => (true, true, false),
                _ => (false, false, false),
            };
            self.input.set(i, pass_in);
            self.output.set(i, pass_out);
            self.switch.set_learning(i, learning);
        }
        self.switch.set_short_timeout(
            b.topology_change()
                .then(|| Duration::from_nanos(b.forward_delay())),
        );
    }

    /// Runs `f` on the protocol (made now if no worker has), applies the
    /// port states, sends what it queued and asks for the next timer.
    fn with_bridge(&mut self, cx: &mut Context<'_>, f: impl FnOnce(&mut Bridge, u64)) {
        let now = cx.now().0;
        let (out, next) = {
            let mut g = self.lock();
            let b = g.get_or_insert_with(|| Bridge::new(self.sh.params, now));
            f(b, now);
            self.apply(b);
            (b.take_outbox(), b.next_timer())
        };
        for (port, bpdu) in out {
            if let Ok(p) = Packet::from_slice(&bpdu.emit(self.sh.params.addr)) {
                cx.push_one(port, p);
            }
        }
        // On a capture's clock the engine jumps to the next timer: a
        // periodic one would walk it through every hello time up to the
        // capture's first timestamp. There the timers run as BPDUs come.
        if cx.worker() == 0 && !cx.trace_clock() {
            let mut at = next;
            if cx.workers() > 1 {
                at = Some(at.map_or(now + POLL_OTHERS, |t| t.min(now + POLL_OTHERS)));
            }
            if let Some(at) = at {
                if self.timer_at.is_none_or(|t| at < t || t <= now) {
                    cx.schedule_at(Timestamp(at));
                    self.timer_at = Some(at);
                }
            }
        }
    }
}

impl Element for EtherSpanTree {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.first_worker = cx.worker() == 0;
        self.with_bridge(cx, |_, _| {});
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut heard = Vec::with_capacity(batch.len());
        for p in batch.drain() {
            match Bpdu::parse(p.data()) {
                Ok(bpdu) => {
                    match bpdu {
                        Bpdu::Config(_) => self.c.bpdus += 1,
                        Bpdu::Tcn => self.c.tcns += 1,
                    }
                    heard.push(bpdu);
                }
                Err(r) => {
                    let i = Reject::ALL.iter().position(|&x| x == r).unwrap_or(0);
                    self.c.rejected[i] += 1;
                }
            }
        }
        if heard.is_empty() {
            return;
        }
        self.with_bridge(cx, |b, now| {
            // Timers that came due since the last run go first.
            b.tick(now);
            for bpdu in &heard {
                match bpdu {
                    Bpdu::Config(c) => b.received_config(port, c, now),
                    Bpdu::Tcn => b.received_tcn(port, now),
                }
            }
        });
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = cx.now().0;
        if self.timer_at.is_some_and(|t| t <= now) {
            self.timer_at = None;
        }
        self.with_bridge(cx, |b, now| b.tick(now));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bpdus", self.c.bpdus);
        s.counter("tcns", self.c.tcns);
        s.counter("drops", self.c.rejected.iter().sum());
        for (r, n) in Reject::ALL.iter().zip(self.c.rejected) {
            s.counter(r.counter(), n);
        }
        if !self.first_worker {
            return;
        }
        let g = self.lock();
        let Some(b) = g.as_ref() else { return };
        let sent = b.sent();
        s.counter("sent_bpdus", sent.bpdus);
        s.counter("sent_tcns", sent.tcns);
        s.counter("tcas", sent.tcas);
        s.counter("topology_changes", sent.topology_changes);
        s.counter("topology_change", u64::from(b.topology_change()));
        s.counter("is_root", u64::from(b.is_root()));
        s.counter("root", b.root_id());
        s.counter("bridge", b.id());
        s.counter("root_path_cost", u64::from(b.root_path_cost()));
        if let Some(r) = b.root_port() {
            s.counter("root_port", r as u64);
        }
        for i in 0..b.ports() {
            if let Some(st) = b.state(i) {
                s.counter(format!("state{i}"), st.code());
            }
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let g = self.lock();
        let b = g.as_ref();
        match handler {
            "msgs" => Some(b.map(Bridge::msgs).unwrap_or_default()),
            "root_id" => Some(format!(
                "{}\n",
                id_text(b.map_or(self.sh.params.id(), Bridge::root_id))
            )),
            "bridge_id" => Some(format!("{}\n", id_text(self.sh.params.id()))),
            "port_states" => Some(b.map(Bridge::port_states).unwrap_or_default()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const HANDLERS: &[Handler] = &[
            Handler::r("msgs"),
            Handler::r("root_id"),
            Handler::r("bridge_id"),
            Handler::r("port_states"),
        ];
        HANDLERS
    }
}

/// The elements an `EtherSpanTree(ADDR, in, out, sw)` names, made by
/// hand, for tests and fuzzing outside a configuration: two Suppressors
/// and an EtherSwitch of `ports` ports, and what the spanning tree made
/// of them.
pub struct Rig {
    /// `in`, `out` and `sw`, for `Harness::with_refs`.
    pub refs: FixedRefs,
    input: Arc<Ports>,
    output: Arc<Ports>,
    switch: Arc<SwitchTable>,
}

impl Rig {
    /// Suppressors with every port active and a switch learning nowhere.
    pub fn new(ports: usize) -> Rig {
        let input = Arc::new(Ports::new(ports));
        let output = Arc::new(Ports::new(ports));
        let switch = Arc::new(SwitchTable::new(64, Duration::from_secs(300), ports));
        Rig {
            refs: FixedRefs(vec![
                ("in".into(), "Suppressor", input.clone()),
                ("out".into(), "Suppressor", output.clone()),
                ("sw".into(), "EtherSwitch", switch.clone()),
            ]),
            input,
            output,
            switch,
        }
    }

    /// Port `port`: whether frames pass in, pass out, and whether the
    /// switch only learns from them.
    pub fn port(&self, port: usize) -> (bool, bool, bool) {
        (
            self.input.is_active(port),
            self.output.is_active(port),
            self.switch.learning(port),
        )
    }

    /// The switch's short aging, ms, while a topology change lasts.
    pub fn short_timeout_ms(&self) -> Option<u64> {
        self.switch.short_timeout_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// Captured from Linux 6.18 (tcpdump -w on a bridge's peer veth):
    /// root 8000.a6:06:19:dc:f1:41 on its port 0x8001; hello 1 s, max
    /// age 6 s, forward delay 2 s. 52 bytes: veths do not pad.
    const LINUX_ROOT: [u8; 52] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x00, 0x26, 0x42,
        0x42, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41,
        0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x80, 0x01, 0x00,
        0x00, 0x06, 0x00, 0x01, 0x00, 0x02, 0x00,
    ];
    /// Linux relaying the root 1000.f6:91:79:fc:ab:22: cost 2, bridge
    /// 8000.96:3b:9e:9f:ff:5e port 0x8002, message age 1/256 s.
    const LINUX_RELAY: [u8; 52] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0x96, 0x3b, 0x9e, 0x9f, 0xff, 0x5e, 0x00, 0x26, 0x42,
        0x42, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22,
        0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0x96, 0x3b, 0x9e, 0x9f, 0xff, 0x5e, 0x80, 0x02, 0x00,
        0x01, 0x06, 0x00, 0x01, 0x00, 0x02, 0x00,
    ];
    /// Linux's root answering a notification: flags TC and TCA (0x81).
    const LINUX_TC_TCA: [u8; 52] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x00, 0x26, 0x42,
        0x42, 0x03, 0x00, 0x00, 0x00, 0x00, 0x81, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22,
        0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x80, 0x01, 0x00,
        0x00, 0x06, 0x00, 0x01, 0x00, 0x02, 0x00,
    ];
    /// Linux's Topology Change Notification.
    const LINUX_TCN: [u8; 21] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x00, 0x07, 0x42,
        0x42, 0x03, 0x00, 0x00, 0x00, 0x80,
    ];

    const ME: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
    const LINUX_ROOT_ID: u64 = 0x8000_a606_19dc_f141;
    const T0: u64 = 1_000 * SEC;

    /// Big-endian fields read back by hand, independently of `parse`.
    fn field(f: &[u8], at: usize, len: usize) -> u64 {
        f[at..at + len]
            .iter()
            .fold(0u64, |a, &b| (a << 8) | u64::from(b))
    }

    fn config(f: &[u8]) -> ConfigBpdu {
        match Bpdu::parse(f) {
            Ok(Bpdu::Config(c)) => c,
            other => panic!("not a configuration BPDU: {other:?}"),
        }
    }

    /// A configuration BPDU from Linux's bridge, changed.
    fn from_linux(edit: impl FnOnce(&mut ConfigBpdu)) -> [u8; FRAME_LEN] {
        let mut c = config(&LINUX_ROOT);
        edit(&mut c);
        Bpdu::Config(c).emit([0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41])
    }

    #[test]
    fn reads_linux_bpdus() {
        let c = config(&LINUX_ROOT);
        assert_eq!(
            c,
            ConfigBpdu {
                tc: false,
                tca: false,
                root: LINUX_ROOT_ID,
                cost: 0,
                bridge: LINUX_ROOT_ID,
                port: 0x8001,
                message_age: 0,
                max_age: 6 * 256,
                hello_time: 256,
                forward_delay: 2 * 256,
            }
        );
        let r = config(&LINUX_RELAY);
        assert_eq!(r.root, field(&LINUX_RELAY, 22, 8));
        assert_eq!(id_text(r.root), "1000.f69179fcab22");
        assert_eq!(r.cost, 2);
        assert_eq!(id_text(r.bridge), "8000.963b9e9fff5e");
        assert_eq!((r.port, r.message_age), (0x8002, 1));
        let t = config(&LINUX_TC_TCA);
        assert!(t.tc && t.tca);
        assert_eq!(Bpdu::parse(&LINUX_TCN), Ok(Bpdu::Tcn));
        // Padding after the 802.3 length is not part of the BPDU.
        let mut padded = LINUX_TCN.to_vec();
        padded.resize(60, 0xee);
        assert_eq!(Bpdu::parse(&padded), Ok(Bpdu::Tcn));
    }

    #[test]
    fn writes_what_linux_writes() {
        // The same parameters from Linux's address give Linux's bytes,
        // then zero padding to 60.
        let src = [0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41];
        for linux in [&LINUX_ROOT[..], &LINUX_RELAY, &LINUX_TC_TCA] {
            let c = config(linux);
            let f = Bpdu::Config(c).emit(linux[6..12].try_into().unwrap());
            assert_eq!(&f[..52], linux);
            assert!(f[52..].iter().all(|&b| b == 0));
        }
        let f = Bpdu::Tcn.emit(src);
        assert_eq!(&f[..21], &LINUX_TCN);
        assert_eq!(f.len(), 60);
    }

    #[test]
    fn malformed_bpdus_are_refused() {
        for n in 0..LINUX_ROOT.len() {
            let r = Bpdu::parse(&LINUX_ROOT[..n]);
            assert!(r.is_err(), "{n} bytes: {r:?}");
        }
        let edit = |at: usize, v: u8| {
            let mut f = LINUX_ROOT.to_vec();
            f[at] = v;
            Bpdu::parse(&f)
        };
        assert_eq!(edit(5, 0x01), Err(Reject::BadAddress));
        // An Ethernet II frame (EtherType 0x4242) is not 802.3.
        assert_eq!(edit(12, 0x42), Err(Reject::BadLength));
        // A length past the frame, or too short for any BPDU.
        assert_eq!(edit(13, 0x27), Err(Reject::Runt));
        assert_eq!(edit(13, 0x06), Err(Reject::BadLength));
        // A length that cuts a configuration BPDU short.
        assert_eq!(edit(13, 0x25), Err(Reject::Runt));
        assert_eq!(edit(14, 0xaa), Err(Reject::BadLlc));
        assert_eq!(edit(16, 0x13), Err(Reject::BadLlc));
        assert_eq!(edit(18, 0x01), Err(Reject::BadProtocol));
        // RSTP's type 2.
        assert_eq!(edit(20, 0x02), Err(Reject::UnknownType));
        // Message age 6 s with max age 6 s; max age 0.
        assert_eq!(edit(44, 0x06), Err(Reject::Aged));
        assert_eq!(edit(46, 0x00), Err(Reject::Aged));
        // Another version is still read.
        assert!(edit(19, 0x03).is_ok());
        // A notification whose length says 4 bytes but the frame has 3.
        assert_eq!(Bpdu::parse(&LINUX_TCN[..20]), Err(Reject::Runt));
    }

    fn linux_root_params() -> Params {
        Params {
            max_age: 6 * SEC,
            hello_time: SEC,
            forward_delay: 2 * SEC,
            ..Params::new(ME, 3)
        }
    }

    /// Runs `b`'s timers every 100 ms up to `until`.
    fn run_until(b: &mut Bridge, from: u64, until: u64) {
        let mut t = from;
        while t <= until {
            b.tick(t);
            t += SEC / 10;
        }
    }

    fn configs(out: &[(usize, Bpdu)], port: usize) -> Vec<ConfigBpdu> {
        out.iter()
            .filter_map(|(p, b)| match b {
                Bpdu::Config(c) if *p == port => Some(*c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn alone_it_is_root_and_ports_reach_forwarding() {
        let mut b = Bridge::new(linux_root_params(), T0);
        assert!(b.is_root());
        assert_eq!(b.id(), 0xdead_0200_0000_0001);
        let out = b.take_outbox();
        assert_eq!(out.len(), 3, "a BPDU on each port: {out:?}");
        for (i, (p, bpdu)) in out.iter().enumerate() {
            assert_eq!(*p, i);
            let Bpdu::Config(c) = bpdu else { panic!() };
            assert_eq!((c.root, c.bridge, c.cost), (b.id(), b.id(), 0));
            assert_eq!(c.port, 0x8001 + i as u16);
            assert_eq!((c.message_age, c.max_age, c.hello_time), (0, 1536, 256));
        }
        assert_eq!(b.state(0), Some(PortState::Listening));
        run_until(&mut b, T0, T0 + 2 * SEC - 1);
        assert_eq!(b.state(0), Some(PortState::Listening));
        run_until(&mut b, T0 + 2 * SEC, T0 + 3 * SEC);
        assert_eq!(b.state(0), Some(PortState::Learning));
        run_until(&mut b, T0 + 3 * SEC, T0 + 4 * SEC);
        assert_eq!(b.state(2), Some(PortState::Forwarding));
        // A hello each second on each port, with the topology change the
        // ports' forwarding made.
        let out = b.take_outbox();
        assert_eq!(configs(&out, 1).len(), 4);
        assert!(configs(&out, 1).last().unwrap().tc);
        assert!(b.sent().topology_changes >= 1);
    }

    /// Linux's root heard on ports 0 and 1 (two links to one bridge).
    fn under_linux_root() -> Bridge {
        let mut b = Bridge::new(linux_root_params(), T0);
        b.take_outbox();
        let p1 = config(&LINUX_ROOT);
        let p2 = ConfigBpdu { port: 0x8002, ..p1 };
        b.received_config(1, &p2, T0 + SEC / 10);
        b.received_config(0, &p1, T0 + SEC / 10);
        b
    }

    #[test]
    fn two_links_to_the_root_one_blocks() {
        let mut b = under_linux_root();
        assert!(!b.is_root());
        assert_eq!(b.root_id(), LINUX_ROOT_ID);
        assert_eq!(b.root_port(), Some(0), "the root's lower port id wins");
        assert_eq!(b.root_path_cost(), 1);
        assert_eq!(b.state(1), Some(PortState::Blocking));
        assert!(b.is_designated(2) && !b.is_designated(1) && !b.is_designated(0));
        // Relayed on the designated port only, once the hold time since
        // the first BPDUs at T0 has passed; aged 0.9 s + 1/256 s.
        assert!(b.take_outbox().is_empty(), "held");
        b.tick(T0 + SEC);
        let out = b.take_outbox();
        assert!(out.iter().all(|(p, _)| *p == 2), "{out:?}");
        let c = configs(&out, 2).pop().unwrap();
        assert_eq!((c.root, c.cost, c.bridge), (LINUX_ROOT_ID, 1, b.id()));
        assert_eq!(c.message_age, 230 + 1);
        assert_eq!(c.port, 0x8003);
        // The root's times are used.
        assert_eq!(b.forward_delay(), 2 * SEC);
        // Keep the root's BPDUs coming: port 0 forwards after 2 x 2 s
        // (its listening began at start), then notifies the root.
        let mut t = T0 + SEC / 10;
        let mut tcns = 0;
        while t < T0 + 5 * SEC {
            t += SEC / 10;
            if t.is_multiple_of(SEC) {
                b.received_config(0, &config(&LINUX_ROOT), t);
                b.received_config(1, &config(&from_linux(|c| c.port = 0x8002)), t);
            }
            b.tick(t);
            tcns += b
                .take_outbox()
                .iter()
                .filter(|(p, x)| *p == 0 && *x == Bpdu::Tcn)
                .count();
        }
        assert_eq!(b.state(0), Some(PortState::Forwarding));
        assert_eq!(b.state(1), Some(PortState::Blocking));
        assert!(tcns >= 2, "repeated every hello time: {tcns}");
        // The root's acknowledgement stops them.
        b.received_config(0, &config(&from_linux(|c| (c.tc, c.tca) = (true, true))), t);
        assert_eq!(b.sent().tcas, 1);
        assert!(b.topology_change(), "the root's flag is followed");
        b.take_outbox();
        run_until(&mut b, t, t + 3 * SEC);
        assert!(!b.take_outbox().iter().any(|(_, x)| *x == Bpdu::Tcn));
    }

    #[test]
    fn the_root_lost_it_becomes_root_after_max_age() {
        let mut b = under_linux_root();
        run_until(&mut b, T0, T0 + 6 * SEC);
        assert!(!b.is_root(), "information lasts max age");
        run_until(&mut b, T0 + 6 * SEC, T0 + 7 * SEC);
        assert!(b.is_root());
        assert_eq!(b.root_port(), None);
        // Its own times again, and BPDUs on every port.
        let out = b.take_outbox();
        assert!(configs(&out, 0).last().is_some_and(|c| c.root == b.id()));
        assert!(configs(&out, 1).last().is_some_and(|c| c.root == b.id()));
    }

    #[test]
    fn a_worse_bridge_is_answered_and_a_better_one_wins() {
        let mut p = linux_root_params();
        p.priority = 0x1000;
        let mut b = Bridge::new(p, T0);
        b.take_outbox();
        // Linux (0x8000) is worse: answered at once on that port... but
        // the hold timer allows one BPDU a second.
        b.received_config(0, &config(&LINUX_ROOT), T0 + SEC);
        let out = b.take_outbox();
        assert_eq!(configs(&out, 0).len(), 1);
        assert_eq!(configs(&out, 0)[0].root, b.id());
        b.received_config(0, &config(&LINUX_ROOT), T0 + SEC + 1);
        assert!(b.take_outbox().is_empty(), "held");
        b.tick(T0 + 2 * SEC);
        assert_eq!(
            configs(&b.take_outbox(), 0).len(),
            1,
            "sent when the hold ends"
        );
        assert!(b.is_root());
        // A station on port 2 claiming priority 0 becomes root: 802.1D
        // has no guard against it.
        let rogue = from_linux(|c| {
            c.root = 0x0000_0200_0000_00ee;
            c.bridge = c.root;
        });
        b.received_config(2, &config(&rogue), T0 + 3 * SEC);
        assert!(!b.is_root());
        assert_eq!(b.root_port(), Some(2));
        assert_eq!(b.root_id(), 0x0000_0200_0000_00ee);
        // It now relays the rogue's root on ports 0 and 1.
        let out = b.take_outbox();
        assert_eq!(configs(&out, 1)[0].root, 0x0000_0200_0000_00ee);
    }

    #[test]
    fn its_own_bpdu_looped_back_blocks_the_higher_port() {
        // Ports 0 and 1 on one LAN: port 1 hears port 0's BPDU.
        let mut b = Bridge::new(linux_root_params(), T0);
        let out = b.take_outbox();
        let own = configs(&out, 0)[0];
        b.received_config(1, &own, T0 + 1);
        assert_eq!(b.state(1), Some(PortState::Blocking));
        assert_eq!(b.state(0), Some(PortState::Listening));
        assert!(b.is_root());
        // And port 0 hearing port 1's changes nothing.
        let own1 = ConfigBpdu {
            port: 0x8002,
            ..own
        };
        b.received_config(0, &own1, T0 + 2);
        assert!(b.is_designated(0));
    }

    #[test]
    fn notifications_to_the_root_are_acknowledged_and_announced() {
        let mut b = Bridge::new(linux_root_params(), T0);
        run_until(&mut b, T0, T0 + 5 * SEC);
        b.take_outbox();
        let changes = b.sent().topology_changes;
        b.received_tcn(1, T0 + 5 * SEC + 1);
        assert_eq!(b.sent().topology_changes, changes + 1);
        assert!(b.topology_change());
        // Acknowledged on that port at once (the hold timer allowing).
        let out = b.take_outbox();
        b.tick(T0 + 6 * SEC);
        let out: Vec<_> = out.into_iter().chain(b.take_outbox()).collect();
        let c = configs(&out, 1);
        assert!(c.first().is_some_and(|c| c.tca && c.tc), "{c:?}");
        assert!(configs(&out, 0).iter().all(|c| !c.tca && c.tc));
        // Announced for max age + forward delay (6 + 2 s).
        run_until(&mut b, T0 + 6 * SEC, T0 + 13 * SEC);
        assert!(b.topology_change());
        run_until(&mut b, T0 + 13 * SEC, T0 + 14 * SEC);
        assert!(!b.topology_change());
        // A notification on a port where another bridge is designated is
        // not this bridge's to answer.
        let mut b = under_linux_root();
        b.take_outbox();
        b.received_tcn(1, T0 + SEC);
        assert!(b.take_outbox().is_empty());
    }

    #[test]
    fn received_times_are_kept_in_range() {
        let mut b = Bridge::new(linux_root_params(), T0);
        let wild = from_linux(|c| {
            c.hello_time = 0;
            c.forward_delay = 0;
            c.max_age = u16::MAX;
            c.message_age = u16::MAX - 1;
        });
        b.received_config(0, &config(&wild), T0);
        assert_eq!(b.root_port(), Some(0));
        assert_eq!(b.forward_delay(), 2 * SEC);
        assert_eq!(b.hello_time, SEC);
        assert_eq!(b.max_age, 40 * SEC);
        // Information older than the max age kept expires at once.
        b.tick(T0);
        assert!(b.is_root());
        assert!(b.next_timer().is_some_and(|t| t > T0));
    }

    #[test]
    fn msgs_is_clicks_format() {
        let b = under_linux_root();
        let m = b.msgs();
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(lines.len(), 4);
        // Click's "%16s:%04x: %2s  %x -> %16s  m/h/d: %x/%x/%x".
        assert_eq!(
            lines[0],
            " 8000a60619dcf141:8001: tc  0 -> 8000a60619dcf141  m/h/d: 6/1/2"
        );
        assert_eq!(
            lines[2],
            " dead020000000001:8003: tc  1 -> 8000a60619dcf141  m/h/d: 6/1/2"
        );
        assert_eq!(
            lines[3],
            " 8000a60619dcf141:8001: tc  1 -> 8000a60619dcf141  m/h/d: 6/1/2"
        );
        // Identifiers with leading zeros are narrower, right-aligned.
        let mut p = linux_root_params();
        p.priority = 0x10;
        let m = Bridge::new(p, T0).msgs();
        assert!(
            m.starts_with("   10020000000001:8001: tc  0 ->   10020000000001  m/h/d: 6/1/2\n"),
            "{m}"
        );
        assert_eq!(
            b.port_states(),
            "0 listening root\n1 blocking blocked\n2 listening designated\n"
        );
    }

    fn harness(rig: &Rig, args: &str, n: usize) -> Result<Harness, String> {
        Harness::with_refs(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![bricks_element::Processing::Push; n],
                outputs: vec![bricks_element::Processing::Push; n],
            },
            &rig.refs,
        )
    }

    #[test]
    fn the_element_drives_suppressors_and_switch() {
        let rig = Rig::new(3);
        let mut h = harness(
            &rig,
            "02:00:00:00:00:01, in, out, sw, HELLO_TIME 1, FORWARD_DELAY 2, MAX_AGE 6",
            3,
        )
        .unwrap();
        assert_eq!(rig.port(0), (true, true, false), "untouched before start");
        h.advance_to(Timestamp(T0));
        h.start();
        for i in 0..3 {
            assert_eq!(rig.port(i), (false, false, false), "listening");
            let f = h.take_bytes(i);
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].len(), 60);
            assert_eq!(&f[0][6..12], &ME);
            assert_eq!(field(&f[0], 42, 2), 0x8001 + i as u64);
        }
        h.push_bytes(0, &LINUX_ROOT);
        h.push_bytes(1, &from_linux(|c| c.port = 0x8002));
        h.push_bytes(1, &LINUX_ROOT[..30]);
        h.push_bytes(2, &LINUX_TCN);
        let s = h.stats();
        assert_eq!(s.get("bpdus"), Some(2));
        assert_eq!(s.get("tcns"), Some(1));
        assert_eq!(s.get("drops"), Some(1));
        assert_eq!(s.get("runt"), Some(1));
        assert_eq!(s.get("root"), Some(LINUX_ROOT_ID));
        assert_eq!(s.get("root_port"), Some(0));
        assert_eq!(s.get("state1"), Some(4));
        assert_eq!(h.read_handler("root_id").unwrap(), "8000.a60619dcf141\n");
        assert_eq!(h.read_handler("bridge_id").unwrap(), "dead.020000000001\n");
        assert!(h.read_handler("msgs").unwrap().contains("8000a60619dcf141"));
        // Time passes; the root keeps talking.
        let mut t = T0;
        let mut learning_seen = false;
        while t < T0 + 5 * SEC {
            t += SEC / 10;
            if t.is_multiple_of(SEC) {
                h.advance_to(Timestamp(t));
                h.push_bytes(0, &LINUX_ROOT);
                h.push_bytes(1, &from_linux(|c| c.port = 0x8002));
            }
            h.advance_to(Timestamp(t));
            learning_seen |= rig.port(0) == (true, false, true);
        }
        assert!(learning_seen, "learning lets frames in for the switch only");
        assert_eq!(rig.port(0), (true, true, false));
        assert_eq!(rig.port(1), (false, false, false));
        assert_eq!(rig.port(2), (true, true, false));
        // Port 0 notified the root of the change.
        let tcns = h
            .take_bytes(0)
            .iter()
            .filter(|f| f.len() == 60 && f[12..14] == [0, 7] && f[20] == 0x80)
            .count();
        assert!(tcns >= 1);
        // The root's acknowledgement with TC: short aging in the switch.
        h.push_bytes(0, &from_linux(|c| (c.tc, c.tca) = (true, true)));
        assert_eq!(h.stats().get("tcas"), Some(1));
        assert_eq!(rig.short_timeout_ms(), Some(2000));
        h.push_bytes(0, &LINUX_ROOT);
        assert_eq!(rig.short_timeout_ms(), None);
        assert_eq!(
            h.read_handler("port_states").unwrap(),
            "0 forwarding root\n1 blocking blocked\n2 forwarding designated\n"
        );
    }

    #[test]
    fn arguments_are_checked() {
        let rig = Rig::new(2);
        assert!(harness(&rig, "02:00:00:00:00:01, in, out, sw", 2).is_ok());
        let bad = [
            ("02:00:00:00:00:01, in, out", "SWITCH"),
            ("02:00:00:00:00:01, in, sw, out", "not a Suppressor"),
            ("02:00:00:00:00:01, in, out, in", "not a EtherSwitch"),
            ("02:00:00:00:00:01, in, out, nope", "does not name"),
            ("nonsense, in, out, sw", "ADDR"),
            (
                "02:00:00:00:00:01, in, out, sw, HELLO_TIME 0.5",
                "HELLO_TIME",
            ),
            ("02:00:00:00:00:01, in, out, sw, MAX_AGE 41", "MAX_AGE"),
            (
                "02:00:00:00:00:01, in, out, sw, FORWARD_DELAY 1",
                "FORWARD_DELAY",
            ),
            ("02:00:00:00:00:01, in, out, sw, PRIORITY 65536", "PRIORITY"),
            ("02:00:00:00:00:01, in, out, sw, COLOR red", "COLOR"),
        ];
        for (args, why) in bad {
            let e = harness(&rig, args, 2).err().unwrap_or_default();
            assert!(e.contains(why), "{args}: {e}");
        }
        let e = harness(&rig, "02:00:00:00:00:01, in, out, sw", 3)
            .err()
            .unwrap_or_default();
        assert!(e.contains("fewer"), "{e}");
    }

    #[test]
    fn bridge_ids_order_as_their_bytes() {
        let p = Params {
            priority: 0x8000,
            ..Params::new([0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41], 1)
        };
        assert_eq!(p.id(), LINUX_ROOT_ID);
        assert_eq!(id_text(p.id()), "8000.a60619dcf141");
        // ns and BPDU units.
        assert_eq!(ns_to_ticks(2 * SEC), 512);
        assert_eq!(ticks_to_ns(1), 3_906_250);
        assert_eq!(ns_to_ticks(u64::MAX), u16::MAX);
    }
}
