//! The router between real Linux hosts: the bricks binary runs
//! conf/demo-router.click in a network namespace, and the hosts' own tools
//! check what it does: ping both ways, a TCP transfer checked byte for
//! byte, ARP learnt in both directions with no static entry, and ICMP time
//! exceeded for a TTL that runs out, at a limited rate under a flood, and
//! no forwarding of frames for another MAC or of martian sources. The same
//! suite runs on every device backend, with one worker and with two.
//!
//! Needs root (skipped otherwise, a failure under CI=true). Each test
//! builds its own network, named uniquely, and everything is deleted when
//! it ends, failed or not.

#[allow(dead_code)] // shared with the other tests
mod common;

use bricks_netns::{output_timeout, skip_unless_root, Captured, Network};
use common::{mac_bytes, udp_frame, LiveRouter};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The addresses conf/demo-router.click has as defaults: the test gives
/// the router only its MACs and backend, so the defaults are checked too.
const H1: &str = "10.1.0.2";
const H2: &str = "10.2.0.2";
const GW1: &str = "10.1.0.1";
const GW2: &str = "10.2.0.1";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A network with the router running in it.
struct Lab {
    // Fields drop in order: the router ends before its network goes.
    router: LiveRouter,
    net: Network,
    macs: [String; 2],
    /// The router's control socket, in a directory deleted at the end.
    control: PathBuf,
    _dir: tempfile::TempDir,
}

impl Lab {
    fn start(tag: &str, backend: &str, threads: usize, fast: bool, busy_poll: &str) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["r", "h1", "h2"] {
            net.add_namespace(ns).unwrap();
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
                .unwrap();
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
                .unwrap();
        }
        net.sysctl("r", "net.ipv4.ip_forward", "0").unwrap();
        let mut macs = Vec::new();
        for (host, dev, addr, gw) in [("h1", "eth0", H1, GW1), ("h2", "eth1", H2, GW2)] {
            net.add_link(host, "eth0", "r", dev, 2).unwrap();
            net.disable_offloads(host, "eth0").unwrap();
            net.disable_offloads("r", dev).unwrap();
            net.add_addr(host, "eth0", &format!("{addr}/24")).unwrap();
            net.add_route(host, &["default", "via", gw]).unwrap();
            macs.push(net.mac("r", dev).unwrap());
            if fast {
                // A frame the fast path redirects into a veth reaches the
                // peer only while the peer's NAPI runs: GRO on, or an XDP
                // program there (see bricks_io::xdp::fastpath).
                let out = net
                    .exec(host, &["ethtool", "-K", "eth0", "gro", "on"])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let conf = root().join("conf/demo-router.click");
        let defines = [
            format!("BACKEND={backend}"),
            format!("MAC0={}", macs[0]),
            format!("MAC1={}", macs[1]),
            format!("FASTPATH={fast}"),
            format!("BUSY_POLL={busy_poll}"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("ctl.sock");
        let extra = ["--control".to_string(), control.display().to_string()];
        let router = LiveRouter::start_with(&net, "r", &conf, threads, &defines, &extra);
        Lab {
            router,
            net,
            macs: [macs[0].clone(), macs[1].clone()],
            control,
            _dir: dir,
        }
    }

    /// Waits until `ok` holds; fails with the router's stderr otherwise.
    fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&Lab) -> bool) {
        self.router.wait_for(what, timeout, |_| ok(self));
    }

    fn stderr(&self) -> String {
        self.router.stderr()
    }

    fn counter(&self, name: &str, counter: &str) -> u64 {
        self.router.counter(name, counter)
    }

    /// Runs `argv` in namespace `ns` for at most `secs`.
    fn run(&self, ns: &str, argv: &[&str], secs: u64) -> std::process::Output {
        output_timeout(&mut self.net.exec(ns, argv), Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("{e}\nrouter stderr:\n{}", self.stderr()))
    }

    /// `bricks ctl` on the router's control socket; its stdout.
    fn ctl(&self, cmd: &[&str]) -> String {
        let sock = self.control.display().to_string();
        let mut argv = vec![env!("CARGO_BIN_EXE_bricks"), "ctl", sock.as_str()];
        argv.extend_from_slice(cmd);
        let out = self.run("r", &argv, 10);
        assert!(
            out.status.success(),
            "bricks ctl {cmd:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether one ping from `from` to `to` is answered.
    fn ping_once(&self, from: &str, to: &str) -> bool {
        let out = self.run(from, &["ping", "-n", "-c", "1", "-W", "1", to], 10);
        out.status.success()
    }

    fn ping(&self, from: &str, to: &str) {
        let out = self.run(
            from,
            &["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", to],
            20,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("3 received"),
            "ping {from} -> {to}:\n{text}{}\nrouter stderr:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.stderr()
        );
    }

    /// The router's MAC as the host knows it, learnt by ARP.
    fn check_neighbour(&self, host: &str, router_ip: &str, mac: &str) {
        let out = self.run(host, &["ip", "neigh", "show", router_ip], 5);
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(
            text.contains(&mac.to_lowercase()),
            "{host} does not know {router_ip} at {mac}: {text}"
        );
        assert!(
            ["reachable", "stale", "delay", "probe"]
                .iter()
                .any(|s| text.contains(s)),
            "{host}'s entry for {router_ip} is not a learnt one: {text}"
        );
        assert!(!text.contains("permanent"), "{text}");
    }

    fn tcp(&self, mib: u64) {
        let bin = env!("CARGO_BIN_EXE_bricks");
        let bytes = (mib << 20).to_string();
        let addr = format!("{H2}:5001");
        let server = Captured::spawn(&mut self.net.exec(
            "h2",
            &[
                bin,
                "demo",
                "tcp-serve",
                "--listen",
                &addr,
                "--bytes",
                &bytes,
            ],
        ))
        .unwrap();
        let sent = self.run(
            "h1",
            &[bin, "demo", "tcp-send", "--to", &addr, "--bytes", &bytes],
            90,
        );
        assert!(
            sent.status.success(),
            "tcp-send: {}\nrouter stderr:\n{}",
            String::from_utf8_lossy(&sent.stderr),
            self.stderr()
        );
        let got = server.wait(Duration::from_secs(30), None).unwrap();
        let text = String::from_utf8_lossy(&got.stdout);
        let result: serde_json::Value = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("tcp-serve printed no result: {text}"));
        assert_eq!(result["intact"], true, "{result}");
        assert_eq!(result["received"].as_u64(), Some(mib << 20), "{result}");
    }

    fn ttl_exceeded(&self) {
        let out = self.run(
            "h1",
            &["ping", "-n", "-c", "1", "-t", "1", "-W", "2", H2],
            10,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("From {GW1}")) && text.contains("Time to live exceeded"),
            "ping -t 1 from h1 did not see time exceeded from {GW1}:\n{text}\nrouter stderr:\n{}",
            self.stderr()
        );
    }

    /// Counter `counter` summed over every element whose name starts with
    /// `prefix` (anonymous elements are named after their class).
    fn class_counter(&self, prefix: &str, counter: &str) -> u64 {
        let stats = self.router.stats();
        let Some(s) = stats.as_ref() else { return 0 };
        s["workers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w["elements"].as_object())
            .flat_map(|e| e.iter())
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, c)| c[counter].as_u64().unwrap_or(0))
            .sum()
    }

    /// A field of `/proc/net/snmp` (e.g. "Icmp", "InTimeExcds") in `ns`.
    fn snmp(&self, ns: &str, proto: &str, field: &str) -> u64 {
        let out = self.run(ns, &["cat", "/proc/net/snmp"], 5);
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{proto}:")))
            .collect();
        let names = rows[0].split_whitespace();
        let values = rows[1].split_whitespace();
        names
            .zip(values)
            .find(|(n, _)| *n == field)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| panic!("no {proto} {field} in /proc/net/snmp:\n{text}"))
    }

    /// Sends `count` copies of `frame` out of h1's interface, with bricks
    /// itself (AF_PACKET), as fast as it can.
    fn send_from_h1(&self, frame: &[u8], count: usize) {
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        let config = format!(
            "InfiniteSource(DATA \\<{hex}>, LIMIT {count}, STOP true) \
             -> Queue({count}) -> ToDevice(eth0, BACKEND packet);"
        );
        let out = self.run(
            "h1",
            &[env!("CARGO_BIN_EXE_bricks"), "run", "-e", &config],
            30,
        );
        assert!(
            out.status.success(),
            "sending from h1: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn ip_bytes(text: &str) -> [u8; 4] {
    text.parse::<std::net::Ipv4Addr>().unwrap().octets()
}

/// An Ethernet frame holding a UDP datagram to port 9 (discard) with 8
/// bytes of payload; the IP header checksum is right, the UDP one 0.
/// What RFC 1812 says a router must not do, checked from the hosts.
fn rfc1812_limits(lab: &Lab) {
    let router_mac = mac_bytes(&lab.macs[0]);
    let h1_mac = mac_bytes(&lab.net.mac("h1", "eth0").unwrap());

    // A flood of 2,000 packets with TTL 1: the router answers at most
    // DEST_BURST (6) + DEST_RATE (1/s) x the time it took.
    let flood = 2000;
    let expired = lab.counter("dt1", "expired");
    let before = lab.snmp("h1", "Icmp", "InTimeExcds");
    let start = Instant::now();
    lab.send_from_h1(
        &udp_frame(
            router_mac,
            h1_mac,
            ip_bytes(H1),
            ip_bytes(H2),
            1,
            b"bricks!!",
        ),
        flood,
    );
    lab.wait_for("the flood at DecIPTTL", Duration::from_secs(10), |l| {
        l.counter("dt1", "expired") >= expired + flood as u64
    });
    // Errors in flight arrive.
    std::thread::sleep(Duration::from_millis(500));
    let got = lab.snmp("h1", "Icmp", "InTimeExcds") - before;
    let secs = start.elapsed().as_secs() + 1;
    assert!(
        (1..=6 + secs).contains(&got),
        "{flood} packets with TTL 1 gave {got} time exceeded in under {secs} s; \
         at most 6 + 1 per second are allowed"
    );

    // A frame for another host's MAC is not routed: dropped by FromDevice.
    let sent = lab.counter("out1", "count");
    let other = lab.counter("in0", "other_host");
    let not_us = [0x02, 0x00, 0x00, 0x00, 0x99, 0x99];
    lab.send_from_h1(
        &udp_frame(not_us, h1_mac, ip_bytes(H1), ip_bytes(H2), 64, b"bricks!!"),
        100,
    );
    lab.wait_for("other_host drops", Duration::from_secs(10), |l| {
        l.counter("in0", "other_host") >= other + 100
    });

    // A packet from 127.0.0.1 is not routed: a martian source.
    let martians = lab.class_counter("CheckIPHeader", "martian_source");
    let lo = [127, 0, 0, 1];
    lab.send_from_h1(
        &udp_frame(router_mac, h1_mac, lo, ip_bytes(H2), 64, b"bricks!!"),
        100,
    );
    lab.wait_for("martian_source drops", Duration::from_secs(10), |l| {
        l.class_counter("CheckIPHeader", "martian_source") >= martians + 100
    });
    std::thread::sleep(Duration::from_millis(600));
    let forwarded = lab.counter("out1", "count") - sent;
    assert!(
        forwarded < 100,
        "{forwarded} frames left on eth1 after 100 to another MAC and 100 from 127.0.0.1"
    );
}

/// Everything a router owes two hosts, on one backend and worker count.
fn suite(tag: &str, backend: &str, threads: usize, fast: bool) {
    suite_polled(tag, backend, threads, fast, "0");
}

/// [`suite`] with FromDevice's BUSY_POLL (`0`: off).
fn suite_polled(tag: &str, backend: &str, threads: usize, fast: bool, busy_poll: &str) {
    let name = format!(
        "router_netns {backend} {threads} worker(s){}{}",
        if fast { " XDP fast path" } else { "" },
        if busy_poll != "0" {
            " busy polling"
        } else {
            ""
        }
    );
    if skip_unless_root(&name).is_some() {
        return;
    }
    let mut lab = Lab::start(tag, backend, threads, fast, busy_poll);
    let prefix = lab.net.prefix().to_string();
    if busy_poll != "0" {
        // The kernel took the socket options: the router says so.
        let polling = format!("busy polling {busy_poll}");
        assert!(lab.stderr().contains(&polling), "{}", lab.stderr());
    }

    // Hosts reach each other through bricks, both ways.
    lab.ping("h1", H2);
    lab.ping("h2", H1);

    // The router answers pings to its own addresses, on both sides and
    // across (h1 pings the far interface's address).
    lab.ping("h1", GW1);
    lab.ping("h2", GW2);
    lab.ping("h1", GW2);
    lab.wait_for("ICMPPingResponder's replies", Duration::from_secs(5), |l| {
        l.counter("ping", "replies") >= 9
    });

    // ARP, both directions, nothing static: the hosts learnt the router's
    // MACs, and the router learnt the hosts' (its queries were answered)
    // and answered h1's query for its address.
    lab.check_neighbour("h1", GW1, &lab.macs[0]);
    lab.check_neighbour("h2", GW2, &lab.macs[1]);
    lab.wait_for("ARP counters", Duration::from_secs(5), |l| {
        l.counter("arpq0", "responses") >= 1
            && l.counter("arpq1", "responses") >= 1
            && l.counter("ar0", "replies") >= 1
    });

    // A TCP transfer arrives whole and unchanged.
    lab.tcp(8);

    // TTL 1: the router answers with time exceeded, from its own address
    // on the sender's side.
    lab.ttl_exceeded();
    lab.wait_for("DecIPTTL's expired counter", Duration::from_secs(5), |l| {
        l.counter("dt1", "expired") >= 1
    });

    // Rate-limited errors, no frames for others, no martians.
    rfc1812_limits(&lab);

    // The transfer's segments (8 MiB in at most 1448 bytes each) went in
    // on eth0 and out on eth1, counted by the named device elements.
    let segments = (8u64 << 20) / 1448;
    if fast {
        // In the kernel: eth0's fast path forwarded the segments, and the
        // configuration saw few of them (the first ones, while h2's MAC
        // was being learnt, and the retransmissions of those).
        lab.wait_for(
            "the transfer in the fast path's counters",
            Duration::from_secs(5),
            |l| l.counter("in0", "fastpath_forwarded") >= segments,
        );
        assert!(
            lab.counter("out1", "count") < segments / 4,
            "the transfer went through the configuration: out1 count {}, fast path {}",
            lab.counter("out1", "count"),
            lab.counter("in0", "fastpath_forwarded"),
        );
        // TTL 1 and the pings to the router went up to the configuration.
        assert!(lab.counter("in0", "fastpath_ttl") >= 1, "{}", lab.stderr());

        // A route removed by a write handler is gone from the kernel's
        // copy at once: h2's subnet is unreachable, in the kernel too.
        lab.ctl(&["write", "rt.remove", "10.2.0.0/24"]);
        assert!(
            !lab.ping_once("h1", H2),
            "h2 reached with its route removed"
        );
        lab.ctl(&["write", "rt.add", "10.2.0.0/24 2"]);
        let before = lab.counter("in0", "fastpath_forwarded");
        lab.ping("h1", H2);
        lab.wait_for(
            "the restored route in the fast path",
            Duration::from_secs(5),
            |l| l.counter("in0", "fastpath_forwarded") >= before + 3,
        );
    } else {
        lab.wait_for(
            "the transfer in the device counters",
            Duration::from_secs(5),
            |l| l.counter("in0", "count") >= segments && l.counter("out1", "count") >= segments,
        );
    }

    // Hosts answer ARP at once here: no packet may have been dropped
    // while its next hop was being resolved.
    for q in ["arpq0", "arpq1"] {
        assert_eq!(
            lab.counter(q, "drops"),
            0,
            "{q} dropped packets waiting for ARP; its counters: no_reply {}, \
             hold_overflow {}, queries {}, responses {}",
            lab.counter(q, "no_reply"),
            lab.counter(q, "hold_overflow"),
            lab.counter(q, "queries"),
            lab.counter(q, "responses"),
        );
    }
    assert!(
        lab.router.child.try_wait().is_none(),
        "the router ended during the suite:\n{}",
        lab.stderr()
    );
    drop(lab);
    let left: Vec<String> = bricks_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn af_xdp_one_worker() {
    suite("x1", "xdp", 1, false);
}

#[test]
fn af_xdp_two_workers() {
    suite("x2", "xdp", 2, false);
}

#[test]
fn af_packet_one_worker() {
    suite("p1", "packet", 1, false);
}

#[test]
fn af_packet_two_workers() {
    suite("p2", "packet", 2, false);
}

/// The same suite with the ordinary packets forwarded in the kernel by
/// the XDP fast path: everything else must behave as without it.
#[test]
fn af_xdp_fast_path_one_worker() {
    suite("f1", "xdp", 1, true);
}

#[test]
fn af_xdp_fast_path_two_workers() {
    suite("f2", "xdp", 2, true);
}

/// The same suite with AF_XDP busy polling: each worker runs its queues'
/// receive processing in its own polls.
#[test]
fn af_xdp_busy_poll_one_worker() {
    suite_polled("b1", "xdp", 1, false, "50us");
}
