//! Where packets enter and leave a router: capture files now, Linux
//! devices (AF_XDP, AF_PACKET) behind the same names later.
//!
//! [`pcap`] reads and writes the classic libpcap format in both byte orders
//! and both time resolutions. [`binding`] maps an interface name used in a
//! configuration (`FromDevice(eth0)`) to what backs it, so that an
//! unmodified router configuration can run offline on capture files.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod afpacket;
pub mod binding;
pub mod dispatch;
pub mod ifinfo;
pub mod live;
pub mod pcap;
pub mod queue;
pub mod sniffers;
mod sockopt;
pub mod steer;
pub mod tun;
pub mod xdp;

pub use queue::{DeviceError, RxQueue, RxStats, TxQueue, TxStats};
