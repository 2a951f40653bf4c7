//! The machine and the test network: CPUs, threaded NAPI pinned like a
//! NIC's interrupts, the veth line between three namespaces.

use super::*;

/// PIDs of the kernel threads named `napi/IFNAME-...`.
pub(super) fn napi_threads(ifname: &str) -> BTreeSet<u32> {
    let prefix = format!("napi/{ifname}-");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with(&prefix))
        })
        .collect()
}

/// The machine the bench runs on.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPUs this process may use.
    pub(super) cpus: Vec<usize>,
    pub(super) model: String,
    pub(super) kernel: String,
}

impl Machine {
    /// One line for a report: CPU count and model, kernel.
    pub fn describe(&self) -> String {
        let n = self.cpus.len();
        format!(
            "{n} CPU{} ({}), Linux {}",
            if n == 1 { "" } else { "s" },
            self.model,
            self.kernel
        )
    }

    /// The CPUs this process may use, the CPU model and the kernel.
    pub fn probe() -> Machine {
        let mut cpus: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        if cpus.is_empty() {
            cpus.push(0);
        }
        let model = crate::measure::cpu_model();
        let kernel = crate::measure::kernel_release();
        Machine {
            cpus,
            model,
            kernel,
        }
    }

    /// Generator, sink and the sink's receive NAPI threads.
    pub(super) fn tester_cpu(&self) -> usize {
        self.cpus[0]
    }

    /// The CPUs of subject `s`'s router: a multi-worker bricks with
    /// per-core queues gets as many CPUs as workers (the last ones, so
    /// the tester's is the last it shares), the other wide subjects every
    /// CPU, the rest the router CPU.
    pub(super) fn cpus_for(&self, s: &Subject) -> Vec<usize> {
        match &s.fwd {
            Forwarder::Bricks(b) if b.mode == "per-core" && b.threads > 1 => {
                let n = b.threads.min(self.cpus.len());
                self.cpus[self.cpus.len() - n..].to_vec()
            }
            _ => self.router_cpus(s.wide),
        }
    }

    /// The router's CPUs.
    pub(super) fn router_cpus(&self, wide: bool) -> Vec<usize> {
        if wide || self.cpus.len() == 1 {
            self.cpus.clone()
        } else {
            vec![self.cpus[self.cpus.len() - 1]]
        }
    }
}

/// Busy and total time of `cpus` so far (in `/proc/stat`'s ticks):
/// busy is user, nice, system, irq, softirq and steal; total adds idle
/// and iowait.
pub(super) fn cpu_ticks(cpus: &[usize]) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let (mut busy, mut total) = (0, 0);
    for &c in cpus {
        let name = format!("cpu{c}");
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 8 {
            return None;
        }
        let b = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        busy += b;
        total += b + v[3] + v[4];
    }
    Some((busy, total))
}

/// The busy share of `cpus` between two [`cpu_ticks`] readings.
pub(super) fn busy_between(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((b0, t0), (b1, t1)) = (before?, after?);
    (t1 > t0).then(|| (b1.saturating_sub(b0)) as f64 / (t1 - t0) as f64)
}

pub(super) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The benches' network: `gen [g0] -- [r0] MID [r1] -- [s0] sink`, three
/// namespaces without IPv6 (no router solicitations or MLD: every frame
/// the sink sees comes from the generator), two veth links of `queues`
/// queues each, no reverse-path filter in the middle, and threaded NAPI on r0
/// and s0 (their thread IDs, for pinning). With more forwarding ports
/// (the NIC paper's two ports, Figs. 4 and 5), port K is the same line
/// again beside the first, `[gK] -- [r2K] MID [r2K+1] -- [sK]`, between
/// the same three namespaces. Networks of earlier runs that were killed
/// are deleted first.
pub(crate) struct Line {
    pub(crate) net: Network,
    /// The forwarding ports, port 0 first.
    pub(crate) ports: Vec<Port>,
}

/// One forwarding port of a [`Line`]: the generator's veth to the
/// router's input, the router's output to the sink's veth.
#[derive(Debug, Clone)]
pub(crate) struct Port {
    /// Its number K: 0 for `g0 -- r0, r1 -- s0`.
    pub(crate) index: u32,
    /// The generator's interface, `gK`.
    pub(crate) gen_if: String,
    /// The router's input, `r2K`.
    pub(crate) in_if: String,
    /// The router's output, `r2K+1`.
    pub(crate) out_if: String,
    /// The sink's interface, `sK`.
    pub(crate) sink_if: String,
    pub(crate) in_mac: String,
    pub(crate) out_mac: String,
    pub(crate) sink_mac: String,
    /// The router input's NAPI threads (the router's receive work).
    pub(crate) in_napi: Vec<u32>,
    /// The sink's NAPI threads.
    pub(crate) sink_napi: Vec<u32>,
}

impl Port {
    /// The first three octets of the generator's side: `10.70.0` for
    /// port 0, `10.72.0` for port 1.
    fn gen_side(&self) -> String {
        format!("10.{}.0", 70 + 2 * self.index)
    }

    /// The sink's side, `10.71.0` for port 0.
    fn sink_side(&self) -> String {
        format!("10.{}.0", 71 + 2 * self.index)
    }

    /// The generator's address.
    pub(crate) fn gen_addr(&self) -> String {
        format!("{}.2", self.gen_side())
    }

    /// The sink's address.
    pub(crate) fn sink_addr(&self) -> String {
        format!("{}.2", self.sink_side())
    }

    /// The generator's subnet (`10.70.0.0/24`).
    pub(crate) fn gen_net(&self) -> String {
        format!("{}.0/24", self.gen_side())
    }

    /// The sink's subnet (`10.71.0.0/24`).
    pub(crate) fn sink_net(&self) -> String {
        format!("{}.0/24", self.sink_side())
    }

    /// Addresses for the four interfaces (.2 at either end, .1 on the
    /// router), and a permanent neighbour entry for the sink, so that ARP
    /// never interferes with the Linux subject.
    pub(crate) fn address(&self, net: &Network, mid: &str) -> Result<(), Error> {
        let (g, s) = (self.gen_side(), self.sink_side());
        net.add_addr("gen", &self.gen_if, &format!("{g}.2/24"))?;
        net.add_addr(mid, &self.in_if, &format!("{g}.1/24"))?;
        net.add_addr(mid, &self.out_if, &format!("{s}.1/24"))?;
        net.add_addr("sink", &self.sink_if, &format!("{s}.2/24"))?;
        let ns = net.ns_name(mid);
        let sink_addr = self.sink_addr();
        let neigh = [
            "-n",
            &ns,
            "neigh",
            "replace",
            &sink_addr,
            "lladdr",
            &self.sink_mac,
            "dev",
            &self.out_if,
            "nud",
            "permanent",
        ];
        bricks_netns::ip(&neigh)?;
        Ok(())
    }
}

impl Line {
    /// The line with one forwarding port.
    pub(crate) fn build(tag: &str, mid: &str, queues: u32) -> Result<Line, Error> {
        Line::build_ports(tag, mid, queues, 1)
    }

    /// The line with `ports` forwarding ports, each of `queues` queues.
    pub(crate) fn build_ports(
        tag: &str,
        mid: &str,
        queues: u32,
        ports: u32,
    ) -> Result<Line, Error> {
        clean_stale_networks(&format!("{tag}-"));
        let mut net = Network::new(&Network::unique_prefix(tag))?;
        for ns in ["gen", mid, "sink"] {
            net.add_namespace(ns)?;
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")?;
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")?;
        }
        for k in ["all", "default"] {
            net.sysctl(mid, &format!("net.ipv4.conf.{k}.rp_filter"), "0")?;
        }
        let ports = (0..ports.max(1))
            .map(|k| Line::add_port(&mut net, mid, queues, k))
            .collect::<Result<Vec<Port>, Error>>()?;
        Ok(Line { net, ports })
    }

    /// Port `k`: its two links, their MACs and threaded NAPI.
    fn add_port(net: &mut Network, mid: &str, queues: u32, k: u32) -> Result<Port, Error> {
        let (gen_if, sink_if) = (format!("g{k}"), format!("s{k}"));
        let (in_if, out_if) = (format!("r{}", 2 * k), format!("r{}", 2 * k + 1));
        net.add_link("gen", &gen_if, mid, &in_if, queues)?;
        net.add_link(mid, &out_if, "sink", &sink_if, queues)?;
        for ifname in [&in_if, &out_if] {
            net.sysctl(mid, &format!("net.ipv4.conf.{ifname}.rp_filter"), "0")?;
        }
        let in_mac = net.mac(mid, &in_if)?;
        let out_mac = net.mac(mid, &out_if)?;
        let sink_mac = net.mac("sink", &sink_if)?;
        // Senders hand over finished frames, one per skb (no TSO), so that
        // the receiving veth takes them through NAPI (veth_xmit uses NAPI
        // only for skbs GRO could handle).
        for (ns, ifname) in [("gen", &gen_if), (mid, &out_if)] {
            sh(net.exec(
                ns,
                &[
                    "ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off",
                ],
            ))?;
        }
        let in_napi = threaded_napi(net, mid, &in_if, queues)?;
        let sink_napi = threaded_napi(net, "sink", &sink_if, queues)?;
        Ok(Port {
            index: k,
            gen_if,
            in_if,
            out_if,
            sink_if,
            in_mac,
            out_mac,
            sink_mac,
            in_napi,
            sink_napi,
        })
    }
}

/// Turns on GRO (so that a plain veth receives through NAPI) and threaded
/// NAPI on `ifname`, at real-time priority (see the module doc); returns
/// the NAPI threads' PIDs.
///
/// The threads are told apart from other namespaces' interfaces of the
/// same name by appearing when this interface's `threaded` is set.
pub(super) fn threaded_napi(
    net: &Network,
    ns: &str,
    ifname: &str,
    queues: u32,
) -> Result<Vec<u32>, Error> {
    sh(net.exec(ns, &["ethtool", "-K", ifname, "gro", "on"]))?;
    let before = napi_threads(ifname);
    let set = format!("echo 1 > /sys/class/net/{ifname}/threaded");
    sh(net.exec(ns, &["sh", "-c", &set]))
        .with_context(|| format!("making {ifname}'s NAPI threaded"))?;
    let mut new: Vec<u32> = Vec::new();
    // The threads are made before the write returns; a moment's grace for
    // a slow machine.
    for _ in 0..50 {
        new = napi_threads(ifname).difference(&before).copied().collect();
        if new.len() >= queues as usize {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if new.len() != queues as usize {
        return Err(Error::Network(format!(
            "expected {queues} NAPI threads for {ifname}, found {} new ones",
            new.len()
        )));
    }
    for pid in &new {
        let mut c = Command::new("chrt");
        c.args(["-f", "-p", NAPI_PRIORITY, &pid.to_string()]);
        sh(c).with_context(|| format!("making NAPI thread {pid} SCHED_FIFO"))?;
    }
    Ok(new)
}

/// Pins kernel threads to `cpus`.
pub(crate) fn pin(pids: &[u32], cpus: &[usize]) -> Result<(), Error> {
    let list = cpu_list(cpus);
    for pid in pids {
        let mut c = Command::new("taskset");
        c.args(["-pc", &list, &pid.to_string()]);
        sh(c).with_context(|| format!("pinning NAPI thread {pid}"))?;
    }
    Ok(())
}

/// Deletes the networks of earlier runs that were killed before they could
/// (their prefix names a process that is gone).
pub(super) fn clean_stale_networks(tag: &str) {
    let Ok(names) = bricks_netns::list_namespaces() else {
        return;
    };
    for ns in names {
        let Some(rest) = ns.strip_prefix('b') else {
            continue;
        };
        let Some((pid, _)) = rest.split_once(tag) else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = bricks_netns::ip(&["netns", "del", &ns]);
        }
    }
}
