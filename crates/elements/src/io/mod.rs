//! Elements where packets enter and leave: capture files, interfaces and
//! the host's own stack (TUN/TAP devices), multicast UDP sockets, TCP, UDP,
//! UNIX-domain and raw IP sockets; and the user-level helpers that watch or
//! serve a run from outside the data path (ProgressBar, QuitWatcher,
//! ChatterSocket, ChangeUID).

pub mod capture;
pub mod change_uid;
pub mod chatter_socket;
pub mod device;
pub mod dpdk;
pub mod from_dump;
pub mod host;
pub mod kernel_filter;
pub mod live;
pub mod mcast_socket;
pub mod progress_bar;
pub mod quit_watcher;
pub mod raw_socket;
pub mod raw_socket_compat;
pub mod sniffers;
pub mod socket;
pub mod socket_compat;
pub mod to_dump;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &device::FROM_DEVICE,
    &device::POLL_DEVICE,
    &device::TO_DEVICE,
    &dpdk::FROM_DPDK_DEVICE,
    &dpdk::TO_DPDK_DEVICE,
    &dpdk::DPDK_INFO,
    &dpdk::ENSURE_DPDK_BUFFER,
    &dpdk::TSC_CLOCK,
    &host::TO_HOST,
    &sniffers::CLASS,
    &host::FROM_HOST,
    &host::KERNEL_TUN,
    &host::KERNEL_TAP,
    &from_dump::CLASS,
    &to_dump::CLASS,
    &mcast_socket::CLASS,
    &socket::CLASS,
    &socket_compat::TO_SOCKET,
    &socket_compat::FROM_SOCKET,
    &raw_socket::CLASS,
    &raw_socket_compat::TO_RAW_SOCKET,
    &raw_socket_compat::FROM_RAW_SOCKET,
    &progress_bar::CLASS,
    &quit_watcher::CLASS,
    &chatter_socket::CLASS,
    &change_uid::CLASS,
    &kernel_filter::CLASS,
];

/// SNAPLEN, HEADROOM and BURST of a socket element (McastSocket, Socket,
/// RawSocket): the bytes kept of what is read (from `min_snaplen`, the
/// least a packet must hold, to the largest packet bricks holds; 2,048 by
/// default) and the reads a task run makes. HEADROOM is checked, not
/// kept: every bricks packet has the same headroom.
pub(crate) fn read_socket_sizes(
    args: &mut bricks_element::Args<'_>,
    min_snaplen: usize,
) -> Result<(usize, usize), bricks_element::ArgError> {
    use bricks_element::ArgError;
    use bricks_packet::{DEFAULT_BURST, HEADROOM, MAX_BATCH, MAX_FRAME};
    let snaplen = match args.read::<usize>("SNAPLEN")? {
        Some(n) if !(min_snaplen..=MAX_FRAME).contains(&n) => {
            return Err(ArgError::new(format!(
                "SNAPLEN {n}: must be {min_snaplen} to {MAX_FRAME}, the largest packet bricks \
                 holds"
            )))
        }
        Some(n) => n,
        None => 2048.min(MAX_FRAME),
    };
    if let Some(h) = args.read::<usize>("HEADROOM")? {
        if h > HEADROOM {
            return Err(ArgError::new(format!(
                "HEADROOM {h}: bricks packets have {HEADROOM} bytes of headroom, no more"
            )));
        }
    }
    let burst = match args.read::<usize>("BURST")? {
        Some(0) => return Err(ArgError::new("BURST must be at least 1")),
        Some(b) => b.min(MAX_BATCH),
        None => DEFAULT_BURST,
    };
    Ok((snaplen, burst))
}
