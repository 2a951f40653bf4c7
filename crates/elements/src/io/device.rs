//! `FromDevice` and `ToDevice`: a router's interfaces.
//!
//! The configuration names an interface; what serves it is chosen outside
//! the configuration (see `bricks_io::binding`). Offline, an interface is a
//! pair of capture files, so Click's router configurations run unmodified
//! on recorded traffic.

use super::capture::{CaptureSink, CaptureSource};
use super::live::{LiveRx, LiveTx};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_io::binding::{self, Binding};
use bricks_io::live;
use bricks_io::pcap::LinkType;
use bricks_io::xdp::XdpMode;
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};
use std::time::Duration;

/// Frames per kick of the kernel when sending (RouteBricks' kn).
const TX_BURST: usize = 16;

/// The `FromDevice` class.
pub static FROM_DEVICE: ElementClass = ElementClass {
    name: "FromDevice",
    ports: "0/1",
    processing: "/h",
    manual: &FROM_MANUAL,
    make: make_from,
};

/// The `PollDevice` class: Click's polling receive element, the same as
/// `FromDevice` here (bricks always polls).
pub static POLL_DEVICE: ElementClass = ElementClass {
    name: "PollDevice",
    ports: "0/1",
    processing: "/h",
    manual: &POLL_MANUAL,
    make: make_from,
};

static POLL_MANUAL: Manual = Manual {
    summary: "receives packets from an interface (Click's polling name for FromDevice)",
    synopsis: "PollDevice(DEVNAME [, KEYWORDS])",
    see_also: &["FromDevice"],
    example: "PollDevice(eth0) -> Discard;",
    ..FROM_MANUAL
};

/// The `ToDevice` class.
pub static TO_DEVICE: ElementClass = ElementClass {
    name: "ToDevice",
    ports: "1/0",
    processing: "a/",
    manual: &TO_MANUAL,
    make: make_to,
};

pub(super) const DEVICE_KEYWORDS: [Keyword; 7] = [
    Keyword {
        name: "DEVNAME",
        ty: "interface name",
        default: None,
        doc: "the interface",
    },
    Keyword {
        name: "BURST",
        ty: "unsigned",
        default: Some("32 (FromDevice), 16 (ToDevice)"),
        doc: "FromDevice: frames taken per queue and poll (RouteBricks' kp); ToDevice: frames \
              per kick of the kernel (kn); up to 256",
    },
    Keyword {
        name: "BACKEND",
        ty: "auto, xdp or packet",
        default: Some("auto"),
        doc: "live interface: AF_XDP, AF_PACKET (TPACKET_V3 + fanout), or AF_XDP where it \
              can be set up and AF_PACKET otherwise",
    },
    Keyword {
        name: "QUEUE",
        ty: "unsigned",
        default: Some("all queues"),
        doc: "live interface: use this receive queue only (AF_XDP)",
    },
    Keyword {
        name: "XDP_MODE",
        ty: "auto, native or generic",
        default: Some("auto"),
        doc: "live interface: attach the XDP program in the driver (native) or after it \
              (generic); auto tries native first",
    },
    Keyword {
        name: "PROMISC",
        ty: "boolean",
        default: Some("false"),
        doc: "FromDevice on a live interface: keep frames unicast to other hosts' MACs \
              (packet type OTHERHOST); otherwise they are dropped and counted in \
              `other_host`, as Linux drops PACKET_OTHERHOST frames",
    },
    Keyword {
        name: "SNIFFER",
        ty: "boolean",
        default: Some("false"),
        doc: "leave the host's own stack undisturbed (accepted for Click compatibility)",
    },
];

const FROM_KEYWORDS: [Keyword; 9] = [
    DEVICE_KEYWORDS[0],
    DEVICE_KEYWORDS[1],
    DEVICE_KEYWORDS[2],
    DEVICE_KEYWORDS[3],
    DEVICE_KEYWORDS[4],
    DEVICE_KEYWORDS[5],
    DEVICE_KEYWORDS[6],
    Keyword {
        name: "FASTPATH",
        ty: "boolean",
        default: Some("false"),
        doc: "live interface, AF_XDP: forward the ordinary IPv4 packets of this interface in               the kernel, in bricks' XDP program, when the configuration's path from here               is Click's IPv4 forwarding path (Classifier, Strip, CheckIPHeader, an IPv4               route lookup, DecIPTTL, EtherEncap or ARPQuerier, Queue, ToDevice); every               other packet (options, TTL 1, no route, unknown neighbour, ARP, ...) goes               through the configuration as without it. The router says at start what it               forwards in the kernel and what not, and why. Offline (pcap bindings) it               changes nothing",
    },
    Keyword {
        name: "BUSY_POLL",
        ty: "duration",
        default: Some("0 (off)"),
        doc: "live interface, AF_XDP: the worker runs the interface's receive processing \
              (NAPI) itself: a poll that finds less than a burst waiting runs one NAPI poll \
              of up to 64 frames on the worker's CPU (SO_PREFER_BUSY_POLL), rather than the \
              kernel's interrupts or NAPI threads doing it on their own time. AF_XDP's \
              receive never waits, so the duration (1us to 1ms) only turns it on: it is \
              what the socket holds as SO_BUSY_POLL. It keeps the kernel off the worker's \
              CPU only where the interface defers its NAPI (`napi_defer_hard_irqs` and \
              `gro_flush_timeout` in /sys/class/net/DEV): set those too",
    },
];

const TO_KEYWORDS: [Keyword; 8] = [
    DEVICE_KEYWORDS[0],
    DEVICE_KEYWORDS[1],
    DEVICE_KEYWORDS[2],
    DEVICE_KEYWORDS[3],
    DEVICE_KEYWORDS[4],
    DEVICE_KEYWORDS[5],
    DEVICE_KEYWORDS[6],
    Keyword {
        name: "FLUSH",
        ty: "duration",
        default: Some("100us"),
        doc: "live interface: the longest a frame waits in the transmit ring for BURST - 1 \
              others before the kernel is told to send (0: every batch is sent at once)",
    },
];

static FROM_MANUAL: Manual = Manual {
    summary: "receives packets from an interface",
    synopsis: "FromDevice(DEVNAME [, KEYWORDS])",
    description: "Pushes the packets received on interface DEVNAME, in batches of up to \
        BURST, with the packet type annotation set from the destination MAC. On a live \
        interface, frames unicast to another MAC than the interface's (read when the \
        router starts) are dropped and counted unless PROMISC is true, as a host's card \
        and Linux do; a router must not route what was not sent to it. DEVNAME is \
        a live Linux interface (or its Ethernet address, as Click's kernel elements \
        take: the Ethernet interface with that address) unless the command line binds it \
        to captures. Live, the \
        backend is AF_XDP (bricks attaches its own redirect program; native mode where the \
        driver has it, zero-copy where it allows) or AF_PACKET with TPACKET_V3 rings and \
        fanout; every receive queue of the interface is owned by one worker (`bricks run \
        --threads N` spreads them), and each worker's FromDevice polls the queues it owns. \
        With `--device eth0=pcap:in.pcap,out.pcap` received packets are read from in.pcap \
        instead (an offline run; the router stops when every such file is read and the \
        graph has drained).",
    ports: "no inputs; one push output",
    keywords: &FROM_KEYWORDS,
    counters: &[
        ("count", "packets received"),
        ("bytes", "their bytes (live)"),
        (
            "ring_drops",
            "frames the kernel dropped because the ring was full (live)",
        ),
        ("oversized", "frames too large for a buffer"),
        ("errors", "failed polls (live)"),
        ("queues", "receive queues this worker owns (live)"),
        (
            "other_host",
            "frames unicast to another MAC than the interface's, dropped (live, PROMISC false)",
        ),
        (
            "fastpath_forwarded",
            "FASTPATH: packets the XDP program forwarded in the kernel (not in count)",
        ),
        ("fastpath_bytes", "FASTPATH: their bytes"),
        (
            "fastpath_not_ipv4",
            "FASTPATH: frames left to the configuration: not IPv4",
        ),
        (
            "fastpath_l2_multicast",
            "... to a multicast or broadcast MAC",
        ),
        (
            "fastpath_other_host",
            "... unicast to another MAC than the interface's (PROMISC false)",
        ),
        ("fastpath_ip_options", "... with IP options"),
        (
            "fastpath_bad_header",
            "... with a bad version, length or checksum, or Ethernet padding",
        ),
        (
            "fastpath_bad_address",
            "... from or to 0/8, 127/8, 224/3 or an address CheckIPHeader lists",
        ),
        ("fastpath_ttl", "... with TTL 1 or 0"),
        ("fastpath_no_route", "... matching no route"),
        (
            "fastpath_slow_output",
            "... routed to an output the fast path does not follow (or an ECMP group)",
        ),
        (
            "fastpath_too_big",
            "... longer than the output path's IPFragmenter MTU",
        ),
        (
            "fastpath_no_neighbour",
            "... whose next hop's MAC the ARPQuerier does not know",
        ),
    ],
    example: "FromDevice(eth0) -> Discard;",
    see_also: &["ToDevice", "FromDump"],
};

static TO_MANUAL: Manual = Manual {
    summary: "sends packets out of an interface",
    synopsis: "ToDevice(DEVNAME [, KEYWORDS])",
    description: "Sends packets out of interface DEVNAME. Usually after a Queue: the input \
        is then pull and a task pulls up to BURST packets at a time. Live, each worker \
        sends on a transmit queue of its own; frames are placed in the ring and the kernel \
        is told to send once per BURST frames (RouteBricks' kn) or when the oldest has \
        waited FLUSH. A full ring drops and counts; the worker never blocks. With a pcap \
        binding the packets are written to the binding's output file; a binding with no \
        output file drops and counts them.",
    ports: "one input, pull or push; no outputs",
    keywords: &TO_KEYWORDS,
    counters: &[
        ("count", "packets sent"),
        ("bytes", "their bytes (live)"),
        ("drops", "packets the device could not take"),
        ("ring_full", "of which: the transmit ring was full (live)"),
        ("kicks", "times the kernel was told to send (live)"),
    ],
    example: "FromDevice(eth0) -> Queue -> ToDevice(eth0);",
    see_also: &["FromDevice", "Queue", "ToDump"],
};

/// What a device element's arguments say.
pub(crate) struct DeviceArgs {
    pub(crate) name: String,
    pub(super) burst: Option<usize>,
    pub(crate) promisc: bool,
    pub(super) spec: live::DeviceSpec,
}

/// Click's userlevel capture keywords, accepted so that Click
/// configurations load: how Click captures (METHOD or CAPTURE: LINUX,
/// PCAP, NETMAP, DEFAULT; bricks picks its own backend with BACKEND),
/// SNAPLEN, HEADROOM, TIMESTAMP and OUTBOUND change nothing in bricks.
/// ENCAP must be ETHER, the only link type bricks' devices carry.
fn click_capture_keywords(args: &mut Args<'_>) -> Result<(), ArgError> {
    for key in ["METHOD", "CAPTURE"] {
        if let Some(m) = args.read::<String>(key)? {
            if !matches!(
                m.to_ascii_uppercase().as_str(),
                "LINUX" | "PCAP" | "NETMAP" | "DEFAULT"
            ) {
                return Err(ArgError::new(format!(
                    "{key} `{m}`: expected LINUX, PCAP, NETMAP or DEFAULT"
                )));
            }
        }
    }
    let _: Option<u32> = args.read("SNAPLEN")?;
    let _: Option<u32> = args.read("HEADROOM")?;
    let _: Option<bool> = args.read("TIMESTAMP")?;
    let _: Option<bool> = args.read("OUTBOUND")?;
    if let Some(e) = args.read::<String>("ENCAP")? {
        if !e.eq_ignore_ascii_case("ETHER") {
            return Err(ArgError::new(format!(
                "ENCAP `{e}`: bricks devices carry Ethernet frames only (ENCAP ETHER)"
            )));
        }
    }
    Ok(())
}

/// A device element's interface and settings, as FromDevice and ToDevice
/// read them (also by the fast path's analysis, `crate::fastpath`).
pub(crate) fn read_device(args: &mut Args<'_>) -> Result<DeviceArgs, ArgError> {
    let name: String = args.read_mp("DEVNAME")?;
    read_device_named(args, name)
}

/// [`read_device`] for an interface already named (FastClick's PORT).
pub(super) fn read_device_named(args: &mut Args<'_>, name: String) -> Result<DeviceArgs, ArgError> {
    // The second positional argument is BURST in Click's kernel-module
    // elements and PROMISC in its user-level FromDevice (and in older
    // PollDevice configurations): a number is taken as BURST, a boolean
    // as PROMISC, so that configurations written for either parse.
    let (burst, promisc): (Option<usize>, Option<bool>) = if args.has_keyword("BURST") {
        (args.read("BURST")?, args.read_p("PROMISC")?)
    } else {
        match args.read_p::<String>("BURST")? {
            None => (None, args.read("PROMISC")?),
            Some(second) => match second.trim().parse::<usize>() {
                Ok(b) => (Some(b), args.read_p("PROMISC")?),
                Err(_) => match bool::from_arg(second.trim()) {
                    Ok(p) if !args.has_keyword("PROMISC") => (None, Some(p)),
                    _ => {
                        return Err(ArgError::new(format!(
                            "bad argument BURST: expected unsigned integer (or a boolean \
                             PROMISC, as in Click's user-level FromDevice), found `{}`",
                            second.trim()
                        )))
                    }
                },
            },
        }
    };
    let promisc = promisc.unwrap_or(false);
    let _sniffer: Option<bool> = args.read("SNIFFER")?;
    click_capture_keywords(args)?;
    let mut spec = live::DeviceSpec::new(&name);
    if let Some(b) = args.read::<String>("BACKEND")? {
        spec.backend = b.parse().map_err(ArgError::new)?;
    }
    spec.queue = args.read("QUEUE")?;
    if let Some(m) = args.read::<String>("XDP_MODE")? {
        spec.xdp_mode = match m.to_ascii_lowercase().as_str() {
            "auto" => XdpMode::Auto,
            "native" | "drv" => XdpMode::Native,
            "generic" | "skb" => XdpMode::Generic,
            _ => {
                return Err(ArgError::new(format!(
                    "XDP_MODE `{m}`: expected auto, native or generic"
                )))
            }
        };
    }
    Ok(DeviceArgs {
        name,
        burst: burst.map(|b| b.clamp(1, MAX_BATCH)),
        promisc,
        spec,
    })
}

fn make_from(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // Read here and again by the runner, which follows the graph from
    // this element (`crate::fastpath`).
    let fast: bool = args.read("FASTPATH")?.unwrap_or(false);
    let busy: Option<Duration> = args.read("BUSY_POLL")?;
    let mut d = read_device(args)?;
    if fast && d.spec.backend == live::Backend::Packet {
        return Err(ArgError::new(
            "FASTPATH needs AF_XDP (BACKEND xdp or auto), not BACKEND packet",
        ));
    }
    if let Some(busy) = busy.filter(|b| !b.is_zero()) {
        if d.spec.backend == live::Backend::Packet {
            return Err(ArgError::new(
                "BUSY_POLL needs AF_XDP (BACKEND xdp or auto), not BACKEND packet",
            ));
        }
        let max = bricks_io::xdp::MAX_BUSY_POLL_US;
        let us = u32::try_from(busy.as_micros()).unwrap_or(u32::MAX);
        if us == 0 || us > max {
            return Err(ArgError::new(format!(
                "BUSY_POLL {busy:?}: give 1us to {max}us (0 turns it off)"
            )));
        }
        d.spec.busy_poll_us = us;
    }
    make_from_device(d, ports)
}

/// A receiving element for the interface `d` says.
pub(super) fn make_from_device(
    d: DeviceArgs,
    _ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let burst = d.burst.unwrap_or(DEFAULT_BURST);
    match binding::lookup(&d.name) {
        Some(Binding::Pcap {
            input: Some(path), ..
        }) => Ok(Box::new(FromDevice {
            src: Some(CaptureSource::open(path, false).map_err(ArgError::new)?),
            burst,
        })),
        Some(Binding::Pcap { input: None, .. }) => Ok(Box::new(FromDevice { src: None, burst })),
        None => {
            live::declare(d.spec).map_err(ArgError::new)?;
            Ok(Box::new(LiveRx::new(d.name, burst, d.promisc)))
        }
    }
}

fn make_to(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let d = read_device(args)?;
    make_to_device(d, args, ports)
}

/// A sending element for the interface `d` says (FLUSH read from `args`).
pub(super) fn make_to_device(
    d: DeviceArgs,
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let burst = d.burst.unwrap_or(TX_BURST);
    let flush: Duration = args.read("FLUSH")?.unwrap_or(Duration::from_micros(100));
    let pull = ports.input_is_pull(0);
    match binding::lookup(&d.name) {
        Some(Binding::Pcap { output, .. }) => Ok(Box::new(ToDevice {
            sink: output
                .map(|p| CaptureSink::new(p, LinkType::Ethernet, false, 0).stamp_with_send_time()),
            burst,
            pull,
            drops: 0,
        })),
        None => {
            live::declare(d.spec).map_err(ArgError::new)?;
            Ok(Box::new(LiveTx::new(
                d.name,
                burst,
                flush.as_nanos() as u64,
                pull,
            )))
        }
    }
}

/// Receives from an interface.
pub struct FromDevice {
    /// `None` when the binding has no input: nothing is ever received.
    src: Option<CaptureSource>,
    burst: usize,
}

impl Element for FromDevice {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let Some(src) = self.src.as_mut() else {
            return TaskResult::Done;
        };
        if src.done {
            return TaskResult::Done;
        }
        let mut b = Batch::new();
        let n = src.fill(&mut b, self.burst, cx);
        cx.push(0, &mut b);
        if n > 0 {
            TaskResult::Worked
        } else if src.done {
            TaskResult::Done
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        if let Some(src) = &self.src {
            s.counter("count", src.count);
            s.counter("oversized", src.oversized);
        }
    }
}

/// Sends to an interface.
pub struct ToDevice {
    sink: Option<CaptureSink>,
    burst: usize,
    pull: bool,
    drops: u64,
}

impl ToDevice {
    fn send(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        match self.sink.as_mut() {
            Some(s) => s.write(b, cx),
            None => self.drops += b.len() as u64,
        }
        b.clear();
    }
}

impl Element for ToDevice {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.send(batch, cx);
    }

    /// Hot swap: the capture it writes, when it is the same, and the
    /// counts.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<ToDevice>(old) else {
            return;
        };
        self.drops += old.drops;
        if let (Some(new), Some(old)) = (self.sink.as_mut(), old.sink.as_mut()) {
            new.take_from(old);
        }
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        cx.pull_task(self.burst, |b, cx| self.send(b, cx))
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        if let Some(s) = self.sink.as_mut() {
            if cx.worker() == 0 || s.count > 0 {
                s.finish(cx);
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        let (count, errors) = self.sink.as_ref().map_or((0, 0), |s| (s.count, s.errors));
        s.counter("count", count);
        s.counter("drops", self.drops + errors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(text: &str) -> Result<(Option<usize>, bool), String> {
        let parsed = bricks_runtime::testing::parse_args(text).unwrap();
        let mut args = Args::new(&parsed, None);
        let d = read_device(&mut args).map_err(|e| e.message)?;
        args.complete().map_err(|e| e.message)?;
        Ok((d.burst, d.promisc))
    }

    #[test]
    fn second_argument_is_burst_or_promisc() {
        // Click's kernel-module PollDevice/FromDevice: BURST second.
        assert_eq!(device("eth1, 8"), Ok((Some(8), false)));
        // Click's user-level FromDevice and older PollDevice: PROMISC.
        assert_eq!(device("eth1, true"), Ok((None, true)));
        assert_eq!(device("eth1, false, BURST 4"), Ok((Some(4), false)));
        assert_eq!(device("eth1, 16, true"), Ok((Some(16), true)));
        assert_eq!(device("eth1, PROMISC true"), Ok((None, true)));
        assert_eq!(device("eth1"), Ok((None, false)));
        let e = device("eth1, lots").unwrap_err();
        assert!(e.contains("BURST") && e.contains("lots"), "{e}");
    }

    #[test]
    fn busy_poll_is_declared_for_af_xdp_and_bounded() {
        use bricks_element::PortInfo;
        use bricks_runtime::testing::make_element;
        let make = |a: &str| make_element(&FROM_DEVICE, a, &PortInfo::default()).map(drop);
        let declared = |name: &str| {
            live::declared()
                .into_iter()
                .find(|s| s.name == name)
                .map(|s| s.busy_poll_us)
        };
        assert_eq!(make("bpt-a, BUSY_POLL 50us"), Ok(()));
        assert_eq!(declared("bpt-a"), Some(50));
        // 0 is off, as no keyword.
        assert_eq!(make("bpt-b, BUSY_POLL 0"), Ok(()));
        assert_eq!(declared("bpt-b"), Some(0));
        let e = make("bpt-c, BACKEND packet, BUSY_POLL 50us").unwrap_err();
        assert!(e.contains("BUSY_POLL needs AF_XDP"), "{e}");
        let e = make("bpt-d, BUSY_POLL 2ms").unwrap_err();
        assert!(e.contains("1us to 1000us"), "{e}");
        // One interface polls one way.
        assert_eq!(make("bpt-e, BUSY_POLL 20us"), Ok(()));
        let e = make("bpt-e, BUSY_POLL 30us").unwrap_err();
        assert!(e.contains("BUSY_POLL 20us and 30us"), "{e}");
    }
}
