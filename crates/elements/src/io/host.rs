//! `KernelTun`, `KernelTap`, `FromHost` and `ToHost`: the host's own
//! network stack on a TUN or TAP device (Click's user-level elements).
//!
//! The router holds one end of a TUN device (IP packets) or a TAP device
//! (Ethernet frames); the other end is an interface of the host, with the
//! address the configuration gives it. What the router writes the host
//! receives as if it came in on that interface (local delivery, a routing
//! daemon's protocol packets); what the host sends out of it the router
//! reads. The device is made by `bricks_io::tun` when the router starts
//! (never while a configuration is only checked) and goes away with the
//! router.
//!
//! Each worker has a queue of its own (a multi-queue device with several
//! workers), read up to BURST packets per task run without blocking; an
//! idle device lets the worker nap as any idle source does. Writes never
//! block either: what the kernel refuses is dropped and counted.

use super::capture::{set_packet_type, CaptureSink};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_io::binding::{self, Binding};
use bricks_io::pcap::LinkType;
use bricks_io::tun::{self, HostSpec, TunKind, TunQueue};
use bricks_io::DeviceError;
use bricks_packet::{Packet, DEFAULT_BURST, HEADROOM, MAX_BATCH, MAX_FRAME};
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ipv4::Ipv4Cidr;
use bricks_wire::ipv6::Ipv6Cidr;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// The `KernelTun` class.
pub static KERNEL_TUN: ElementClass = ElementClass {
    name: "KernelTun",
    ports: "0-1/1-2",
    processing: "a/h",
    manual: &TUN_MANUAL,
    make: make_tun,
};

/// The `KernelTap` class.
pub static KERNEL_TAP: ElementClass = ElementClass {
    name: "KernelTap",
    ports: "0-1/1-2",
    processing: "a/h",
    manual: &TAP_MANUAL,
    make: make_tap,
};

/// The `FromHost` class.
pub static FROM_HOST: ElementClass = ElementClass {
    name: "FromHost",
    ports: "0/1",
    processing: "/h",
    manual: &FROM_HOST_MANUAL,
    make: make_from_host,
};

/// The `ToHost` class.
pub static TO_HOST: ElementClass = ElementClass {
    name: "ToHost",
    ports: "1/0",
    processing: "h/",
    manual: &TO_HOST_MANUAL,
    make: make_to_host,
};

const KW_DEVNAME: Keyword = Keyword {
    name: "DEVNAME",
    ty: "interface name",
    default: Some("the kernel's choice: tun0, tun1, ... (tap0, ... for KernelTap)"),
    doc: "the host interface to create (1 to 15 bytes; `%d` is replaced by the first free \
          number); a name that exists must be a TUN/TAP device of the same kind that no one \
          holds",
};

const TUN_KEYWORDS: [Keyword; 11] = [
    KW_DEVNAME,
    Keyword {
        name: "MTU",
        ty: "unsigned",
        default: Some("1500"),
        doc: "the device's MTU, link header excluded; larger packets are dropped and counted \
              in `too_big` both ways; at most 2048 (KernelTun) or 2034 (KernelTap), the \
              largest frame a bricks packet holds",
    },
    Keyword {
        name: "BURST",
        ty: "unsigned",
        default: Some("32"),
        doc: "packets read from the device per task run (and pulled from the input per run \
              when it is pull); 1 to 256 (Click's default is 1)",
    },
    Keyword {
        name: "ETHER",
        ty: "Ethernet address",
        default: Some("the kernel's random address"),
        doc: "KernelTap: the host interface's MAC (a TUN has none: ignored)",
    },
    Keyword {
        name: "HEADROOM",
        ty: "unsigned",
        default: Some("128"),
        doc: "room before the packet for headers added later; bricks packets always have \
              128 bytes, so larger values are refused",
    },
    Keyword {
        name: "IGNORE_QUEUE_OVERFLOWS",
        ty: "boolean",
        default: Some("false"),
        doc: "say nothing about packets the kernel refuses for lack of room (ENOBUFS, \
              EAGAIN); they are counted in `queue_full` either way",
    },
    Keyword {
        name: "TAP",
        ty: "boolean",
        default: Some("false (KernelTun), true (KernelTap)"),
        doc: "a TAP device carrying Ethernet frames instead of a TUN device carrying IP",
    },
    Keyword {
        name: "DEV_NAME",
        ty: "interface name",
        default: Some("none"),
        doc: "Click's deprecated spelling of DEVNAME",
    },
    Keyword {
        name: "GATEWAY",
        ty: "IPv4 address",
        default: Some("none"),
        doc: "also the second positional argument: add a default route through this address, \
              which must be inside ADDR/MASK",
    },
    Keyword {
        name: "ADDR6",
        ty: "IPv6 address/length",
        default: Some("none (a TAP still gets its link-local address from its MAC)"),
        doc: "bricks: the host's IPv6 address on the device and its prefix length, added before \
              the device is up (the host then runs Duplicate Address Detection on it)",
    },
    Keyword {
        name: "IP6_ROUTER",
        ty: "boolean",
        default: Some("false"),
        doc: "bricks: the host's side of the device is an IPv6 router's interface \
              (`net.ipv6.conf.DEV.forwarding` 1, set before the device is up): the host's \
              Neighbor Advertisements carry the Router flag, it joins ff02::2, and it takes no \
              address, route or redirect from the Router Advertisements and Redirects it \
              receives there; whether the host forwards (`net.ipv6.conf.all.forwarding`) is \
              left as it is. For a router's own addresses mirrored to the host (a routing \
              daemon's interface)",
    },
];

static TUN_MANUAL: Manual = Manual {
    summary: "the host's IP stack as an interface: a TUN device carrying IP packets",
    synopsis: "KernelTun(ADDR/MASK [, GATEWAY, KEYWORDS])",
    description: "Creates a TUN device in the host (DEVNAME, or tun0, tun1, ...), gives the \
        host the address ADDR with netmask MASK on it and brings it up, so that the host \
        routes ADDR/MASK (and, with GATEWAY, everything by default) through the router. \
        IP packets the host sends out of the device leave on output 0, with the network \
        header and the destination address annotation set; what is not IPv4 or IPv6 goes \
        to output 1, or is dropped and counted in `bad` when output 1 is unconnected. \
        Packets arriving on the input are written to the device, so that the host \
        receives them: the network header annotation (or the start of the packet when \
        there is none) must hold an IPv4 or IPv6 header; link headers in front of it are \
        left out. The input is push or pull; pulled, up to BURST packets are taken per \
        task run. The host's own address ADDR is the host's: packets to ADDR are answered \
        by the host, packets to other addresses of ADDR/MASK come to the router. Each \
        worker reads and writes a queue of its own and never blocks; the device is \
        deleted when the router stops. Needs root (CAP_NET_ADMIN) and the kernel's tun \
        driver when the router runs; `bricks check` needs neither.",
    ports: "input (optional, push or pull): IP packets to the host; output 0 (push): IP \
        packets from the host; output 1 (optional, push): what the host sent that is not IP",
    keywords: &TUN_KEYWORDS,
    counters: &[
        ("count", "packets read from the device (output 0 and 1)"),
        ("bytes", "their bytes"),
        ("bad", "packets read that were not IP, dropped (output 1 unconnected)"),
        ("sent", "packets written to the device"),
        ("sent_bytes", "their bytes"),
        (
            "drops",
            "input packets not written: too big, not IP, queue full, no device or a failed write",
        ),
        ("too_big", "packets above the MTU, either way, dropped"),
        ("not_ip", "input packets with no IP header (KernelTun) or shorter than an Ethernet header (KernelTap)"),
        ("queue_full", "packets the kernel refused for lack of room (ENOBUFS, EAGAIN)"),
        ("no_device", "packets given while no device was open (not running, or gone)"),
        ("errors", "failed reads and writes of any other kind"),
        (
            "host_drops",
            "packets the host sent that the kernel dropped before bricks read them (the \
             device's queue was full: `TX dropped` of `ip -s link`)",
        ),
    ],
    example: "tun :: KernelTun(10.9.0.1/24, DEVNAME bricks0);\n\
        tun -> IPClassifier(icmp type echo) -> ICMPPingResponder -> tun;",
    see_also: &["KernelTap", "FromHost", "ToHost", "ICMPPingResponder"],
};

static TAP_MANUAL: Manual = Manual {
    summary: "the host's stack as an Ethernet interface: a TAP device carrying frames",
    synopsis: "KernelTap(ADDR/MASK [, GATEWAY, KEYWORDS])",
    description: "KernelTun with a TAP device (tap0, tap1, ... or DEVNAME): Ethernet frames \
        both ways, ARP enabled on the host side. The host ARPs for the addresses it \
        reaches through the device, so the router must answer (an ARPResponder for the \
        addresses it owns, or for 0.0.0.0/0) and address its frames to the host \
        interface's MAC (ETHER sets it, else the kernel picks one at random; the \
        `dev_name` handler names the interface to ask). Frames leave on output 0 with the \
        packet type set from their destination MAC and, for IPv4, the network header and \
        destination address annotations; frames on the input must be at least an \
        Ethernet header long and carry at most MTU bytes after it.",
    ports: "input (optional, push or pull): Ethernet frames to the host; output 0 (push): \
        frames from the host; output 1 (optional): unused, kept for Click's port count",
    keywords: &TUN_KEYWORDS,
    counters: TUN_MANUAL.counters,
    example: "tap :: KernelTap(10.9.1.1/24, ETHER 02:00:00:00:09:01, DEVNAME bricks1)\n\
        \t-> c :: Classifier(12/0806 20/0001, 12/0800);\n\
        c[0] -> ARPResponder(10.9.1.2 02:00:00:00:09:02) -> tap;\n\
        c[1] -> Discard;",
    see_also: &["KernelTun", "ARPResponder", "FromHost", "ToHost"],
};

static FROM_HOST_MANUAL: Manual = Manual {
    summary: "frames the host sends into a TAP device (Click's user-level FromHost)",
    synopsis: "FromHost(DEVNAME [, DST, KEYWORDS])",
    description: "Creates TAP device DEVNAME (Ethernet frames) and, when DST (ADDR/MASK) is \
        given, gives the host that address on it; the device is brought up either way. \
        Frames the host sends out of the device are pushed on output 0, as KernelTap's \
        are. ToHost(DEVNAME) in the same configuration writes frames into the same device, \
        so the pair is KernelTap split in two elements. The host ARPs through the device: \
        answer it (for instance `Classifier(12/0806, 12/0800)` and an ARPResponder to \
        ToHost(DEVNAME)).",
    ports: "no inputs; output 0 (push): frames from the host",
    keywords: &[
        Keyword {
            name: "DST",
            ty: "IPv4 prefix",
            default: Some("none: the address is left alone"),
            doc: "the host's address and netmask on the device",
        },
        Keyword {
            name: "GATEWAY",
            ty: "IPv4 address",
            default: Some("none"),
            doc: "add a default route through this address, which must be inside DST",
        },
        TUN_KEYWORDS[3],
        TUN_KEYWORDS[1],
        TUN_KEYWORDS[2],
        TUN_KEYWORDS[4],
    ],
    counters: &[
        ("count", "frames read from the device"),
        ("bytes", "their bytes"),
        ("too_big", "frames above the MTU, dropped"),
        ("errors", "failed reads"),
        (
            "host_drops",
            "frames the host sent that the kernel dropped before bricks read them",
        ),
    ],
    example: "FromHost(bricks2, 10.9.2.1/24) -> c :: Classifier(12/0806, 12/0800);\n\
        c[0] -> ARPResponder(0.0.0.0/0 02:00:00:00:09:02) -> ToHost(bricks2);\n\
        c[1] -> Discard;",
    see_also: &["ToHost", "KernelTap"],
};

static TO_HOST_MANUAL: Manual = Manual {
    summary: "hands packets to the host's network stack through a TUN or TAP device",
    synopsis: "ToHost([DEVNAME, KEYWORDS])",
    description: "Writes packets into the host device named DEVNAME, which a FromHost, \
        KernelTap or KernelTun of the same configuration creates (as Click's user-level \
        ToHost needs a FromHost): the host receives them as if they came in on that \
        interface. On a TAP device Ethernet frames are written as they are (TYPE ETHER) \
        or given an Ethernet header to the host interface's MAC (TYPE IP); on a TUN \
        device the IP packet is written and an Ethernet header in front of it left out. \
        Without such a device, when the command line binds DEVNAME to a capture \
        (`--device host=pcap:,local.pcap`) the frames are recorded there; otherwise they \
        are counted in `drops` and dropped, and `bricks run` warns so when it starts. \
        Linux accepts what is addressed to one of its addresses on that interface (or \
        broadcast) and comes from a routable source; the rest it drops silently.",
    ports: "one push input; no outputs",
    keywords: &[
        Keyword {
            name: "DEVNAME",
            ty: "interface name",
            default: Some("host"),
            doc: "the FromHost, KernelTap or KernelTun device (its DEVNAME) or, without \
                  one, the name looked up among the command line's `--device` bindings",
        },
        Keyword {
            name: "TYPE",
            ty: "ETHER or IP",
            default: Some("ETHER"),
            doc: "what the input carries: Ethernet frames or IP packets (Click's kernel \
                  ToHost keyword)",
        },
        Keyword {
            name: "IGNORE_QUEUE_OVERFLOWS",
            ty: "boolean",
            default: Some("false"),
            doc: "say nothing about packets the kernel refuses for lack of room",
        },
        Keyword {
            name: "SNIFFERS",
            ty: "boolean",
            default: Some("false"),
            doc: "hand packets to the host's packet sniffers only: the element is then a \
                  ToHostSniffers (Click's kernel ToHost keyword)",
        },
    ],
    counters: &[
        (
            "count",
            "packets written to the host device or recorded to the capture",
        ),
        ("bytes", "their bytes (host device)"),
        (
            "drops",
            "packets dropped: no host device and no capture, or any reason below",
        ),
        ("too_big", "packets above the device's MTU"),
        (
            "not_ip",
            "packets too short for their TYPE or, for a TUN, not IP",
        ),
        ("queue_full", "packets the kernel refused for lack of room"),
        ("errors", "failed writes of any other kind"),
    ],
    example: "FromHost(bricks3, 10.9.3.1/24) -> Discard;\n\
        InfiniteSource(LIMIT 1) -> ToHost(bricks3);",
    see_also: &[
        "FromHost",
        "KernelTap",
        "KernelTun",
        "ToDevice",
        "ToHostSniffers",
    ],
};

/// What the arguments of KernelTun, KernelTap and FromHost say.
#[derive(Debug, Clone, PartialEq)]
struct HostArgs {
    spec: HostSpec,
    burst: usize,
    quiet_overflows: bool,
}

fn check_mtu(mtu: u32, kind: TunKind) -> Result<u32, ArgError> {
    let max = (MAX_FRAME - kind.link_header()) as u32;
    if mtu < 68 {
        return Err(ArgError::new(format!(
            "MTU {mtu}: Linux needs at least 68 (RFC 791's minimum)"
        )));
    }
    if mtu > max {
        return Err(ArgError::new(format!(
            "MTU {mtu}: at most {max} for a {} device, the largest packet a bricks buffer \
             ({MAX_FRAME} bytes) holds with its link header",
            kind.as_str()
        )));
    }
    Ok(mtu)
}

/// The keywords every host device takes.
fn read_common(
    args: &mut Args<'_>,
    kind: TunKind,
    spec: &mut HostSpec,
) -> Result<(usize, bool), ArgError> {
    if let Some(m) = args.read::<u32>("MTU")? {
        spec.mtu = check_mtu(m, kind)?;
    }
    let burst = match args.read::<usize>("BURST")? {
        Some(0) => return Err(ArgError::new("BURST must be at least 1")),
        Some(b) => b.min(MAX_BATCH),
        None => DEFAULT_BURST,
    };
    if let Some(e) = args.read::<EthernetAddress>("ETHER")? {
        // A TUN device has no link address; Click warns and goes on.
        if kind == TunKind::Tap {
            spec.ether = Some(e.0);
        }
    }
    if let Some(h) = args.read::<usize>("HEADROOM")? {
        if h > HEADROOM {
            return Err(ArgError::new(format!(
                "HEADROOM {h}: bricks packets have {HEADROOM} bytes of headroom, no more"
            )));
        }
    }
    let quiet = args.read("IGNORE_QUEUE_OVERFLOWS")?.unwrap_or(false);
    Ok((burst, quiet))
}

fn read_devname(args: &mut Args<'_>, key: &'static str) -> Result<Option<String>, ArgError> {
    let name: Option<String> = args.read(key)?;
    if let Some(n) = &name {
        tun::check_devname(n).map_err(ArgError::new)?;
    }
    Ok(name)
}

fn read_gateway(
    g: Option<Ipv4Addr>,
    prefix: Option<Ipv4Cidr>,
) -> Result<Option<Ipv4Addr>, ArgError> {
    match (g, prefix) {
        (Some(g), _) if g.is_unspecified() => Ok(None),
        (Some(g), Some(p)) if !p.contains_addr(&g) => Err(ArgError::new(format!(
            "bad GATEWAY {g}: it must be inside {}/{}",
            p.address(),
            p.prefix_len()
        ))),
        (Some(_), None) => Err(ArgError::new("GATEWAY needs an address for the host (DST)")),
        (g, _) => Ok(g),
    }
}

fn read_kernel(args: &mut Args<'_>, tap_default: bool) -> Result<HostArgs, ArgError> {
    let addr: Ipv4Cidr = args.read_mp("ADDR")?;
    let gateway: Option<Ipv4Addr> = args.read_p("GATEWAY")?;
    let tap: bool = args.read("TAP")?.unwrap_or(tap_default);
    let kind = if tap { TunKind::Tap } else { TunKind::Tun };
    let mut devname = read_devname(args, "DEVNAME")?;
    if let Some(d) = read_devname(args, "DEV_NAME")? {
        devname.get_or_insert(d);
    }
    // Without DEVNAME the kernel picks the name; the element finds its
    // device again by its arguments.
    let key = devname.clone().unwrap_or_else(|| {
        format!(
            "{}({}/{})",
            kind.as_str(),
            addr.address(),
            addr.prefix_len()
        )
    });
    let mut spec = HostSpec::new(&key, kind);
    spec.devname = devname;
    spec.addr = Some((addr.address(), addr.netmask()));
    spec.gateway = read_gateway(gateway, Some(addr))?;
    if let Some(a) = args.read::<String>("ADDR6")? {
        let c: Ipv6Cidr = a
            .parse()
            .map_err(|_| ArgError::new(format!("ADDR6 `{a}`: expected an IPv6 ADDRESS/LENGTH")))?;
        let ip = c.address();
        if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || c.prefix_len() == 0 {
            return Err(ArgError::new(format!(
                "ADDR6 {a}: not an address an interface can have"
            )));
        }
        spec.addr6 = Some((ip, c.prefix_len()));
    }
    spec.ipv6_router = args.read("IP6_ROUTER")?.unwrap_or(false);
    let (burst, quiet_overflows) = read_common(args, kind, &mut spec)?;
    Ok(HostArgs {
        spec,
        burst,
        quiet_overflows,
    })
}

fn read_from_host(args: &mut Args<'_>) -> Result<HostArgs, ArgError> {
    let name: String = args.read_mp("DEVNAME")?;
    tun::check_devname(&name).map_err(ArgError::new)?;
    let dst: Option<Ipv4Cidr> = args.read_p("DST")?;
    let gateway: Option<Ipv4Addr> = args.read("GATEWAY")?;
    let mut spec = HostSpec::new(&name, TunKind::Tap);
    spec.devname = Some(name);
    spec.addr = dst.map(|d| (d.address(), d.netmask()));
    spec.gateway = read_gateway(gateway, dst)?;
    let (burst, quiet_overflows) = read_common(args, TunKind::Tap, &mut spec)?;
    Ok(HostArgs {
        spec,
        burst,
        quiet_overflows,
    })
}

fn make_kernel(
    args: &mut Args<'_>,
    ports: &PortInfo,
    tap: bool,
) -> Result<Box<dyn Element>, ArgError> {
    let a = read_kernel(args, tap)?;
    tun::declare(a.spec.clone()).map_err(ArgError::new)?;
    let input = (ports.ninputs() > 0).then(|| ports.input_is_pull(0));
    Ok(Box::new(HostDevice::new(&a, input, ports.noutputs() > 1)))
}

fn make_tun(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_kernel(args, ports, false)
}

fn make_tap(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_kernel(args, ports, true)
}

fn make_from_host(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let a = read_from_host(args)?;
    tun::declare(a.spec.clone()).map_err(ArgError::new)?;
    Ok(Box::new(HostDevice::new(&a, None, false)))
}

/// What ToHost's input carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostType {
    Ether,
    Ip,
}

fn make_to_host(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let devname: Option<String> = args.read_p("DEVNAME")?;
    let ty = super::sniffers::read_type(args)?;
    let quiet: bool = args.read("IGNORE_QUEUE_OVERFLOWS")?.unwrap_or(false);
    if args.read("SNIFFERS")?.unwrap_or(false) {
        return Ok(Box::new(super::sniffers::ToHostSniffers::new(
            devname, ty, false,
        )));
    }
    let name = devname.unwrap_or_else(|| "host".into());
    let sink = match binding::lookup(&name) {
        Some(Binding::Pcap {
            output: Some(p), ..
        }) => Some(CaptureSink::new(p, LinkType::Ethernet, false, 0).stamp_with_send_time()),
        _ => None,
    };
    Ok(Box::new(ToHost {
        key: name,
        ty,
        sink,
        out: TxSide::new(quiet),
        dev: None,
        dev_mac: [0; 6],
        taken: false,
        no_device: 0,
    }))
}

/// The writing half: checks, writes and counts.
#[derive(Debug, Default)]
struct TxSide {
    quiet_overflows: bool,
    sent: u64,
    bytes: u64,
    too_big: u64,
    not_ip: u64,
    queue_full: u64,
    errors: u64,
    /// Whether a refused write was already reported.
    said: bool,
}

impl TxSide {
    fn new(quiet_overflows: bool) -> TxSide {
        TxSide {
            quiet_overflows,
            ..TxSide::default()
        }
    }

    fn drops(&self) -> u64 {
        self.too_big + self.not_ip + self.queue_full + self.errors
    }

    /// Writes `bytes` (a whole link-layer packet of `kind`) to `q`.
    fn write(&mut self, q: &TunQueue, bytes: &[u8], cx: &Context<'_>) {
        match q.write(bytes) {
            Ok(()) => {
                self.sent += 1;
                self.bytes += bytes.len() as u64;
            }
            Err(e) => {
                let overflow = tun::is_overflow(&e);
                if overflow {
                    self.queue_full += 1;
                } else {
                    self.errors += 1;
                }
                let quiet = overflow && self.quiet_overflows;
                if !self.said && !quiet {
                    self.said = true;
                    eprintln!(
                        "bricks: {}: writing to {}: {e} (counted; said once)",
                        cx.name(),
                        q.name()
                    );
                }
            }
        }
    }
}

/// The IP packet in `p` for a TUN device: from the network header
/// annotation, or the whole packet; `None` if it is not IPv4 or IPv6.
pub(crate) fn ip_packet(p: &Packet) -> Option<&[u8]> {
    let ip = match p.network_header_offset() {
        Some(_) => p.network_header().unwrap_or_default(),
        None => p.data(),
    };
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => Some(ip),
        Some(6) if ip.len() >= 40 => Some(ip),
        _ => None,
    }
}

/// KernelTun, KernelTap and FromHost: a worker's queue of a host device.
pub struct HostDevice {
    key: String,
    kind: TunKind,
    mtu: u32,
    burst: usize,
    /// The input, if any: `Some(true)` when it is pull.
    input: Option<bool>,
    bad_output: bool,
    queue: Option<Arc<TunQueue>>,
    dev_name: String,
    taken: bool,
    /// The worker this copy runs on: the device-wide kernel counter is
    /// reported by worker 0's copy only, so that the sum is right.
    worker: usize,
    /// Where reads land: larger than any packet accepted, so that a cut
    /// one is seen as too big.
    buf: Vec<u8>,
    count: u64,
    bytes: u64,
    bad: u64,
    rx_too_big: u64,
    rx_errors: u64,
    no_device: u64,
    out: TxSide,
}

/// Bytes a read may bring: the largest IPv4 packet.
const READ_BUF: usize = 65536;

impl HostDevice {
    fn new(a: &HostArgs, input: Option<bool>, bad_output: bool) -> HostDevice {
        HostDevice {
            key: a.spec.key.clone(),
            kind: a.spec.kind,
            mtu: a.spec.mtu,
            burst: a.burst,
            input,
            bad_output,
            queue: None,
            dev_name: a.spec.devname.clone().unwrap_or_default(),
            taken: false,
            worker: 0,
            buf: Vec::new(),
            count: 0,
            bytes: 0,
            bad: 0,
            rx_too_big: 0,
            rx_errors: 0,
            no_device: 0,
            out: TxSide::new(a.quiet_overflows),
        }
    }

    fn take(&mut self, cx: &Context<'_>) {
        self.taken = true;
        self.worker = cx.worker();
        if let Some((dev, q)) = tun::take(&self.key, cx.worker()) {
            self.dev_name = dev.name;
            self.mtu = dev.mtu;
            self.queue = q;
            if self.queue.is_some() {
                self.buf = vec![0; READ_BUF];
            }
        }
    }

    /// The largest frame accepted, link header included (a TAP frame may
    /// carry one 802.1Q tag).
    fn max_frame(&self) -> usize {
        let link = match self.kind {
            TunKind::Tun => 0,
            TunKind::Tap => 18,
        };
        (self.mtu as usize + link).min(MAX_FRAME)
    }

    /// Reads up to BURST packets and pushes them. Returns whether any came.
    fn receive(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(q) = self.queue.clone() else {
            return false;
        };
        let max = self.max_frame();
        let mut good = Batch::new();
        let mut bad = Batch::new();
        let now = cx.now();
        for _ in 0..self.burst {
            let n = match q.read(&mut self.buf) {
                Ok(Some(0)) | Ok(None) => break,
                Ok(Some(n)) => n,
                Err(DeviceError::Gone(m)) => {
                    eprintln!("bricks: {}: {m}: the device is gone", cx.name());
                    cx.report_error(format!("{m}: the device is gone"));
                    self.queue = None;
                    break;
                }
                Err(DeviceError::Io(m)) => {
                    if self.rx_errors == 0 {
                        eprintln!("bricks: {}: {m}", cx.name());
                    }
                    self.rx_errors += 1;
                    break;
                }
            };
            if n > max {
                self.rx_too_big += 1;
                continue;
            }
            // Cannot fail: n <= MAX_FRAME.
            let Ok(mut p) = Packet::from_slice(&self.buf[..n]) else {
                self.rx_too_big += 1;
                continue;
            };
            self.count += 1;
            self.bytes += n as u64;
            p.anno_mut().timestamp = now;
            let ok = match self.kind {
                TunKind::Tun => annotate_ip(&mut p, 0),
                TunKind::Tap => {
                    set_packet_type(&mut p);
                    if p.data().get(12..14) == Some(&[0x08, 0x00]) {
                        annotate_ip(&mut p, 14);
                    }
                    true
                }
            };
            let _ = if ok { good.push(p) } else { bad.push(p) };
        }
        let any = !good.is_empty() || !bad.is_empty();
        if !good.is_empty() {
            cx.push(0, &mut good);
        }
        if !bad.is_empty() {
            if self.bad_output {
                cx.push(1, &mut bad);
            } else {
                self.bad += bad.len() as u64;
                bad.clear();
            }
        }
        any
    }

    fn send(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        if !self.taken {
            self.take(cx);
        }
        let Some(q) = self.queue.clone() else {
            self.no_device += b.len() as u64;
            b.clear();
            return;
        };
        let mtu = self.mtu as usize;
        for p in b.drain() {
            match self.kind {
                TunKind::Tun => match ip_packet(&p) {
                    None => self.out.not_ip += 1,
                    Some(ip) if ip.len() > mtu => self.out.too_big += 1,
                    Some(ip) => self.out.write(&q, ip, cx),
                },
                TunKind::Tap => {
                    let f = p.data();
                    if f.len() < 14 {
                        self.out.not_ip += 1;
                    } else if f.len() - 14 > mtu {
                        self.out.too_big += 1;
                    } else {
                        self.out.write(&q, f, cx);
                    }
                }
            }
        }
    }
}

/// Marks the IP header at `off` (destination annotation from IPv4);
/// false if there is no IPv4 or IPv6 header there.
fn annotate_ip(p: &mut Packet, off: usize) -> bool {
    let d = p.data();
    let Some(&b) = d.get(off) else {
        return false;
    };
    match b >> 4 {
        4 if d.len() >= off + 20 => {
            let dst = Ipv4Addr::new(d[off + 16], d[off + 17], d[off + 18], d[off + 19]);
            p.set_network_header(off);
            p.anno_mut().dst_ip = dst;
            true
        }
        6 if d.len() >= off + 40 => {
            p.set_network_header(off);
            true
        }
        _ => false,
    }
}

impl Element for HostDevice {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.take(cx);
    }

    /// Hot swap: the device stays open in the device table (its queues
    /// are taken again at `start`); the counters of the old element on
    /// the same device carry on.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<HostDevice>(old) else {
            return;
        };
        if old.key != self.key {
            return;
        }
        self.count = old.count;
        self.bytes = old.bytes;
        self.bad = old.bad;
        self.rx_too_big = old.rx_too_big;
        self.rx_errors = old.rx_errors;
        self.no_device = old.no_device;
        std::mem::swap(&mut self.out, &mut old.out);
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn task_on_every_worker(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.send(batch, cx);
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.taken {
            self.take(cx);
        }
        if self.queue.is_none() {
            return TaskResult::Done;
        }
        let mut worked = self.receive(cx);
        if self.input == Some(true) {
            let before = self.out.sent + self.out.drops();
            cx.pull_task(self.burst, |b, cx| self.send(b, cx));
            worked |= self.out.sent + self.out.drops() > before;
        }
        if worked {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("bytes", self.bytes);
        s.counter("bad", self.bad);
        if self.input.is_some() {
            s.counter("sent", self.out.sent);
            s.counter("sent_bytes", self.out.bytes);
            s.counter("drops", self.out.drops() + self.no_device);
            s.counter("not_ip", self.out.not_ip);
            s.counter("queue_full", self.out.queue_full);
            s.counter("no_device", self.no_device);
        }
        s.counter("too_big", self.rx_too_big + self.out.too_big);
        s.counter("errors", self.rx_errors + self.out.errors);
        if self.worker == 0 && self.queue.is_some() {
            if let Some(d) = tun::host_side_drops(&self.dev_name) {
                s.counter("host_drops", d);
            }
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "dev_name" => Some(self.dev_name.clone()),
            "packets" => Some(self.count.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("dev_name"), Handler::r("packets")];
        H
    }
}

/// ToHost: writes into a host device of the configuration, or records to
/// a capture, or drops and counts.
pub struct ToHost {
    key: String,
    ty: HostType,
    sink: Option<CaptureSink>,
    out: TxSide,
    dev: Option<(TunKind, u32, Arc<TunQueue>)>,
    /// The host interface's MAC (TAP, TYPE IP: the destination written).
    dev_mac: [u8; 6],
    taken: bool,
    no_device: u64,
}

impl ToHost {
    fn take(&mut self, cx: &mut Context<'_>) {
        self.taken = true;
        if self.sink.is_some() {
            return;
        }
        if let Some((dev, Some(q))) = tun::take(&self.key, cx.worker()) {
            if dev.kind == TunKind::Tap {
                if let Ok(i) = bricks_io::ifinfo::lookup(&dev.name) {
                    self.dev_mac = i.mac;
                }
            }
            self.dev = Some((dev.kind, dev.mtu, q));
        }
    }

    fn send_one(&mut self, p: &mut Packet, cx: &Context<'_>) {
        let Some((kind, mtu, q)) = &self.dev else {
            return;
        };
        let mtu = *mtu as usize;
        match (kind, self.ty) {
            (TunKind::Tap, HostType::Ether) => {
                let f = p.data();
                if f.len() < 14 {
                    self.out.not_ip += 1;
                } else if f.len() - 14 > mtu {
                    self.out.too_big += 1;
                } else {
                    self.out.write(q, f, cx);
                }
            }
            (TunKind::Tap, HostType::Ip) => {
                let Some(ip) = ip_packet(p) else {
                    self.out.not_ip += 1;
                    return;
                };
                if ip.len() > mtu {
                    self.out.too_big += 1;
                    return;
                }
                let ethertype = if ip[0] >> 4 == 4 { 0x0800u16 } else { 0x86dd };
                let skip = p.len() - ip.len();
                p.pull_front(skip);
                if p.push_front(14).is_err() {
                    self.out.errors += 1;
                    return;
                }
                let d = p.data_mut();
                d[..6].copy_from_slice(&self.dev_mac);
                // A locally administered source no host interface has.
                d[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
                d[12..14].copy_from_slice(&ethertype.to_be_bytes());
                self.out.write(q, p.data(), cx);
            }
            (TunKind::Tun, _) => {
                let ip = match self.ty {
                    // An Ethernet frame: the IP packet after its header.
                    HostType::Ether => match p.data().get(14..) {
                        Some(rest) if p.network_header_offset().is_none() => {
                            match rest.first().map(|b| b >> 4) {
                                Some(4 | 6) => Some(rest),
                                _ => None,
                            }
                        }
                        _ => ip_packet(p),
                    },
                    HostType::Ip => ip_packet(p),
                };
                match ip {
                    None => self.out.not_ip += 1,
                    Some(ip) if ip.len() > mtu => self.out.too_big += 1,
                    Some(ip) => self.out.write(q, ip, cx),
                }
            }
        }
    }
}

impl Element for ToHost {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.take(cx);
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if !self.taken {
            self.take(cx);
        }
        if let Some(s) = self.sink.as_mut() {
            s.write(batch, cx);
        } else if self.dev.is_some() {
            for mut p in batch.drain() {
                self.send_one(&mut p, cx);
            }
        } else {
            self.no_device += batch.len() as u64;
        }
        batch.clear();
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        if let Some(s) = self.sink.as_mut() {
            if cx.worker() == 0 || s.count > 0 {
                s.finish(cx);
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        let (recorded, rec_errors) = self.sink.as_ref().map_or((0, 0), |s| (s.count, s.errors));
        s.counter("count", recorded + self.out.sent);
        s.counter("bytes", self.out.bytes);
        s.counter("drops", self.no_device + rec_errors + self.out.drops());
        s.counter("too_big", self.out.too_big);
        s.counter("not_ip", self.out.not_ip);
        s.counter("queue_full", self.out.queue_full);
        s.counter("errors", self.out.errors);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "dev_name" => Some(self.key.clone()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("dev_name")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_config::Arg;
    use bricks_io::tun::DEFAULT_MTU;
    use bricks_runtime::testing::parse_args;

    fn args(text: &[&str]) -> Vec<Arg> {
        parse_args(&text.join(", ")).unwrap()
    }

    fn kernel(text: &[&str], tap: bool) -> Result<HostArgs, String> {
        let a = args(text);
        let mut args = Args::from_strs(&a);
        let r = read_kernel(&mut args, tap).map_err(|e| e.message)?;
        args.complete().map_err(|e| e.message)?;
        Ok(r)
    }

    #[test]
    fn kernel_tun_reads_clicks_arguments() {
        let a = kernel(&["10.9.0.1/24"], false).unwrap();
        assert_eq!(a.spec.kind, TunKind::Tun);
        assert_eq!(
            a.spec.addr,
            Some((Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(255, 255, 255, 0)))
        );
        assert_eq!(a.spec.key, "tun(10.9.0.1/24)");
        assert_eq!(a.spec.devname, None);
        assert_eq!(a.spec.mtu, DEFAULT_MTU);
        assert_eq!(a.burst, DEFAULT_BURST);
        assert_eq!(a.spec.gateway, None);

        let a = kernel(
            &[
                "10.9.0.1/255.255.0.0",
                "10.9.0.254",
                "DEVNAME br0",
                "MTU 1400",
                "BURST 8",
                "ETHER 02:00:00:00:00:01",
                "HEADROOM 28",
                "IGNORE_QUEUE_OVERFLOWS true",
            ],
            true,
        )
        .unwrap();
        assert_eq!(a.spec.kind, TunKind::Tap);
        assert_eq!(a.spec.key, "br0");
        assert_eq!(a.spec.devname.as_deref(), Some("br0"));
        assert_eq!(a.spec.gateway, Some(Ipv4Addr::new(10, 9, 0, 254)));
        assert_eq!(a.spec.mtu, 1400);
        assert_eq!(a.burst, 8);
        assert_eq!(a.spec.ether, Some([2, 0, 0, 0, 0, 1]));
        assert!(a.quiet_overflows);
        // TAP true makes a KernelTun a KernelTap; ETHER is ignored on TUN.
        assert_eq!(
            kernel(&["10.0.0.1/8", "TAP true"], false)
                .unwrap()
                .spec
                .kind,
            TunKind::Tap
        );
        assert_eq!(
            kernel(&["10.0.0.1/8", "ETHER 02:00:00:00:00:01"], false)
                .unwrap()
                .spec
                .ether,
            None
        );
        assert_eq!(
            kernel(&["10.0.0.1/8", "DEV_NAME old0"], false)
                .unwrap()
                .spec
                .key,
            "old0"
        );
    }

    #[test]
    fn kernel_tap_takes_an_ipv6_address_and_router_role() {
        let a = kernel(
            &["10.9.0.1/24", "ADDR6 2001:db8:1::1/64", "IP6_ROUTER true"],
            true,
        )
        .unwrap();
        assert_eq!(a.spec.addr6, Some(("2001:db8:1::1".parse().unwrap(), 64)));
        assert!(a.spec.ipv6_router);
        let a = kernel(&["10.9.0.1/24"], true).unwrap();
        assert_eq!((a.spec.addr6, a.spec.ipv6_router), (None, false));
        let err = |t: &[&str]| kernel(t, true).unwrap_err();
        assert!(err(&["10.9.0.1/24", "ADDR6 2001:db8::1"]).contains("ADDRESS/LENGTH"));
        assert!(err(&["10.9.0.1/24", "ADDR6 2001:db8::1/129"]).contains("ADDRESS/LENGTH"));
        for bad in ["::/64", "ff02::1/64", "::1/128", "2001:db8::1/0"] {
            assert!(err(&["10.9.0.1/24", &format!("ADDR6 {bad}")]).contains("not an address"));
        }
    }

    #[test]
    fn kernel_tun_refuses_what_cannot_work() {
        let err = |t: &[&str]| kernel(t, false).unwrap_err();
        assert!(err(&[]).contains("ADDR"), "{}", err(&[]));
        assert!(err(&["10.9.0.1/24", "10.8.0.1"]).contains("bad GATEWAY"));
        assert!(err(&["10.9.0.1/24", "BURST 0"]).contains("BURST"));
        assert!(err(&["10.9.0.1/24", "MTU 20"]).contains("68"));
        assert!(err(&["10.9.0.1/24", "MTU 2049"]).contains("2048"));
        assert!(kernel(&["10.9.0.1/24", "MTU 2048"], false).is_ok());
        assert!(kernel(&["10.9.0.1/24", "MTU 2048"], true)
            .unwrap_err()
            .contains("2034"));
        assert!(err(&["10.9.0.1/24", "HEADROOM 129"]).contains("128"));
        assert!(err(&["10.9.0.1/24", "DEVNAME a/b"]).contains("not a valid"));
        assert!(err(&["10.9.0.1/24", "DEVNAME waytoolonganame0"]).contains("15"));
        assert!(err(&["10.9.0.1/24", "DEV_PREFIX tun"]).contains("DEV_PREFIX"));
        // BURST above a batch is taken as a batch.
        assert_eq!(
            kernel(&["10.9.0.1/24", "BURST 1000"], false).unwrap().burst,
            MAX_BATCH
        );
    }

    #[test]
    fn from_host_reads_clicks_arguments() {
        let a = args(&[
            "fake0",
            "192.0.0.1/8",
            "GATEWAY 192.0.0.254",
            "ETHER 2:0:0:0:0:9",
        ]);
        let mut args = Args::from_strs(&a);
        let h = read_from_host(&mut args).unwrap();
        args.complete().unwrap();
        assert_eq!(h.spec.key, "fake0");
        assert_eq!(h.spec.kind, TunKind::Tap);
        assert_eq!(h.spec.gateway, Some(Ipv4Addr::new(192, 0, 0, 254)));
        assert_eq!(h.spec.ether, Some([2, 0, 0, 0, 0, 9]));
        // No DST: the address is left alone, and a GATEWAY cannot be checked.
        let a = args_of(&["fake0"]);
        let mut args = Args::from_strs(&a);
        assert_eq!(read_from_host(&mut args).unwrap().spec.addr, None);
        let a = args_of(&["fake0", "GATEWAY 10.0.0.1"]);
        let mut args = Args::from_strs(&a);
        assert!(read_from_host(&mut args).is_err());
    }

    fn args_of(text: &[&str]) -> Vec<Arg> {
        args(text)
    }

    #[test]
    fn ip_headers_are_found_and_annotated() {
        let mut ip = vec![
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2,
        ];
        let mut p = Packet::from_slice(&ip).unwrap();
        assert!(annotate_ip(&mut p, 0));
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 9, 0, 2));
        assert_eq!(ip_packet(&p), Some(&ip[..]));
        // An Ethernet header in front is left out once annotated.
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00]);
        f.extend(&ip);
        let mut p = Packet::from_slice(&f).unwrap();
        assert_eq!(ip_packet(&p), None);
        assert!(annotate_ip(&mut p, 14));
        assert_eq!(ip_packet(&p), Some(&ip[..]));
        // Not IP, or too short.
        ip[0] = 0x25;
        assert!(!annotate_ip(&mut Packet::from_slice(&ip).unwrap(), 0));
        assert!(!annotate_ip(
            &mut Packet::from_slice(&[0x45, 0]).unwrap(),
            0
        ));
        assert!(!annotate_ip(&mut Packet::from_slice(&[]).unwrap(), 0));
    }

    /// The devices table is one per process: the tests that use it take
    /// turns.
    static TABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn table_turn() -> std::sync::MutexGuard<'static, ()> {
        TABLE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An IPv4 UDP packet from 10.9.5.2:9 to 10.9.5.1:7000 carrying
    /// `payload`, with a correct header checksum (UDP checksum 0: none).
    fn udp_to_host(payload: &[u8]) -> Vec<u8> {
        let total = (28 + payload.len()) as u16;
        let mut p = vec![
            0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 10, 9, 5, 2, 10, 9, 5, 1,
        ];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        let sum: u32 = p
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        let sum = (sum & 0xffff) + (sum >> 16);
        let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
        p[10..12].copy_from_slice(&sum.to_be_bytes());
        p.extend([0, 9, 0x1b, 0x58]);
        p.extend(((8 + payload.len()) as u16).to_be_bytes());
        p.extend([0, 0]);
        p.extend(payload);
        p
    }

    /// KernelTun on a real TUN device in a namespace of its own: the
    /// host's datagram comes out of output 0 annotated, a datagram pushed
    /// in reaches the host's socket, and what cannot be written is counted
    /// by reason. Root only.
    #[test]
    fn kernel_tun_moves_packets_both_ways_and_counts_drops() {
        use bricks_netns::{in_namespace, skip_unless_root, Network};
        use bricks_runtime::testing::Harness;
        use std::time::Duration;
        if skip_unless_root("kernel_tun_moves_packets_both_ways_and_counts_drops").is_some() {
            return;
        }
        let _turn = table_turn();
        let mut net = Network::new(&Network::unique_prefix("et")).unwrap();
        let ns = net.add_namespace("h").unwrap();
        in_namespace(&ns, || {
            tun::reset();
            let mut h = Harness::push(
                &KERNEL_TUN,
                "10.9.5.1/24, DEVNAME et0, MTU 576, BURST 4",
                1,
                2,
            );
            let lines = tun::open_declared(1).unwrap();
            assert_eq!(
                lines,
                ["et0: tun device, 1 queue, mtu 576, host address 10.9.5.1/24"]
            );
            h.start();
            assert_eq!(h.read_handler("dev_name").unwrap(), "et0");
            let sock = std::net::UdpSocket::bind("10.9.5.1:7000").unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();

            // Host to router.
            sock.send_to(b"from the host", "10.9.5.2:9").unwrap();
            let mut got = Vec::new();
            for _ in 0..200 {
                h.run_task();
                got = h.take(0);
                if !got.is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(got.len(), 1, "nothing read from the device");
            let p = &got[0];
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 9, 5, 2));
            assert!(p.data().ends_with(b"from the host"));

            // Router to host: one good, one above the MTU, one not IP.
            let good = udp_to_host(b"from bricks");
            let big = udp_to_host(&[7; 600]);
            h.push_packets(
                0,
                [
                    Packet::from_slice(&good).unwrap(),
                    Packet::from_slice(&big).unwrap(),
                    Packet::from_slice(&[0x12; 40]).unwrap(),
                ],
            );
            let mut buf = [0u8; 64];
            let (n, from) = sock.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"from bricks");
            assert_eq!(from.to_string(), "10.9.5.2:9");
            let s = h.stats();
            assert_eq!(s.get("count"), Some(1));
            assert_eq!(s.get("sent"), Some(1));
            assert_eq!(s.get("sent_bytes"), Some(good.len() as u64));
            assert_eq!(s.get("too_big"), Some(1));
            assert_eq!(s.get("not_ip"), Some(1));
            assert_eq!(s.get("drops"), Some(2));
            assert_eq!(s.get("errors"), Some(0));
            drop(h);
            tun::reset();
        });
        net.delete();
    }

    /// Without an open device (the configuration is only checked, or the
    /// element is built outside a run) the source is done and what is
    /// pushed is counted as `no_device`.
    #[test]
    fn without_a_device_packets_are_counted_not_lost() {
        use bricks_runtime::testing::Harness;
        let _turn = table_turn();
        tun::reset();
        let mut h = Harness::push(&KERNEL_TUN, "10.9.6.1/24, DEVNAME nodev0", 1, 1);
        h.start();
        assert_eq!(h.run_task(), TaskResult::Done);
        h.push_packets(0, [Packet::from_slice(&udp_to_host(b"x")).unwrap()]);
        let s = h.stats();
        assert_eq!(s.get("no_device"), Some(1));
        assert_eq!(s.get("drops"), Some(1));
    }

    /// ToHost on a TUN device of a KernelTun: an Ethernet frame (TYPE
    /// ETHER) loses its header, an IP packet (TYPE IP) is written as it is;
    /// the host's socket gets both. Root only.
    #[test]
    fn to_host_writes_frames_and_packets_into_a_tun() {
        use bricks_netns::{in_namespace, skip_unless_root, Network};
        use bricks_runtime::testing::Harness;
        use std::time::Duration;
        if skip_unless_root("to_host_writes_frames_and_packets_into_a_tun").is_some() {
            return;
        }
        let _turn = table_turn();
        let mut net = Network::new(&Network::unique_prefix("eh")).unwrap();
        let ns = net.add_namespace("h").unwrap();
        in_namespace(&ns, || {
            tun::reset();
            let _tun = Harness::push(&KERNEL_TUN, "10.9.5.1/24, DEVNAME eh0", 0, 1);
            let mut ether = Harness::push(&TO_HOST, "eh0", 1, 0);
            let mut ip = Harness::push(&TO_HOST, "eh0, TYPE IP", 1, 0);
            tun::open_declared(1).unwrap();
            ether.start();
            ip.start();
            let sock = std::net::UdpSocket::bind("10.9.5.1:7000").unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut frame = vec![0u8; 12];
            frame.extend([0x08, 0x00]);
            frame.extend(udp_to_host(b"a frame"));
            ether.push_packets(0, [Packet::from_slice(&frame).unwrap()]);
            ip.push_packets(0, [Packet::from_slice(&udp_to_host(b"a packet")).unwrap()]);
            let mut buf = [0u8; 64];
            let n = sock.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"a frame");
            let n = sock.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"a packet");
            for h in [&ether, &ip] {
                let s = h.stats();
                assert_eq!(s.get("count"), Some(1));
                assert_eq!(s.get("drops"), Some(0));
            }
            // Not IP: counted.
            ip.push_packets(0, [Packet::from_slice(&[0u8; 30]).unwrap()]);
            assert_eq!(ip.stats().get("not_ip"), Some(1));
            drop((ether, ip));
            tun::reset();
        });
        net.delete();
    }
}
