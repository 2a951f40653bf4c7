//! Hot swap of a running router between real Linux hosts: the bricks
//! binary runs conf/demo-router.click on two workers in a network
//! namespace (AF_XDP, then AF_PACKET), and while a counted UDP stream,
//! then a TCP transfer, go from h1 to h2 through it, `bricks ctl SOCK
//! hotswap FILE` switches it several times between configurations that
//! add a counter, change a route and rename eth1's device elements. Not
//! one datagram is lost, the TCP transfer arrives byte for
//! byte, the counter carried over keeps counting from where it was, and a
//! configuration that fails to check is refused with its reason while the
//! router keeps forwarding.
//!
//! Needs root (skipped otherwise, a failure under CI=true). The network is
//! named uniquely and deleted when the test ends, failed or not.

#[allow(dead_code)] // shared with the other tests
mod common;

use bricks_netns::{in_namespace, output_timeout, skip_unless_root, Captured, Network};
use common::LiveRouter;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");
const H1: &str = "10.1.0.2";
const H2: &str = "10.2.0.2";
/// Datagrams of the UDP stream, and their rate.
const DATAGRAMS: u32 = 12_000;
const RATE: u32 = 4_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A network with the router running in it.
struct Lab {
    // Fields drop in order: the router ends before its network goes.
    router: LiveRouter,
    net: Network,
    dir: tempfile::TempDir,
}

impl Lab {
    fn start(tag: &str, backend: &str) -> Lab {
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
        for (host, dev, addr, gw) in [
            ("h1", "eth0", H1, "10.1.0.1"),
            ("h2", "eth1", H2, "10.2.0.1"),
        ] {
            net.add_link(host, "eth0", "r", dev, 2).unwrap();
            net.disable_offloads(host, "eth0").unwrap();
            net.disable_offloads("r", dev).unwrap();
            net.add_addr(host, "eth0", &format!("{addr}/24")).unwrap();
            net.add_route(host, &["default", "via", gw]).unwrap();
            macs.push(net.mac("r", dev).unwrap());
        }
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("ctl.sock");
        let conf = root().join("conf/demo-router.click");
        let defines = [
            format!("BACKEND={backend}"),
            format!("MAC0={}", macs[0]),
            format!("MAC1={}", macs[1]),
        ];
        let router = LiveRouter::start_with(
            &net,
            "r",
            &conf,
            2,
            &defines,
            &["--control".into(), sock.display().to_string()],
        );
        Lab { router, net, dir }
    }

    fn sock(&self) -> String {
        self.dir.path().join("ctl.sock").display().to_string()
    }

    /// `bricks ctl SOCK ARGS...`: whether it succeeded, and what it said.
    fn ctl(&self, args: &[&str]) -> (bool, String) {
        let sock = self.sock();
        let mut argv = vec![BRICKS, "ctl", &sock];
        argv.extend_from_slice(args);
        let out = output_timeout(&mut self.net.exec("r", &argv), Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{e}\nrouter stderr:\n{}", self.router.stderr()));
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// A counter read through the control socket (summed over workers).
    fn read(&self, handler: &str) -> u64 {
        let (ok, text) = self.ctl(&["read", handler]);
        assert!(ok, "read {handler}: {text}");
        text.trim().parse().unwrap_or(0)
    }

    /// Writes a variant of the router's configuration into the test's
    /// directory: `hs`, a Counter on eth0's input, and one more route
    /// (`extra`) in the routing table, or the configuration as it is;
    /// with `rename`, eth1's device elements have other names (their
    /// successors find the queues the old ones gave back).
    fn variant(&self, name: &str, extra: Option<&str>, rename: bool) -> PathBuf {
        let text = std::fs::read_to_string(root().join("conf/demo-router.click")).unwrap();
        let text = match extra {
            None => text,
            Some(route) => {
                assert!(text.contains("in0 -> c0;") && text.contains("    $NET1/$LEN1 2,\n"));
                text.replace("in0 -> c0;", "in0 -> hs :: Counter -> c0;")
                    .replace(
                        "    $NET1/$LEN1 2,\n",
                        &format!("    $NET1/$LEN1 2,\n    {route},\n"),
                    )
            }
        };
        let text = if rename {
            for s in [
                "in1 :: FromDevice",
                "in1 -> c1;",
                "out1 :: ToDevice",
                "-> out1;",
            ] {
                assert!(text.contains(s), "{s}");
            }
            text.replace("in1 :: FromDevice", "rx1 :: FromDevice")
                .replace("in1 -> c1;", "rx1 -> c1;")
                .replace("out1 :: ToDevice", "tx1 :: ToDevice")
                .replace("-> out1;", "-> tx1;")
        } else {
            text
        };
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn hotswap(&self, file: &Path) {
        let (ok, text) = self.ctl(&["hotswap", file.to_str().unwrap()]);
        assert!(
            ok && text.starts_with("ok: hot-swapped"),
            "hotswap {}: {text}\nrouter stderr:\n{}",
            file.display(),
            self.router.stderr()
        );
    }

    fn ping(&self, from: &str, to: &str) {
        let out = output_timeout(
            &mut self
                .net
                .exec(from, &["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", to]),
            Duration::from_secs(20),
        )
        .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("3 received"),
            "ping {from} -> {to}:\n{text}\nrouter stderr:\n{}",
            self.router.stderr()
        );
    }
}

/// Sends DATAGRAMS numbered datagrams from h1 to h2 at RATE a second
/// while `during` runs; returns how many distinct ones h2 received.
fn udp_stream(lab: &Lab, during: impl FnOnce()) -> u32 {
    let (h1, h2) = (lab.net.ns_name("h1"), lab.net.ns_name("h2"));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = std::thread::spawn(move || {
        in_namespace(&h2, move || {
            let s = UdpSocket::bind((H2, 9000)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            ready_tx.send(()).unwrap();
            let mut seen = vec![false; DATAGRAMS as usize];
            let mut got = 0u32;
            let mut buf = [0u8; 2048];
            let end = Instant::now() + Duration::from_secs(60);
            // Until every datagram came, or none came for 3 s.
            while got < DATAGRAMS && Instant::now() < end {
                let Ok(n) = s.recv(&mut buf) else { break };
                if n >= 4 {
                    let i = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                    if i < seen.len() && !std::mem::replace(&mut seen[i], true) {
                        got += 1;
                    }
                }
            }
            got
        })
    });
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let sender = std::thread::spawn(move || {
        in_namespace(&h1, move || {
            let s = UdpSocket::bind((H1, 0)).unwrap();
            s.connect((H2, 9000)).unwrap();
            let start = Instant::now();
            let mut payload = [0u8; 200];
            for i in 0..DATAGRAMS {
                let due = start + Duration::from_secs_f64(f64::from(i) / f64::from(RATE));
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                payload[..4].copy_from_slice(&i.to_be_bytes());
                // The local queue may be full for a moment: try again.
                for _ in 0..100 {
                    if s.send(&payload).is_ok() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    });
    during();
    sender.join().unwrap();
    receiver.join().unwrap()
}

/// A TCP transfer of `mib` MiB from h1 to h2 while `during` runs,
/// checked byte for byte by `bricks demo tcp-serve`.
fn tcp_transfer(lab: &Lab, mib: u64, during: impl FnOnce()) {
    let bytes = (mib << 20).to_string();
    let addr = format!("{H2}:5001");
    let server = Captured::spawn(&mut lab.net.exec(
        "h2",
        &[
            BRICKS,
            "demo",
            "tcp-serve",
            "--listen",
            &addr,
            "--bytes",
            &bytes,
        ],
    ))
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sender = Captured::spawn(&mut lab.net.exec(
        "h1",
        &[BRICKS, "demo", "tcp-send", "--to", &addr, "--bytes", &bytes],
    ))
    .unwrap();
    during();
    let sent = sender.wait(Duration::from_secs(120), None).unwrap();
    assert!(
        sent.status.success(),
        "tcp-send: {}\nrouter stderr:\n{}",
        String::from_utf8_lossy(&sent.stderr),
        lab.router.stderr()
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

/// These tests count every datagram; run them one at a time so that two
/// of them never compete for this machine's cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn hotswap_under_traffic_loses_nothing_af_xdp() {
    if skip_unless_root("hotswap_under_traffic_loses_nothing_af_xdp").is_none() {
        hotswap_under_traffic("hsx", "xdp");
    }
}

#[test]
fn hotswap_under_traffic_loses_nothing_af_packet() {
    if skip_unless_root("hotswap_under_traffic_loses_nothing_af_packet").is_none() {
        hotswap_under_traffic("hsp", "packet");
    }
}

fn hotswap_under_traffic(tag: &str, backend: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::start(tag, backend);
    let plain = lab.variant("plain.click", None, false);
    let a = lab.variant("a.click", Some("10.9.0.0/16 2"), false);
    let b = lab.variant("b.click", Some("10.8.0.0/16 1"), true);
    let bad = lab.dir.path().join("bad.click");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&a)
            .unwrap()
            .replace("hs :: Counter", "hs :: Countr"),
    )
    .unwrap();
    // Addresses learnt both ways before the traffic starts.
    lab.ping("h1", H2);

    // A counted UDP stream, three seconds long, with four swaps in it.
    let got = udp_stream(&lab, || {
        for (i, file) in [&a, &b, &a, &b].iter().enumerate() {
            std::thread::sleep(Duration::from_millis(if i == 0 { 400 } else { 550 }));
            lab.hotswap(file);
        }
    });
    assert_eq!(
        got,
        DATAGRAMS,
        "datagrams lost across hot swaps; router stderr:\n{}",
        lab.router.stderr()
    );
    // The counter added by the first swap saw every datagram since then
    // and kept counting through the next three.
    let hs = lab.read("hs.count");
    assert!(hs > u64::from(DATAGRAMS) / 2, "hs.count {hs}");

    // A configuration that does not check is refused with its reason,
    // and the running one keeps its state.
    let (ok, text) = lab.ctl(&["hotswap", bad.to_str().unwrap()]);
    assert!(!ok, "a bad configuration was accepted: {text}");
    assert!(
        text.contains("Countr") && text.contains("the running configuration stays"),
        "{text}"
    );
    assert!(lab.read("hs.count") >= hs);

    // A TCP transfer with more swaps, the counter continuing.
    let before = lab.read("hs.count");
    tcp_transfer(&lab, 4, || {
        for file in [&a, &b, &a] {
            std::thread::sleep(Duration::from_millis(300));
            lab.hotswap(file);
        }
    });
    let after = lab.read("hs.count");
    assert!(
        after > before + 1000,
        "hs.count went from {before} to {after} during 4 MiB of TCP"
    );
    // The live counters say the same as the control socket.
    lab.router
        .wait_for("hs in the live counters", Duration::from_secs(5), |r| {
            r.counter("hs", "count") >= after
        });
    // Back to the configuration the router started with: `hs` is gone.
    lab.hotswap(&plain);
    let (ok, text) = lab.ctl(&["read", "hs.count"]);
    assert!(!ok && text.contains("no element"), "{text}");
    lab.ping("h1", H2);
    let mut lab = lab;
    assert!(
        lab.router.child.try_wait().is_none(),
        "the router ended; its stderr:\n{}",
        lab.router.stderr()
    );
}

/// A hot swap to a configuration that names an interface the router has
/// not opened opens it: an operator plugs a third host into the router
/// namespace while it forwards, swaps in the configuration with that
/// interface added, and the host's ARP and pings are answered through it
/// while h1 and h2 keep reaching each other. An interface that cannot be
/// opened refuses the swap with the reason and changes nothing.
#[test]
fn a_hot_swap_opens_an_interface_the_router_did_not_have() {
    if skip_unless_root("a_hot_swap_opens_an_interface_the_router_did_not_have").is_some() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = Lab::start("hsn", "xdp");
    lab.ping("h1", H2);
    // The third host, on a link the running configuration does not name.
    lab.net.add_namespace("h3").unwrap();
    lab.net
        .sysctl("h3", "net.ipv6.conf.all.disable_ipv6", "1")
        .unwrap();
    lab.net.add_link("h3", "eth0", "r", "eth2", 2).unwrap();
    lab.net.disable_offloads("h3", "eth0").unwrap();
    lab.net.disable_offloads("r", "eth2").unwrap();
    lab.net.add_addr("h3", "eth0", "10.3.0.2/24").unwrap();
    let mac2 = lab.net.mac("r", "eth2").unwrap();
    let plain = lab.variant("plain.click", None, false);
    let with_eth2 = lab.dir.path().join("eth2.click");
    let responder = |dev: &str| {
        format!(
            "\n// Added by the swap: {dev} answers ARP and pings for 10.3.0.1.\n\
             n2_in :: FromDevice({dev}) -> n2_c :: Classifier(12/0806 20/0001, 12/0800, -);\n\
             n2_q :: Queue(256) -> n2_out :: ToDevice({dev});\n\
             n2_c[0] -> ARPResponder(10.3.0.1 {mac2}) -> n2_q;\n\
             n2_c[1] -> Strip(14) -> CheckIPHeader -> n2_ip :: IPClassifier(icmp type echo, -);\n\
             n2_ip[0] -> ICMPPingResponder -> Unstrip(14) -> EtherMirror -> n2_q;\n\
             n2_ip[1] -> Discard;\n\
             n2_c[2] -> Discard;\n"
        )
    };
    let text = std::fs::read_to_string(&plain).unwrap();
    std::fs::write(&with_eth2, format!("{text}{}", responder("eth2"))).unwrap();
    let (ok, said) = lab.ctl(&["hotswap", with_eth2.to_str().unwrap()]);
    assert!(
        ok && said.starts_with("ok: hot-swapped") && said.contains("opened eth2"),
        "{said}\nrouter stderr:\n{}",
        lab.router.stderr()
    );
    lab.ping("h3", "10.3.0.1");
    lab.ping("h1", H2);
    // An interface that is not there: refused, with the reason; eth2 and
    // the rest keep working.
    let missing = lab.dir.path().join("missing.click");
    std::fs::write(
        &missing,
        format!("{text}{}", responder("eth2")) + &responder("nosuch9").replace("n2_", "n9_"),
    )
    .unwrap();
    let (ok, said) = lab.ctl(&["hotswap", missing.to_str().unwrap()]);
    assert!(!ok && said.contains("nosuch9"), "{said}");
    lab.ping("h3", "10.3.0.1");
    lab.ping("h1", H2);
    // Back to the configuration without eth2, then to it again: the open
    // interface's queues are handed back and taken again.
    lab.hotswap(&plain);
    lab.ping("h1", H2);
    lab.hotswap(&with_eth2);
    lab.ping("h3", "10.3.0.1");
    assert!(
        lab.router.child.try_wait().is_none(),
        "the router ended; its stderr:\n{}",
        lab.router.stderr()
    );
}
