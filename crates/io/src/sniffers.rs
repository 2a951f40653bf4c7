//! Packets for the host's packet sniffers only (Click's `ToHostSniffers`),
//! sent through a Linux interface that drops what it is given.
//!
//! Linux shows every frame handed to a device for transmission to the
//! packet sockets open on that device or on `any` (tcpdump, Wireshark:
//! `dev_queue_xmit_nit`) before the driver gets it. The dummy driver
//! frees every frame it is given, and so does the ifb driver every frame
//! that tc did not redirect to it. So the sniffers see each packet once,
//! as sent by that interface, and neither a wire nor the host's network
//! stack ever does. A real interface cannot be used this way: what is
//! sent on it leaves on its wire.
//!
//! The interface is a dummy one, or an ifb one where the kernel has no
//! dummy driver (some cloud and micro-VM kernels). It is made when a
//! router first asks for it, with an MTU of 65,535 so that no packet is
//! refused for its size and without IPv6, so that it sends nothing of its
//! own, and deleted when the last user lets go of it. One that exists
//! already (made by the operator, or left by a router that was killed) is
//! used as it is and kept.

use crate::DeviceError;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkFlags, LinkInfo, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

/// The interface packets go to when a configuration names none.
pub const DEFAULT_NAME: &str = "bricks-sniff";

/// What the dummy interface for a real interface is called: its name
/// (cut so that the whole fits Linux's 15 characters) and `-sniff`.
pub fn dummy_for(name: &str) -> String {
    let stem: String = name.chars().take(IFNAMSIZ - 1 - SUFFIX.len()).collect();
    format!("{stem}{SUFFIX}")
}

const SUFFIX: &str = "-sniff";
/// Linux's `IFNAMSIZ`: 15 characters and the terminating zero.
const IFNAMSIZ: usize = 16;
/// The MTU a dummy interface made here gets: the largest IP packet.
const MTU: u32 = 65_535;
/// The transmit queue of an interface made here, in frames.
const TXQLEN: u32 = 4096;

/// A dummy interface and a packet socket that sends on it. Shared by
/// every element and worker that names it ([`open`]).
#[derive(Debug)]
pub struct SnifferDevice {
    name: String,
    index: u32,
    mac: [u8; 6],
    /// Whether this process made the interface (and so deletes it).
    created: bool,
    socket: OwnedFd,
}

/// What the interface `name` is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkKind {
    /// No interface has the name.
    Missing,
    /// A dummy interface.
    Dummy,
    /// An ifb interface.
    Ifb,
    /// Any other: `None` for a device with no link kind (a NIC).
    Other(Option<String>),
}

/// The process's open sniffer devices by name, so that every element and
/// worker naming one shares it, and the last to let go deletes it.
static OPEN: Mutex<Vec<(String, Weak<SnifferDevice>)>> = Mutex::new(Vec::new());

/// The sniffer device named `name`: the open one, or the dummy or ifb
/// interface of that name, made (and brought up) if there is none.
/// Refused when `name` is an interface of another kind.
pub fn open(name: &str) -> Result<Arc<SnifferDevice>, DeviceError> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(_, w)| w.strong_count() > 0);
    if let Some(d) = open
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(d);
    }
    let d = Arc::new(SnifferDevice::open(name)?);
    open.push((name.to_string(), Arc::downgrade(&d)));
    Ok(d)
}

impl SnifferDevice {
    fn open(name: &str) -> Result<SnifferDevice, DeviceError> {
        let err = |what: &str, e: io::Error| DeviceError::Io(format!("{name}: {what}: {e}"));
        if name.is_empty() || name.len() >= IFNAMSIZ || name.contains(['/', ' ', '\0']) {
            return Err(DeviceError::Io(format!(
                "`{name}` cannot name a Linux interface (1 to 15 characters, no `/` or space)"
            )));
        }
        let mut nl = Netlink::new().map_err(|e| err("opening a netlink socket", e))?;
        let mut created = false;
        let link = match nl
            .link(name)
            .map_err(|e| err("looking the interface up", e))?
        {
            Some(l) if l.kind.drops() => l,
            Some(_) => return Err(not_dummy(name)),
            None => {
                match nl.create_sink(name) {
                    Ok(()) => created = true,
                    // Made meanwhile by another process: used if it drops.
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(e) => return Err(err("making a dummy (or ifb) interface", e)),
                }
                match nl.link(name).map_err(|e| err("looking it up", e))? {
                    Some(l) if l.kind.drops() => l,
                    Some(_) => return Err(not_dummy(name)),
                    None => return Err(DeviceError::Gone(name.to_string())),
                }
            }
        };
        let mut up = || -> Result<OwnedFd, DeviceError> {
            if created {
                // Best effort: with IPv6 the interface would send Router
                // Solicitations and MLD reports of its own, which the
                // sniffers would see among the router's packets.
                let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
            }
            nl.set_up(link.index)
                .map_err(|e| err("bringing it up", e))?;
            // SAFETY: socket(2) with constant arguments; the result is
            // checked before it is owned.
            let fd =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
            if fd < 0 {
                return Err(err("opening a packet socket", io::Error::last_os_error()));
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        };
        match up() {
            Ok(socket) => Ok(SnifferDevice {
                name: name.to_string(),
                index: link.index,
                mac: link.mac,
                created,
                socket,
            }),
            Err(e) => {
                // An interface made here is not left behind by a failure.
                if created {
                    let _ = nl.delete(link.index);
                }
                Err(e)
            }
        }
    }

    /// The interface's name (what to give `tcpdump -i`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Whether this process made the interface.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Sends one Ethernet frame (14 bytes at least) for the sniffers.
    /// Never blocks.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        let proto = frame
            .get(12..14)
            .map_or(0, |t| u16::from_ne_bytes([t[0], t[1]]));
        // SAFETY: an all-zero sockaddr_ll is a valid value.
        let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        to.sll_family = libc::AF_PACKET as u16;
        // The frame's own EtherType, in network order as it lies there.
        to.sll_protocol = proto;
        to.sll_ifindex = self.index as i32;
        // SAFETY: `frame` and `to` are valid for the lengths given for
        // the duration of the call.
        let r = unsafe {
            libc::sendto(
                self.socket.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
                (&to as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for SnifferDevice {
    fn drop(&mut self) {
        if self.created {
            if let Ok(mut nl) = Netlink::new() {
                let _ = nl.delete(self.index);
            }
        }
    }
}

impl LinkKind {
    /// Whether the interface drops what it is given to send.
    pub fn drops(&self) -> bool {
        matches!(self, LinkKind::Dummy | LinkKind::Ifb)
    }
}

fn not_dummy(name: &str) -> DeviceError {
    DeviceError::Io(format!(
        "{name} is neither a dummy nor an ifb interface: what is sent on it would leave \
         on its wire (name a dummy interface, or one that does not exist yet)"
    ))
}

/// The kind of the interface `name`.
pub fn kind(name: &str) -> io::Result<LinkKind> {
    Ok(Netlink::new()?
        .link(name)?
        .map_or(LinkKind::Missing, |l| l.kind))
}

/// An interface as netlink describes it.
struct Link {
    index: u32,
    mac: [u8; 6],
    kind: LinkKind,
}

/// A route netlink socket for the requests above, one at a time.
struct Netlink {
    socket: Socket,
    seq: u32,
}

impl Netlink {
    fn new() -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Netlink { socket, seq: 0 })
    }

    /// Sends `msg` and returns the kernel's answers up to its ACK (or the
    /// error it answered with).
    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.seq += 1;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        header.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        m.finalize();
        let mut buf = vec![0u8; m.buffer_len()];
        m.serialize(&mut buf);
        self.socket.send(&buf, 0)?;
        let mut answers = Vec::new();
        let mut rx = vec![0u8; 1 << 16];
        loop {
            let n = self.socket.recv(&mut &mut rx[..], 0)?;
            let mut at = 0;
            while at < n {
                let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rx[at..n])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let len = reply.header.length as usize;
                if len == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "netlink message of length 0",
                    ));
                }
                at += (len + 3) & !3;
                if reply.header.sequence_number != self.seq {
                    continue;
                }
                match reply.payload {
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            None => Ok(answers),
                            Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
                        };
                    }
                    NetlinkPayload::InnerMessage(m) => answers.push(m),
                    NetlinkPayload::Done(_) => return Ok(answers),
                    _ => {}
                }
            }
        }
    }

    /// The interface `name`, if there is one.
    fn link(&mut self, name: &str) -> io::Result<Option<Link>> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_string()));
        let answers = match self.request(RouteNetlinkMessage::GetLink(msg), 0) {
            Ok(a) => a,
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(RouteNetlinkMessage::NewLink(link)) = answers.into_iter().next() else {
            return Ok(None);
        };
        let mut mac = [0; 6];
        let mut kind = LinkKind::Other(None);
        for a in &link.attributes {
            match a {
                LinkAttribute::Address(m) if m.len() == 6 => mac.copy_from_slice(m),
                LinkAttribute::LinkInfo(infos) => {
                    for i in infos {
                        if let LinkInfo::Kind(k) = i {
                            kind = match k {
                                InfoKind::Dummy => LinkKind::Dummy,
                                InfoKind::Ifb => LinkKind::Ifb,
                                k => LinkKind::Other(Some(k.to_string())),
                            };
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(Some(Link {
            index: link.header.index,
            mac,
            kind,
        }))
    }

    /// Makes a dummy interface `name`, or an ifb one when the kernel has
    /// no dummy driver.
    fn create_sink(&mut self, name: &str) -> io::Result<()> {
        match self.create(name, InfoKind::Dummy) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                self.create(name, InfoKind::Ifb)
            }
            r => r,
        }
    }

    fn create(&mut self, name: &str, kind: InfoKind) -> io::Result<()> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_string()));
        msg.attributes.push(LinkAttribute::Mtu(MTU));
        // An ifb interface has a queue (32 frames by default), which a
        // burst could fill before the sniffers see it.
        msg.attributes.push(LinkAttribute::TxQueueLen(TXQLEN));
        msg.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(kind)]));
        self.request(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map(drop)
    }

    fn set_up(&mut self, index: u32) -> io::Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(msg), 0).map(drop)
    }

    fn delete(&mut self, index: u32) -> io::Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        self.request(RouteNetlinkMessage::DelLink(msg), 0).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dummy_names_fit_linux() {
        assert_eq!(dummy_for("eth0"), "eth0-sniff");
        assert_eq!(dummy_for("enp0s31f6abc"), "enp0s31f6-sniff");
        assert!(dummy_for("a-very-long-name").len() < IFNAMSIZ);
        assert_eq!(DEFAULT_NAME.len(), 12);
    }

    #[test]
    fn names_linux_cannot_hold_are_refused_before_any_request() {
        for bad in ["", "sixteen-chars-xx", "a/b", "a b"] {
            let e = SnifferDevice::open(bad).unwrap_err().to_string();
            assert!(e.contains("cannot name a Linux interface"), "{bad}: {e}");
        }
    }
}
