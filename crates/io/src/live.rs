//! The live interfaces of a running router, and who owns which queue.
//!
//! Device elements declare the interfaces a configuration names
//! ([`declare`]); the runner opens them all before any worker starts
//! ([`open_declared`]), choosing a backend per interface and assigning
//! every receive queue and every transmit queue to exactly one worker
//! (RouteBricks §4.2: one core per queue, so no queue is ever locked).
//! Workers then take what they were assigned ([`take_rx`], [`take_tx`]);
//! a queue can be taken once only, and [`ownership`] lists who took what.
//!
//! Backends: AF_XDP where it works (the redirect program is attached by
//! bricks), AF_PACKET with TPACKET_V3 rings and fanout otherwise. `Auto`
//! tries AF_XDP first and says why it fell back.
//!
//! In the per-core spread (the default) each worker reads the queues it
//! owns. In `pipeline` and `serial` spreads a dispatcher thread owns every
//! receive queue and hands packets to the workers through rings (see
//! [`crate::dispatch`]); transmit queues stay with the workers.

use crate::afpacket::{self, Fanout, PacketConfig};
use crate::dispatch::{Dispatcher, Mode};
use crate::ifinfo;
use crate::steer::Steering;
use crate::xdp::{self, XdpConfig, XdpMode, ZeroCopy};
use crate::{DeviceError, RxQueue, TxQueue};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Which kernel interface serves a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// AF_XDP if it can be set up, AF_PACKET otherwise.
    #[default]
    Auto,
    /// AF_XDP only.
    Xdp,
    /// AF_PACKET only.
    Packet,
}

impl Backend {
    /// The BACKEND keyword's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Xdp => "xdp",
            Backend::Packet => "packet",
        }
    }
}

impl core::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Backend, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "xdp" | "af_xdp" => Ok(Backend::Xdp),
            "packet" | "af_packet" => Ok(Backend::Packet),
            _ => Err(format!(
                "unknown backend `{s}` (expected auto, xdp or packet)"
            )),
        }
    }
}

/// How received packets reach the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spread {
    /// Each worker reads the receive queues it owns (run to completion).
    #[default]
    PerCore,
    /// One dispatcher thread reads every queue and hands whole batches to
    /// workers (RouteBricks' pipeline, Fig. 6).
    Pipeline,
    /// One dispatcher thread reads every queue and steers each packet to a
    /// worker in software (the NIC paper's serial NIC).
    Serial,
}

impl core::str::FromStr for Spread {
    type Err = String;
    fn from_str(s: &str) -> Result<Spread, String> {
        match s {
            "per-core" | "percore" | "parallel" => Ok(Spread::PerCore),
            "pipeline" => Ok(Spread::Pipeline),
            "serial" => Ok(Spread::Serial),
            _ => Err(format!(
                "unknown mode `{s}` (expected per-core, pipeline or serial)"
            )),
        }
    }
}

/// What a configuration asks of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    /// The interface name.
    pub name: String,
    /// The backend asked for.
    pub backend: Backend,
    /// One queue only (`QUEUE n`), or all of them.
    pub queue: Option<u32>,
    /// XDP attach mode.
    pub xdp_mode: XdpMode,
    /// XDP zero-copy.
    pub zero_copy: ZeroCopy,
    /// The XDP fast path to run on this interface (made for it), in place
    /// of the plain steering program. Needs AF_XDP: `Backend::Packet` is
    /// refused, and `Backend::Auto` does not fall back to AF_PACKET.
    pub fast_path: Option<crate::xdp::FastPath>,
    /// AF_XDP busy polling, microseconds a poll (0: off); see
    /// [`crate::xdp::XdpConfig::busy_poll_us`].
    pub busy_poll_us: u32,
}

impl DeviceSpec {
    /// All queues, backend chosen automatically.
    pub fn new(name: &str) -> DeviceSpec {
        DeviceSpec {
            name: name.to_string(),
            backend: Backend::Auto,
            queue: None,
            xdp_mode: XdpMode::Auto,
            zero_copy: ZeroCopy::Auto,
            fast_path: None,
            busy_poll_us: 0,
        }
    }
}

/// Who took one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// Interface.
    pub device: String,
    /// `rx` or `tx`.
    pub direction: &'static str,
    /// Queue number.
    pub queue: u32,
    /// Backend serving it.
    pub backend: &'static str,
    /// The worker that took it.
    pub worker: usize,
}

/// How one interface was opened, for the run's first lines.
#[derive(Debug, Clone)]
pub struct OpenReport {
    /// Interface.
    pub device: String,
    /// Backend and mode (`af_xdp native copy`, `af_packet fanout qm`).
    pub backend: String,
    /// Receive queue → worker (or `None`: the dispatcher).
    pub rx: Vec<(u32, Option<usize>)>,
    /// Why `Auto` did not get AF_XDP, or another note.
    pub note: Option<String>,
}

impl core::fmt::Display for OpenReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}, rx", self.device, self.backend)?;
        for (q, w) in &self.rx {
            match w {
                Some(w) => write!(f, " q{q}->w{w}")?,
                None => write!(f, " q{q}->dispatcher")?,
            }
        }
        if let Some(n) = &self.note {
            write!(f, " ({n})")?;
        }
        Ok(())
    }
}

struct OpenDevice {
    rx: Vec<(usize, Box<dyn RxQueue>)>,
    tx: Vec<(usize, Box<dyn TxQueue>)>,
}

#[derive(Default)]
struct Table {
    specs: Vec<DeviceSpec>,
    open: BTreeMap<String, OpenDevice>,
    owners: Vec<Ownership>,
    /// How the running router was started ([`started`]), for
    /// interfaces opened by a hot swap.
    run: Option<(usize, Spread)>,
}

fn table() -> MutexGuard<'static, Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Records that the configuration uses interface `spec.name`. Several
/// elements may name the same interface; their settings must agree where
/// both set one.
pub fn declare(spec: DeviceSpec) -> Result<(), String> {
    let mut t = table();
    match t.specs.iter_mut().find(|s| s.name == spec.name) {
        None => t.specs.push(spec),
        Some(s) => {
            if s.backend == Backend::Auto {
                s.backend = spec.backend;
            } else if spec.backend != Backend::Auto && spec.backend != s.backend {
                return Err(format!(
                    "`{}` is given BACKEND {} and {}; one interface has one backend",
                    spec.name,
                    s.backend.as_str(),
                    spec.backend.as_str()
                ));
            }
            if s.queue.is_none() {
                s.queue = spec.queue;
            } else if spec.queue.is_some() && spec.queue != s.queue {
                return Err(format!("`{}` is given two different QUEUEs", spec.name));
            }
            if s.xdp_mode == XdpMode::Auto {
                s.xdp_mode = spec.xdp_mode;
            }
            if s.zero_copy == ZeroCopy::Auto {
                s.zero_copy = spec.zero_copy;
            }
            if s.busy_poll_us == 0 {
                s.busy_poll_us = spec.busy_poll_us;
            } else if spec.busy_poll_us != 0 && spec.busy_poll_us != s.busy_poll_us {
                return Err(format!(
                    "`{}` is given BUSY_POLL {}us and {}us; one interface polls one way",
                    spec.name, s.busy_poll_us, spec.busy_poll_us
                ));
            }
            match (&s.fast_path, spec.fast_path) {
                (None, fp) => s.fast_path = fp,
                (Some(a), Some(b)) if *a != b => {
                    return Err(format!(
                        "`{}` is given two different fast paths; one interface has one",
                        spec.name
                    ))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Gives declared interface `name` the XDP fast path `fp` (made from the
/// configuration by the runner before the interfaces open).
pub fn set_fast_path(name: &str, fp: crate::xdp::FastPath) -> Result<(), String> {
    let mut t = table();
    let s = t
        .specs
        .iter_mut()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("`{name}` is not an interface of the configuration"))?;
    if s.backend == Backend::Packet {
        return Err(format!(
            "`{name}`: the XDP fast path needs AF_XDP, and the interface has BACKEND packet"
        ));
    }
    s.fast_path = Some(fp);
    Ok(())
}

/// The XDP fast path of interface `name`, if it has one.
pub fn fast_path(name: &str) -> Option<crate::xdp::FastPath> {
    table()
        .specs
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.fast_path.clone())
}

/// Whether any declared interface has an XDP fast path.
pub fn any_fast_path() -> bool {
    table().specs.iter().any(|s| s.fast_path.is_some())
}

/// The interfaces declared so far.
pub fn declared() -> Vec<DeviceSpec> {
    table().specs.clone()
}

/// Records how many workers the router runs and how received packets
/// reach them, before any interface is opened: what [`open_more`] needs.
pub fn started(workers: usize, spread: Spread) {
    table().run = Some((workers.max(1), spread));
}

/// Opens the interfaces among `names` that are declared but not open yet,
/// for the workers of the running router (a hot swap to a configuration
/// that names an interface the router has not opened). Each is opened as
/// [`open_declared`] opens it: its receive and transmit queues are
/// assigned to the workers, whose new device elements take them when they
/// start. Only with the per-core spread: in the others a dispatcher
/// thread, already running, owns every receive queue. On an error nothing
/// stays open that this call opened.
pub fn open_more(names: &[String]) -> Result<Vec<OpenReport>, String> {
    let (run, specs) = {
        let t = table();
        let specs: Vec<DeviceSpec> = t
            .specs
            .iter()
            .filter(|s| names.contains(&s.name) && !t.open.contains_key(&s.name))
            .cloned()
            .collect();
        (t.run, specs)
    };
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let which = specs
        .iter()
        .map(|s| format!("`{}`", s.name))
        .collect::<Vec<_>>()
        .join(", ");
    let Some((workers, spread)) = run else {
        return Err(format!("{which}: the router has not started its devices"));
    };
    if spread != Spread::PerCore {
        return Err(format!(
            "{which}: not open in the running router, and with --mode {} a dispatcher \
             thread owns every receive queue, so a hot swap cannot add one; restart the \
             router to add an interface",
            match spread {
                Spread::Pipeline => "pipeline",
                _ => "serial",
            }
        ));
    }
    let mut opened = Vec::new();
    let mut reports = Vec::new();
    for spec in &specs {
        match open_one(spec, workers) {
            Ok((dev, report)) => {
                table().open.insert(spec.name.clone(), dev);
                opened.push(spec.name.clone());
                reports.push(report);
            }
            Err(e) => {
                close(&opened);
                return Err(format!("opening `{}`: {e}", spec.name));
            }
        }
    }
    Ok(reports)
}

/// Closes interfaces opened by [`open_more`] whose queues no worker
/// took (the hot swap that wanted them failed).
pub fn close(names: &[String]) {
    let mut t = table();
    for n in names {
        t.open.remove(n);
    }
}

/// Opens every declared interface for `workers` workers. With a
/// `Pipeline` or `Serial` spread, returns the dispatcher that owns the
/// receive queues; run it on a thread of its own.
pub fn open_declared(
    workers: usize,
    spread: Spread,
    steering: Arc<Steering>,
) -> Result<(Vec<OpenReport>, Option<Dispatcher>), DeviceError> {
    let workers = workers.max(1);
    started(workers, spread);
    let specs = declared();
    let mut reports = Vec::new();
    let mut dispatcher = match spread {
        Spread::PerCore => None,
        Spread::Pipeline => Some(Dispatcher::new(Mode::Pipeline, workers, steering, 4096)),
        Spread::Serial => Some(Dispatcher::new(Mode::Serial, workers, steering, 4096)),
    };
    for spec in &specs {
        let (mut dev, mut report) = open_one(spec, workers)?;
        if let Some(d) = dispatcher.as_mut() {
            let queues: Vec<Box<dyn RxQueue>> = dev.rx.drain(..).map(|(_, q)| q).collect();
            for (_, w) in report.rx.iter_mut() {
                *w = None;
            }
            for (w, ring) in d.add_device(&spec.name, queues).into_iter().enumerate() {
                dev.rx.push((w, Box::new(ring)));
            }
        }
        table().open.insert(spec.name.clone(), dev);
        reports.push(report);
    }
    Ok((reports, dispatcher))
}

fn open_one(spec: &DeviceSpec, workers: usize) -> Result<(OpenDevice, OpenReport), DeviceError> {
    let info = ifinfo::lookup(&spec.name).map_err(|e| DeviceError::Io(e.to_string()))?;
    // An Ethernet address names its interface (Click's kernel devices):
    // the sockets open that interface, the table keeps the configured name.
    let resolved;
    let spec = if info.name == spec.name {
        spec
    } else {
        resolved = DeviceSpec {
            name: info.name.clone(),
            ..spec.clone()
        };
        &resolved
    };
    match spec.backend {
        Backend::Xdp => open_xdp(spec, &info, workers),
        Backend::Packet if spec.fast_path.is_some() => Err(DeviceError::Io(format!(
            "{}: the XDP fast path needs AF_XDP, and BACKEND packet was asked for; \
             use BACKEND xdp (or auto), or run without the fast path",
            spec.name
        ))),
        Backend::Packet => open_packet(spec, &info, workers, None),
        Backend::Auto => match open_xdp(spec, &info, workers) {
            Ok(r) => Ok(r),
            // AF_PACKET cannot bind one queue: AF_XDP's reason is the one.
            Err(e) if spec.queue.is_some() => Err(e),
            // Nor can it run the fast path: falling back would quietly
            // send every packet through user space.
            Err(e) if spec.fast_path.is_some() => Err(DeviceError::Io(format!(
                "{e} (the XDP fast path needs AF_XDP: AF_PACKET is not tried)"
            ))),
            Err(e) => open_packet(
                spec,
                &info,
                workers,
                Some(format!("AF_XDP unavailable: {e}; using AF_PACKET")),
            ),
        },
    }
}

fn open_xdp(
    spec: &DeviceSpec,
    info: &ifinfo::IfInfo,
    workers: usize,
) -> Result<(OpenDevice, OpenReport), DeviceError> {
    let cfg = XdpConfig {
        mode: spec.xdp_mode,
        zero_copy: spec.zero_copy,
        fast_path: spec.fast_path.clone(),
        busy_poll_us: spec.busy_poll_us,
        ..XdpConfig::default()
    };
    let queues: Vec<u32> = match spec.queue {
        Some(q) if q >= info.rx_queues => {
            return Err(DeviceError::Io(format!(
                "{}: QUEUE {q} does not exist (the interface has {} receive queues)",
                spec.name, info.rx_queues
            )))
        }
        Some(q) => vec![q],
        None => (0..info.rx_queues).collect(),
    };
    let mut dev = OpenDevice {
        rx: Vec::new(),
        tx: Vec::new(),
    };
    let mut report = OpenReport {
        device: spec.name.clone(),
        backend: String::new(),
        rx: Vec::new(),
        note: None,
    };
    let mut tx_owner = vec![false; workers];
    for (i, &q) in queues.iter().enumerate() {
        let (rx, tx) = xdp::open_queue(&spec.name, q, &cfg)?;
        if report.backend.is_empty() {
            report.backend = format!("af_xdp {}", rx.mode());
            if spec.fast_path.is_some() {
                report.backend.push_str(" with the XDP fast path");
            }
            let us = rx.busy_poll_us();
            if us > 0 {
                report.backend.push_str(&format!(", busy polling {us}us"));
            }
            report.note = rx.fallback_reason().map(str::to_string);
        }
        let w = i % workers;
        report.rx.push((q, Some(w)));
        dev.rx.push((w, Box::new(rx)));
        // A worker sends on the first queue it owns; the transmit halves
        // of its other queues stay idle.
        if !tx_owner[w] {
            tx_owner[w] = true;
            dev.tx.push((w, Box::new(tx)));
        }
    }
    // Workers with no queue of their own (more workers than queues) send
    // through an AF_PACKET socket each: a transmit queue is never shared.
    let missing: Vec<usize> = (0..workers).filter(|&w| !tx_owner[w]).collect();
    if !missing.is_empty() {
        let socks = afpacket::open(&spec.name, missing.len() as u32, &PacketConfig::default())?;
        for (w, (_rx, tx)) in missing.into_iter().zip(socks) {
            dev.tx.push((w, Box::new(tx)));
        }
    }
    Ok((dev, report))
}

fn open_packet(
    spec: &DeviceSpec,
    info: &ifinfo::IfInfo,
    workers: usize,
    note: Option<String>,
) -> Result<(OpenDevice, OpenReport), DeviceError> {
    if let Some(q) = spec.queue {
        return Err(DeviceError::Io(format!(
            "{}: QUEUE {q} needs AF_XDP (AF_PACKET cannot bind one queue); \
             use BACKEND xdp or leave QUEUE out",
            spec.name
        )));
    }
    // With as many sockets as workers, fanout by queue mapping keeps each
    // hardware queue on one worker; a single-queue interface is split by
    // the kernel's flow hash instead.
    let fanout = if info.rx_queues > 1 {
        Fanout::QueueMapping
    } else {
        Fanout::Hash
    };
    let cfg = PacketConfig {
        fanout,
        ..PacketConfig::default()
    };
    let socks = afpacket::open(&spec.name, workers as u32, &cfg)?;
    let mut dev = OpenDevice {
        rx: Vec::new(),
        tx: Vec::new(),
    };
    let mut report = OpenReport {
        device: spec.name.clone(),
        backend: format!(
            "af_packet tpacket_v3{}",
            if workers > 1 {
                format!(
                    " fanout {}",
                    match fanout {
                        crate::afpacket::Fanout::Hash => "by flow hash",
                        crate::afpacket::Fanout::QueueMapping => "by receive queue",
                        crate::afpacket::Fanout::Cpu => "by cpu",
                        crate::afpacket::Fanout::RoundRobin => "round-robin",
                    }
                )
            } else {
                String::new()
            }
        ),
        rx: Vec::new(),
        note,
    };
    for (w, (rx, tx)) in socks.into_iter().enumerate() {
        report.rx.push((w as u32, Some(w)));
        dev.rx.push((w, Box::new(rx)));
        dev.tx.push((w, Box::new(tx)));
    }
    Ok((dev, report))
}

/// Takes the receive queues assigned to `worker` on interface `name`
/// (none if it was not opened or has nothing for this worker). Each queue
/// is handed out once.
pub fn take_rx(name: &str, worker: usize) -> Vec<Box<dyn RxQueue>> {
    let mut t = table();
    let Table { open, owners, .. } = &mut *t;
    let Some(dev) = open.get_mut(name) else {
        return Vec::new();
    };
    let (mine, rest): (Vec<_>, Vec<_>) = dev.rx.drain(..).partition(|(w, _)| *w == worker);
    dev.rx = rest;
    mine.into_iter()
        .map(|(_, q)| {
            record(owners, name, "rx", q.queue(), q.backend(), worker);
            q
        })
        .collect()
}

/// Takes the transmit queue assigned to `worker` on interface `name`.
pub fn take_tx(name: &str, worker: usize) -> Option<Box<dyn TxQueue>> {
    let mut t = table();
    let Table { open, owners, .. } = &mut *t;
    let dev = open.get_mut(name)?;
    let i = dev.tx.iter().position(|(w, _)| *w == worker)?;
    let (_, q) = dev.tx.swap_remove(i);
    record(owners, name, "tx", q.queue(), q.backend(), worker);
    Some(q)
}

/// Gives back receive queues taken by `worker` on interface `name`, still
/// open (a hot swap: the element that took them is replaced, and its
/// successor takes them with [`take_rx`]). Frames that arrive meanwhile
/// wait in the queues' rings.
pub fn give_back_rx(name: &str, worker: usize, queues: Vec<Box<dyn RxQueue>>) {
    if queues.is_empty() {
        return;
    }
    let mut t = table();
    let Table { open, owners, .. } = &mut *t;
    let dev = open.entry(name.to_string()).or_insert_with(|| OpenDevice {
        rx: Vec::new(),
        tx: Vec::new(),
    });
    for q in queues {
        forget(owners, name, "rx", q.queue(), q.backend());
        dev.rx.push((worker, q));
    }
}

/// Gives back the transmit queue `worker` took on interface `name` (see
/// [`give_back_rx`]).
pub fn give_back_tx(name: &str, worker: usize, queue: Box<dyn TxQueue>) {
    let mut t = table();
    let Table { open, owners, .. } = &mut *t;
    let dev = open.entry(name.to_string()).or_insert_with(|| OpenDevice {
        rx: Vec::new(),
        tx: Vec::new(),
    });
    forget(owners, name, "tx", queue.queue(), queue.backend());
    dev.tx.push((worker, queue));
}

/// Whether interface `name` is open (by [`open_declared`] or
/// [`open_more`]).
pub fn is_open(name: &str) -> bool {
    table().open.contains_key(name)
}

fn forget(
    owners: &mut Vec<Ownership>,
    device: &str,
    direction: &'static str,
    queue: u32,
    backend: &'static str,
) {
    owners.retain(|o| {
        !(o.device == device
            && o.direction == direction
            && o.queue == queue
            && o.backend == backend)
    });
}

fn record(
    owners: &mut Vec<Ownership>,
    device: &str,
    direction: &'static str,
    queue: u32,
    backend: &'static str,
    worker: usize,
) {
    // The invariant the whole design rests on: a queue has one owner.
    // Rings (`backend == "ring"`) are per worker by construction.
    assert!(
        !owners.iter().any(|o| o.device == device
            && o.direction == direction
            && o.queue == queue
            && o.backend == backend),
        "{device} {direction} queue {queue} ({backend}) taken twice"
    );
    owners.push(Ownership {
        device: device.to_string(),
        direction,
        queue,
        backend,
        worker,
    });
}

/// Who took which queue so far.
pub fn ownership() -> Vec<Ownership> {
    table().owners.clone()
}

/// Closes everything not yet taken and forgets every declaration: the
/// next configuration starts from nothing.
pub fn reset() {
    let mut t = table();
    t.specs.clear();
    t.open.clear();
    t.owners.clear();
    t.run = None;
}
