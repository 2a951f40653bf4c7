//! One AF_XDP socket per queue: its UMEM, its four rings, and the receive
//! and transmit halves that copy frames between the UMEM and packets.

use std::num::NonZeroU32;
use std::ptr::NonNull;
use std::sync::Arc;

use bricks_packet::{Batch, Packet, BUFFER_SIZE, MAX_BATCH};
use xdpilone::xdp::XdpDesc;
use xdpilone::{CompletionQueue, FillQueue, RingRx, RingTx, SocketConfig, Umem, UmemConfig};

use super::program::SteeringRef;
use super::{XdpConfig, ZeroCopy};
use crate::queue::{DeviceError, RxQueue, RxStats, TxQueue, TxStats};

/// Bytes per UMEM frame. A page, as libxdp's default: the kernel keeps 256
/// bytes of XDP headroom in front of a received frame, which leaves 3,840
/// bytes, more than any packet buffer holds.
pub(crate) const FRAME_SIZE: u32 = 4096;

// A packet's whole buffer fits in one frame, so a transmitted packet
// never needs a length check.
const _: () = assert!(BUFFER_SIZE <= FRAME_SIZE as usize);

/// Every this many empty polls, an idle receive queue checks that its
/// socket is still bound (one `recvfrom`; a busy queue never pays it).
const IDLE_PROBE: u32 = 64;

/// The memory shared with the kernel: `frames` frames of [`FRAME_SIZE`]
/// bytes, anonymous and page-aligned.
struct UmemArea {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the area is plain memory owned by this value; which thread may
// touch which frame is decided by the ring protocol (a frame belongs to
// exactly one of: the fill ring/kernel/RX ring, the RX half while copying,
// the TX half's free list, the TX ring/kernel/completion ring), and each
// half is used by one thread at a time.
unsafe impl Send for UmemArea {}
// SAFETY: as above; shared references only hand out the base pointer.
unsafe impl Sync for UmemArea {}

impl UmemArea {
    fn new(len: usize) -> std::io::Result<UmemArea> {
        // SAFETY: an anonymous private mapping with no address hint; the
        // result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(std::io::Error::last_os_error)?;
        Ok(UmemArea { ptr, len })
    }
}

impl Drop for UmemArea {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `new`, and
        // this is its last user (the halves hold it in an `Arc` and are
        // gone). The kernel keeps its own pin on the pages until the
        // socket's UMEM is released.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// What both halves of a queue share, dropped with the last of them.
/// Field order is drop order: the queue leaves the XSKMAP (and the program
/// is detached if it was the interface's last queue) before the memory is
/// unmapped.
struct Shared {
    _steering: SteeringRef,
    area: UmemArea,
    ifname: String,
    queue: u32,
    zero_copy: bool,
    native: bool,
    fallback_reason: Option<String>,
}

impl Shared {
    fn mode(&self) -> &'static str {
        match (self.native, self.zero_copy) {
            (true, true) => "native zero-copy",
            (true, false) => "native copy",
            (false, _) => "generic copy",
        }
    }
}

/// The receiving half of an AF_XDP queue.
pub struct XdpRx {
    rx: RingRx,
    fill: FillQueue,
    /// UMEM addresses of frames that found no room in the fill ring (never
    /// expected: the fill ring holds every receive frame).
    unfilled: Vec<u64>,
    /// The frames one `recv` call copied, on their way back to the fill
    /// ring (kept to reuse its allocation).
    done: Vec<u64>,
    /// `recv` calls that found the RX ring empty.
    idle_polls: u32,
    /// The socket busy-polls (`XdpConfig::busy_poll_us`): a `recv` that
    /// finds less than a burst in the ring has the kernel run the queue's
    /// NAPI and reads again.
    busy_poll: bool,
    fd: i32,
    stats: RxStats,
    shared: Arc<Shared>,
}

/// The transmitting half of an AF_XDP queue.
pub struct XdpTx {
    tx: RingTx,
    completion: CompletionQueue,
    /// UMEM addresses of transmit frames not in the kernel's hands.
    free: Vec<u64>,
    fd: i32,
    ring: u32,
    stats: TxStats,
    shared: Arc<Shared>,
}

/// `XDP_STATISTICS` of one socket (`struct xdp_statistics`; the last three
/// fields exist since Linux 5.9 and read as zero before).
#[repr(C)]
#[derive(Default)]
struct XdpStatistics {
    rx_dropped: u64,
    rx_invalid_descs: u64,
    tx_invalid_descs: u64,
    rx_ring_full: u64,
    rx_fill_ring_empty_descs: u64,
    tx_ring_empty_descs: u64,
}

const SOL_XDP: libc::c_int = 283;
const XDP_STATISTICS: libc::c_int = 7;

/// `SO_PREFER_BUSY_POLL` and `SO_BUSY_POLL_BUDGET` (Linux 5.11,
/// asm-generic/socket.h), which the libc crate does not name on every
/// target.
const SO_PREFER_BUSY_POLL: libc::c_int = 69;
const SO_BUSY_POLL_BUDGET: libc::c_int = 70;

/// Makes socket `fd` busy-poll its queue (`SO_BUSY_POLL` `us`; a
/// non-blocking receive polls once), preferring it to the kernel's own
/// NAPI processing (Linux 5.11:
/// while the application keeps polling, interrupts or NAPI threads stay
/// off the queue if the interface defers them, through its
/// `napi_defer_hard_irqs` and `gro_flush_timeout`).
fn set_busy_poll(ifname: &str, fd: i32, us: u32) -> Result<(), DeviceError> {
    let opts = [
        (libc::SO_BUSY_POLL, us, "SO_BUSY_POLL"),
        (SO_PREFER_BUSY_POLL, 1, "SO_PREFER_BUSY_POLL"),
        (
            SO_BUSY_POLL_BUDGET,
            super::BUSY_POLL_BUDGET,
            "SO_BUSY_POLL_BUDGET",
        ),
    ];
    for (name, value, what) in opts {
        let value = value as libc::c_int;
        crate::sockopt::set(fd, libc::SOL_SOCKET, name, &value).map_err(|e| {
            DeviceError::Io(format!(
                "{ifname}: busy polling: setting {what} to {value} failed ({e}); it needs \
                 Linux 5.11 or later, and CAP_NET_ADMIN for a budget above 8 or a poll \
                 longer than net.core.busy_poll allows"
            ))
        })?;
    }
    Ok(())
}

fn statistics(fd: i32) -> XdpStatistics {
    let mut s = XdpStatistics::default();
    let mut len = std::mem::size_of::<XdpStatistics>() as libc::socklen_t;
    // SAFETY: `s` is valid for writes of `len` bytes, and the kernel writes
    // at most `len`; `fd` is the socket the caller holds open.
    let r = unsafe {
        libc::getsockopt(
            fd,
            SOL_XDP,
            XDP_STATISTICS,
            (&mut s as *mut XdpStatistics).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return XdpStatistics::default();
    }
    s
}

impl XdpStatistics {
    /// Frames the kernel received for this socket but could not deliver,
    /// each counted once.
    ///
    /// In copy mode a frame that finds the fill ring empty is counted both
    /// in `rx_dropped` and in `rx_fill_ring_empty_descs` (net/xdp/xsk.c,
    /// `__xsk_rcv`: `xsk_buff_alloc` fails, bumping the fill queue's
    /// `queue_empty_descs`, then `rx_dropped++`); in zero-copy mode
    /// `rx_fill_ring_empty_descs` counts the driver's failed refills, not
    /// frames. So only `rx_dropped` (fill ring empty, frame too long) and
    /// `rx_ring_full` (RX ring full; counted apart from `rx_dropped` when
    /// the full structure is asked for) are frames lost.
    fn ring_drops(&self) -> u64 {
        self.rx_dropped + self.rx_ring_full
    }
}

fn errno_of(e: xdpilone::Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.get_raw().abs())
}

/// A bound socket and its rings, before the halves are built. The rings
/// (and with the last of them the socket) go before the memory.
struct Bound {
    rx: RingRx,
    tx: RingTx,
    fill: FillQueue,
    completion: CompletionQueue,
    area: UmemArea,
}

/// Creates the UMEM and the socket of `queue` and binds it, in zero-copy or
/// copy mode.
fn bind(
    ifname: &str,
    ifindex: u32,
    queue: u32,
    cfg: &XdpConfig,
    zero_copy: bool,
) -> Result<Bound, DeviceError> {
    let io = |what: &str| {
        let what = what.to_string();
        move |e: xdpilone::Errno| DeviceError::from_errno(ifname, &what, errno_of(e))
    };
    let (rx_frames, tx_frames) = split(cfg.frames);
    let area = UmemArea::new(cfg.frames as usize * FRAME_SIZE as usize)
        .map_err(|e| DeviceError::from_errno(ifname, "allocating the UMEM", e))?;
    let umem_cfg = UmemConfig {
        // Room for every receive frame: a frame taken off the RX ring
        // always finds a slot to go back to.
        fill_size: rx_frames.next_power_of_two(),
        complete_size: tx_frames.next_power_of_two(),
        frame_size: FRAME_SIZE,
        headroom: 0,
        flags: 0,
    };
    let slice = NonNull::slice_from_raw_parts(area.ptr, area.len);
    // SAFETY: `slice` is a page-aligned mapping of `len` bytes that lives
    // in `Shared` until both halves (and so every ring and the socket) are
    // gone; xdpilone only passes its address to the kernel.
    let umem = unsafe { Umem::new(umem_cfg, slice) }.map_err(io("registering the UMEM"))?;
    let mut info = xdpilone::IfInfo::invalid();
    info.from_ifindex(ifindex)
        .map_err(io("looking up its index"))?;
    info.set_queue(queue);
    let sock =
        xdpilone::Socket::with_shared(&info, &umem).map_err(io("creating an AF_XDP socket"))?;
    let device = umem
        .fq_cq(&sock)
        .map_err(io("creating the fill and completion rings"))?;
    let ring = NonZeroU32::new(cfg.ring);
    let mode_flag = if zero_copy {
        SocketConfig::XDP_BIND_ZEROCOPY
    } else {
        SocketConfig::XDP_BIND_COPY
    };
    let user = umem
        .rx_tx(
            &sock,
            &SocketConfig {
                rx_size: ring,
                tx_size: ring,
                bind_flags: SocketConfig::XDP_BIND_NEED_WAKEUP | mode_flag,
            },
        )
        .map_err(io("creating the RX and TX rings"))?;
    let rx = user.map_rx().map_err(io("mapping the RX ring"))?;
    let tx = user.map_tx().map_err(io("mapping the TX ring"))?;
    umem.bind(&user).map_err(|e| {
        let err = errno_of(e);
        let why = match err.raw_os_error() {
            Some(libc::EBUSY) => format!(
                "queue {queue} already has an AF_XDP socket (another bricks queue or process)"
            ),
            Some(libc::EINVAL) if !zero_copy => format!(
                "cannot bind an AF_XDP socket to queue {queue} ({err}); does the interface \
                 have that many queues? (`ethtool -l {ifname}`)"
            ),
            Some(libc::EOPNOTSUPP) if zero_copy => {
                format!("the driver has no AF_XDP zero-copy ({err})")
            }
            _ => format!("cannot bind an AF_XDP socket to queue {queue}: {err}"),
        };
        match err.raw_os_error() {
            Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN) => {
                DeviceError::Gone(format!("{ifname}: {why}"))
            }
            _ => DeviceError::Io(format!("{ifname}: {why}")),
        }
    })?;
    let (mut fill, completion) = device.into_parts();
    // Hand every receive frame to the kernel.
    let mut addrs = (0..rx_frames).map(|i| u64::from(i) * u64::from(FRAME_SIZE));
    let mut left = rx_frames;
    while left > 0 {
        let mut w = fill.fill(left);
        if w.capacity() == 0 {
            break;
        }
        left -= w.insert(addrs.by_ref());
        w.commit();
    }
    Ok(Bound {
        rx,
        tx,
        fill,
        completion,
        area,
    })
}

/// Receive frames and transmit frames out of `frames`.
pub(crate) fn split(frames: u32) -> (u32, u32) {
    let rx = frames / 2;
    (rx, frames - rx)
}

/// See [`super::open_queue`].
pub(crate) fn open(
    ifname: &str,
    queue: u32,
    cfg: &XdpConfig,
) -> Result<(XdpRx, XdpTx), DeviceError> {
    cfg.check()?;
    let ifindex = crate::ifinfo::index(ifname).map_err(|e| DeviceError::Io(e.to_string()))?;
    if queue >= super::MAX_QUEUES {
        return Err(DeviceError::Io(format!(
            "{ifname}: queue {queue} is beyond the {} queues bricks' XDP program steers",
            super::MAX_QUEUES
        )));
    }
    let mut steering = super::program::acquire(ifname, ifindex, cfg.mode, cfg.fast_path.as_ref())?;
    let tries: &[bool] = match (cfg.zero_copy, steering.native) {
        (ZeroCopy::On, false) => {
            return Err(DeviceError::Io(format!(
                "{ifname}: zero-copy needs native XDP, and the program runs in generic mode ({}); \
                 use ZEROCOPY auto or off",
                steering.fallback_reason.as_deref().unwrap_or("asked for")
            )))
        }
        (ZeroCopy::On, true) => &[true],
        (ZeroCopy::Auto, true) => &[true, false],
        (ZeroCopy::Auto, false) | (ZeroCopy::Off, _) => &[false],
    };
    let mut reasons: Vec<String> = steering.fallback_reason.iter().cloned().collect();
    let mut bound = None;
    for &zc in tries {
        match bind(ifname, ifindex, queue, cfg, zc) {
            Ok(b) => {
                bound = Some((b, zc));
                break;
            }
            // Auto: zero-copy refused (veth has none); copy mode next.
            Err(e) if zc && tries.len() > 1 => reasons.push(format!("zero-copy refused: {e}")),
            Err(e) => return Err(e),
        }
    }
    let Some((b, zero_copy)) = bound else {
        return Err(DeviceError::Io(format!("{ifname}: no AF_XDP mode to try")));
    };
    let fd = b.rx.as_raw_fd();
    if cfg.busy_poll_us > 0 {
        set_busy_poll(ifname, fd, cfg.busy_poll_us)?;
    }
    steering.register(ifname, queue, fd)?;
    let native = steering.native;
    let shared = Arc::new(Shared {
        _steering: steering,
        area: b.area,
        ifname: ifname.to_string(),
        queue,
        zero_copy,
        native,
        fallback_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    });
    let (rx_frames, _) = split(cfg.frames);
    let rx = XdpRx {
        rx: b.rx,
        fill: b.fill,
        unfilled: Vec::new(),
        done: Vec::with_capacity(MAX_BATCH),
        idle_polls: 0,
        busy_poll: cfg.busy_poll_us > 0,
        fd,
        stats: RxStats::default(),
        shared: shared.clone(),
    };
    let tx = XdpTx {
        tx: b.tx,
        completion: b.completion,
        // Popped from the end: the lowest frames are used first.
        free: (rx_frames..cfg.frames)
            .rev()
            .map(|i| u64::from(i) * u64::from(FRAME_SIZE))
            .collect(),
        fd,
        ring: cfg.ring,
        stats: TxStats::default(),
        shared,
    };
    Ok((rx, tx))
}

impl XdpRx {
    /// How the queue runs: `native zero-copy`, `native copy` or
    /// `generic copy`.
    pub fn mode(&self) -> &'static str {
        self.shared.mode()
    }

    /// Why the queue does not run in the best mode that was allowed
    /// (native XDP refused by the driver, zero-copy refused), for the
    /// caller to print; `None` when nothing fell back.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.shared.fallback_reason.as_deref()
    }

    /// The microseconds each receive busy-polls the queue for, as the
    /// kernel holds them for the socket (0: no busy polling).
    pub fn busy_poll_us(&self) -> u32 {
        let get = |name| crate::sockopt::get_int(self.fd, libc::SOL_SOCKET, name).unwrap_or(0);
        if get(SO_PREFER_BUSY_POLL) == 0 {
            return 0;
        }
        u32::try_from(get(libc::SO_BUSY_POLL)).unwrap_or(0)
    }

    /// Returns frames to the fill ring; those that find no room wait in
    /// `unfilled` for the next call.
    fn refill(&mut self, chunks: &[u64]) {
        let mut rest = chunks;
        while !rest.is_empty() {
            let mut w = self.fill.fill(rest.len() as u32);
            let n = w.insert(rest.iter().copied()) as usize;
            w.commit();
            if n == 0 {
                break;
            }
            rest = &rest[n..];
        }
        self.unfilled.extend_from_slice(rest);
    }

    /// Tells the kernel there are frames in the fill ring (zero-copy
    /// drivers stop when it runs dry and ask for this), and learns whether
    /// the socket is still bound. `recvfrom` with `MSG_DONTWAIT` never
    /// sleeps, unlike `poll`.
    fn wake(&self) -> Result<(), DeviceError> {
        // SAFETY: a zero-length receive with null buffers is the documented
        // AF_XDP wakeup; `fd` is open for as long as `self.rx` is.
        let r = unsafe {
            libc::recvfrom(
                self.fd,
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let err = std::io::Error::last_os_error();
            if let Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN) = err.raw_os_error() {
                return Err(DeviceError::from_errno(
                    &self.shared.ifname,
                    "AF_XDP receive",
                    err,
                ));
            }
        }
        Ok(())
    }
}

impl RxQueue for XdpRx {
    fn ifname(&self) -> &str {
        &self.shared.ifname
    }

    fn queue(&self) -> u32 {
        self.shared.queue
    }

    fn backend(&self) -> &'static str {
        "af_xdp"
    }

    fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
        if !self.unfilled.is_empty() {
            let stuck = std::mem::take(&mut self.unfilled);
            self.refill(&stuck);
        }
        let want = max.min(batch.remaining()).min(MAX_BATCH);
        if want == 0 {
            return Ok(0);
        }
        let before = batch.len();
        let base = self.shared.area.ptr;
        let area_len = self.shared.area.len as u64;
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        // `rejected` frames leave an empty packet behind, removed below.
        let (mut bytes, mut rejected, mut empty) = (0u64, 0u64, 0usize);
        let mut gone = None;
        // Twice at most: the first peek may see a stale producer index.
        for round in 0..2 {
            if done.len() == want {
                break;
            }
            if round == 1 && self.busy_poll {
                // The ring holds less than a burst: the queue's NAPI runs
                // here, in this call, on this worker's CPU, and copies
                // what arrived into the ring (up to BUSY_POLL_BUDGET
                // frames); the kernel's own NAPI processing stays away
                // while the worker keeps coming back. A ring that holds a
                // burst is read with no call.
                if let Err(e) = self.wake() {
                    gone = Some(e);
                    break;
                }
            }
            let mut rx = self.rx.receive((want - done.len()) as u32);
            let got = rx.capacity() as usize;
            if got == 0 {
                continue;
            }
            Packet::alloc_batch(batch, got, |p| {
                let Some(d) = rx.read() else {
                    // Cannot happen: `got` descriptors were peeked.
                    empty += 1;
                    return;
                };
                done.push(d.addr & !u64::from(FRAME_SIZE - 1));
                let len = u64::from(d.len);
                // The kernel only writes inside the UMEM; checked anyway,
                // since a wrong address would read outside the mapping.
                if d.addr.checked_add(len).is_none_or(|end| end > area_len) {
                    rejected += 1;
                    return;
                }
                // SAFETY: the descriptor came off the RX ring (an acquire
                // load of its producer index), so the kernel has finished
                // writing these bytes and will not touch the frame again
                // until it is back in the fill ring, after this copy; the
                // range lies inside the mapping (checked above).
                let frame = unsafe {
                    std::slice::from_raw_parts(base.as_ptr().add(d.addr as usize), d.len as usize)
                };
                if p.set_frame(frame).is_ok() {
                    bytes += len;
                } else {
                    rejected += 1;
                }
            });
            rx.release();
        }
        self.refill(&done);
        let n = done.len();
        self.done = done;
        if let Some(e) = gone {
            return Err(e);
        }
        if rejected > 0 || empty > 0 {
            // Rare (frames longer than a packet buffer): take the empty
            // packets of this call back out, keeping the order.
            let mut keep = Batch::new();
            while batch.len() > before {
                if let Some(p) = batch.pop() {
                    if !p.is_empty() {
                        let _ = keep.push(p);
                    }
                }
            }
            while let Some(p) = keep.pop() {
                let _ = batch.push(p);
            }
        }
        let added = batch.len() - before;
        if n == 0 {
            // An idle queue asks the socket now and then whether it is
            // still bound: the kernel unbinds it when the interface goes
            // away, and says so only through a call (ENXIO). The same call
            // is the fill ring wakeup a zero-copy driver may ask for.
            self.idle_polls = self.idle_polls.wrapping_add(1);
            // A busy-polling queue has just made that call.
            if !self.busy_poll
                && (self.fill.needs_wakeup() || self.idle_polls.is_multiple_of(IDLE_PROBE))
            {
                self.wake()?;
            }
        }
        self.stats.packets += added as u64;
        self.stats.bytes += bytes;
        self.stats.oversized += rejected;
        Ok(added)
    }

    /// The queue's counters; `ring_drops` comes from the kernel
    /// (`XDP_STATISTICS`, see [`XdpStatistics::ring_drops`]), one
    /// `getsockopt` per call, so read it at report intervals.
    fn stats(&self) -> RxStats {
        let k = statistics(self.fd);
        RxStats {
            ring_drops: k.ring_drops(),
            ..self.stats
        }
    }
}

impl XdpTx {
    /// How the queue runs (as [`XdpRx::mode`]).
    pub fn mode(&self) -> &'static str {
        self.shared.mode()
    }

    /// Frames free for `enqueue` right now.
    pub fn free_frames(&self) -> usize {
        self.free.len()
    }

    /// Takes back the frames the kernel has sent.
    fn reclaim(&mut self) {
        loop {
            let mut c = self.completion.complete(self.ring);
            let got = c.capacity();
            if got == 0 {
                break;
            }
            for addr in c.by_ref() {
                self.free.push(addr & !u64::from(FRAME_SIZE - 1));
            }
            c.release();
        }
    }

    /// `sendto(MSG_DONTWAIT)`: the kernel sends what is in the TX ring.
    fn kick(&mut self) -> Result<bool, DeviceError> {
        self.stats.kicks += 1;
        // SAFETY: a zero-length send with null buffers is the documented
        // AF_XDP TX wakeup; `fd` is open for as long as `self.tx` is.
        let r = unsafe {
            libc::sendto(
                self.fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r >= 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            // Busy or out of buffers: the frames stay in the ring for the
            // next flush.
            Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(false),
            _ => Err(DeviceError::from_errno(
                &self.shared.ifname,
                "AF_XDP send",
                err,
            )),
        }
    }
}

impl TxQueue for XdpTx {
    fn ifname(&self) -> &str {
        &self.shared.ifname
    }

    fn queue(&self) -> u32 {
        self.shared.queue
    }

    fn backend(&self) -> &'static str {
        "af_xdp"
    }

    fn enqueue(&mut self, batch: &mut Batch) -> Result<usize, DeviceError> {
        let n = batch.len();
        if n == 0 {
            return Ok(0);
        }
        if self.free.len() < n {
            self.reclaim();
        }
        let base = self.shared.area.ptr;
        let pkts = batch.as_slice();
        let (mut placed, mut bytes) = (0usize, 0u64);
        // A second reservation when the first saw a stale consumer index.
        while placed < n && !self.free.is_empty() {
            let want = (n - placed).min(self.free.len()) as u32;
            let mut w = self.tx.transmit(want);
            let room = w.capacity() as usize;
            if room == 0 {
                break;
            }
            for p in &pkts[placed..placed + room] {
                let Some(addr) = self.free.pop() else { break };
                let data = p.data();
                // SAFETY: `addr` came from the free list, so the frame is in
                // neither the kernel's hands nor a ring; it lies inside the
                // mapping (a frame index below `frames`), and a packet is at
                // most BUFFER_SIZE <= FRAME_SIZE bytes (asserted above).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr(),
                        base.as_ptr().add(addr as usize),
                        data.len(),
                    )
                };
                w.insert_once(XdpDesc {
                    addr,
                    len: data.len() as u32,
                    options: 0,
                });
                bytes += data.len() as u64;
            }
            // The release store on the producer index publishes the copies.
            w.commit();
            placed += room;
        }
        self.stats.packets += placed as u64;
        self.stats.bytes += bytes;
        self.stats.ring_full += (n - placed) as u64;
        batch.clear();
        Ok(placed)
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        self.reclaim();
        // Zero-copy drivers send by themselves unless they ask for a kick;
        // copy mode sends only from sendto.
        let needs_kick = !self.shared.zero_copy || self.tx.needs_wakeup();
        // Copy mode sends at most 32 frames per call (the kernel's TX
        // budget) and answers EAGAIN while more wait: kick until the ring
        // is empty, the kernel stops making progress, or a ring's worth of
        // calls has been made.
        let mut calls = self.ring / 32 + 2;
        while needs_kick && calls > 0 && self.tx.pending() > 0 {
            calls -= 1;
            let before = self.tx.pending();
            let sent_all = self.kick()?;
            self.reclaim();
            if !sent_all && self.tx.pending() == before {
                break;
            }
        }
        Ok(())
    }

    fn pending(&self) -> usize {
        self.tx.pending() as usize
    }

    /// The queue's counters; `errors` comes from the kernel
    /// (`XDP_STATISTICS` invalid TX descriptors), one `getsockopt` per call.
    fn stats(&self) -> TxStats {
        TxStats {
            errors: statistics(self.fd).tx_invalid_descs,
            ..self.stats
        }
    }
}

#[cfg(test)]
mod statistics_tests {
    use super::XdpStatistics;

    #[test]
    fn a_frame_that_found_the_fill_ring_empty_is_one_drop_not_two() {
        // What a copy-mode socket reports after 168 frames found the fill
        // ring empty and 5 found the RX ring full.
        let k = XdpStatistics {
            rx_dropped: 168,
            rx_fill_ring_empty_descs: 168,
            rx_ring_full: 5,
            rx_invalid_descs: 2,
            ..XdpStatistics::default()
        };
        assert_eq!(k.ring_drops(), 173);
        // A zero-copy driver's failed refills are no frames.
        let zc = XdpStatistics {
            rx_fill_ring_empty_descs: 1000,
            ..XdpStatistics::default()
        };
        assert_eq!(zc.ring_drops(), 0);
    }
}
