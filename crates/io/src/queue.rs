//! The interface every live device backend implements: one receive queue
//! and one transmit queue, each owned by exactly one worker.
//!
//! RouteBricks §4.2: a queue is touched by one core only, so nothing here
//! locks. A backend hands out each queue once; the worker that takes it is
//! its only user for the rest of the run (the types are `Send`, not
//! `Sync`).
//!
//! Batching follows the paper's two knobs. `recv` takes up to `kp` frames
//! per call (the poll batch); `enqueue` only places frames in the transmit
//! ring and `flush` tells the kernel to send them, so the caller decides
//! how many frames share one kick (`kn`) and how long a frame may wait for
//! company (the flush timeout).

use bricks_packet::Batch;

/// Why a queue operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// The interface went away (deleted, moved to another namespace).
    Gone(String),
    /// Any other failure, with the system's words.
    Io(String),
}

impl core::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DeviceError::Gone(s) => write!(f, "{s}: the interface is gone"),
            DeviceError::Io(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for DeviceError {}

impl DeviceError {
    /// Classifies an `errno` from a socket call on interface `ifname`.
    pub fn from_errno(ifname: &str, what: &str, err: std::io::Error) -> DeviceError {
        match err.raw_os_error() {
            Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN) => {
                DeviceError::Gone(format!("{ifname}: {what}: {err}"))
            }
            _ => DeviceError::Io(format!("{ifname}: {what}: {err}")),
        }
    }
}

/// Counters of one receive queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Frames handed to the router.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Frames the kernel dropped because the ring was full.
    pub ring_drops: u64,
    /// Frames too large for a packet buffer.
    pub oversized: u64,
}

/// Counters of one transmit queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames placed in the ring.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Frames dropped because the ring was full.
    pub ring_full: u64,
    /// Calls that told the kernel to send (one per flushed batch).
    pub kicks: u64,
    /// Frames the kernel reported failing.
    pub errors: u64,
}

/// One receive queue of one interface.
pub trait RxQueue: Send {
    /// The interface's name.
    fn ifname(&self) -> &str;
    /// The hardware queue number (for a fanout socket, its index).
    fn queue(&self) -> u32;
    /// Which backend serves it (`af_xdp`, `af_packet`, `ring`).
    fn backend(&self) -> &'static str;
    /// Appends up to `max` received frames to `batch` (never more than it
    /// has room for), each as a new packet holding a copy of the frame.
    /// Never blocks; returns how many were appended.
    fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError>;
    /// The queue's counters.
    fn stats(&self) -> RxStats;
}

/// One transmit queue of one interface.
pub trait TxQueue: Send {
    /// The interface's name.
    fn ifname(&self) -> &str;
    /// The hardware queue number (or the socket's index).
    fn queue(&self) -> u32;
    /// Which backend serves it.
    fn backend(&self) -> &'static str;
    /// Takes every packet out of `batch`: the frames the ring has room for
    /// are copied into it (sent at the next `flush`), the others are
    /// dropped and counted in `ring_full`. Never blocks. Returns how many
    /// were placed.
    fn enqueue(&mut self, batch: &mut Batch) -> Result<usize, DeviceError>;
    /// Tells the kernel to send what `enqueue` placed, and reclaims ring
    /// space the kernel has finished with. Cheap when nothing is pending.
    fn flush(&mut self) -> Result<(), DeviceError>;
    /// Frames placed but not yet flushed.
    fn pending(&self) -> usize;
    /// The queue's counters.
    fn stats(&self) -> TxStats;
}
