//! The AF_XDP device backend: one AF_XDP socket per interface queue.
//!
//! **AF_XDP** (Linux 4.18+, `Documentation/networking/af_xdp.rst`) hands
//! frames between a driver and user space through memory both share,
//! without the socket layer. The memory is the **UMEM**, an area of
//! fixed-size frames that user space allocates and registers. Four
//! single-producer single-consumer rings of frame addresses move frames
//! around it:
//!
//! - the **fill** ring gives the kernel empty frames to receive into;
//! - the **RX** ring gives user space the frames received (address and
//!   length);
//! - the **TX** ring gives the kernel frames to send;
//! - the **completion** ring gives user space back the frames sent.
//!
//! A small XDP program (`bpf/xsk_redirect.c`) runs on every received frame
//! and redirects it, by `ctx->rx_queue_index`, through an XSKMAP to the
//! socket bound to that queue; frames of queues with no socket go on to
//! the kernel's stack. The program is attached once per interface, when the
//! first queue opens, shared by all its queues, and detached when the last
//! one closes.
//!
//! **Modes.** The program runs in *native* mode (`XDP_FLAGS_DRV_MODE`, in
//! the driver, before any socket buffer exists) where the driver has it,
//! else in *generic* mode (`XDP_FLAGS_SKB_MODE`, after the stack has built
//! an skb; slower, but works on every interface). Independently, the socket
//! is *zero-copy* (`XDP_ZEROCOPY`: the NIC DMAs straight into the UMEM;
//! needs driver support and native mode) or *copy* (`XDP_COPY`: the kernel
//! copies each frame into and out of the UMEM). veth has native XDP but no
//! zero-copy (`EOPNOTSUPP`), so on veth a queue runs as `native copy`.
//! [`XdpMode::Auto`] and [`ZeroCopy::Auto`] try the faster mode first and
//! fall back, keeping the reason for the caller to print.
//!
//! **Why bricks copies anyway.** `recv` copies each received frame out of
//! the UMEM into a packet from the router's own per-thread pool and
//! returns the frame to the fill ring at once; `enqueue` copies a packet
//! into a free UMEM transmit frame. Packets thus live in one kind of
//! buffer with headroom and annotations, elements never see UMEM frame
//! lifetimes, a slow element can never starve the fill ring, and the
//! packet pool stays lock-free. The copy of a minimum-size frame costs a
//! few nanoseconds, and in copy mode (veth, every driver without
//! zero-copy) the kernel copies anyway. Zero-copy UMEM frames may become a
//! second buffer kind behind the same `Packet` API (docs/ARCHITECTURE.md).
//!
//! **Kicks.** In copy mode the kernel sends only from `sendto()`, at most
//! 32 frames per call, so [`TxQueue::flush`] kicks with
//! `sendto(MSG_DONTWAIT)` until the TX ring is empty; EAGAIN, EBUSY and
//! ENOBUFS leave the rest for the next flush. Nothing here ever blocks or
//! calls `poll()`. The kernel unbinds a socket whose interface goes away
//! and says so only when asked: an idle receive queue asks (a
//! non-blocking `recvfrom`) every 64 empty polls, and a flush asks with its
//! kick, so both halves report [`DeviceError::Gone`].
//!
//! **Fast path.** Instead of the plain steering program, an interface can
//! run a [`FastPath`] (`bpf/fastpath.c`, [`XdpConfig::fast_path`]): it
//! forwards the common IPv4 case in the kernel (header checks, an LPM
//! route lookup, TTL decrement, a new Ethernet header, `XDP_REDIRECT`
//! through a DEVMAP) and steers every other frame, unchanged, to the
//! queue's AF_XDP socket as the plain program does. Its owner fills its
//! routes and neighbours; counters say what it forwarded and why the rest
//! went to user space. A veth output delivers redirected frames only while
//! its peer has NAPI on (an XDP program there, or `ethtool -K PEER gro
//! on`); see [`FastPath`].
//!
//! **The programs** are C (`crates/io/bpf/*.c`), compiled by `build.rs`
//! with `clang -O2 -g -target bpf` (installed by `scripts/setup`), embedded
//! in the binary and loaded with aya through BPF links: nothing is pinned,
//! no bpffs is needed (`ip netns exec` hides the host's), and the kernel
//! detaches a program by itself if the process dies. libxdp's dispatcher is
//! not used for the same reason. An interface that already carries an XDP
//! program that bricks did not attach is refused with an error naming the
//! program; bricks never replaces it.
//!
//! Sockets and programs act in the calling thread's network namespace.

mod fastpath;
mod live_gen;
mod netlink;
mod program;
mod socket;

#[cfg(test)]
mod tests;

pub use fastpath::{
    FastPath, FastPathPort, FastPathSpec, FastPathStats, MAX_BAD_SRC, MAX_PORTS, TO_USER_REASONS,
};
pub use live_gen::{LiveFlow, LiveGen, LiveReport, MAX_LIVE_FLOWS, MAX_LIVE_FRAME, MIN_LIVE_FRAME};
pub use program::{attach_pass, redirect, XdpPass, XdpRedirect};
pub use socket::{XdpRx, XdpTx};

use crate::queue::DeviceError;
#[cfg(doc)]
use crate::queue::TxQueue;

/// Queue ids bricks' XDP program can steer (the XSKMAP's size in
/// `bpf/xsk_redirect.c`).
pub const MAX_QUEUES: u32 = 1024;

/// Where the XDP program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpMode {
    /// Native where the driver has it, else generic.
    #[default]
    Auto,
    /// In the driver (`XDP_FLAGS_DRV_MODE`); an error if it has none.
    Native,
    /// After the stack built an skb (`XDP_FLAGS_SKB_MODE`); any interface.
    Generic,
}

/// Whether the socket shares its UMEM with the NIC's DMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroCopy {
    /// Zero-copy where the driver has it (native mode only), else copy.
    #[default]
    Auto,
    /// Zero-copy or an error.
    On,
    /// Copy mode.
    Off,
}

/// How to open an AF_XDP queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpConfig {
    /// Where the XDP program runs.
    pub mode: XdpMode,
    /// Zero-copy or copy.
    pub zero_copy: ZeroCopy,
    /// UMEM frames per queue (4,096 bytes each), half for receiving and
    /// half for transmitting. Default 4,096 (16 MiB).
    pub frames: u32,
    /// Entries in the RX and TX rings, a power of two. Default 2,048.
    pub ring: u32,
    /// The fast path to attach in place of the plain steering program
    /// (made for this interface); every queue of an interface passes the
    /// same one, or none. Default none.
    pub fast_path: Option<FastPath>,
    /// Busy polling (`SO_PREFER_BUSY_POLL`), the socket's `SO_BUSY_POLL`
    /// in microseconds; 0 (the default) leaves the interface's NAPI to the
    /// kernel. AF_XDP's receive never waits, so each busy poll is one NAPI
    /// poll whatever the value. See [`MAX_BUSY_POLL_US`] and `XdpRx::recv`.
    pub busy_poll_us: u32,
}

/// The largest `SO_BUSY_POLL` a queue may ask for (what a blocking
/// receive would spin for; bricks' receives do not block).
pub const MAX_BUSY_POLL_US: u32 = 1000;

/// Frames one busy poll may take (`SO_BUSY_POLL_BUDGET`): a batch of
/// 64, NAPI's own weight, so that one poll fills a receive burst.
pub const BUSY_POLL_BUDGET: u32 = 64;

impl Default for XdpConfig {
    fn default() -> Self {
        XdpConfig {
            mode: XdpMode::Auto,
            zero_copy: ZeroCopy::Auto,
            frames: 4096,
            ring: 2048,
            fast_path: None,
            busy_poll_us: 0,
        }
    }
}

impl XdpConfig {
    /// Refuses sizes the kernel would refuse, with a message that says so.
    fn check(&self) -> Result<(), DeviceError> {
        if !self.ring.is_power_of_two() || !(8..=1 << 20).contains(&self.ring) {
            return Err(DeviceError::Io(format!(
                "AF_XDP ring size {} must be a power of two between 8 and 1048576",
                self.ring
            )));
        }
        if !(16..=1 << 20).contains(&self.frames) {
            return Err(DeviceError::Io(format!(
                "AF_XDP UMEM of {} frames: give between 16 and 1048576",
                self.frames
            )));
        }
        if self.busy_poll_us > MAX_BUSY_POLL_US {
            return Err(DeviceError::Io(format!(
                "AF_XDP busy polling of {} us: give at most {MAX_BUSY_POLL_US} us",
                self.busy_poll_us
            )));
        }
        Ok(())
    }
}

/// Opens an AF_XDP socket on queue `queue` of `ifname` (attaching bricks'
/// redirect program to the interface on first use; it redirects by
/// `ctx->rx_queue_index` into an XSKMAP and passes frames of queues with no
/// socket to the kernel). Returns the receive and the transmit half (both
/// `Send`, usable on the same thread or moved separately).
///
/// Fails with a message that says what to do when the interface is
/// missing, carries another XDP program, takes XDP in neither mode (use
/// AF_PACKET then), or the queue is taken or does not exist.
pub fn open_queue(
    ifname: &str,
    queue: u32,
    cfg: &XdpConfig,
) -> Result<(XdpRx, XdpTx), DeviceError> {
    socket::open(ifname, queue, cfg)
}
