//! Elements where packets enter and leave: capture files, interfaces and
//! the host's own stack (TUN/TAP devices), multicast UDP sockets.

pub mod capture;
pub mod device;
pub mod dpdk;
pub mod from_dump;
pub mod host;
pub mod live;
pub mod mcast_socket;
pub mod sniffers;
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
];
