//! A traffic generator inside the kernel: `bpf/gen_live.c` run with
//! `BPF_PROG_RUN` in live-frames mode (`BPF_F_TEST_XDP_LIVE_FRAMES`,
//! Linux 5.18), the means of the kernel's own `xdp-trafficgen`.
//!
//! Why: on a veth, an AF_XDP socket in copy mode sends each frame as an
//! skb the kernel allocates, fills and frees, and a generator that way
//! tops out near 1 Mpps a core here, below what the routers it is meant
//! to load can forward. In live-frames mode the kernel runs the program on
//! one frame over and over, in a loop of its own, and transmits the frame
//! (`XDP_TX`, through the device's `ndo_xdp_xmit`) each time the program
//! says so: on a veth the frame reaches the peer as an XDP frame, with no
//! skb, at 2.5 to 3 Mpps a core here. The program writes each frame's
//! flow and its probe (GenStamp's layout) and keeps the rate.
//!
//! The loop stops when its repeat count runs out or when the thread that
//! runs it gets a signal: a watcher thread sends one (`SIGUSR1`, with a
//! handler that does nothing, so that the call returns `EINTR`) when the
//! duration is over or the frames are all sent.
//!
//! A veth receives XDP frames only while its peer has NAPI on: an XDP
//! program attached there, or GRO on (`ethtool -K PEER gro on`).

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aya::maps::{Array, MapData};
use aya::programs::Xdp;

use super::program::{self, chain, take};
use crate::queue::DeviceError;

static GEN_LIVE: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/gen_live.o"));
const PROG: &str = "bricks_gen_live";

/// Flows the program holds (`MAX_FLOWS` in `bpf/gen_live.c`).
pub const MAX_LIVE_FLOWS: usize = 65536;
/// The shortest frame: Ethernet, IPv4, UDP and the 18-byte probe.
pub const MIN_LIVE_FRAME: usize = 60;
/// The longest frame: one page of the run's pool, less its headroom.
pub const MAX_LIVE_FRAME: usize = 3000;

/// One flow's addresses and ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveFlow {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
}

/// What to send.
#[derive(Debug, Clone)]
pub struct LiveGen {
    /// Interface to send on (in the calling thread's namespace).
    pub ifname: String,
    /// The frame: Ethernet (its MACs as they are sent), IPv4 with no
    /// options, UDP; its length is the frames' length. The flows' fields
    /// are written over it.
    pub frame: Vec<u8>,
    /// Taken in turn, one a frame.
    pub flows: Vec<LiveFlow>,
    /// Frames a second; `None` for as fast as the kernel sends.
    pub rate: Option<u64>,
    /// Frames to send, then stop.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Write probes for `bricks sink`.
    pub stamp: bool,
    /// The probes' flow ids are `id_base | flow`.
    pub id_base: u32,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveReport {
    /// Frames handed to the device.
    pub sent: u64,
    /// Frames the rate allowed but the generator could not send in time.
    pub behind: u64,
    /// How long the run took.
    pub elapsed: Duration,
}

/// `struct state` of `bpf/gen_live.c`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct State {
    interval_ns: u64,
    next_ns: u64,
    limit: u64,
    sent: u64,
    behind: u64,
    flows: u32,
    id_base: u32,
    stamp: u32,
    pad: u32,
}

// SAFETY: `State` is `repr(C)` of integers with no padding (5 x 8 + 4 x 4
// bytes), so every bit pattern is a value and its bytes are all defined.
#[allow(unsafe_code)]
unsafe impl aya::Pod for State {}

/// `struct flow` of `bpf/gen_live.c`: the flow's Ethernet, IPv4 and UDP
/// headers as they are sent (42 bytes, then 2 of padding).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct FlowFields {
    hdr: [u8; 44],
}

// SAFETY: a byte array, `repr(C)`, no padding.
#[allow(unsafe_code)]
unsafe impl aya::Pod for FlowFields {}

/// Ethernet, IPv4 with no options and UDP.
const HDR_LEN: usize = 42;

impl LiveGen {
    /// The headers of `flow`: the frame's, with the flow's addresses,
    /// ports and IPv4 header checksum.
    fn headers(frame: &[u8], flow: &LiveFlow) -> FlowFields {
        let mut hdr = [0u8; 44];
        hdr[..HDR_LEN].copy_from_slice(&frame[..HDR_LEN]);
        let ip = &mut hdr[14..34];
        ip[10..12].fill(0);
        ip[12..16].copy_from_slice(&flow.src.octets());
        ip[16..20].copy_from_slice(&flow.dst.octets());
        let sum = !bricks_wire::checksum::data(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        hdr[34..36].copy_from_slice(&flow.sport.to_be_bytes());
        hdr[36..38].copy_from_slice(&flow.dport.to_be_bytes());
        FlowFields { hdr }
    }

    fn check(&self) -> Result<(), String> {
        let f = &self.frame;
        if !(MIN_LIVE_FRAME..=MAX_LIVE_FRAME).contains(&f.len()) {
            return Err(format!(
                "a {}-byte frame: live frames are {MIN_LIVE_FRAME} to {MAX_LIVE_FRAME} bytes",
                f.len()
            ));
        }
        if f[12..14] != [0x08, 0x00] || f[14] != 0x45 || f[23] != 17 {
            return Err("the frame is not IPv4 (no options) carrying UDP".into());
        }
        if self.flows.is_empty() || self.flows.len() > MAX_LIVE_FLOWS {
            return Err(format!(
                "{} flows: live frames take 1 to {MAX_LIVE_FLOWS}",
                self.flows.len()
            ));
        }
        if self.rate == Some(0) {
            return Err("a rate of 0".into());
        }
        Ok(())
    }

    /// Sends until the count is reached, the duration is over or `stop`
    /// is set (checked every millisecond).
    ///
    /// # Errors
    ///
    /// A frame or flows the program cannot send, an interface that does
    /// not exist, a kernel without live frames (before 5.18) or that
    /// refuses the program (not root: `CAP_BPF` and `CAP_NET_ADMIN`).
    pub fn run(&self, stop: &AtomicBool) -> Result<LiveReport, DeviceError> {
        let ifname = &self.ifname;
        let err = |what: String| DeviceError::Io(format!("live frames on {ifname}: {what}"));
        self.check().map_err(err)?;
        let ifindex = crate::ifinfo::index(ifname).map_err(|e| err(e.to_string()))?;
        let mut ebpf = program::load(ifname, GEN_LIVE, PROG, &[], |_| Ok(()))?;
        // The state map's descriptor, duplicated before aya takes the map
        // over, for the watcher thread's reads.
        let state_map = ebpf
            .take_map("bricks_gen_state")
            .ok_or_else(|| err("bricks_gen_state missing from the XDP object".into()))?;
        let state_fd = match &state_map {
            aya::maps::Map::Array(m) => m.fd().as_fd().try_clone_to_owned(),
            _ => return Err(err("bricks_gen_state is not an array".into())),
        }
        .map_err(|e| err(format!("bricks_gen_state: {e}")))?;
        let mut state: Array<MapData, State> = Array::try_from(state_map)
            .map_err(|e| err(format!("bricks_gen_state: {}", chain(&e))))?;
        let mut flows: Array<MapData, FlowFields> =
            take(&mut ebpf, "bricks_gen_flows").map_err(err)?;
        for (i, f) in self.flows.iter().enumerate() {
            flows
                .set(i as u32, Self::headers(&self.frame, f), 0)
                .map_err(|e| err(format!("flow {i}: {}", chain(&e))))?;
        }
        let interval_ns = self.rate.map_or(0, |r| (1_000_000_000 / r).max(1));
        let limit = self.count.unwrap_or(0);
        let init = State {
            interval_ns,
            limit,
            flows: self.flows.len() as u32,
            id_base: self.id_base,
            stamp: u32::from(self.stamp),
            ..State::default()
        };
        state
            .set(0, init, 0)
            .map_err(|e| err(format!("its settings: {}", chain(&e))))?;
        let prog: &Xdp = ebpf
            .program(PROG)
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| err("the program is not in the object".into()))?;
        let prog_fd = prog.fd().map_err(|e| err(chain(&e)))?.as_fd().as_raw_fd();
        let state_fd = state_fd.as_raw_fd();

        sys::quiet_signal();
        let me = sys::this_thread();
        let returned = AtomicBool::new(false);
        let start = Instant::now();
        let mut rc = Ok(());
        std::thread::scope(|s| {
            // The watcher: ends the loop with a signal when the run is over,
            // and again every millisecond until the loop has returned (a
            // signal that came just before the call would be lost).
            s.spawn(|| {
                let mut over = false;
                while !returned.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                    if !over {
                        let done = limit > 0 && sys::sent(state_fd).is_some_and(|n| n >= limit);
                        let late = self.duration.is_some_and(|d| start.elapsed() >= d);
                        over = done || late || stop.load(Ordering::Relaxed);
                    }
                    if over {
                        sys::signal(me);
                    }
                }
            });
            rc = loop {
                // Without a rate every turn of the loop sends: the count
                // is the repeat count. Otherwise the loop turns until the
                // watcher stops it (`u32::MAX` turns last minutes).
                let repeat = match (limit, interval_ns) {
                    (n, 0) if n > 0 => {
                        let left = n.saturating_sub(sys::sent(state_fd).unwrap_or(0));
                        if left == 0 {
                            break Ok(());
                        }
                        left.min(u64::from(u32::MAX)) as u32
                    }
                    _ => u32::MAX,
                };
                match sys::live_run(prog_fd, &self.frame, ifindex, repeat) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => break Ok(()),
                    Err(e) => break Err(e),
                }
                if self.duration.is_some_and(|d| start.elapsed() >= d)
                    || stop.load(Ordering::Relaxed)
                {
                    break Ok(());
                }
            };
            returned.store(true, Ordering::Release);
        });
        let elapsed = start.elapsed();
        rc.map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::EINVAL) => " (live frames need Linux 5.18 or later)",
                Some(libc::EPERM) => " (run as root)",
                _ => "",
            };
            err(format!("BPF_PROG_RUN: {e}{hint}"))
        })?;
        let end = state
            .get(&0, 0)
            .map_err(|e| err(format!("reading its counters: {}", chain(&e))))?;
        Ok(LiveReport {
            sent: end.sent,
            behind: end.behind,
            elapsed,
        })
    }
}

/// The system calls aya does not make: `BPF_PROG_RUN` in live-frames mode,
/// a map read from another thread, and the signal that ends the run.
#[allow(unsafe_code)]
mod sys {
    use std::os::fd::RawFd;

    const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
    const BPF_PROG_TEST_RUN: libc::c_long = 10;
    const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
    /// Frames the kernel runs the program on and sends at once (its
    /// default; it takes up to 256).
    const BATCH: u32 = 64;

    /// The `test` member of `union bpf_attr`.
    #[repr(C)]
    #[derive(Default)]
    struct TestAttr {
        prog_fd: u32,
        retval: u32,
        data_size_in: u32,
        data_size_out: u32,
        data_in: u64,
        data_out: u64,
        repeat: u32,
        duration: u32,
        ctx_size_in: u32,
        ctx_size_out: u32,
        ctx_in: u64,
        ctx_out: u64,
        flags: u32,
        cpu: u32,
        batch_size: u32,
        pad: u32,
    }

    /// `struct xdp_md`.
    #[repr(C)]
    #[derive(Default)]
    struct XdpMd {
        data: u32,
        data_end: u32,
        data_meta: u32,
        ingress_ifindex: u32,
        rx_queue_index: u32,
        egress_ifindex: u32,
    }

    /// The `elem` member of `union bpf_attr` (map lookups).
    #[repr(C)]
    struct ElemAttr {
        map_fd: u32,
        pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }

    /// Runs the program `repeat` times on `frame`, received on `ifindex`
    /// queue 0, sending it out of `ifindex` each time it returns XDP_TX.
    pub(super) fn live_run(
        prog_fd: RawFd,
        frame: &[u8],
        ifindex: u32,
        repeat: u32,
    ) -> std::io::Result<()> {
        let ctx = XdpMd {
            data_end: frame.len() as u32,
            ingress_ifindex: ifindex,
            ..XdpMd::default()
        };
        let mut attr = TestAttr {
            prog_fd: prog_fd as u32,
            data_size_in: frame.len() as u32,
            data_in: frame.as_ptr() as u64,
            repeat,
            ctx_size_in: std::mem::size_of::<XdpMd>() as u32,
            ctx_in: &ctx as *const XdpMd as u64,
            flags: BPF_F_TEST_XDP_LIVE_FRAMES,
            batch_size: BATCH,
            ..TestAttr::default()
        };
        // SAFETY: `attr` is a valid `bpf_attr` prefix of the size passed,
        // which the kernel reads and writes (the return value, the
        // duration); it reads `frame` and `ctx`, live for the call and of
        // the sizes given, and writes nothing else (`data_out` and
        // `ctx_out` are null).
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_PROG_TEST_RUN,
                &mut attr as *mut TestAttr,
                std::mem::size_of::<TestAttr>(),
            )
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// The `sent` counter of the state map (`fd`), read from any thread.
    pub(super) fn sent(fd: RawFd) -> Option<u64> {
        let key = 0u32;
        let mut value = [0u64; 7];
        let attr = ElemAttr {
            map_fd: fd as u32,
            pad: 0,
            key: &key as *const u32 as u64,
            value: value.as_mut_ptr() as u64,
            flags: 0,
        };
        // SAFETY: the kernel reads the 4-byte key and writes the map's
        // 56-byte value into `value`, which holds 56 bytes.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_MAP_LOOKUP_ELEM,
                &attr as *const ElemAttr,
                std::mem::size_of::<ElemAttr>(),
            )
        };
        (r == 0).then_some(value[3])
    }

    extern "C" fn nothing(_: libc::c_int) {}

    /// SIGUSR1 does nothing but interrupt a system call (no SA_RESTART).
    pub(super) fn quiet_signal() {
        // SAFETY: a zeroed sigaction with a handler that touches nothing
        // is valid; installing it affects only SIGUSR1.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
        }
    }

    pub(super) fn this_thread() -> libc::pthread_t {
        // SAFETY: always callable.
        unsafe { libc::pthread_self() }
    }

    /// Interrupts `t`'s system call.
    pub(super) fn signal(t: libc::pthread_t) {
        // SAFETY: `t` is the thread that runs the loop, alive until the
        // watcher stops sending (the loop returns before it ends).
        unsafe {
            libc::pthread_kill(t, libc::SIGUSR1);
        }
    }
}
