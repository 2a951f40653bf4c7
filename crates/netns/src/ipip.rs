//! IP-in-IP (RFC 2003) for test hosts on kernels built without `ipip`.
//!
//! A host reaches a virtual router through an IP-in-IP tunnel. Where the
//! kernel has `CONFIG_NET_IPIP`, the host gets a real `ipip` device; where
//! it has not, an [`IpipTunnel`] does the same in user space: a TUN device
//! carries the host's inner packets, and a raw IPv4 socket of protocol 4
//! connected to the tunnel's far end sends them as the payload of an outer
//! IPv4 header the kernel builds, and hands back the inner packet of every
//! protocol-4 packet that far end sends. The host's own stack (ping, TCP)
//! runs over it unchanged.

use crate::{ip, open_tun, raw_ipv4_socket, NetnsError};
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Whether the kernel can make `ipip` devices: tries one in a namespace of
/// its own, deleted at once.
pub fn have_kernel_ipip() -> bool {
    let ns = format!("bipipprobe{}", std::process::id());
    if ip(&["netns", "add", &ns]).is_err() {
        return false;
    }
    let ok = ip(&[
        "-n",
        &ns,
        "link",
        "add",
        "t0",
        "type",
        "ipip",
        "local",
        "192.0.2.1",
        "remote",
        "192.0.2.2",
    ])
    .is_ok();
    let _ = ip(&["netns", "del", &ns]);
    ok
}

/// A user-space IP-in-IP endpoint in one namespace; the TUN device goes
/// when it is dropped.
pub struct IpipTunnel {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    counts: Arc<TunnelCounts>,
}

/// What an [`IpipTunnel`] carried.
#[derive(Debug, Default)]
pub struct TunnelCounts {
    /// Inner packets sent into the tunnel.
    pub encapsulated: AtomicU64,
    /// Inner packets taken out of the tunnel.
    pub decapsulated: AtomicU64,
}

impl IpipTunnel {
    /// Creates TUN device `name` in namespace `ns` (a full name) whose
    /// packets travel in IP-in-IP to and from `remote`. Configure the
    /// device (address, up, routes) with `ip` afterwards.
    pub fn start(ns: &str, name: &str, remote: Ipv4Addr) -> Result<IpipTunnel, NetnsError> {
        let (tun, raw) = {
            let tun_name = name.to_string();
            crate::in_namespace(ns, move || -> std::io::Result<_> {
                Ok((open_tun(&tun_name)?, raw_ipv4_socket(4, remote)?))
            })
            .map_err(|e| NetnsError(format!("IP-in-IP endpoint {name}: {e}")))?
        };
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(TunnelCounts::default());
        let tun2 = tun
            .try_clone()
            .map_err(|e| NetnsError(format!("{name}: {e}")))?;
        let raw2 = raw
            .try_clone()
            .map_err(|e| NetnsError(format!("{name}: {e}")))?;
        let out = {
            let stop = stop.clone();
            let counts = counts.clone();
            std::thread::spawn(move || {
                let (mut tun, mut raw) = (tun, raw);
                let mut buf = vec![0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    if !readable(&tun) {
                        continue;
                    }
                    let Ok(n) = tun.read(&mut buf) else { continue };
                    // Inner IPv4 only: the outer protocol is 4.
                    if n >= 20 && buf[0] >> 4 == 4 && raw.write(&buf[..n]).is_ok() {
                        counts.encapsulated.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        let back = {
            let stop = stop.clone();
            let counts = counts.clone();
            std::thread::spawn(move || {
                let (mut tun, mut raw) = (tun2, raw2);
                let mut buf = vec![0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    if !readable(&raw) {
                        continue;
                    }
                    let Ok(n) = raw.read(&mut buf) else { continue };
                    // The raw socket gives the outer header too.
                    let outer = usize::from(buf[0] & 0x0f) * 4;
                    if n < outer + 20 || buf[0] >> 4 != 4 || buf[9] != 4 {
                        continue;
                    }
                    if tun.write(&buf[outer..n]).is_ok() {
                        counts.decapsulated.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        Ok(IpipTunnel {
            stop,
            threads: vec![out, back],
            counts,
        })
    }

    /// What the tunnel carried so far.
    pub fn counts(&self) -> &TunnelCounts {
        &self.counts
    }
}

impl Drop for IpipTunnel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Waits up to 50 ms for `f` to have something to read.
fn readable(f: &std::fs::File) -> bool {
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    unsafe { libc::poll(&mut p, 1, 50) > 0 }
}
