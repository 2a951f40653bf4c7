//! The AF_PACKET device backend: Linux packet sockets with memory-mapped
//! rings, for any interface the kernel has a driver for.
//!
//! AF_XDP is faster where the driver supports it; AF_PACKET works on every
//! interface (veth, bridges, VLAN devices, tunnels, NICs whose drivers lack
//! XDP) and on every kernel bricks runs on, so it is the backend a router
//! falls back to and the one to compare the others with.
//!
//! # Receiving: TPACKET_V3 blocks
//!
//! The receive ring is `rx_blocks` blocks of `rx_block_size` bytes shared
//! with the kernel (`Documentation/networking/packet_mmap.rst`). The kernel
//! fills one block at a time with variable-length frames, each a
//! `tpacket3_hdr` followed by the frame and linked by `tp_next_offset`, and
//! hands the whole block to user space (`TP_STATUS_USER` in the block
//! descriptor) when it is full or when `rx_block_timeout_ms` passed since
//! its first frame. User space reads the block's frames and gives the block
//! back (`TP_STATUS_KERNEL`). Compared with TPACKET_V2's fixed slots, small
//! frames are packed densely and one status word is exchanged per block
//! instead of per frame; the retire timeout bounds the latency this adds at
//! low rates. [`PacketRx::recv`] never blocks and never calls `poll`: it
//! looks at the next block's status word, which is what a polling worker
//! (RouteBricks §4.2) wants.
//!
//! # Spreading over workers: fanout
//!
//! With several sockets per interface, the sockets join one
//! `PACKET_FANOUT` group and the kernel gives each frame to exactly one of
//! them: by flow hash ([`Fanout::Hash`], so a flow stays on one worker and
//! in order), by the hardware receive queue the NIC's RSS chose
//! ([`Fanout::QueueMapping`]), by the CPU that received it ([`Fanout::Cpu`],
//! cheapest when interrupts are already pinned per worker), or in turn
//! ([`Fanout::RoundRobin`], which reorders flows).
//!
//! # Transmitting
//!
//! Each queue has its own transmit socket with a TPACKET_V2 ring of
//! fixed-size slots; [`PacketTx::enqueue`] copies frames into free slots
//! and [`PacketTx::flush`] makes one `sendto` for all of them (the paper's
//! `kn` batching).
//!
//! # Why frames are copied
//!
//! Every frame is copied between the ring and a [`Packet`] buffer from the
//! worker's pool. A frame left in the ring would hold its whole receive
//! block (and so the ring) until the router has sent or dropped it, which
//! may be much later (a queue, an ARP wait); a pool buffer also has the
//! headroom and annotations the elements expect. One copy of a frame that
//! is in cache anyway costs little next to the system call that AF_PACKET
//! makes per batch; AF_XDP in zero-copy mode is the backend that avoids it.

use crate::ifinfo::{self, IfInfo};
use crate::queue::{DeviceError, RxQueue, RxStats, TxQueue, TxStats};
use bricks_packet::{Batch, Packet, Timestamp, BUFFER_SIZE, MAX_FRAME};
use std::cell::Cell;
use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Ring sizes and how frames are spread over sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketConfig {
    /// Bytes per receive block, a multiple of the page size (default
    /// 256 KiB: about 2,000 minimum-size frames).
    pub rx_block_size: u32,
    /// Receive blocks per socket (default 16, so 4 MiB per queue).
    pub rx_blocks: u32,
    /// Milliseconds after its first frame that the kernel hands over a
    /// block that is not full (default 1; 0 lets the kernel choose from
    /// the link speed).
    pub rx_block_timeout_ms: u32,
    /// Transmit slots per socket (default 1,024 of 2,048 bytes; rounded up
    /// to fill whole pages).
    pub tx_frames: u32,
    /// How a fanout group spreads frames over its sockets.
    pub fanout: Fanout,
}

impl Default for PacketConfig {
    fn default() -> Self {
        PacketConfig {
            rx_block_size: 256 * 1024,
            rx_blocks: 16,
            rx_block_timeout_ms: 1,
            tx_frames: 1024,
            fanout: Fanout::Hash,
        }
    }
}

/// How the kernel picks the socket of a fanout group for each frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fanout {
    /// By flow hash (`PACKET_FANOUT_HASH`): a flow stays on one socket.
    #[default]
    Hash,
    /// By the hardware receive queue (`PACKET_FANOUT_QM`): follows the
    /// NIC's RSS.
    QueueMapping,
    /// By the receiving CPU (`PACKET_FANOUT_CPU`).
    Cpu,
    /// In turn (`PACKET_FANOUT_LB`): even load, but flows are reordered.
    RoundRobin,
}

impl Fanout {
    fn mode(self) -> u32 {
        match self {
            Fanout::Hash => libc::PACKET_FANOUT_HASH,
            Fanout::QueueMapping => libc::PACKET_FANOUT_QM,
            Fanout::Cpu => libc::PACKET_FANOUT_CPU,
            Fanout::RoundRobin => libc::PACKET_FANOUT_LB,
        }
    }
}

/// Opens `sockets` receive sockets joined in one fanout group (a group id
/// unique to this process and interface), and `sockets` transmit sockets,
/// on interface `ifname`. Socket i is "queue i". With `sockets == 1` no
/// fanout group is needed.
///
/// The group id is one the kernel picks so that no other group in the
/// namespace has it (`PACKET_FANOUT_FLAG_UNIQUEID`); kernels before 4.16
/// get one made from the process id, the interface index and a counter.
/// The sockets belong to the calling thread's network namespace. Errors
/// name the interface; a missing privilege says that root or
/// `CAP_NET_RAW` is needed.
pub fn open(
    ifname: &str,
    sockets: u32,
    cfg: &PacketConfig,
) -> Result<Vec<(PacketRx, PacketTx)>, DeviceError> {
    let info = ifinfo::lookup(ifname).map_err(|e| DeviceError::Io(format!("af_packet: {e}")))?;
    check_config(ifname, sockets, cfg)?;
    let mut group = None;
    let mut queues = Vec::with_capacity(sockets as usize);
    for q in 0..sockets {
        let fanout = (sockets > 1).then_some((cfg.fanout, &mut group));
        let rx = PacketRx::open(&info, q, cfg, fanout)?;
        let tx = PacketTx::open(&info, q, cfg)?;
        queues.push((rx, tx));
    }
    Ok(queues)
}

/// Refuses ring sizes the kernel would refuse, with the setting's name.
fn check_config(ifname: &str, sockets: u32, cfg: &PacketConfig) -> Result<(), DeviceError> {
    let page = page_size();
    let bad = |what: String| Err(DeviceError::Io(format!("af_packet: {ifname}: {what}")));
    if sockets == 0 {
        return bad("needs at least one socket".into());
    }
    if cfg.rx_block_size == 0 || !(cfg.rx_block_size as usize).is_multiple_of(page) {
        return bad(format!(
            "rx_block_size {} is not a positive multiple of the page size ({page} bytes)",
            cfg.rx_block_size
        ));
    }
    if cfg.rx_blocks == 0 || cfg.rx_block_size.checked_mul(cfg.rx_blocks).is_none() {
        return bad(format!(
            "rx_blocks {} must be at least 1 and the ring ({} x {} bytes) under 4 GiB",
            cfg.rx_blocks, cfg.rx_blocks, cfg.rx_block_size
        ));
    }
    if cfg.tx_frames == 0 || cfg.tx_frames > 1 << 20 {
        return bad(format!(
            "tx_frames {} must be between 1 and 1048576",
            cfg.tx_frames
        ));
    }
    Ok(())
}

/// The error for a failed setup call: a missing privilege is named, the
/// rest classified as at run time.
fn open_error(ifname: &str, what: &str, err: io::Error) -> DeviceError {
    match err.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => DeviceError::Io(format!(
            "{ifname}: {what}: packet sockets need root or the CAP_NET_RAW capability ({err})"
        )),
        _ => DeviceError::from_errno(ifname, &format!("af_packet: {what}"), err),
    }
}

/// How often an idle receive queue asks the kernel whether its interface
/// is still there (two cheap system calls).
const LINK_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// Nominal frame size of a TPACKET_V3 receive ring: the kernel checks it
/// against the block size but packs frames by their real length.
const RX_FRAME_SIZE: u32 = 2048;

// Where the kernel's structures keep what we read, from the uapi structs
// in `libc` (checked against the kernel's layout by a test).
const BLOCK_STATUS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, block_status);
const BLOCK_NUM_PKTS: usize =
    offset_of!(libc::tpacket_block_desc, hdr) + offset_of!(libc::tpacket_hdr_v1, num_pkts);
const BLOCK_FIRST_PKT: usize = offset_of!(libc::tpacket_block_desc, hdr)
    + offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
const H3_NEXT: usize = offset_of!(libc::tpacket3_hdr, tp_next_offset);
const H3_SEC: usize = offset_of!(libc::tpacket3_hdr, tp_sec);
const H3_NSEC: usize = offset_of!(libc::tpacket3_hdr, tp_nsec);
const H3_SNAPLEN: usize = offset_of!(libc::tpacket3_hdr, tp_snaplen);
const H3_LEN: usize = offset_of!(libc::tpacket3_hdr, tp_len);
const H3_MAC: usize = offset_of!(libc::tpacket3_hdr, tp_mac);
const H3_STATUS: usize = offset_of!(libc::tpacket3_hdr, tp_status);
const H3_VLAN_TCI: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tci);
const H3_VLAN_TPID: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tpid);
/// The `sockaddr_ll` the kernel writes after each frame header.
const H3_SLL: usize = tpacket_align(size_of::<libc::tpacket3_hdr>());
const H3_PKTTYPE: usize = H3_SLL + offset_of!(libc::sockaddr_ll, sll_pkttype);
const H3_END: usize = H3_SLL + size_of::<libc::sockaddr_ll>();
const H2_STATUS: usize = offset_of!(libc::tpacket2_hdr, tp_status);
const H2_LEN: usize = offset_of!(libc::tpacket2_hdr, tp_len);
/// Where a TPACKET_V2 transmit slot's frame starts (the kernel's
/// `tp_hdrlen - sizeof(struct sockaddr_ll)` without `PACKET_TX_HAS_OFF`).
const H2_DATA: usize = tpacket_align(size_of::<libc::tpacket2_hdr>());

const fn tpacket_align(x: usize) -> usize {
    (x + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1)
}

fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// One received frame in the ring.
struct Frame {
    /// Ring offset of its first byte.
    off: usize,
    len: usize,
    ts: Timestamp,
    /// The 802.1Q tag the kernel took off the frame before packet sockets
    /// saw it (TPID, TCI): `__netif_receive_skb_core` untags every VLAN
    /// frame into the skb's metadata, whether or not a VLAN device
    /// exists, and TPACKET_V3 reports it beside the frame. The frame is
    /// given back to the router as it was on the wire.
    vlan: Option<(u16, u16)>,
}

/// One receive queue: a packet socket with a TPACKET_V3 ring.
///
/// Frames come out with their kernel receive timestamp in the timestamp
/// annotation and every other annotation at its default: the packet type
/// and input device are the input element's business (it sets the type
/// from the destination MAC, as Click does).
pub struct PacketRx {
    // Declared before `sock`: the mapping goes before the socket closes.
    ring: Mmap,
    sock: Socket,
    ifname: String,
    ifindex: u32,
    queue: u32,
    block_size: usize,
    blocks: usize,
    /// The block being read, or the next one the kernel will hand over.
    block: usize,
    /// Frames of `block` not yet read; 0 when we do not hold it.
    left: u32,
    /// Ring offset of the next frame header of `block`.
    next: usize,
    stats: RxStats,
    /// Kernel drop counts, read (and reset in the kernel) when a block is
    /// released and from `stats`, which takes `&self`.
    ring_drops: Cell<u64>,
    last_check: Instant,
    /// Set once the interface is gone: the socket will never see a frame
    /// again.
    gone: bool,
}

impl PacketRx {
    fn open(
        info: &IfInfo,
        queue: u32,
        cfg: &PacketConfig,
        fanout: Option<(Fanout, &mut Option<FanoutGroup>)>,
    ) -> Result<PacketRx, DeviceError> {
        let name = info.name.as_str();
        let err = |what: &'static str| move |e: io::Error| open_error(name, what, e);
        // Protocol 0: the socket receives nothing until it is bound, after
        // its ring exists.
        let sock = Socket::packet().map_err(err("socket(AF_PACKET)"))?;
        sock.set(
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &(libc::tpacket_versions::TPACKET_V3 as libc::c_int),
        )
        .map_err(err("PACKET_VERSION 3"))?;
        let req = libc::tpacket_req3 {
            tp_block_size: cfg.rx_block_size,
            tp_block_nr: cfg.rx_blocks,
            tp_frame_size: RX_FRAME_SIZE.min(cfg.rx_block_size),
            tp_frame_nr: cfg.rx_block_size / RX_FRAME_SIZE.min(cfg.rx_block_size) * cfg.rx_blocks,
            tp_retire_blk_tov: cfg.rx_block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        sock.set(libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
            .map_err(err("PACKET_RX_RING"))?;
        let len = cfg.rx_block_size as usize * cfg.rx_blocks as usize;
        let ring = Mmap::ring(&sock, len).map_err(err("mmap of the receive ring"))?;
        // A router forwards out of the interfaces it reads: without this
        // every frame it sends would come back to it (Linux 4.20; older
        // kernels are covered by the packet-type check in `next_frame`).
        let _ = sock.set(libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1);
        // A socket that joins an existing group would receive every frame
        // on its own between `bind` and the join, duplicating the group's;
        // it drops everything until it is a member.
        let joining = matches!(&fanout, Some((_, Some(_))));
        if joining {
            sock.attach_drop_all().map_err(err("SO_ATTACH_FILTER"))?;
        }
        sock.bind(info.index, libc::ETH_P_ALL as u16)
            .map_err(err("bind"))?;
        if let Some((mode, group)) = fanout {
            let g = sock
                .join_fanout(*group, mode, info.index)
                .map_err(err("PACKET_FANOUT"))?;
            *group = Some(g);
            if joining {
                sock.detach_filter().map_err(err("SO_DETACH_FILTER"))?;
            }
        }
        Ok(PacketRx {
            ring,
            sock,
            ifname: info.name.clone(),
            ifindex: info.index,
            queue,
            block_size: cfg.rx_block_size as usize,
            blocks: cfg.rx_blocks as usize,
            block: 0,
            left: 0,
            next: 0,
            stats: RxStats::default(),
            ring_drops: Cell::new(0),
            last_check: Instant::now(),
            gone: false,
        })
    }

    /// Takes the next block if the kernel has handed it over; skips empty
    /// ones. Returns whether there are frames to read.
    fn take_block(&mut self) -> bool {
        for _ in 0..self.blocks {
            let base = self.block * self.block_size;
            if self.ring.load_acquire(base + BLOCK_STATUS) & libc::TP_STATUS_USER == 0 {
                return false;
            }
            self.left = self.ring.load(base + BLOCK_NUM_PKTS);
            self.next = base + self.ring.load(base + BLOCK_FIRST_PKT) as usize;
            if self.left > 0 {
                return true;
            }
            self.release_block();
        }
        false
    }

    /// Gives the current block back to the kernel and moves to the next.
    fn release_block(&mut self) {
        self.left = 0;
        let base = self.block * self.block_size;
        self.ring
            .store_release(base + BLOCK_STATUS, libc::TP_STATUS_KERNEL);
        self.block = (self.block + 1) % self.blocks;
        self.read_drops();
    }

    fn read_drops(&self) {
        if let Ok(s) = self.sock.ring_stats() {
            self.ring_drops
                .set(self.ring_drops.get() + u64::from(s.tp_drops));
        }
    }

    /// The next frame of the current block that the router should see,
    /// counting and skipping the ones it should not.
    #[inline]
    fn next_frame(&mut self) -> Option<Frame> {
        let end = (self.block + 1) * self.block_size;
        while self.left > 0 {
            let h = self.next;
            if h + H3_END > end {
                // The kernel never does this; stop at the block's end
                // rather than read outside it.
                self.left = 0;
                break;
            }
            self.left -= 1;
            self.next = h + self.ring.load(h + H3_NEXT) as usize;
            let snap = self.ring.load(h + H3_SNAPLEN) as usize;
            let len = self.ring.load(h + H3_LEN) as usize;
            if self.ring.load_u8(h + H3_PKTTYPE) == libc::PACKET_OUTGOING {
                continue;
            }
            let status = self.ring.load(h + H3_STATUS);
            let vlan = (status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    self.ring.load_u16(h + H3_VLAN_TPID)
                } else {
                    0x8100
                };
                (tpid, self.ring.load(h + H3_VLAN_TCI) as u16)
            });
            let tag_len = if vlan.is_some() { 4 } else { 0 };
            if len + tag_len > MAX_FRAME || snap != len || (vlan.is_some() && len < 12) {
                self.stats.oversized += 1;
                continue;
            }
            let off = h + usize::from(self.ring.load_u16(h + H3_MAC));
            if off + len > end {
                self.left = 0;
                break;
            }
            let ts = Timestamp::from_parts(
                u64::from(self.ring.load(h + H3_SEC)),
                self.ring.load(h + H3_NSEC),
            );
            return Some(Frame { off, len, ts, vlan });
        }
        None
    }

    /// Whether the interface is still there, asked at most every
    /// [`LINK_CHECK_INTERVAL`] while idle.
    fn check_link(&mut self) -> Result<(), DeviceError> {
        let now = Instant::now();
        if now.duration_since(self.last_check) < LINK_CHECK_INTERVAL {
            return Ok(());
        }
        self.last_check = now;
        link_status(&self.sock, &self.ifname, self.ifindex)
    }
}

/// Puts back the 802.1Q (or 802.1ad) tag the kernel took off a received
/// frame: the two MAC addresses move 4 bytes into the headroom and the tag
/// goes between them and the EtherType. The frame is at least 12 bytes
/// long (checked when it was read).
fn reinsert_vlan_tag(p: &mut Packet, tpid: u16, tci: u16) {
    if p.push_front(4).is_err() || p.len() < 16 {
        return;
    }
    let d = p.data_mut();
    d.copy_within(4..16, 0);
    d[12..14].copy_from_slice(&tpid.to_be_bytes());
    d[14..16].copy_from_slice(&tci.to_be_bytes());
}

impl RxQueue for PacketRx {
    fn ifname(&self) -> &str {
        &self.ifname
    }

    fn queue(&self) -> u32 {
        self.queue
    }

    fn backend(&self) -> &'static str {
        "af_packet"
    }

    fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
        if self.gone {
            return Err(DeviceError::Gone(self.ifname.clone()));
        }
        let want = max.min(batch.remaining());
        let mut got = 0;
        let mut bytes = 0;
        while got < want {
            if self.left == 0 && !self.take_block() {
                break;
            }
            // One trip to the pool for as many frames as the block still
            // has; the frames skipped as oversized leave empty packets at
            // the end, which go back.
            let before = batch.len();
            let mut filled = 0;
            Packet::alloc_batch(batch, (want - got).min(self.left as usize), |p| {
                if let Some(f) = self.next_frame() {
                    // Cannot fail: a new packet has MAX_FRAME bytes of room.
                    let _ = p.set_frame(self.ring.bytes(f.off, f.len));
                    if let Some((tpid, tci)) = f.vlan {
                        reinsert_vlan_tag(p, tpid, tci);
                    }
                    p.anno_mut().timestamp = f.ts;
                    filled += 1;
                    bytes += p.len() as u64;
                }
            });
            while batch.len() > before + filled {
                batch.pop();
            }
            got += filled;
            if self.left == 0 {
                self.release_block();
            }
        }
        self.stats.packets += got as u64;
        self.stats.bytes += bytes;
        if got == 0 {
            if let Err(e) = self.check_link() {
                self.gone = matches!(e, DeviceError::Gone(_));
                return Err(e);
            }
        }
        Ok(got)
    }

    fn stats(&self) -> RxStats {
        self.read_drops();
        RxStats {
            ring_drops: self.ring_drops.get(),
            ..self.stats
        }
    }
}

/// One transmit queue: a packet socket with a TPACKET_V2 ring.
///
/// The ring is TPACKET_V2 rather than V3: for transmission V3 has no
/// blocks and uses the same fixed slots as V2 (and only since Linux 4.11),
/// so V2 does the same work on every kernel.
///
/// The kernel chooses the hardware transmit queue (by the sending CPU or
/// the driver's own choice), so "queue i" is the socket's index.
///
/// `errors` counts the frames the kernel would refuse, which `enqueue`
/// drops itself (shorter than an Ethernet header, or longer than the MTU
/// plus the header and a VLAN tag if it has one), and any slot the kernel
/// marks `TP_STATUS_WRONG_FORMAT`.
pub struct PacketTx {
    // Declared before `sock`: the mapping goes before the socket closes.
    ring: Mmap,
    sock: Socket,
    ifname: String,
    ifindex: u32,
    queue: u32,
    /// Bytes per slot and slots in the ring.
    slot: usize,
    slots: usize,
    /// The MTU plus the Ethernet header: the largest untagged frame the
    /// kernel sends.
    mtu_len: usize,
    /// The next slot to fill.
    head: usize,
    /// Slots filled and not yet seen free again (the oldest is
    /// `head - in_use`).
    in_use: usize,
    /// Slots filled since the last flush.
    pending: usize,
    stats: TxStats,
}

impl PacketTx {
    fn open(info: &IfInfo, queue: u32, cfg: &PacketConfig) -> Result<PacketTx, DeviceError> {
        let name = info.name.as_str();
        let err = |what: &'static str| move |e: io::Error| open_error(name, what, e);
        let sock = Socket::packet().map_err(err("socket(AF_PACKET)"))?;
        sock.set(
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &(libc::tpacket_versions::TPACKET_V2 as libc::c_int),
        )
        .map_err(err("PACKET_VERSION 2"))?;
        // Without PACKET_LOSS a frame the kernel refuses stops the ring at
        // that slot for good (TP_STATUS_WRONG_FORMAT, and every later
        // `sendto` starts and ends there); with it the kernel skips the
        // frame. `enqueue` refuses frames of the wrong size itself, so it
        // can count them.
        sock.set(libc::SOL_PACKET, libc::PACKET_LOSS, &1)
            .map_err(err("PACKET_LOSS"))?;
        // The MTU as seen from the socket's namespace (sysfs shows the one
        // it was mounted in).
        let mtu = sock.mtu(name).unwrap_or(info.mtu) as usize;
        let need = (mtu + 18).min(BUFFER_SIZE);
        let slot = (H2_DATA + need).next_power_of_two().max(2048);
        let block = slot.max(page_size());
        let per_block = block / slot;
        let blocks = (cfg.tx_frames as usize).div_ceil(per_block);
        let slots = blocks * per_block;
        let req = libc::tpacket_req {
            tp_block_size: block as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: slot as u32,
            tp_frame_nr: slots as u32,
        };
        sock.set(libc::SOL_PACKET, libc::PACKET_TX_RING, &req)
            .map_err(err("PACKET_TX_RING"))?;
        let ring = Mmap::ring(&sock, block * blocks).map_err(err("mmap of the transmit ring"))?;
        // The router owns the interface: its own queues and flush policy
        // are the only queueing the frames need, and the qdisc layer would
        // add a lock and a queue per frame (Linux 3.14). Where it is
        // refused the frames simply go through the qdisc.
        let _ = sock.set(libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1);
        // Room in the socket's send budget for a whole ring in flight, so
        // `sendto` does not stop early with EAGAIN; best effort (the forced
        // variant needs CAP_NET_ADMIN, the plain one is capped by
        // net.core.wmem_max).
        let budget = (slots * slot).min(i32::MAX as usize) as libc::c_int;
        if sock
            .set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &budget)
            .is_err()
        {
            let _ = sock.set(libc::SOL_SOCKET, libc::SO_SNDBUF, &budget);
        }
        // Protocol 0: the socket sends on the interface and receives
        // nothing; the kernel takes each frame's protocol from its
        // Ethernet header.
        sock.bind(info.index, 0).map_err(err("bind"))?;
        Ok(PacketTx {
            ring,
            sock,
            ifname: info.name.clone(),
            ifindex: info.index,
            queue,
            slot,
            slots,
            mtu_len: mtu + 14,
            head: 0,
            in_use: 0,
            pending: 0,
            stats: TxStats::default(),
        })
    }

    /// Ring offset of the oldest slot not yet seen free.
    fn tail(&self) -> usize {
        (self.head + self.slots - self.in_use) % self.slots * self.slot
    }

    /// Takes back the slots the kernel has finished with, oldest first.
    fn reclaim(&mut self) {
        while self.in_use > self.pending {
            let s = self.tail();
            match self.ring.load_acquire(s + H2_STATUS) {
                libc::TP_STATUS_AVAILABLE => {}
                libc::TP_STATUS_WRONG_FORMAT => {
                    self.stats.errors += 1;
                    self.ring
                        .store_release(s + H2_STATUS, libc::TP_STATUS_AVAILABLE);
                }
                _ => break,
            }
            self.in_use -= 1;
        }
    }

    /// Whether the kernel accepts `frame`: at least an Ethernet header, at
    /// most the MTU plus the header (and a VLAN tag if it has one).
    #[inline]
    fn fits(&self, frame: &[u8]) -> bool {
        let vlan = frame.len() >= 14 && frame[12..14] == [0x81, 0x00];
        let max = (self.mtu_len + 4 * usize::from(vlan)).min(self.slot - H2_DATA);
        frame.len() >= 14 && frame.len() <= max
    }
}

impl TxQueue for PacketTx {
    fn ifname(&self) -> &str {
        &self.ifname
    }

    fn queue(&self) -> u32 {
        self.queue
    }

    fn backend(&self) -> &'static str {
        "af_packet"
    }

    fn enqueue(&mut self, batch: &mut Batch) -> Result<usize, DeviceError> {
        if self.in_use + batch.len() > self.slots {
            self.reclaim();
        }
        let mut placed = 0;
        for p in batch.iter() {
            let frame = p.data();
            if !self.fits(frame) {
                self.stats.errors += 1;
                continue;
            }
            if self.in_use == self.slots {
                self.stats.ring_full += 1;
                continue;
            }
            let s = self.head * self.slot;
            debug_assert_eq!(self.ring.load(s + H2_STATUS), libc::TP_STATUS_AVAILABLE);
            self.ring.write(s + H2_DATA, frame);
            self.ring.store(s + H2_LEN, frame.len() as u32);
            self.ring
                .store_release(s + H2_STATUS, libc::TP_STATUS_SEND_REQUEST);
            self.head = (self.head + 1) % self.slots;
            self.in_use += 1;
            self.pending += 1;
            placed += 1;
            self.stats.bytes += frame.len() as u64;
        }
        self.stats.packets += placed as u64;
        batch.clear();
        Ok(placed)
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        self.reclaim();
        // Frames flushed before but still requested: the kernel stopped
        // early (EAGAIN, a full device queue) and needs another kick.
        let stalled = self.in_use > self.pending
            && self.ring.load_acquire(self.tail() + H2_STATUS) == libc::TP_STATUS_SEND_REQUEST;
        if self.pending == 0 && !stalled {
            return Ok(());
        }
        self.stats.kicks += 1;
        match self.sock.kick() {
            Ok(()) => self.pending = 0,
            // Congestion (the send budget or the device queue is full):
            // the frames stay requested and `pending` says so, so the
            // caller flushes again.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR)
                ) => {}
            // A link that is down keeps its frames until it is up again.
            Err(e) if e.raw_os_error() == Some(libc::ENETDOWN) => {
                link_status(&self.sock, &self.ifname, self.ifindex)?;
            }
            Err(e) => return Err(DeviceError::from_errno(&self.ifname, "sendto", e)),
        }
        self.reclaim();
        Ok(())
    }

    fn pending(&self) -> usize {
        self.pending
    }

    fn stats(&self) -> TxStats {
        self.stats
    }
}

/// Whether the socket's interface is still there. A link that is merely
/// down is not an error: the kernel reattaches the socket when it comes
/// back up (received frames resume, requested ones are sent then). A
/// deleted interface, or one moved to another namespace, is
/// [`DeviceError::Gone`]: the socket's bound index is then -1 for good.
fn link_status(sock: &Socket, ifname: &str, ifindex: u32) -> Result<(), DeviceError> {
    match sock.bound_index() {
        Ok(i) if i == ifindex as i32 => {}
        Ok(_) => return Err(DeviceError::Gone(ifname.to_string())),
        Err(e) => return Err(DeviceError::from_errno(ifname, "getsockname", e)),
    }
    match sock.take_error() {
        Ok(None | Some(libc::ENETDOWN)) => Ok(()),
        Ok(Some(e)) => Err(DeviceError::from_errno(
            ifname,
            "socket",
            io::Error::from_raw_os_error(e),
        )),
        Err(e) => Err(DeviceError::from_errno(ifname, "SO_ERROR", e)),
    }
}

/// An identified fanout group: its id and the type and flags it was made
/// with (members must join with the same).
#[derive(Debug, Clone, Copy)]
struct FanoutGroup {
    id: u16,
    type_flags: u32,
}

/// An AF_PACKET socket, closed on drop.
struct Socket(OwnedFd);

impl Socket {
    /// A raw packet socket bound to nothing (it receives nothing yet).
    fn packet() -> io::Result<Socket> {
        // SAFETY: socket() takes no pointers.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and nothing else owns it.
        Ok(Socket(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// setsockopt with `val` as the option's bytes.
    fn set<T: Copy>(&self, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
        crate::sockopt::set(self.fd(), level, name, val)
    }

    /// getsockopt into `buf`; returns how many bytes the kernel wrote.
    fn get(&self, level: libc::c_int, name: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
        crate::sockopt::get(self.fd(), level, name, buf)
    }

    fn get_u32(&self, level: libc::c_int, name: libc::c_int) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.get(level, name, &mut b)?;
        Ok(u32::from_ne_bytes(b))
    }

    /// The ring's counters since the last call (the kernel resets them).
    fn ring_stats(&self) -> io::Result<libc::tpacket_stats_v3> {
        let mut b = [0u8; 12];
        self.get(libc::SOL_PACKET, libc::PACKET_STATISTICS, &mut b)?;
        let w = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(libc::tpacket_stats_v3 {
            tp_packets: w(0),
            tp_drops: w(4),
            tp_freeze_q_cnt: w(8),
        })
    }

    /// The pending socket error, cleared by reading it.
    fn take_error(&self) -> io::Result<Option<i32>> {
        let e = self.get_u32(libc::SOL_SOCKET, libc::SO_ERROR)? as i32;
        Ok((e != 0).then_some(e))
    }

    fn bind(&self, ifindex: u32, protocol: u16) -> io::Result<()> {
        let sa = libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: protocol.to_be(),
            sll_ifindex: ifindex as i32,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        // SAFETY: `sa` is a valid sockaddr_ll for the whole call and the
        // length passed is its size.
        let r = unsafe {
            libc::bind(
                self.fd(),
                (&sa as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The interface index the socket is bound to; -1 once the kernel
    /// unbound it (the interface was deleted or left the namespace).
    fn bound_index(&self) -> io::Result<i32> {
        let mut sa = libc::sockaddr_ll {
            sll_family: 0,
            sll_protocol: 0,
            sll_ifindex: 0,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        };
        let mut len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `sa` is writable for `len` bytes and `len` is valid, for
        // the whole call.
        let r = unsafe {
            libc::getsockname(
                self.fd(),
                (&mut sa as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sa.sll_ifindex)
    }

    /// The MTU of interface `ifname` in the socket's namespace.
    fn mtu(&self, ifname: &str) -> Option<u32> {
        let mut req = libc::ifreq {
            ifr_name: [0; libc::IFNAMSIZ],
            ifr_ifru: libc::__c_anonymous_ifr_ifru { ifru_mtu: 0 },
        };
        if ifname.len() >= libc::IFNAMSIZ {
            return None;
        }
        for (d, s) in req.ifr_name.iter_mut().zip(ifname.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: `req` is a valid, NUL-terminated ifreq that SIOCGIFMTU
        // reads the name from and writes the MTU into, for the whole call.
        let r = unsafe { libc::ioctl(self.fd(), libc::SIOCGIFMTU, &mut req as *mut libc::ifreq) };
        // SAFETY: `ifru_mtu` was initialised above and SIOCGIFMTU writes
        // only that field; every bit pattern is a valid c_int.
        let mtu = unsafe { req.ifr_ifru.ifru_mtu };
        (r == 0 && mtu > 0).then_some(mtu as u32)
    }

    /// Tells the kernel to send every requested slot of the transmit ring.
    fn kick(&self) -> io::Result<()> {
        // SAFETY: a null buffer of length 0 and no address are what a
        // TX-ring `sendto` takes; the kernel reads the ring instead.
        let r = unsafe {
            libc::sendto(
                self.fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A filter that drops every frame (classic BPF `ret #0`).
    fn attach_drop_all(&self) -> io::Result<()> {
        let mut drop_all = [libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        let prog = libc::sock_fprog {
            len: 1,
            filter: drop_all.as_mut_ptr(),
        };
        // The kernel copies the program during the call.
        self.set(libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)
    }

    fn detach_filter(&self) -> io::Result<()> {
        self.set(libc::SOL_SOCKET, libc::SO_DETACH_FILTER, &0 as &libc::c_int)
    }

    /// Joins `group`, or founds a new group when it is `None`; returns the
    /// group for the other members. The socket must be bound.
    fn join_fanout(
        &self,
        group: Option<FanoutGroup>,
        mode: Fanout,
        ifindex: u32,
    ) -> io::Result<FanoutGroup> {
        let set = |id: u16, type_flags: u32| {
            let arg = (u32::from(id) | type_flags << 16) as libc::c_int;
            self.set(libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
        };
        if let Some(g) = group {
            set(g.id, g.type_flags)?;
            return Ok(g);
        }
        let mode = mode.mode();
        let ignore = mode | libc::PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
        // The kernel picks an id no other group in the namespace has
        // (Linux 4.16; the outgoing flag, 4.20, like the socket option).
        for type_flags in [ignore, mode] {
            match set(0, type_flags | libc::PACKET_FANOUT_FLAG_UNIQUEID) {
                Ok(()) => {
                    let id = self.get_u32(libc::SOL_PACKET, libc::PACKET_FANOUT)? as u16;
                    return Ok(FanoutGroup { id, type_flags });
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        // Older kernels: an id made from the process, interface and a
        // counter, unique within this process.
        static NEXT: AtomicU16 = AtomicU16::new(0);
        let id = (std::process::id() as u16)
            .wrapping_mul(31)
            .wrapping_add((ifindex as u16).wrapping_mul(257))
            .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
        set(id, mode)?;
        Ok(FanoutGroup {
            id,
            type_flags: mode,
        })
    }
}

/// A ring shared with the kernel, unmapped on drop.
///
/// Every access goes through a method that checks its bounds (and the
/// alignment of words), so a wrong offset panics instead of reading
/// outside the mapping. Status and header words are accessed atomically:
/// the kernel writes them concurrently, and an atomic access with the
/// ring protocol's ordering is what its `smp_wmb`/`smp_rmb` pairs with.
struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone (no other handle to
// it exists in the process), so moving it to another thread is moving the
// ownership; it is not Sync, so one thread at a time uses it.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps the ring of `sock` (`len` bytes, as set up by
    /// PACKET_RX_RING/PACKET_TX_RING).
    fn ring(sock: &Socket, len: usize) -> io::Result<Mmap> {
        // SAFETY: a fresh shared mapping at an address the kernel chooses
        // aliases no Rust object; the arguments are plain values.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                sock.fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mmap { ptr, len })
    }

    #[inline(always)]
    fn at(&self, off: usize, n: usize, align: usize) -> *mut u8 {
        assert!(
            off.checked_add(n).is_some_and(|e| e <= self.len) && off.is_multiple_of(align),
            "ring access {off}+{n} outside {} bytes",
            self.len
        );
        // SAFETY: off + n <= len, so the result stays inside the mapping.
        unsafe { self.ptr.as_ptr().add(off) }
    }

    #[inline(always)]
    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `at` checked that 4 bytes at `off` are inside the
        // mapping, which lives as long as `self`, and 4-aligned (the
        // mapping is page-aligned); the kernel only ever accesses these
        // words as whole u32s.
        unsafe { AtomicU32::from_ptr(self.at(off, 4, 4).cast()) }
    }

    /// A status word, ordered before everything read after it.
    #[inline(always)]
    fn load_acquire(&self, off: usize) -> u32 {
        self.word(off).load(Ordering::Acquire)
    }

    /// A status word, ordered after everything written before it.
    #[inline(always)]
    fn store_release(&self, off: usize, v: u32) {
        self.word(off).store(v, Ordering::Release)
    }

    #[inline(always)]
    fn load(&self, off: usize) -> u32 {
        self.word(off).load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn store(&self, off: usize, v: u32) {
        self.word(off).store(v, Ordering::Relaxed)
    }

    #[inline(always)]
    fn load_u16(&self, off: usize) -> u16 {
        // SAFETY: as in `word`, for 2 bytes, 2-aligned.
        unsafe { AtomicU16::from_ptr(self.at(off, 2, 2).cast()) }.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn load_u8(&self, off: usize) -> u8 {
        // SAFETY: as in `word`, for 1 byte.
        unsafe { AtomicU8::from_ptr(self.at(off, 1, 1)) }.load(Ordering::Relaxed)
    }

    /// `n` bytes at `off`. Callers only ask for frames in a block or slot
    /// that the ring protocol has given to user space (its status was
    /// loaded with acquire), which the kernel does not write until the
    /// status is handed back.
    #[inline(always)]
    fn bytes(&self, off: usize, n: usize) -> &[u8] {
        // SAFETY: `at` checked that the range is inside the mapping, which
        // outlives the borrow of `self`; bytes have no invalid values, and
        // the kernel leaves the range alone while user space owns it.
        unsafe { std::slice::from_raw_parts(self.at(off, n, 1), n) }
    }

    /// Copies `src` to `off`, in a slot user space owns (its status is
    /// TP_STATUS_AVAILABLE and not yet handed over).
    #[inline(always)]
    fn write(&self, off: usize, src: &[u8]) {
        let dst = self.at(off, src.len(), 1);
        // SAFETY: `at` checked the range; it is shared memory no Rust
        // reference points into (`bytes` borrows are not held across
        // calls), so it cannot overlap `src`, a packet buffer.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and no
        // borrow of the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_netns::{skip_unless_root, Network};
    use std::collections::{HashMap, HashSet};

    // ---- helpers ----------------------------------------------------------

    use bricks_netns::in_namespace as in_netns;

    /// Runs `f` on a new thread without CAP_NET_RAW in its effective set
    /// (Linux keeps capabilities per thread).
    fn without_cap_net_raw<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            #[repr(C)]
            struct Header {
                version: u32,
                pid: libc::c_int,
            }
            #[repr(C)]
            #[derive(Clone, Copy, Default)]
            struct Data {
                effective: u32,
                permitted: u32,
                inheritable: u32,
            }
            const VERSION_3: u32 = 0x2008_0522;
            const CAP_NET_RAW: u32 = 13;
            let mut hdr = Header {
                version: VERSION_3,
                pid: 0,
            };
            let mut data = [Data::default(); 2];
            // SAFETY: for version 3 capget reads the header and writes two
            // Data records; both live for the call.
            let r = unsafe {
                libc::syscall(libc::SYS_capget, &mut hdr as *mut Header, data.as_mut_ptr())
            };
            assert_eq!(r, 0, "capget: {}", io::Error::last_os_error());
            data[0].effective &= !(1 << CAP_NET_RAW);
            // SAFETY: as for capget; capset only reads them, and changes
            // the calling thread's capabilities only.
            let r =
                unsafe { libc::syscall(libc::SYS_capset, &hdr as *const Header, data.as_ptr()) };
            assert_eq!(r, 0, "capset: {}", io::Error::last_os_error());
            f()
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }

    /// Namespaces `a` and `b` joined by the veth `va`-`vb` with `queues`
    /// queues. IPv6 is off, so the kernel sends nothing of its own.
    fn two_hosts(tag: &str, queues: u32) -> Network {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["a", "b"] {
            net.add_namespace(ns).unwrap();
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
                .unwrap();
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
                .unwrap();
        }
        net.add_link("a", "va", "b", "vb", queues).unwrap();
        net
    }

    fn open_in(
        net: &Network,
        ns: &str,
        ifname: &str,
        sockets: u32,
        cfg: PacketConfig,
    ) -> Vec<(PacketRx, PacketTx)> {
        let ifname = ifname.to_string();
        in_netns(&net.ns_name(ns), move || open(&ifname, sockets, &cfg)).unwrap()
    }

    const MARK: &[u8; 4] = b"BRKS";

    /// An Ethernet/IPv4/UDP frame of `len` (at least 60) bytes of flow
    /// `flow` (source address and port) carrying `seq`, with a correct
    /// IPv4 header checksum.
    fn udp_frame(seq: u32, flow: u16, len: usize) -> Vec<u8> {
        assert!(len >= 60);
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip_len = (len - 14) as u16;
        let [fh, fl] = flow.to_be_bytes();
        {
            let ip = &mut f[14..34];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
            ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
            ip[6] = 0x40; // DF
            ip[8] = 64;
            ip[9] = 17;
            ip[12..16].copy_from_slice(&[10, 1, fh, fl]);
            ip[16..20].copy_from_slice(&[10, 2, 0, 1]);
            let c = ip_checksum(ip);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        f[34..36].copy_from_slice(&(1024 + flow).to_be_bytes());
        f[36..38].copy_from_slice(&9u16.to_be_bytes());
        f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
        f[42..46].copy_from_slice(MARK);
        f[46..50].copy_from_slice(&seq.to_be_bytes());
        for (i, b) in f[50..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        f
    }

    /// RFC 1071: the ones' complement of the ones' complement sum.
    fn ip_checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// The sequence number of one of our test frames.
    fn seq_of(frame: &[u8]) -> Option<u32> {
        (frame.len() >= 50 && frame[12..14] == [8, 0] && frame[42..46] == *MARK)
            .then(|| u32::from_be_bytes([frame[46], frame[47], frame[48], frame[49]]))
    }

    fn batch_of(frames: &[Vec<u8>]) -> Batch {
        let mut b = Batch::new();
        for f in frames {
            assert!(b.push(Packet::from_slice(f).unwrap()).is_ok());
        }
        b
    }

    /// Enqueues `frames` and flushes them; returns how many were placed.
    fn send(tx: &mut PacketTx, frames: &[Vec<u8>]) -> usize {
        let n = tx.enqueue(&mut batch_of(frames)).unwrap();
        tx.flush().unwrap();
        n
    }

    /// Everything `rx` has now.
    fn drain_now(rx: &mut PacketRx, out: &mut Vec<Vec<u8>>) {
        let mut batch = Batch::new();
        while rx.recv(&mut batch, 256).unwrap() > 0 {
            out.extend(batch.drain().map(|p| p.data().to_vec()));
        }
    }

    /// Receives until `want` test frames have come or 5 s passed.
    fn collect(rx: &mut PacketRx, want: usize, out: &mut Vec<Vec<u8>>) {
        let start = Instant::now();
        while out.iter().filter(|f| seq_of(f).is_some()).count() < want
            && start.elapsed() < Duration::from_secs(5)
        {
            let before = out.len();
            drain_now(rx, out);
            if out.len() == before {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    // ---- without root -----------------------------------------------------

    #[test]
    fn defaults_are_sensible() {
        let c = PacketConfig::default();
        assert!((c.rx_block_size as usize).is_multiple_of(page_size()));
        assert_eq!(c.rx_block_size as u64 * c.rx_blocks as u64, 4 << 20);
        assert_eq!(c.rx_block_timeout_ms, 1);
        assert_eq!(c.tx_frames, 1024);
        assert_eq!(c.fanout, Fanout::Hash);
        assert_eq!(Fanout::Hash.mode(), libc::PACKET_FANOUT_HASH);
        assert_eq!(Fanout::QueueMapping.mode(), libc::PACKET_FANOUT_QM);
        assert_eq!(Fanout::Cpu.mode(), libc::PACKET_FANOUT_CPU);
        assert_eq!(Fanout::RoundRobin.mode(), libc::PACKET_FANOUT_LB);
    }

    /// The offsets match `include/uapi/linux/if_packet.h` on every
    /// architecture (the structs have no pointer-sized fields).
    #[test]
    fn ring_layouts_match_the_kernel() {
        assert_eq!((BLOCK_STATUS, BLOCK_NUM_PKTS, BLOCK_FIRST_PKT), (8, 12, 16));
        assert_eq!(
            (H3_NEXT, H3_SEC, H3_NSEC, H3_SNAPLEN, H3_LEN, H3_MAC),
            (0, 4, 8, 12, 16, 24)
        );
        assert_eq!((H3_SLL, H3_PKTTYPE, H3_END), (48, 58, 68));
        assert_eq!((H2_STATUS, H2_LEN, H2_DATA), (0, 4, 32));
    }

    #[test]
    fn a_missing_interface_is_named() {
        let e = open("bricks-nope0", 1, &PacketConfig::default())
            .err()
            .unwrap();
        let text = e.to_string();
        assert!(matches!(e, DeviceError::Io(_)), "{e:?}");
        assert!(
            text.contains("bricks-nope0") && text.contains("ip link"),
            "{text}"
        );
    }

    #[test]
    fn bad_sizes_are_refused_by_name() {
        let cfg = PacketConfig::default();
        let err = |sockets, cfg: PacketConfig| open("lo", sockets, &cfg).err().unwrap().to_string();
        assert!(err(0, cfg).contains("at least one socket"));
        let odd = PacketConfig {
            rx_block_size: 1000,
            ..cfg
        };
        assert!(err(1, odd).contains("rx_block_size 1000"));
        let none = PacketConfig {
            rx_blocks: 0,
            ..cfg
        };
        assert!(err(1, none).contains("rx_blocks 0"));
        let huge = PacketConfig {
            rx_block_size: 1 << 30,
            rx_blocks: 8,
            ..cfg
        };
        assert!(err(1, huge).contains("under 4 GiB"));
        let no_tx = PacketConfig {
            tx_frames: 0,
            ..cfg
        };
        assert!(err(1, no_tx).contains("tx_frames 0"));
    }

    #[test]
    fn a_missing_privilege_is_named() {
        let e = open_error(
            "eth0",
            "socket(AF_PACKET)",
            io::Error::from_raw_os_error(libc::EPERM),
        );
        assert!(e.to_string().contains("CAP_NET_RAW"), "{e}");
        let gone = open_error("eth0", "bind", io::Error::from_raw_os_error(libc::ENODEV));
        assert!(matches!(gone, DeviceError::Gone(_)), "{gone:?}");
        // The real thing: a thread without CAP_NET_RAW (any thread when not
        // root) opening a socket on `lo`.
        let opened = if bricks_netns::is_root() {
            without_cap_net_raw(|| open("lo", 1, &PacketConfig::default()).map(drop))
        } else {
            open("lo", 1, &PacketConfig::default()).map(drop)
        };
        let e = opened.unwrap_err();
        assert!(e.to_string().contains("root or the CAP_NET_RAW"), "{e}");
    }

    // ---- in namespaces, as root -----------------------------------------------

    #[test]
    fn a_thousand_frames_cross_a_veth_byte_for_byte() {
        if skip_unless_root("a_thousand_frames_cross_a_veth_byte_for_byte").is_some() {
            return;
        }
        let net = two_hosts("ap1", 1);
        let cfg = PacketConfig::default();
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        assert_eq!(
            (rx.backend(), rx.ifname(), rx.queue()),
            ("af_packet", "vb", 0)
        );
        assert_eq!(
            (tx.backend(), tx.ifname(), tx.queue()),
            ("af_packet", "va", 0)
        );

        let frames: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| udp_frame(i, (i % 16) as u16, 60 + (i as usize * 37) % 1455))
            .collect();
        let mut got = Vec::new();
        for chunk in frames.chunks(50) {
            assert_eq!(send(&mut tx, chunk), chunk.len());
            drain_now(&mut rx, &mut got);
        }
        collect(&mut rx, frames.len(), &mut got);

        let mut seen = HashSet::new();
        for f in &got {
            if let Some(seq) = seq_of(f) {
                assert!(seen.insert(seq), "frame {seq} arrived twice");
                assert_eq!(f, &frames[seq as usize], "frame {seq} changed on the way");
            }
        }
        assert_eq!(seen.len(), frames.len(), "frames lost");
        let sent_bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
        let tx_stats = tx.stats();
        assert_eq!((tx_stats.packets, tx_stats.bytes), (1000, sent_bytes));
        assert_eq!((tx_stats.ring_full, tx_stats.errors), (0, 0));
        assert!(tx_stats.kicks >= 20, "{tx_stats:?}");
        let rx_stats = rx.stats();
        let got_bytes: u64 = got.iter().map(|f| f.len() as u64).sum();
        assert_eq!(
            (rx_stats.packets, rx_stats.bytes),
            (got.len() as u64, got_bytes)
        );
        assert_eq!((rx_stats.ring_drops, rx_stats.oversized), (0, 0));
        // Everything sent was taken back from the kernel.
        let start = Instant::now();
        while tx.in_use > 0 && start.elapsed() < Duration::from_secs(5) {
            tx.flush().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!((tx.in_use, tx.pending()), (0, 0));
    }

    #[test]
    fn a_fanout_group_spreads_flows_without_loss_or_duplicates() {
        if skip_unless_root("a_fanout_group_spreads_flows_without_loss_or_duplicates").is_some() {
            return;
        }
        let net = two_hosts("ap2", 2);
        let cfg = PacketConfig::default();
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let mut rxs: Vec<PacketRx> = open_in(&net, "b", "vb", 2, cfg)
            .into_iter()
            .map(|(rx, _)| rx)
            .collect();
        assert_eq!(rxs.iter().map(|r| r.queue()).collect::<Vec<_>>(), [0, 1]);

        const N: u32 = 2000;
        let frames: Vec<Vec<u8>> = (0..N)
            .map(|i| udp_frame(i, (i % 128) as u16, 60 + (i as usize % 200)))
            .collect();
        let mut got: [Vec<Vec<u8>>; 2] = Default::default();
        let drain = |rxs: &mut Vec<PacketRx>, got: &mut [Vec<Vec<u8>>; 2]| {
            for (rx, out) in rxs.iter_mut().zip(got.iter_mut()) {
                drain_now(rx, out);
            }
        };
        for chunk in frames.chunks(100) {
            assert_eq!(send(&mut tx, chunk), chunk.len());
            drain(&mut rxs, &mut got);
        }
        let start = Instant::now();
        let ours =
            |got: &[Vec<Vec<u8>>; 2]| got.iter().flatten().filter(|f| seq_of(f).is_some()).count();
        while ours(&got) < N as usize && start.elapsed() < Duration::from_secs(5) {
            drain(&mut rxs, &mut got);
            std::thread::sleep(Duration::from_millis(1));
        }

        let mut seen = HashSet::new();
        let mut flow_socket: HashMap<u16, usize> = HashMap::new();
        let mut per_socket = [0; 2];
        for (s, frames_of_s) in got.iter().enumerate() {
            for f in frames_of_s {
                let Some(seq) = seq_of(f) else { continue };
                assert!(seen.insert(seq), "frame {seq} arrived twice");
                assert_eq!(f, &frames[seq as usize]);
                per_socket[s] += 1;
                let flow = (seq % 128) as u16;
                let first = *flow_socket.entry(flow).or_insert(s);
                assert_eq!(first, s, "flow {flow} was split over both sockets");
            }
        }
        assert_eq!(seen.len(), N as usize, "frames lost");
        assert!(
            per_socket.iter().all(|&n| n > 0),
            "not spread: {per_socket:?}"
        );
        for (rx, out) in rxs.iter().zip(&got) {
            assert_eq!(rx.stats().packets, out.len() as u64);
            assert_eq!(rx.stats().ring_drops, 0);
        }
    }

    #[test]
    fn a_full_transmit_ring_drops_and_counts_without_blocking() {
        if skip_unless_root("a_full_transmit_ring_drops_and_counts_without_blocking").is_some() {
            return;
        }
        let net = two_hosts("ap3", 1);
        let cfg = PacketConfig {
            tx_frames: 64,
            ..PacketConfig::default()
        };
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        assert_eq!(tx.slots, 64);

        let frames: Vec<Vec<u8>> = (0..120u32).map(|i| udp_frame(i, 0, 100)).collect();
        let start = Instant::now();
        assert_eq!(tx.enqueue(&mut batch_of(&frames[..100])).unwrap(), 64);
        assert_eq!((tx.stats().ring_full, tx.pending()), (36, 64));
        assert_eq!(tx.enqueue(&mut batch_of(&frames[100..110])).unwrap(), 0);
        assert_eq!(tx.stats().ring_full, 46);
        assert!(start.elapsed() < Duration::from_secs(1), "enqueue blocked");
        tx.flush().unwrap();

        let mut got = Vec::new();
        collect(&mut rx, 64, &mut got);
        let seqs: HashSet<u32> = got.iter().filter_map(|f| seq_of(f)).collect();
        assert_eq!(
            seqs,
            (0..64).collect(),
            "the first 64 frames, and only them"
        );

        // Once the kernel is done with them, the slots are free again.
        let start = Instant::now();
        let mut placed = 0;
        while placed == 0 && start.elapsed() < Duration::from_secs(5) {
            tx.flush().unwrap();
            placed = tx.enqueue(&mut batch_of(&frames[110..120])).unwrap();
        }
        assert_eq!(placed, 10);
        tx.flush().unwrap();
        collect(&mut rx, 74, &mut got);
        let s = tx.stats();
        assert_eq!((s.packets, s.ring_full, s.errors), (74, 46, 0));
        assert_eq!(got.iter().filter(|f| seq_of(f).is_some()).count(), 74);
    }

    #[test]
    fn frames_the_kernel_would_refuse_are_counted_as_errors() {
        if skip_unless_root("frames_the_kernel_would_refuse_are_counted_as_errors").is_some() {
            return;
        }
        let net = two_hosts("ap7", 1);
        let (_, mut tx) = open_in(&net, "a", "va", 1, PacketConfig::default())
            .pop()
            .unwrap();
        let mut tagged = udp_frame(1, 0, 1518);
        tagged[12..14].copy_from_slice(&[0x81, 0x00]);
        let frames = vec![
            vec![0u8; 10],         // shorter than an Ethernet header
            udp_frame(0, 0, 1515), // one byte over the MTU
            tagged,                // a VLAN tag may add 4 bytes
            udp_frame(2, 0, 1514), // exactly the MTU
        ];
        assert_eq!(tx.enqueue(&mut batch_of(&frames)).unwrap(), 2);
        assert_eq!(tx.stats().errors, 2);
        tx.flush().unwrap();
    }

    #[test]
    fn deleting_the_interface_while_receiving_is_gone() {
        if skip_unless_root("deleting_the_interface_while_receiving_is_gone").is_some() {
            return;
        }
        let net = two_hosts("ap4", 1);
        let cfg = PacketConfig::default();
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        let frames: Vec<Vec<u8>> = (0..10u32).map(|i| udp_frame(i, 0, 64)).collect();
        send(&mut tx, &frames);
        let mut got = Vec::new();
        collect(&mut rx, 10, &mut got);
        assert_eq!(got.iter().filter(|f| seq_of(f).is_some()).count(), 10);

        bricks_netns::ip(&["-n", &net.ns_name("b"), "link", "del", "vb"]).unwrap();
        let start = Instant::now();
        let mut batch = Batch::new();
        let err = loop {
            match rx.recv(&mut batch, 32) {
                Err(e) => break e,
                Ok(_) if start.elapsed() > Duration::from_secs(5) => {
                    panic!("no error 5 s after the interface was deleted")
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        assert_eq!(err, DeviceError::Gone("vb".into()));
        assert!(err.to_string().contains("gone"));
        assert!(matches!(rx.recv(&mut batch, 32), Err(DeviceError::Gone(_))));
        // The peer went with it.
        tx.enqueue(&mut batch_of(&frames[..1])).unwrap();
        assert!(
            matches!(tx.flush(), Err(DeviceError::Gone(_))),
            "sending on a deleted interface"
        );
    }

    #[test]
    fn a_link_that_goes_down_and_up_is_not_gone() {
        if skip_unless_root("a_link_that_goes_down_and_up_is_not_gone").is_some() {
            return;
        }
        let net = two_hosts("ap6", 1);
        let cfg = PacketConfig::default();
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        let link = |ns: &str, dev: &str, state: &str| {
            bricks_netns::ip(&["-n", &net.ns_name(ns), "link", "set", dev, state]).unwrap();
        };
        link("b", "vb", "down");
        link("a", "va", "down");
        let mut batch = Batch::new();
        let start = Instant::now();
        while start.elapsed() < 3 * LINK_CHECK_INTERVAL {
            assert_eq!(rx.recv(&mut batch, 32), Ok(0));
            std::thread::sleep(Duration::from_millis(1));
        }
        let frames: Vec<Vec<u8>> = (0..10u32).map(|i| udp_frame(i, 0, 64)).collect();
        assert_eq!(tx.enqueue(&mut batch_of(&frames)).unwrap(), 10);
        assert_eq!(tx.flush(), Ok(()));
        assert_eq!(tx.pending(), 10, "held while the link is down");

        link("b", "vb", "up");
        link("a", "va", "up");
        let start = Instant::now();
        while tx.pending() > 0 && start.elapsed() < Duration::from_secs(5) {
            tx.flush().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut got = Vec::new();
        collect(&mut rx, 10, &mut got);
        let seqs: HashSet<u32> = got.iter().filter_map(|f| seq_of(f)).collect();
        assert_eq!(seqs, (0..10).collect());
    }

    #[test]
    fn a_router_does_not_receive_its_own_frames() {
        if skip_unless_root("a_router_does_not_receive_its_own_frames").is_some() {
            return;
        }
        let net = two_hosts("ap8", 1);
        let cfg = PacketConfig::default();
        let (mut own_rx, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        let frames: Vec<Vec<u8>> = (0..20u32).map(|i| udp_frame(i, 0, 64)).collect();
        assert_eq!(send(&mut tx, &frames), 20);
        let mut got = Vec::new();
        collect(&mut rx, 20, &mut got);
        assert_eq!(got.iter().filter(|f| seq_of(f).is_some()).count(), 20);
        let mut own = Vec::new();
        drain_now(&mut own_rx, &mut own);
        assert_eq!(own.iter().filter(|f| seq_of(f).is_some()).count(), 0);
    }

    #[test]
    fn a_full_receive_ring_counts_its_drops() {
        if skip_unless_root("a_full_receive_ring_counts_its_drops").is_some() {
            return;
        }
        let net = two_hosts("ap9", 1);
        let cfg = PacketConfig {
            rx_block_size: page_size() as u32,
            rx_blocks: 2,
            ..PacketConfig::default()
        };
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        // Two one-page blocks hold six of these; nobody reads meanwhile.
        let frames: Vec<Vec<u8>> = (0..100u32).map(|i| udp_frame(i, 0, 1000)).collect();
        assert_eq!(send(&mut tx, &frames), 100);
        std::thread::sleep(Duration::from_millis(100));
        let mut got = Vec::new();
        drain_now(&mut rx, &mut got);
        let s = rx.stats();
        assert!(s.ring_drops > 0, "{s:?}");
        assert_eq!(s.packets, got.len() as u64);
        assert_eq!(s.packets + s.ring_drops, 100, "{s:?}");
        // The ring works again once read.
        send(&mut tx, &frames[..3]);
        collect(&mut rx, got.len() + 3, &mut got);
        assert_eq!(rx.stats().packets, got.len() as u64);
    }

    #[test]
    fn frames_larger_than_a_packet_are_counted_and_skipped() {
        if skip_unless_root("frames_larger_than_a_packet_are_counted_and_skipped").is_some() {
            return;
        }
        let net = two_hosts("apa", 1);
        for (ns, dev, addr) in [("a", "va", "10.9.0.1/24"), ("b", "vb", "10.9.0.2/24")] {
            let full = net.ns_name(ns);
            bricks_netns::ip(&["-n", &full, "link", "set", dev, "mtu", "4000"]).unwrap();
            net.add_addr(ns, dev, addr).unwrap();
        }
        let cfg = PacketConfig::default();
        let (_, tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        // The MTU is the one of the socket's namespace.
        assert_eq!(tx.mtu_len, 4014);
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        let ping = net
            .exec(
                "a",
                &["ping", "-c", "1", "-W", "2", "-s", "3000", "10.9.0.2"],
            )
            .output()
            .unwrap();
        assert!(ping.status.success(), "{ping:?}");
        let mut got = Vec::new();
        let start = Instant::now();
        while rx.stats().oversized == 0 && start.elapsed() < Duration::from_secs(5) {
            drain_now(&mut rx, &mut got);
            std::thread::sleep(Duration::from_millis(1));
        }
        drain_now(&mut rx, &mut got);
        assert_eq!(rx.stats().oversized, 1, "the echo request");
        assert!(got.iter().all(|f| f.len() <= MAX_FRAME));
        // The ARP request that came before it did arrive.
        assert!(got.iter().any(|f| f[12..14] == [0x08, 0x06]));
    }

    #[test]
    fn recv_takes_exactly_max_across_block_boundaries() {
        if skip_unless_root("recv_takes_exactly_max_across_block_boundaries").is_some() {
            return;
        }
        let net = two_hosts("ap5", 1);
        // One-page blocks hold three 1,000-byte frames each.
        let cfg = PacketConfig {
            rx_block_size: page_size() as u32,
            rx_blocks: 64,
            ..PacketConfig::default()
        };
        let (_, mut tx) = open_in(&net, "a", "va", 1, cfg).pop().unwrap();
        let (mut rx, _) = open_in(&net, "b", "vb", 1, cfg).pop().unwrap();
        let frames: Vec<Vec<u8>> = (0..100u32).map(|i| udp_frame(i, 0, 1000)).collect();
        assert_eq!(send(&mut tx, &frames), 100);
        // Every block, the last one too, is handed over by then.
        std::thread::sleep(Duration::from_millis(200));

        let mut seqs = Vec::new();
        let mut take = |rx: &mut PacketRx, batch: &mut Batch, max: usize| {
            let before = batch.len();
            let n = rx.recv(batch, max).unwrap();
            assert_eq!(batch.len(), before + n);
            seqs.extend(
                batch.as_slice()[before..]
                    .iter()
                    .filter_map(|p| seq_of(p.data())),
            );
            n
        };
        let mut batch = Batch::new();
        assert_eq!(take(&mut rx, &mut batch, 0), 0);
        for _ in 0..5 {
            assert_eq!(take(&mut rx, &mut batch, 7), 7);
            batch.clear();
        }
        // A batch with room for 6 gets 6, whatever `max` says.
        let mut full = batch_of(&vec![vec![0u8; 60]; 250]);
        assert_eq!(take(&mut rx, &mut full, 32), 6);
        assert_eq!(full.len(), 256);
        assert_eq!(take(&mut rx, &mut batch, 1), 1);
        batch.clear();
        assert_eq!(take(&mut rx, &mut batch, 256), 58);
        assert_eq!(take(&mut rx, &mut batch, 256), 0);
        seqs.sort_unstable();
        assert_eq!(seqs, (0..100).collect::<Vec<_>>());
        assert_eq!(rx.stats().packets, 100);
    }
}
