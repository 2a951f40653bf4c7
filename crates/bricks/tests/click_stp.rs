//! Click's `EtherSpanTree` against Linux's bridge: a bricks switch
//! (EtherSwitch between two Suppressors, its ports on veths) and a Linux
//! bridge running the kernel's 802.1D spanning tree are joined by two
//! links, a loop; a host hangs off each. The two must agree on the root
//! (read from the kernel's sysfs and bricks' counters and handlers),
//! exactly one end of the redundant links must end blocking, a ping
//! crosses the topology, and the links carry a handful of frames, not a
//! broadcast storm. With the lower bridge identifier bricks is root and
//! the kernel follows; each side's topology change notifications are
//! acknowledged by the other. Malformed BPDUs from a host are counted and
//! change nothing.
//!
//! Timers are the kernel's minimum (forward delay 2 s, hello 1 s, max
//! age 6 s), so a test takes about ten seconds; the two run side by side.
//! Needs root (skipped otherwise, a failure under CI=true). Each test
//! builds its own network, named uniquely, and deletes it when it ends.

#[allow(dead_code)] // the helpers this test does not use
mod common;

use bricks_netns::{output_timeout, skip_unless_root, Network};
use common::LiveRouter;
use std::path::PathBuf;
use std::time::Duration;

/// The bricks switch's address (the low 48 bits of its identifier).
const ADDR: &str = "02:00:00:5b:00:01";
const H1: &str = "10.213.0.1";
const H2: &str = "10.213.0.2";
/// The bricks switch's ports, in order; sA and sB face the kernel's kA
/// and kB, sH host h2.
const PORTS: [&str; 3] = ["sA", "sB", "sH"];

/// The switch: each port's BPDUs to the spanning tree, the rest through
/// the suppressors and the switch.
fn config(priority: &str) -> String {
    let mut c = format!(
        "span :: EtherSpanTree({ADDR}, in, out, sw, PRIORITY {priority}, \
         HELLO_TIME 1, FORWARD_DELAY 2, MAX_AGE 6);\n\
         sw :: EtherSwitch; in :: Suppressor; out :: Suppressor;\n"
    );
    for (i, dev) in PORTS.iter().enumerate() {
        c.push_str(&format!(
            "FromDevice({dev}, PROMISC true, BACKEND packet) -> c{i} :: Classifier(14/4242, -);\n\
             q{i} :: Queue(256) -> ToDevice({dev}, BACKEND packet);\n\
             c{i}[0] -> [{i}]span[{i}] -> q{i};\n\
             c{i}[1] -> [{i}]in[{i}] -> [{i}]sw[{i}] -> [{i}]out[{i}] -> q{i};\n"
        ));
    }
    c
}

/// Linux prints a bridge identifier as priority, a dot, the address.
fn id_text(id: u64) -> String {
    format!("{:04x}.{:012x}", id >> 48, id & 0xffff_ffff_ffff)
}

struct Lab {
    // Fields drop in order: the switch ends before its network goes.
    router: LiveRouter,
    net: Network,
    control: PathBuf,
    _dir: tempfile::TempDir,
}

impl Lab {
    /// The network, the kernel's bridge up, and bricks started with
    /// bridge priority `priority` on `threads` workers (each link of the
    /// switch has as many queues, so that BPDUs reach every worker).
    fn start(tag: &str, priority: &str, threads: usize) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["k", "s", "h1", "h2"] {
            net.add_namespace(ns).unwrap();
            // No IPv6 chatter on the links: only what the test sends.
            for key in [
                "net.ipv6.conf.all.disable_ipv6",
                "net.ipv6.conf.default.disable_ipv6",
            ] {
                net.sysctl(ns, key, "1").unwrap();
            }
        }
        let k = net.ns_name("k");
        bricks_netns::ip(&[
            "-n",
            &k,
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "stp_state",
            "1",
            // Centiseconds: the kernel's minimum forward delay (2 s),
            // hello 1 s, max age 6 s.
            "forward_delay",
            "200",
            "hello_time",
            "100",
            "max_age",
            "600",
        ])
        .unwrap();
        // Enslaved in this order: kA is port 1 (0x8001), kB 2, kH 3.
        for (kif, other, oif) in [("kA", "s", "sA"), ("kB", "s", "sB"), ("kH", "h1", "eth0")] {
            net.add_link("k", kif, other, oif, threads as u32).unwrap();
            bricks_netns::ip(&["-n", &k, "link", "set", kif, "master", "br0"]).unwrap();
        }
        net.add_link("h2", "eth0", "s", "sH", threads as u32)
            .unwrap();
        bricks_netns::ip(&["-n", &k, "link", "set", "br0", "up"]).unwrap();
        net.add_addr("h1", "eth0", &format!("{H1}/24")).unwrap();
        net.add_addr("h2", "eth0", &format!("{H2}/24")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("switch.click");
        std::fs::write(&conf, config(priority)).unwrap();
        let control = dir.path().join("ctl.sock");
        let extra = ["--control".to_string(), control.display().to_string()];
        let router = LiveRouter::start_with(&net, "s", &conf, threads, &[], &extra);
        Lab {
            router,
            net,
            control,
            _dir: dir,
        }
    }

    fn stderr(&self) -> String {
        self.router.stderr()
    }

    fn run(&self, ns: &str, argv: &[&str], secs: u64) -> std::process::Output {
        output_timeout(&mut self.net.exec(ns, argv), Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("{e}\nswitch stderr:\n{}", self.stderr()))
    }

    /// A file of namespace `ns`'s sysfs, trimmed.
    fn sys(&self, ns: &str, path: &str) -> String {
        let out = self.run(ns, &["cat", path], 5);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The kernel bridge's attribute `name`.
    fn br(&self, name: &str) -> String {
        self.sys("k", &format!("/sys/class/net/br0/bridge/{name}"))
    }

    /// The kernel's state of port `dev`: 3 forwarding, 4 blocking.
    fn kernel_state(&self, dev: &str) -> u64 {
        self.sys("k", &format!("/sys/class/net/{dev}/brport/state"))
            .parse()
            .unwrap_or(0)
    }

    fn counter(&self, name: &str) -> u64 {
        self.router.counter("span", name)
    }

    /// bricks' state of its port `i`, in the kernel's numbers.
    fn bricks_state(&self, i: usize) -> u64 {
        self.counter(&format!("state{i}"))
    }

    /// Reads handler `handler` of the running switch with `bricks ctl`.
    fn read(&self, handler: &str) -> String {
        let sock = self.control.display().to_string();
        let out = self.run(
            "s",
            &[env!("CARGO_BIN_EXE_bricks"), "ctl", &sock, "read", handler],
            10,
        );
        assert!(
            out.status.success(),
            "bricks ctl read {handler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every port of both bridges forwarding or blocking, and the two
    /// agreeing on the root.
    fn settled(&self) -> bool {
        let done = |s: u64| s == 3 || s == 4;
        ["kA", "kB", "kH"]
            .iter()
            .all(|d| done(self.kernel_state(d)))
            && (0..3).all(|i| done(self.bricks_state(i)))
            && self.br("root_id") == id_text(self.counter("root"))
    }

    fn wait_settled(&self) {
        self.router
            .wait_for("a settled spanning tree", Duration::from_secs(15), |_| {
                self.settled()
            });
    }

    /// The four ends of the two links between the bridges: kA, kB, sA, sB.
    fn link_ends(&self) -> [u64; 4] {
        [
            self.kernel_state("kA"),
            self.kernel_state("kB"),
            self.bricks_state(0),
            self.bricks_state(1),
        ]
    }

    /// Frames received and sent on the kernel's ends of the two links.
    fn link_frames(&self) -> u64 {
        let mut n = 0;
        for dev in ["kA", "kB"] {
            for dir in ["rx", "tx"] {
                n += self
                    .sys(
                        "k",
                        &format!("/sys/class/net/{dev}/statistics/{dir}_packets"),
                    )
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        }
        n
    }

    /// Pings h2 from h1 (ARP's broadcast first: the caches are cold)
    /// and counts the frames the links carried meanwhile and for a
    /// second after.
    fn ping_across(&self) -> u64 {
        let before = self.link_frames();
        let out = self.run(
            "h1",
            &["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", H2],
            15,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("3 received"),
            "ping {H1} -> {H2}: {text}\nswitch stderr:\n{}",
            self.stderr()
        );
        std::thread::sleep(Duration::from_secs(1));
        let frames = self.link_frames() - before;
        eprintln!("{frames} frames on the links during the ping and a second after");
        frames
    }

    /// Sends `count` copies of each of `frames` from h2 into the
    /// switch's port sH, with bricks itself.
    fn send_from_h2(&self, frames: &[&[u8]], count: usize) {
        for f in frames {
            let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
            let config = format!(
                "InfiniteSource(DATA \\<{hex}>, LIMIT {count}, STOP true) \
                 -> Queue({count}) -> ToDevice(eth0, BACKEND packet);"
            );
            let out = self.run(
                "h2",
                &[env!("CARGO_BIN_EXE_bricks"), "run", "-e", &config],
                15,
            );
            assert!(
                out.status.success(),
                "sending from h2: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Waits up to 4 s for `ok`.
    fn eventually(&self, what: &str, ok: impl Fn(&Lab) -> bool) {
        self.router
            .wait_for(what, Duration::from_secs(4), |_| ok(self));
    }
}

/// A configuration BPDU as bricks' own host h2 forges it: protocol
/// identifier and type as given, from 02:00:00:5b:00:99, claiming root
/// priority 0 (which would win were it read).
fn forged(protocol: u8, kind: u8) -> Vec<u8> {
    let mut f = vec![
        0x01, 0x80, 0xc2, 0, 0, 0, 0x02, 0, 0, 0x5b, 0, 0x99, 0x00, 0x26,
    ];
    f.extend([0x42, 0x42, 0x03, 0x00, protocol, 0x00, kind, 0x00]);
    let rogue = [0x00, 0x00, 0x02, 0, 0, 0x5b, 0, 0x99];
    f.extend(rogue);
    f.extend([0, 0, 0, 0]);
    f.extend(rogue);
    f.extend([0x80, 0x01, 0, 0, 0x14, 0, 0x02, 0, 0x0f, 0]);
    f
}

#[test]
fn linux_root_bricks_blocks_one_link() {
    if skip_unless_root("click_stp linux_root_bricks_blocks_one_link").is_some() {
        return;
    }
    // bricks at Click's priority 0xDEAD; the kernel at 0x8000 is root.
    let lab = Lab::start("stpk", "0xdead", 1);
    lab.wait_settled();

    // (a) One root, the kernel's, as both sides say it.
    let root = lab.br("root_id");
    assert_eq!(root, lab.br("bridge_id"), "the kernel is root");
    assert!(root.starts_with("8000."), "{root}");
    assert_eq!(lab.read("span.root_id").trim(), root);
    assert_eq!(lab.read("span.bridge_id").trim(), "dead.0200005b0001");
    assert_eq!(lab.counter("is_root"), 0);
    assert_eq!(lab.counter("root_port"), 0, "sA hears the root's port 1");

    // (b) Of the four ends of the two links only bricks' sB blocks.
    assert_eq!(lab.link_ends(), [3, 3, 3, 4], "kA, kB, sA, sB");
    assert_eq!(lab.bricks_state(2), 3);
    assert_eq!(
        lab.read("span.port_states"),
        "0 forwarding root\n1 blocking blocked\n2 forwarding designated\n"
    );

    // bricks' ports began forwarding: its notification reached the
    // kernel, which acknowledged it.
    lab.eventually("the kernel's acknowledgement", |l| {
        l.counter("sent_tcns") >= 1 && l.counter("tcas") >= 1
    });

    // (c) A ping crosses; the links carry its frames, BPDUs and ARP's
    // broadcast, not a storm (which would be thousands a second).
    let frames = lab.ping_across();
    assert!(frames < 60, "{frames} frames on the links in 2.5 s");
    // The broadcast reached sB too and was stopped there.
    assert!(lab.router.counter("in", "drops") >= 1);
    assert_eq!(lab.link_ends(), [3, 3, 3, 4]);

    // Malformed BPDUs from h2 are counted and change nothing.
    let drops = lab.counter("drops");
    lab.send_from_h2(&[&forged(0x01, 0x00), &forged(0x00, 0x02)], 10);
    lab.eventually("the forged BPDUs counted", |l| {
        l.counter("bad_protocol") >= 10 && l.counter("unknown_type") >= 10
    });
    assert!(lab.counter("drops") >= drops + 20);
    assert_eq!(lab.br("root_id"), root);
    assert_eq!(lab.read("span.root_id").trim(), root);
    assert_eq!(lab.link_ends(), [3, 3, 3, 4]);
}

#[test]
fn bricks_lower_id_becomes_root() {
    if skip_unless_root("click_stp bricks_lower_id_becomes_root").is_some() {
        return;
    }
    // Two workers: BPDUs arrive on either, the timers run on the first.
    let lab = Lab::start("stpb", "0x1000", 2);
    lab.wait_settled();

    // (d) bricks is root and the kernel agrees.
    assert_eq!(lab.counter("is_root"), 1);
    assert_eq!(lab.br("root_id"), "1000.0200005b0001");
    assert_eq!(lab.read("span.root_id").trim(), "1000.0200005b0001");
    assert_ne!(lab.br("bridge_id"), lab.br("root_id"));
    // The kernel's root port is kA (it hears bricks' port 0x8001), and
    // it blocks kB; bricks, root, forwards on every port.
    assert_eq!(
        lab.br("root_port"),
        lab.sys("k", "/sys/class/net/kA/brport/port_no")
            .trim_start_matches("0x")
    );
    assert_eq!(lab.link_ends(), [3, 4, 3, 3], "kA, kB, sA, sB");
    assert_eq!(lab.bricks_state(2), 3);

    // The kernel's ports began forwarding: its notification reached
    // bricks, which acknowledged it and announces the change.
    lab.eventually("the kernel's notification acknowledged", |l| {
        l.counter("tcns") >= 1 && l.br("topology_change_detected") == "0"
    });
    lab.eventually("the change announced to the kernel", |l| {
        l.br("topology_change") == "1"
    });

    let frames = lab.ping_across();
    assert!(frames < 60, "{frames} frames on the links in 2.5 s");
    assert_eq!(lab.link_ends(), [3, 4, 3, 3]);
}
