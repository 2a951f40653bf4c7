//! The demo's network: two Linux hosts, each on its own subnet, joined to a
//! router namespace by a two-queue veth; and the record of the processes a
//! run starts, so that a run killed with SIGKILL is cleaned up by the next.
//!
//! The router's interfaces get no Linux address and Linux does not forward
//! in the router's namespace: bricks is the router there, not the kernel.

use anyhow::Context as _;
use bricks_netns::Network;
use std::io::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every namespace of the demo starts with this.
pub(crate) const PREFIX: &str = "bdemo-";

/// The router's namespace (unprefixed).
pub(crate) const ROUTER: &str = "r";

/// RX and TX queues of every veth: enough for two workers to own one each.
pub(crate) const QUEUES: u32 = 2;

/// One router interface and the host on the other end of its link.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Port {
    /// Interface in the router's namespace (the configuration's `$DEVn`).
    pub dev: &'static str,
    /// The host's namespace (unprefixed).
    pub host: &'static str,
    /// The host's interface.
    pub host_if: &'static str,
    /// The subnet's network address.
    pub net: Ipv4Addr,
    /// Its prefix length.
    pub len: u8,
    /// The router's address on it.
    pub router_ip: Ipv4Addr,
    /// The host's address.
    pub host_ip: Ipv4Addr,
    /// The IPv6 subnet's prefix.
    pub net6: Ipv6Addr,
    /// Its length.
    pub len6: u8,
    /// The router's IPv6 address on it.
    pub router_ip6: Ipv6Addr,
    /// The host's IPv6 address.
    pub host_ip6: Ipv6Addr,
    /// The configuration's names of this port's device elements.
    pub rx_element: &'static str,
    /// See `rx_element`.
    pub tx_element: &'static str,
    /// The counters, as (element, counter), of the packets the router
    /// dropped on this port: on the way in (device ring full, frame too
    /// large, neither IPv4 nor IPv6) and on the way out (TTL or hop limit
    /// expired, bad IP options, too big to send, no ARP or ND reply, queue
    /// or device ring full).
    pub drops: &'static [(&'static str, &'static str)],
}

impl Port {
    /// The subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.net) | (u32::MAX >> self.len))
    }
}

/// The demo's two links, in the order of the configuration's interfaces.
pub(crate) const PORTS: [Port; 2] = [
    Port {
        dev: "eth0",
        host: "h1",
        host_if: "eth0",
        net: Ipv4Addr::new(10, 1, 0, 0),
        len: 24,
        router_ip: Ipv4Addr::new(10, 1, 0, 1),
        host_ip: Ipv4Addr::new(10, 1, 0, 2),
        net6: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0),
        len6: 64,
        router_ip6: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1),
        host_ip6: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2),
        rx_element: "in0",
        tx_element: "out0",
        drops: &[
            ("in0", "ring_drops"),
            ("in0", "oversized"),
            ("other0", "count"),
            ("dt0", "expired"),
            ("dt0", "truncated"),
            ("gio0", "bad_options"),
            ("gio0", "truncated"),
            ("fr0", "too_big_df"),
            ("fr0", "drops"),
            ("arpq0", "drops"),
            ("dh0", "drops"),
            ("mtu0", "long"),
            ("nds0", "drops"),
            ("q0", "drops"),
            ("out0", "drops"),
        ],
    },
    Port {
        dev: "eth1",
        host: "h2",
        host_if: "eth0",
        net: Ipv4Addr::new(10, 2, 0, 0),
        len: 24,
        router_ip: Ipv4Addr::new(10, 2, 0, 1),
        host_ip: Ipv4Addr::new(10, 2, 0, 2),
        net6: Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 0),
        len6: 64,
        router_ip6: Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1),
        host_ip6: Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 2),
        rx_element: "in1",
        tx_element: "out1",
        drops: &[
            ("in1", "ring_drops"),
            ("in1", "oversized"),
            ("other1", "count"),
            ("dt1", "expired"),
            ("dt1", "truncated"),
            ("gio1", "bad_options"),
            ("gio1", "truncated"),
            ("fr1", "too_big_df"),
            ("fr1", "drops"),
            ("arpq1", "drops"),
            ("dh1", "drops"),
            ("mtu1", "long"),
            ("nds1", "drops"),
            ("q1", "drops"),
            ("out1", "drops"),
        ],
    },
];

/// The built network and what the router needs to know about it.
pub(crate) struct Topology {
    /// The namespaces; deleted when dropped.
    pub net: Network,
    /// The MAC of each router interface, in `PORTS` order.
    pub router_macs: Vec<String>,
}

impl Topology {
    /// Builds the network, deleting a leftover one first.
    pub fn build(prefix: &str) -> anyhow::Result<Topology> {
        let mut net = Network::new(prefix)?;
        net.add_namespace(ROUTER)?;
        net.sysctl(ROUTER, "net.ipv4.ip_forward", "0")?;
        for port in &PORTS {
            net.add_namespace(port.host)?;
        }
        // The router's kernel has no IPv6 (bricks answers Neighbor
        // Discovery there, as it answers ARP); the hosts' have, with their
        // addresses usable at once (no duplicate address detection) and
        // no router solicitations or advertisements to wait for: the
        // router is their configured gateway. Set before the links exist,
        // so they inherit it.
        net.sysctl(ROUTER, "net.ipv6.conf.all.disable_ipv6", "1")?;
        net.sysctl(ROUTER, "net.ipv6.conf.default.disable_ipv6", "1")?;
        for port in &PORTS {
            let ns = port.host;
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "0")?;
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "0")?;
            net.sysctl(ns, "net.ipv6.conf.default.accept_dad", "0")?;
            net.sysctl(ns, "net.ipv6.conf.default.accept_ra", "0")?;
            net.sysctl(ns, "net.ipv6.conf.default.router_solicitations", "0")?;
        }
        let mut router_macs = Vec::new();
        for port in &PORTS {
            net.add_link(port.host, port.host_if, ROUTER, port.dev, QUEUES)?;
            net.disable_offloads(port.host, port.host_if)?;
            net.disable_offloads(ROUTER, port.dev)?;
            let cidr = format!("{}/{}", port.host_ip, port.len);
            net.add_addr(port.host, port.host_if, &cidr)?;
            net.add_route(port.host, &["default", "via", &port.router_ip.to_string()])?;
            let cidr6 = format!("{}/{}", port.host_ip6, port.len6);
            let gw6 = port.router_ip6.to_string();
            for argv in [
                [
                    "ip",
                    "-6",
                    "addr",
                    "add",
                    &cidr6,
                    "dev",
                    port.host_if,
                    "nodad",
                ]
                .as_slice(),
                ["ip", "-6", "route", "add", "default", "via", &gw6].as_slice(),
            ] {
                bricks_netns::run(&mut net.exec(port.host, argv))?;
            }
            router_macs.push(net.mac(ROUTER, port.dev)?);
        }
        Ok(Topology { net, router_macs })
    }

    /// `-D NAME=VALUE` arguments that give the configuration the real
    /// addresses and MACs of the router's interfaces.
    pub fn defines(&self) -> Vec<String> {
        let mut d = Vec::new();
        for (i, (port, mac)) in PORTS.iter().zip(&self.router_macs).enumerate() {
            d.push(format!("DEV{i}={}", port.dev));
            d.push(format!("IP{i}={}", port.router_ip));
            d.push(format!("NET{i}={}", port.net));
            d.push(format!("LEN{i}={}", port.len));
            d.push(format!("BCAST{i}={}", port.broadcast()));
            d.push(format!("MAC{i}={mac}"));
            d.push(format!("IP6_{i}={}", port.router_ip6));
            d.push(format!("NET6_{i}={}", port.net6));
            d.push(format!("LEN6_{i}={}", port.len6));
        }
        d
    }
}

/// Where a run records its own PID and those of the processes it starts.
pub(crate) const STATE_FILE: &str = "/run/bricks-demo.pids";

/// The record of a run's processes; removed when dropped (a clean end).
///
/// Each line is `ROLE PID STARTTIME`: the start time (from
/// `/proc/PID/stat`) tells a process from a later one that got the same
/// PID, so a stale record never leads to killing anything else.
pub(crate) struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Claims the state file: refuses if another demo is running; ends the
    /// processes a killed run left behind (only those still running the
    /// bricks or ping command they were started as), and returns what it
    /// ended.
    pub fn claim(path: &Path) -> anyhow::Result<(PidFile, Vec<String>)> {
        let mut ended = Vec::new();
        if let Ok(text) = std::fs::read_to_string(path) {
            let records: Vec<Record> = text.lines().filter_map(Record::parse).collect();
            if let Some(demo) = records.iter().find(|r| r.role == "demo") {
                if demo.pid != std::process::id() && demo.is_running() {
                    anyhow::bail!(
                        "another bricks demo is running (PID {}); stop it first (Ctrl-C in its \
                         terminal, or kill {})",
                        demo.pid,
                        demo.pid
                    );
                }
            }
            for r in records.iter().filter(|r| r.role != "demo") {
                if r.is_running() {
                    r.end();
                    ended.push(format!("{} (PID {})", r.role, r.pid));
                }
            }
        }
        let file = PidFile {
            path: path.to_path_buf(),
        };
        std::fs::write(path, "").with_context(|| format!("writing {}", path.display()))?;
        file.record("demo", std::process::id())?;
        Ok((file, ended))
    }

    /// Records a process this run started.
    pub fn record(&self, role: &str, pid: u32) -> anyhow::Result<()> {
        let start = start_time(pid).unwrap_or(0);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .with_context(|| format!("opening {}", self.path.display()))?;
        writeln!(f, "{role} {pid} {start}")
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One line of the state file.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    role: String,
    pid: u32,
    start: u64,
}

impl Record {
    fn parse(line: &str) -> Option<Record> {
        let mut w = line.split_whitespace();
        let role = w.next()?.to_string();
        let pid = w.next()?.parse().ok()?;
        let start = w.next()?.parse().ok()?;
        Some(Record { role, pid, start })
    }

    /// The recorded process still runs, as the command it was started as:
    /// same start time, and a bricks or ping program.
    fn is_running(&self) -> bool {
        if start_time(self.pid) != Some(self.start) {
            return false;
        }
        let Ok(cmdline) = std::fs::read(format!("/proc/{}/cmdline", self.pid)) else {
            return false;
        };
        let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
        let name = Path::new(std::str::from_utf8(argv0).unwrap_or_default())
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        name == "bricks" || name == "ping"
    }

    /// SIGTERM, and SIGKILL if it is still there after a second.
    fn end(&self) {
        let pid = self.pid as libc::pid_t;
        // SAFETY: kill has no memory preconditions; `is_running` has just
        // matched this PID's start time and command, so the signal goes to
        // the process the record names.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && self.is_running() && !is_zombie(self.pid) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.is_running() && !is_zombie(self.pid) {
            // SAFETY: as above, checked again just now.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The process's start time in clock ticks since boot (field 22 of
/// `/proc/PID/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_of_each_subnet() {
        assert_eq!(PORTS[0].broadcast(), Ipv4Addr::new(10, 1, 0, 255));
        assert_eq!(PORTS[1].broadcast(), Ipv4Addr::new(10, 2, 0, 255));
    }

    #[test]
    fn our_own_start_time_is_read() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(start > 0);
        assert_eq!(start_time(me), Some(start));
    }

    #[test]
    fn a_record_of_another_program_is_never_running() {
        // This test binary is neither bricks nor ping: even with the right
        // PID and start time, the record must not claim it.
        let me = std::process::id();
        let r = Record {
            role: "router".into(),
            pid: me,
            start: start_time(me).unwrap(),
        };
        assert!(!r.is_running());
        assert_eq!(
            Record::parse(&format!("router {me} 12")),
            Some(Record {
                role: "router".into(),
                pid: me,
                start: 12
            })
        );
        assert_eq!(Record::parse("garbage"), None);
    }

    #[test]
    fn a_stale_state_file_kills_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pids");
        // A sleep with a recorded PID but not a bricks or ping command; and
        // a record whose start time does not match.
        let mut sleep =
            bricks_netns::ChildGuard::spawn(std::process::Command::new("sleep").arg("30")).unwrap();
        let pid = sleep.id();
        let start = start_time(pid).unwrap();
        std::fs::write(
            &path,
            format!("demo 1 1\nrouter {pid} {start}\nping {pid} 1\n"),
        )
        .unwrap();
        let (file, ended) = PidFile::claim(&path).unwrap();
        assert!(ended.is_empty(), "{ended:?}");
        assert!(sleep.try_wait().is_none(), "the sleep was killed");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(&format!("demo {} ", std::process::id())),
            "{text}"
        );
        drop(file);
        assert!(!path.exists());
    }
}
