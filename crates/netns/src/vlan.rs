//! 802.1Q for test networks on kernels built without VLAN devices.
//!
//! Tests put Linux hosts on VLANs of a trunk. Where the kernel has 802.1Q
//! (`CONFIG_VLAN_8021Q`), a host gets a real VLAN device
//! (`ip link add link TRUNK type vlan id N`); where it has not, a
//! [`VlanSwitch`] in a namespace of its own does what an access switch
//! does: each access port belongs to one VLAN, frames from it leave on the
//! trunk with that VLAN's tag, and tagged frames from the trunk leave,
//! untagged, on the access port of their VLAN. It is written here, apart
//! from the router's own VLAN elements, so a test checks the router
//! against an independent tagger.
//!
//! The kernel takes the tag off every received VLAN frame before packet
//! sockets see it, whether or not 802.1Q is built, and reports it in the
//! frame's auxiliary data (`PACKET_AUXDATA`); the switch reads it there.

use crate::{ip, NetnsError};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Whether the kernel can make 802.1Q VLAN devices: tries one in a
/// namespace of its own, deleted at once.
pub fn have_kernel_vlan() -> bool {
    let ns = format!("bvlanprobe{}", std::process::id());
    if ip(&["netns", "add", &ns]).is_err() {
        return false;
    }
    let ok = ip(&["-n", &ns, "link", "add", "p0", "type", "dummy"]).is_ok()
        && ip(&[
            "-n", &ns, "link", "add", "link", "p0", "name", "p0.5", "type", "vlan", "id", "5",
        ])
        .is_ok();
    let _ = ip(&["netns", "del", &ns]);
    ok
}

/// A user-space 802.1Q access switch between one trunk and several access
/// ports of one namespace. It forwards until dropped.
pub struct VlanSwitch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    counts: Arc<SwitchCounts>,
}

/// What a [`VlanSwitch`] did.
#[derive(Debug, Default)]
pub struct SwitchCounts {
    /// Frames tagged onto the trunk.
    pub tagged: AtomicU64,
    /// Frames untagged onto an access port.
    pub untagged: AtomicU64,
    /// Frames from the trunk with no tag or a VLAN no port has.
    pub dropped: AtomicU64,
}

impl VlanSwitch {
    /// Starts a switch in namespace `ns` (a full name) with trunk
    /// interface `trunk` and access ports `(interface, VLAN ID)`. The
    /// interfaces must exist and be up.
    pub fn start(ns: &str, trunk: &str, access: &[(&str, u16)]) -> Result<VlanSwitch, NetnsError> {
        let ns = ns.to_string();
        let trunk = trunk.to_string();
        let access: Vec<(String, u16)> = access.iter().map(|(i, v)| (i.to_string(), *v)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(SwitchCounts::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let stop = stop.clone();
            let counts = counts.clone();
            std::thread::spawn(move || {
                let setup = || -> std::io::Result<(OwnedFd, Vec<(OwnedFd, u16)>)> {
                    enter_namespace(&ns)?;
                    let t = packet_socket(&trunk)?;
                    let ports = access
                        .iter()
                        .map(|(i, v)| Ok((packet_socket(i)?, *v)))
                        .collect::<std::io::Result<Vec<_>>>()?;
                    Ok((t, ports))
                };
                match setup() {
                    Ok((t, ports)) => {
                        let _ = ready_tx.send(Ok(()));
                        forward(&t, &ports, &stop, &counts);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(VlanSwitch {
                stop,
                thread: Some(thread),
                counts,
            }),
            Ok(Err(e)) => Err(NetnsError(format!("VLAN switch: {e}"))),
            Err(_) => Err(NetnsError("VLAN switch: its thread ended".into())),
        }
    }

    /// What the switch did so far.
    pub fn counts(&self) -> &SwitchCounts {
        &self.counts
    }
}

impl Drop for VlanSwitch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn enter_namespace(ns: &str) -> std::io::Result<()> {
    let file = std::fs::File::open(format!("/var/run/netns/{ns}"))?;
    // SAFETY: setns takes an open namespace file descriptor, which `file`
    // keeps open for the call; it changes only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A packet socket bound to `ifname` that reports VLAN tags as auxiliary
/// data and does not block.
fn packet_socket(ifname: &str) -> std::io::Result<OwnedFd> {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: socket has no memory preconditions.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            libc::c_int::from(proto),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let name = std::ffi::CString::new(ifname)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad name"))?;
    // SAFETY: a NUL-terminated string alive for the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: sockaddr_ll is plain old data, all zeroes valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = index as i32;
    // SAFETY: bind reads `addr`, alive for the call, of the length given.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads one c_int alive for the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// One received frame: its bytes (tag already taken off by the kernel),
/// its tag if it had one, and whether the host sent it (packet sockets see
/// a port's own outgoing frames too).
struct Received {
    len: usize,
    vlan: Option<u16>,
    outgoing: bool,
}

fn receive(fd: &OwnedFd, buf: &mut [u8]) -> Option<Received> {
    // SAFETY: all of these are plain old data, all zeroes valid.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in `msg` points at a live buffer of the length
    // it states, for the length of the call.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
    if n < 0 || n as usize > buf.len() {
        return None;
    }
    let mut vlan = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within msg_controllen; a PACKET_AUXDATA message holds one
    // tpacket_auxdata, read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                let aux: libc::tpacket_auxdata =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                    vlan = Some(aux.tp_vlan_tci & 0x0fff);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Some(Received {
        len: n as usize,
        vlan,
        outgoing: from.sll_pkttype == libc::PACKET_OUTGOING,
    })
}

fn send(fd: &OwnedFd, frame: &[u8]) {
    // SAFETY: `frame` is alive for the call; a full socket buffer drops
    // the frame, as a switch would.
    unsafe {
        libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0);
    }
}

fn forward(trunk: &OwnedFd, ports: &[(OwnedFd, u16)], stop: &AtomicBool, counts: &SwitchCounts) {
    let mut fds: Vec<libc::pollfd> = std::iter::once(trunk)
        .chain(ports.iter().map(|(f, _)| f))
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut buf = vec![0u8; 9216];
    let mut out = vec![0u8; 9220];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: `fds` is a live array of that many pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if r <= 0 {
            continue;
        }
        // The trunk: untag onto the VLAN's access port.
        while let Some(f) = receive(trunk, &mut buf) {
            if f.outgoing || f.len < 14 {
                continue;
            }
            let mut frame = &buf[..f.len];
            let vid = match f.vlan {
                Some(v) => Some(v),
                // A tag the kernel left in the frame (a second tag, or a
                // kernel that does not untag).
                None if frame[12..14] == [0x81, 0x00] && frame.len() >= 18 => {
                    let v = u16::from_be_bytes([frame[14], frame[15]]) & 0x0fff;
                    out[..12].copy_from_slice(&frame[..12]);
                    out[12..f.len - 4].copy_from_slice(&frame[16..]);
                    frame = &out[..f.len - 4];
                    Some(v)
                }
                None => None,
            };
            match vid.and_then(|v| ports.iter().find(|(_, pv)| *pv == v)) {
                Some((port, _)) => {
                    send(port, frame);
                    counts.untagged.fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    counts.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Access ports: tag onto the trunk.
        for (port, vid) in ports {
            while let Some(f) = receive(port, &mut buf) {
                if f.outgoing || f.len < 14 {
                    continue;
                }
                out[..12].copy_from_slice(&buf[..12]);
                out[12..14].copy_from_slice(&[0x81, 0x00]);
                out[14..16].copy_from_slice(&vid.to_be_bytes());
                out[16..f.len + 4].copy_from_slice(&buf[12..f.len]);
                send(trunk, &out[..f.len + 4]);
                counts.tagged.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
