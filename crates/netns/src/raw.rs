//! A raw AF_PACKET socket on one interface, for tests that send and read
//! whole Ethernet frames as a host would.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A raw socket bound to one interface, in the network namespace of the
/// thread that opened it (see [`crate::in_namespace`]).
pub struct RawSocket {
    fd: OwnedFd,
}

impl RawSocket {
    /// Opens a socket for every protocol on `ifname` with a 32 MiB
    /// receive buffer, so that a test reading late loses nothing. Panics
    /// on failure (tests only).
    pub fn open(ifname: &str) -> RawSocket {
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket(2) with constant arguments, result checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                i32::from(proto),
            )
        };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        // SAFETY: `fd` is fresh and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let big: libc::c_int = 32 << 20;
        // SAFETY: the option value is a valid c_int for the call.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&big as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        let name = std::ffi::CString::new(ifname).unwrap();
        // SAFETY: `name` is a valid C string for the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        assert_ne!(index, 0, "no interface {ifname}");
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the given length.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "bind: {}", std::io::Error::last_os_error());
        RawSocket { fd }
    }

    /// Sends one whole frame.
    pub fn send(&self, frame: &[u8]) {
        assert!(
            self.try_send(frame),
            "send: {}",
            std::io::Error::last_os_error()
        );
    }

    /// Sends one whole frame; false when it was not sent, as when the
    /// socket's buffer is full (ENOBUFS) under a flood.
    pub fn try_send(&self, frame: &[u8]) -> bool {
        // SAFETY: `frame` is valid for reads of its length.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        r == frame.len() as isize
    }

    /// The next frame that arrived (not one this host sent), if any; never
    /// waits.
    pub fn recv(&self) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        loop {
            // SAFETY: all-zero is a valid sockaddr_ll.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` and `from` are valid for writes of their sizes.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                return None;
            }
            if from.sll_pkttype != libc::PACKET_OUTGOING {
                buf.truncate(n as usize);
                return Some(buf);
            }
        }
    }
}
