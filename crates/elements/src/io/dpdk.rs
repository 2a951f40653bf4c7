//! FastClick's DPDK element names (`FromDPDKDevice`, `ToDPDKDevice`,
//! `DPDKInfo`, `EnsureDPDKBuffer`) and its `TSCClock`, so that FastClick
//! configurations run on bricks unchanged.
//!
//! bricks drives kernel interfaces (AF_XDP, AF_PACKET) and capture files,
//! not DPDK poll-mode drivers: PORT names the interface (or, as a PCI
//! address, the interface the kernel gives that card), and the element is
//! bricks' own `FromDevice` or `ToDevice` on it. FastClick's tuning
//! keywords for DPDK's rings, offloads and thread placement are accepted
//! and change nothing; each is listed in the manual.

use super::device::{make_from_device, make_to_device, read_device_named, DEVICE_KEYWORDS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};
use std::path::Path;

/// The `FromDPDKDevice` class.
pub static FROM_DPDK_DEVICE: ElementClass = ElementClass {
    name: "FromDPDKDevice",
    ports: "0/1",
    processing: "/h",
    manual: &FROM_MANUAL,
    make: make_from,
};

/// The `ToDPDKDevice` class.
pub static TO_DPDK_DEVICE: ElementClass = ElementClass {
    name: "ToDPDKDevice",
    ports: "1/0",
    processing: "a/",
    manual: &TO_MANUAL,
    make: make_to,
};

/// The `DPDKInfo` class.
pub static DPDK_INFO: ElementClass = ElementClass {
    name: "DPDKInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &INFO_MANUAL,
    make: make_info,
};

/// The `EnsureDPDKBuffer` class.
pub static ENSURE_DPDK_BUFFER: ElementClass = ElementClass {
    name: "EnsureDPDKBuffer",
    ports: "1/1",
    processing: "a/a",
    manual: &ENSURE_MANUAL,
    make: make_ensure,
};

/// The `TSCClock` class.
pub static TSC_CLOCK: ElementClass = ElementClass {
    name: "TSCClock",
    ports: "0/0",
    processing: "a/a",
    manual: &TSC_MANUAL,
    make: make_tsc,
};

/// FastClick's receive keywords that tune DPDK and mean nothing here.
const FROM_IGNORED: &[&str] = &[
    "N_QUEUES",
    "MAXTHREADS",
    "THREADOFFSET",
    "VERBOSE",
    "ACTIVE",
    "NUMA",
    "NDESC",
    "MAC",
    "MTU",
    "MODE",
    "FLOW_ISOLATE",
    "FLOW_RULES_FILE",
    "VF_POOLS",
    "VF_VLAN",
    "MINQUEUES",
    "MAXQUEUES",
    "RX_INTR",
    "MAX_RSS",
    "RETA_SIZE",
    "TIMESTAMP",
    "RSS_AGGREGATE",
    "PAINT_QUEUE",
    "CLEAR",
    "PAUSE",
    "IPCO",
    "TCO",
    "UCO",
    "POWER_MGMT",
    "ALLOW_NONEXISTENT",
    "LOCK",
    "SCALE",
    "NUMA_NODE",
];

/// FastClick's transmit keywords that tune DPDK and mean nothing here.
const TO_IGNORED: &[&str] = &[
    "N_QUEUES",
    "MAXTHREADS",
    "THREADOFFSET",
    "VERBOSE",
    "ACTIVE",
    "NUMA",
    "NDESC",
    "IQUEUE",
    "BLOCKING",
    "TIMEOUT",
    "MAXQUEUES",
    "ALLOC",
    "TSO",
    "IPCO",
    "TCO",
    "UCO",
    "CONGESTION_WARNING",
    "ALLOW_NONEXISTENT",
    "LOCK",
];

const PORT: Keyword = Keyword {
    name: "PORT",
    ty: "interface name, PCI address or port number",
    default: None,
    doc: "the interface: its name; a PCI address (0000:03:00.0) for the interface \
          the kernel gives that card; a DPDK port number is taken as a name, which \
          `--device 0=pcap:IN,OUT` can bind to captures",
};

static FROM_KEYWORDS: [Keyword; 8] = [
    PORT,
    DEVICE_KEYWORDS[1],
    DEVICE_KEYWORDS[2],
    DEVICE_KEYWORDS[3],
    DEVICE_KEYWORDS[4],
    DEVICE_KEYWORDS[5],
    DEVICE_KEYWORDS[6],
    Keyword {
        name: "N_QUEUES, MAXTHREADS, THREADOFFSET, VERBOSE, ...",
        ty: "any",
        default: None,
        doc: "FastClick's DPDK tuning (N_QUEUES, MAXTHREADS, THREADOFFSET, VERBOSE, \
              ACTIVE, NUMA, NDESC, MAC, MTU, MODE, FLOW_ISOLATE, FLOW_RULES_FILE, \
              VF_POOLS, VF_VLAN, MINQUEUES, MAXQUEUES, RX_INTR, MAX_RSS, RETA_SIZE, \
              TIMESTAMP, RSS_AGGREGATE, PAINT_QUEUE, CLEAR, PAUSE, IPCO, TCO, UCO, \
              POWER_MGMT): accepted, no effect; bricks owns every queue of the \
              interface and spreads them over its workers (`bricks run --threads`)",
    },
];

static TO_KEYWORDS: [Keyword; 3] = [
    PORT,
    DEVICE_KEYWORDS[1],
    Keyword {
        name: "IQUEUE, BLOCKING, TIMEOUT, NDESC, ...",
        ty: "any",
        default: None,
        doc: "FastClick's DPDK tuning (IQUEUE, BLOCKING, TIMEOUT, NDESC, MAXQUEUES, \
              ALLOC, TSO, IPCO, TCO, UCO, N_QUEUES, MAXTHREADS, THREADOFFSET, VERBOSE, \
              ACTIVE, NUMA): accepted, no effect; a full ring drops and counts, \
              the worker never blocks",
    },
];

static FROM_MANUAL: Manual = Manual {
    summary: "receives packets from an interface (FastClick's DPDK name for FromDevice)",
    synopsis: "FromDPDKDevice(PORT [, KEYWORDS])",
    description: "FastClick's receive element, run as bricks' FromDevice on the kernel \
        interface PORT names: BURST, PROMISC, QUEUE, BACKEND and XDP_MODE as FromDevice \
        has them, FastClick's DPDK tuning keywords accepted without effect. bricks does \
        not drive DPDK poll-mode drivers; AF_XDP in native zero-copy mode is its \
        fastest path.",
    ports: "no inputs; one push output",
    keywords: &FROM_KEYWORDS,
    counters: &[("count", "packets received"), ("...", "as FromDevice")],
    example: "FromDPDKDevice(eth0, BURST 32, N_QUEUES -1) -> Discard;",
    see_also: &["FromDevice", "ToDPDKDevice"],
};

static TO_MANUAL: Manual = Manual {
    summary: "sends packets out of an interface (FastClick's DPDK name for ToDevice)",
    synopsis: "ToDPDKDevice(PORT [, KEYWORDS])",
    description: "FastClick's transmit element, run as bricks' ToDevice on the kernel \
        interface PORT names (BURST as ToDevice has it; FastClick's DPDK tuning keywords \
        accepted without effect). FastClick's internal queue (IQUEUE) is the transmit \
        ring here: put a Queue in front to hold more.",
    ports: "one input, pull or push; no outputs",
    keywords: &TO_KEYWORDS,
    counters: &[("count", "packets sent"), ("...", "as ToDevice")],
    example: "FromDPDKDevice(eth0) -> Queue -> ToDPDKDevice(eth0);",
    see_also: &["ToDevice", "FromDPDKDevice"],
};

static INFO_MANUAL: Manual = Manual {
    summary: "DPDK's buffer pool settings (accepted; bricks has no DPDK pool)",
    synopsis: "DPDKInfo([NB_MBUF, KEYWORDS])",
    description: "FastClick's information element for DPDK's packet buffer pools \
        (NB_MBUF, MBUF_SIZE, MBUF_CACHE_SIZE, RX_PTHRESH and so on). bricks' packets \
        live in its own per-worker pools, so every argument is accepted and changes \
        nothing.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "DPDKInfo(NB_MBUF 65536);",
    see_also: &["FromDPDKDevice"],
};

static ENSURE_MANUAL: Manual = Manual {
    summary: "passes packets on (every bricks packet is in a device-ready buffer)",
    synopsis: "EnsureDPDKBuffer([KEYWORDS])",
    description: "FastClick copies a packet into a DPDK buffer when it is not in one. \
        Every bricks packet already sits in a buffer its devices can send, so packets \
        pass unchanged; the arguments are accepted and change nothing.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> EnsureDPDKBuffer -> Discard;",
    see_also: &["ToDPDKDevice"],
};

static TSC_MANUAL: Manual = Manual {
    summary: "a cycle-counter clock (accepted; bricks' clock is already cheap)",
    synopsis: "TSCClock([KEYWORDS])",
    description: "FastClick's user-level clock read from the time-stamp counter. bricks \
        reads the system's monotonic clock through the vDSO, once per batch, so the \
        element is accepted (INSTALL, NOWAIT, VERBOSE, ...) and changes nothing.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "TSCClock(NOWAIT true);",
    see_also: &[],
};

/// The interface PORT names: a PCI address is the kernel interface of that
/// card, when there is exactly one; anything else is a name.
fn interface(port: &str) -> Result<String, ArgError> {
    let looks_pci = port.len() >= 7
        && port.contains(':')
        && port.contains('.')
        && port
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    if !looks_pci {
        return Ok(port.to_string());
    }
    let full = if port.matches(':').count() == 1 {
        format!("0000:{port}")
    } else {
        port.to_string()
    };
    let dir = Path::new("/sys/bus/pci/devices").join(&full).join("net");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ArgError::new(format!(
            "PORT {port}: no kernel interface for that PCI device (bricks drives kernel \
             interfaces, not DPDK; bind the card to its kernel driver)"
        ))),
        many => Err(ArgError::new(format!(
            "PORT {port}: that PCI device has several interfaces ({}); name one",
            many.join(", ")
        ))),
    }
}

fn skip(args: &mut Args<'_>, keys: &'static [&'static str]) -> Result<(), ArgError> {
    for &k in keys {
        let _: Vec<String> = args.read_all(k)?;
    }
    Ok(())
}

fn make_from(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let port: String = args.read_mp("PORT")?;
    let name = interface(port.trim())?;
    skip(args, FROM_IGNORED)?;
    let d = read_device_named(args, name)?;
    make_from_device(d, ports)
}

fn make_to(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let port: String = args.read_mp("PORT")?;
    let name = interface(port.trim())?;
    skip(args, TO_IGNORED)?;
    let d = read_device_named(args, name)?;
    make_to_device(d, args, ports)
}

/// Takes every argument: the information elements change nothing.
fn take_all(args: &mut Args<'_>) {
    let _ = args.rest();
}

fn make_info(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    take_all(args);
    Ok(Box::new(Nothing))
}

fn make_tsc(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    take_all(args);
    Ok(Box::new(Nothing))
}

fn make_ensure(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    take_all(args);
    Ok(Box::new(PassOn))
}

/// An information element: no ports, no work.
struct Nothing;

impl Element for Nothing {}

/// Passes packets on unchanged.
struct PassOn;

impl Element for PassOn {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull(0, out, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_an_interface() {
        assert_eq!(interface("eth0").unwrap(), "eth0");
        assert_eq!(interface("0").unwrap(), "0");
        // A PCI address with no such card: a clear error, not a name.
        let e = interface("0000:ff:1f.7").unwrap_err();
        assert!(e.message.contains("PCI"), "{}", e.message);
    }

    #[test]
    fn fastclick_keywords_are_accepted() {
        let parsed = bricks_runtime::testing::parse_args(
            "eth0, VERBOSE 99, RSS_AGGREGATE 1, N_QUEUES -1, PROMISC true, BURST 16",
        )
        .unwrap();
        let mut args = Args::new(&parsed, None);
        let port: String = args.read_mp("PORT").unwrap();
        skip(&mut args, FROM_IGNORED).unwrap();
        let d = read_device_named(&mut args, port).unwrap();
        args.complete().unwrap();
        assert_eq!(d.name, "eth0");
        assert_eq!(d.burst, Some(16));
        assert!(d.promisc);
    }
}
