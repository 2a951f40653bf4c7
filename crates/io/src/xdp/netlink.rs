//! Which XDP program an interface carries, asked of the kernel over
//! rtnetlink (`RTM_GETLINK`, the `IFLA_XDP` attribute; what `ip link`
//! prints as `prog/xdp id N`).
//!
//! bricks looks before it attaches so that it never replaces a program it
//! did not attach: the kernel refuses a second program through a BPF link,
//! but aya falls back to plain netlink where links are missing, and plain
//! netlink replaces silently. The answer also names the program in the
//! error a user sees.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// <linux/rtnetlink.h>, <linux/if_link.h>: stable kernel ABI numbers.
const IFLA_EXT_MASK: u16 = 29;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_PROG_ID: u16 = 4;
const NLA_TYPE_MASK: u16 = 0x3fff;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HDRLEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;

/// An XDP program found on an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attached {
    /// `native`, `generic`, `offloaded` or `several modes`.
    pub mode: &'static str,
    /// The program's kernel id (`bpftool prog show id N`), 0 if unknown.
    pub prog_id: u32,
}

impl Attached {
    /// The `ip link` keyword that detaches a program of this mode.
    pub fn ip_keyword(&self) -> &'static str {
        match self.mode {
            "generic" => "xdpgeneric",
            "offloaded" => "xdpoffload",
            _ => "xdp",
        }
    }
}

/// The XDP program on interface `ifindex` of the calling thread's network
/// namespace, if any.
pub(crate) fn attached(ifindex: u32) -> io::Result<Option<Attached>> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };

    // nlmsghdr + ifinfomsg + IFLA_EXT_MASK(RTEXT_FILTER_SKIP_STATS).
    let mut req = [0u8; NLMSG_HDRLEN + IFINFOMSG_LEN + 8];
    let len = req.len() as u32;
    req[0..4].copy_from_slice(&len.to_ne_bytes());
    req[4..6].copy_from_slice(&libc::RTM_GETLINK.to_ne_bytes());
    req[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // ifinfomsg: family AF_UNSPEC (0), type 0, index, flags 0, change 0.
    req[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    req[32..34].copy_from_slice(&8u16.to_ne_bytes());
    req[34..36].copy_from_slice(&IFLA_EXT_MASK.to_ne_bytes());
    req[36..40].copy_from_slice(&(libc::RTEXT_FILTER_SKIP_STATS as u32).to_ne_bytes());

    // SAFETY: `req` is valid for `req.len()` bytes for the whole call.
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 32 * 1024];
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let got = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    parse_reply(&buf[..got as usize])
}

/// Reads the reply to one `RTM_GETLINK` request.
fn parse_reply(msg: &[u8]) -> io::Result<Option<Attached>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "short rtnetlink reply");
    let u16_at = |b: &[u8], at: usize| -> Option<u16> {
        Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
    };
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let len = u32_at(msg, 0).ok_or_else(bad)? as usize;
    let kind = u16_at(msg, 4).ok_or_else(bad)?;
    let msg = msg.get(..len).ok_or_else(bad)?;
    if kind == NLMSG_ERROR {
        let errno = u32_at(msg, NLMSG_HDRLEN).ok_or_else(bad)? as i32;
        return Err(io::Error::from_raw_os_error(-errno));
    }
    if kind != libc::RTM_NEWLINK {
        return Err(bad());
    }
    let Some(xdp) = attrs(&msg[(NLMSG_HDRLEN + IFINFOMSG_LEN).min(len)..])
        .find(|(t, _)| *t == IFLA_XDP)
        .map(|(_, v)| v)
    else {
        return Ok(None);
    };
    let mut mode = 0u8;
    let mut prog_id = 0u32;
    for (t, v) in attrs(xdp) {
        match t {
            IFLA_XDP_ATTACHED => mode = v.first().copied().unwrap_or(0),
            IFLA_XDP_PROG_ID => prog_id = u32_at(v, 0).unwrap_or(0),
            _ => {}
        }
    }
    // enum { XDP_ATTACHED_NONE, _DRV, _SKB, _HW, _MULTI }.
    let mode = match mode {
        0 => return Ok(None),
        1 => "native",
        2 => "generic",
        3 => "offloaded",
        _ => "several modes",
    };
    Ok(Some(Attached { mode, prog_id }))
}

/// The (type, payload) pairs of a run of netlink attributes.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?) as usize;
        let kind = u16::from_ne_bytes(b.get(2..4)?.try_into().ok()?) & NLA_TYPE_MASK;
        let payload = b.get(4..len)?;
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn reply(attrs: &[u8]) -> Vec<u8> {
        let mut m = vec![0u8; NLMSG_HDRLEN + IFINFOMSG_LEN];
        m.extend_from_slice(attrs);
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        m[4..6].copy_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
        m
    }

    #[test]
    fn a_reply_with_a_native_program_names_it() {
        let mut xdp = attr(IFLA_XDP_ATTACHED, &[1]);
        xdp.extend(attr(IFLA_XDP_PROG_ID, &42u32.to_ne_bytes()));
        let mut all = attr(3, b"eth0\0");
        all.extend(attr(IFLA_XDP | 0x8000, &xdp));
        let got = parse_reply(&reply(&all)).unwrap();
        assert_eq!(
            got,
            Some(Attached {
                mode: "native",
                prog_id: 42
            })
        );
    }

    #[test]
    fn no_program_and_errors_are_told_apart() {
        let none = attr(IFLA_XDP, &attr(IFLA_XDP_ATTACHED, &[0]));
        assert_eq!(parse_reply(&reply(&none)).unwrap(), None);
        assert_eq!(parse_reply(&reply(&attr(3, b"lo\0"))).unwrap(), None);
        let mut err = vec![0u8; NLMSG_HDRLEN + 4];
        let len = err.len() as u32;
        err[0..4].copy_from_slice(&len.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENODEV).to_ne_bytes());
        let e = parse_reply(&err).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV));
        assert!(parse_reply(&[1, 2]).is_err());
    }

    #[test]
    fn loopback_carries_no_program() {
        let lo = crate::ifinfo::index("lo").unwrap();
        assert_eq!(attached(lo).unwrap(), None);
    }
}
