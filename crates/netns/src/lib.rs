//! Test networks: Linux network namespaces joined by veth links.
//!
//! The tests, `bricks bench io` and `bricks demo` all need the same thing:
//! a few namespaces (hosts, a router), veth pairs between them, addresses
//! and routes, and the certainty that everything is deleted afterwards,
//! also when a test fails or panics. A [`Network`] owns what it created and
//! deletes it on drop; every name starts with the network's prefix, so a
//! leftover from a killed run can be found and removed with
//! [`Network::clean_prefix`].
//!
//! Everything goes through iproute2 (`ip`), the tool every Linux machine
//! has and the one a user would type to reproduce a test by hand.

use std::process::{Command, Output, Stdio};

/// Why setting up a test network failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetnsError(pub String);

impl core::fmt::Display for NetnsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetnsError {}

/// Whether this process may create namespaces (it runs as root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// For tests that need root: `None` when they may run; otherwise the
/// reason they are skipped, already printed. Under CI (`CI=true`) a missing
/// privilege is a failure, never a skip.
pub fn skip_unless_root(test: &str) -> Option<String> {
    if is_root() {
        return None;
    }
    let reason = format!("SKIP {test}: needs root to create network namespaces");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{reason} (CI=true: namespace tests must run)");
    }
    eprintln!("{reason}");
    Some(reason)
}

/// Runs a command and returns its output; a failure carries the command
/// line and its stderr.
pub fn run(cmd: &mut Command) -> Result<Output, NetnsError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| NetnsError(format!("{cmd:?}: {e}")))?;
    if !out.status.success() {
        return Err(NetnsError(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

/// Runs `ip ARGS...`.
pub fn ip(args: &[&str]) -> Result<Output, NetnsError> {
    run(Command::new("ip").args(args))
}

/// A set of namespaces and links that is deleted when dropped.
#[derive(Debug)]
pub struct Network {
    prefix: String,
    namespaces: Vec<String>,
}

impl Network {
    /// A new, empty network whose names all start with `prefix` (keep it
    /// short: interface names have at most 15 bytes). Anything left with
    /// that prefix from an earlier run is deleted first.
    pub fn new(prefix: &str) -> Result<Network, NetnsError> {
        Network::clean_prefix(prefix)?;
        Ok(Network {
            prefix: prefix.to_string(),
            namespaces: Vec::new(),
        })
    }

    /// A prefix unique to this process and `tag` (e.g. `bt1234a-`).
    pub fn unique_prefix(tag: &str) -> String {
        format!("b{}{tag}-", std::process::id() % 100_000)
    }

    /// The prefix every name of this network starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The full name of namespace `name`.
    pub fn ns_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Deletes every namespace whose name starts with `prefix` (their veths
    /// go with them).
    pub fn clean_prefix(prefix: &str) -> Result<(), NetnsError> {
        for ns in list_namespaces()? {
            if ns.starts_with(prefix) {
                ip(&["netns", "del", &ns])?;
            }
        }
        Ok(())
    }

    /// Creates namespace `name` (prefixed) with its loopback up; returns
    /// the full name.
    pub fn add_namespace(&mut self, name: &str) -> Result<String, NetnsError> {
        let full = self.ns_name(name);
        ip(&["netns", "add", &full])?;
        self.namespaces.push(full.clone());
        ip(&["-n", &full, "link", "set", "lo", "up"])?;
        Ok(full)
    }

    /// Joins namespace `a` (interface `a_if`) and namespace `b` (interface
    /// `b_if`) with a veth pair of `queues` RX and TX queues per end, both
    /// ends up. Names are unprefixed; interface names are used as given
    /// (they live inside their namespaces, so they need no prefix).
    pub fn add_link(
        &mut self,
        a: &str,
        a_if: &str,
        b: &str,
        b_if: &str,
        queues: u32,
    ) -> Result<(), NetnsError> {
        let (na, nb) = (self.ns_name(a), self.ns_name(b));
        let q = queues.max(1).to_string();
        // Created in `a` with the peer placed straight into `b`: the names
        // never exist in the caller's namespace, so tests cannot collide
        // with each other or with the machine's own interfaces.
        ip(&[
            "-n",
            &na,
            "link",
            "add",
            a_if,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            b_if,
            "netns",
            &nb,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ])?;
        ip(&["-n", &na, "link", "set", a_if, "up"])?;
        ip(&["-n", &nb, "link", "set", b_if, "up"])?;
        Ok(())
    }

    /// Adds address `cidr` (e.g. `10.1.0.2/24`) to interface `ifname` of
    /// namespace `ns`.
    pub fn add_addr(&self, ns: &str, ifname: &str, cidr: &str) -> Result<(), NetnsError> {
        ip(&["-n", &self.ns_name(ns), "addr", "add", cidr, "dev", ifname]).map(drop)
    }

    /// Adds a route in namespace `ns`: `ip route add ROUTE...` (e.g.
    /// `["default", "via", "10.1.0.1"]`).
    pub fn add_route(&self, ns: &str, route: &[&str]) -> Result<(), NetnsError> {
        let full = self.ns_name(ns);
        let mut args = vec!["-n", &full, "route", "add"];
        args.extend_from_slice(route);
        ip(&args).map(drop)
    }

    /// The MAC address of `ifname` in namespace `ns`.
    pub fn mac(&self, ns: &str, ifname: &str) -> Result<String, NetnsError> {
        let path = format!("/sys/class/net/{ifname}/address");
        let out = self
            .exec(ns, &["cat", &path])
            .output()
            .map_err(|e| NetnsError(e.to_string()))?;
        let mac = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if mac.is_empty() {
            return Err(NetnsError(format!(
                "no interface {ifname} in {}",
                self.ns_name(ns)
            )));
        }
        Ok(mac)
    }

    /// A command that runs `argv` inside namespace `ns` (through
    /// `ip netns exec`, which also gives it the namespace's own /sys).
    pub fn exec(&self, ns: &str, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns_name(ns)]).args(argv);
        c
    }

    /// Runs `sysctl -w KEY=VALUE` in namespace `ns`.
    pub fn sysctl(&self, ns: &str, key: &str, value: &str) -> Result<(), NetnsError> {
        run(&mut self.exec(ns, &["sysctl", "-qw", &format!("{key}={value}")])).map(drop)
    }

    /// Deletes everything now (also done on drop).
    pub fn delete(&mut self) {
        for ns in self.namespaces.drain(..).rev() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.delete();
    }
}

/// The names of all network namespaces `ip netns` knows.
pub fn list_namespaces() -> Result<Vec<String>, NetnsError> {
    let out = ip(&["netns", "list"])?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_namespaces_ping_over_a_multiqueue_veth() {
        if skip_unless_root("two_namespaces_ping_over_a_multiqueue_veth").is_some() {
            return;
        }
        let prefix = Network::unique_prefix("ns");
        let mut net = Network::new(&prefix).unwrap();
        net.add_namespace("a").unwrap();
        net.add_namespace("b").unwrap();
        net.add_link("a", "va", "b", "vb", 2).unwrap();
        net.add_addr("a", "va", "10.99.0.1/24").unwrap();
        net.add_addr("b", "vb", "10.99.0.2/24").unwrap();
        let queues = net
            .exec("a", &["ls", "/sys/class/net/va/queues"])
            .output()
            .unwrap();
        let queues = String::from_utf8_lossy(&queues.stdout);
        assert_eq!(
            queues
                .split_whitespace()
                .filter(|q| q.starts_with("rx-"))
                .count(),
            2
        );
        assert!(net.mac("b", "vb").unwrap().contains(':'));
        let ping = net
            .exec("a", &["ping", "-c", "1", "-W", "2", "10.99.0.2"])
            .output()
            .unwrap();
        assert!(
            ping.status.success(),
            "{}",
            String::from_utf8_lossy(&ping.stdout)
        );
        let names: Vec<String> = (list_namespaces().unwrap())
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert_eq!(names.len(), 2);
        drop(net);
        assert!(!list_namespaces()
            .unwrap()
            .iter()
            .any(|n| n.starts_with(&prefix)));
    }
}
