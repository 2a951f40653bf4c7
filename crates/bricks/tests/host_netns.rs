//! The host's own stack through bricks, on real TUN and TAP devices, in a
//! network namespace the test makes (and deletes, also on failure): the
//! Linux stack of the namespace pings through KernelTun, resolves and
//! pings an address bricks answers on KernelTap, and talks to bricks
//! through a FromHost/ToHost pair; tcpdump sees what ToHostSniffers
//! sends and the stack does not. Root only; skipped with a reason
//! otherwise (never under CI).

use bricks_netns::{output_timeout, skip_unless_root, Captured, ChildGuard, Network};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn network(tag: &str) -> Network {
    let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
    net.add_namespace("h").unwrap();
    net
}

/// The value of `counter` of element `name` in a run's final summary (0
/// when the summary leaves it out, as it does zeros).
fn counter(stderr: &str, name: &str, counter: &str) -> u64 {
    stderr
        .lines()
        .find(|l| l.starts_with(&format!("{name} (")))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{counter}=")))
        })
        .map_or(0, |v| v.parse().unwrap())
}

/// Starts bricks in namespace `h` with `args` and waits (at most 5 s) for
/// interface `dev` to be up there.
fn start(net: &Network, args: &[&str], dev: &str) -> Captured {
    let mut argv = vec![BRICKS];
    argv.extend_from_slice(args);
    let router = Captured::spawn(&mut net.exec("h", &argv)).unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let o = output_timeout(
            &mut net.exec("h", &["ip", "-o", "link", "show", dev]),
            Duration::from_secs(5),
        )
        .unwrap();
        if o.status.success() && String::from_utf8_lossy(&o.stdout).contains(",UP") {
            return router;
        }
        if Instant::now() >= end {
            let out = router.wait(Duration::from_secs(1), None);
            panic!("{dev} never came up in the namespace; bricks: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Pings `addr` from the namespace's host stack `n` times; returns how
/// many replies came back and ping's output.
fn ping(net: &Network, addr: &str, n: u32) -> (u32, String) {
    let count = n.to_string();
    let o = output_timeout(
        &mut net.exec(
            "h",
            &["ping", "-n", "-c", &count, "-i", "0.2", "-W", "1", addr],
        ),
        Duration::from_secs(15),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let received = text
        .lines()
        .find_map(|l| {
            l.split(", ")
                .find_map(|p| p.strip_suffix(" received"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    (received, text)
}

fn finish(router: Captured) -> String {
    let out = router.wait(Duration::from_secs(15), None).unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "bricks failed:\n{err}");
    err
}

fn cmd_out(cmd: &mut Command) -> String {
    let o = output_timeout(cmd, Duration::from_secs(10)).unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn kernel_tun_conf_answers_the_hosts_pings() {
    if skip_unless_root("kernel_tun_conf_answers_the_hosts_pings").is_some() {
        return;
    }
    let net = network("ht");
    let conf = root().join("conf/host-tun.click");
    let conf = conf.to_str().unwrap();
    let router = start(&net, &["run", conf, "--duration", "4"], "bricks0");
    // The host got its address on the device, as KernelTun's ADDR says.
    let addr = cmd_out(&mut net.exec("h", &["ip", "-o", "-4", "addr", "show", "bricks0"]));
    assert!(addr.contains("inet 10.9.0.1/24"), "{addr}");
    let (got, text) = ping(&net, "10.9.0.2", 3);
    assert_eq!(got, 3, "{text}");
    // The host's own address is the host's: bricks never sees those.
    let (got, text) = ping(&net, "10.9.0.1", 1);
    assert_eq!(got, 1, "{text}");
    let err = finish(router);
    assert_eq!(counter(&err, "pings", "count"), 3, "{err}");
    assert_eq!(counter(&err, "tun", "sent"), 3, "{err}");
    assert_eq!(counter(&err, "tun", "drops"), 0, "{err}");
    assert!(counter(&err, "tun", "count") >= 3, "{err}");
    // The device goes away with the router.
    let o = output_timeout(
        &mut net.exec("h", &["ip", "link", "show", "bricks0"]),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(!o.status.success(), "bricks0 outlived the router");
}

/// A TAP device, ARP and a ping responder: the host resolves 10.9.1.2 to
/// bricks' MAC through ARPResponder, then pings it.
const TAP_CONF: &str = "
tap :: KernelTap(10.9.1.1/24, 10.9.1.254, ETHER 02:00:00:00:09:01, DEVNAME btap0, MTU 1400, BURST 4);
tap -> c :: Classifier(12/0806 20/0001, 12/0800, -);
c[0] -> arp :: ARPResponder(10.9.1.2 02:00:00:00:09:02) -> q :: Queue(64) -> tap;
c[1] -> Strip(14) -> CheckIPHeader -> IPClassifier(icmp type echo)
    -> pings :: Counter -> ICMPPingResponder
    -> EtherEncap(0x0800, 02:00:00:00:09:02, 02:00:00:00:09:01) -> q;
c[2] -> Discard;
";

#[test]
fn kernel_tap_answers_arp_and_the_hosts_pings() {
    if skip_unless_root("kernel_tap_answers_arp_and_the_hosts_pings").is_some() {
        return;
    }
    let net = network("hp");
    // Two queues (one per worker) on one device; KernelTap's input is pull
    // here, from the Queue (KernelTun's test pushes).
    let router = start(
        &net,
        &["run", "-e", TAP_CONF, "--duration", "4", "--threads", "2"],
        "btap0",
    );
    let link = cmd_out(&mut net.exec("h", &["ip", "-o", "link", "show", "btap0"]));
    assert!(link.contains("mtu 1400"), "{link}");
    assert!(link.contains("link/ether 02:00:00:00:09:01"), "{link}");
    // GATEWAY: the host's default route goes through the router.
    let route = cmd_out(&mut net.exec("h", &["ip", "-4", "route", "show", "default"]));
    assert!(
        route.contains("default via 10.9.1.254 dev btap0"),
        "{route}"
    );
    let (got, text) = ping(&net, "10.9.1.2", 3);
    assert_eq!(got, 3, "{text}");
    let neigh = cmd_out(&mut net.exec("h", &["ip", "neigh", "show", "10.9.1.2"]));
    assert!(neigh.contains("lladdr 02:00:00:00:09:02"), "{neigh}");
    let err = finish(router);
    assert_eq!(counter(&err, "pings", "count"), 3, "{err}");
    assert!(counter(&err, "arp", "replies") >= 1, "{err}");
    assert!(counter(&err, "tap", "sent") >= 4, "{err}");
    assert_eq!(counter(&err, "tap", "drops"), 0, "{err}");
}

/// ADDR6 and IP6_ROUTER: the host gets the IPv6 address beside the
/// link-local one the kernel derives from ETHER, and the device, alone,
/// acts as an IPv6 router's interface (the host's own forwarding stays
/// off); a TAP without IP6_ROUTER stays a host's.
#[test]
fn kernel_tap_gives_the_host_an_ipv6_address_and_a_routers_role() {
    if skip_unless_root("kernel_tap_gives_the_host_an_ipv6_address_and_a_routers_role").is_some() {
        return;
    }
    let net = network("h6");
    let conf = "KernelTap(10.9.6.1/24, ETHER 02:00:00:00:09:11, DEVNAME btap6, \
                ADDR6 2001:db8:96::1/64, IP6_ROUTER true) -> Discard;\n\
                KernelTap(10.9.7.1/24, DEVNAME btap7, ADDR6 2001:db8:97::1/64) -> Discard;";
    let router = start(&net, &["run", "-e", conf, "--duration", "3"], "btap6");
    let addr = cmd_out(&mut net.exec("h", &["ip", "-o", "-6", "addr", "show", "btap6"]));
    assert!(addr.contains("inet6 2001:db8:96::1/64"), "{addr}");
    // EUI-64 of 02:00:00:00:09:11 (RFC 4291 appendix A).
    assert!(addr.contains("inet6 fe80::ff:fe00:911/64"), "{addr}");
    let sysctl = |key: &str| {
        cmd_out(&mut net.exec("h", &["sysctl", "-n", key]))
            .trim()
            .to_string()
    };
    assert_eq!(sysctl("net.ipv6.conf.btap6.forwarding"), "1");
    assert_eq!(sysctl("net.ipv6.conf.btap7.forwarding"), "0");
    assert_eq!(sysctl("net.ipv6.conf.all.forwarding"), "0");
    let addr = cmd_out(&mut net.exec("h", &["ip", "-o", "-6", "addr", "show", "btap7"]));
    assert!(addr.contains("inet6 2001:db8:97::1/64"), "{addr}");
    finish(router);
}

/// FromHost makes the TAP device, ToHost writes into it: the pair is a
/// KernelTap in two elements, as in Click's user-level idiom. ARP replies
/// are frames (TYPE ETHER); echo replies are IP packets that ToHost (TYPE
/// IP) addresses to the host interface's MAC.
const FROM_TO_CONF: &str = "
FromHost(bhost0, 10.9.2.1/24, ETHER 02:00:00:00:09:11)
    -> c :: Classifier(12/0806 20/0001, 12/0800, -);
c[0] -> ARPResponder(10.9.2.2 02:00:00:00:09:12) -> th :: ToHost(bhost0);
c[1] -> Strip(14) -> CheckIPHeader -> IPClassifier(icmp type echo)
    -> pings :: Counter -> ICMPPingResponder -> th_ip :: ToHost(bhost0, TYPE IP);
c[2] -> Discard;
";

#[test]
fn from_host_and_to_host_carry_frames_both_ways() {
    if skip_unless_root("from_host_and_to_host_carry_frames_both_ways").is_some() {
        return;
    }
    let net = network("hf");
    let router = start(
        &net,
        &["run", "-e", FROM_TO_CONF, "--duration", "4"],
        "bhost0",
    );
    let (got, text) = ping(&net, "10.9.2.2", 3);
    assert_eq!(got, 3, "{text}");
    let err = finish(router);
    // No warning: ToHost has a device.
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(counter(&err, "pings", "count"), 3, "{err}");
    assert!(counter(&err, "th", "count") >= 1, "{err}");
    assert_eq!(counter(&err, "th", "drops"), 0, "{err}");
    assert_eq!(counter(&err, "th_ip", "count"), 3, "{err}");
    assert_eq!(counter(&err, "th_ip", "drops"), 0, "{err}");
}

#[test]
fn a_device_that_cannot_be_made_stops_the_run_with_the_reason() {
    if skip_unless_root("a_device_that_cannot_be_made_stops_the_run_with_the_reason").is_some() {
        return;
    }
    let net = network("he");
    // `lo` exists and is no TUN device.
    let out = output_timeout(
        &mut net.exec(
            "h",
            &[
                BRICKS,
                "run",
                "-e",
                "KernelTun(10.9.3.1/24, DEVNAME lo) -> Discard;",
                "--duration",
                "1",
            ],
        ),
        Duration::from_secs(10),
    )
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("lo: creating the tun device"), "{err}");
}

#[test]
fn what_the_host_sends_into_a_full_device_queue_is_counted() {
    if skip_unless_root("what_the_host_sends_into_a_full_device_queue_is_counted").is_some() {
        return;
    }
    let net = network("hq");
    let conf = root().join("conf/host-tun.click");
    let conf = conf.to_str().unwrap();
    let router = start(&net, &["run", conf, "--duration", "3"], "bricks0");
    // A queue of 2 towards bricks, and 1,000 pings sent at once at a time:
    // the kernel drops most of them before bricks can read them.
    let o = output_timeout(
        &mut net.exec("h", &["ip", "link", "set", "bricks0", "txqueuelen", "2"]),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(o.status.success());
    let o = output_timeout(
        &mut net.exec(
            "h",
            &[
                "ping", "-n", "-q", "-f", "-l", "1000", "-c", "5000", "-w", "2", "10.9.0.3",
            ],
        ),
        Duration::from_secs(10),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = finish(router);
    let read = counter(&err, "tun", "count");
    let dropped = counter(&err, "tun", "host_drops");
    assert!(dropped > 0, "{text}\n{err}");
    // Every ping was either read by bricks or counted as dropped.
    assert!(read + dropped >= 5000, "{text}\n{err}");
}

/// A hot swap keeps the host's TUN device: the new configuration takes the
/// open device and its counters, pings keep being answered, and a
/// configuration with a device the router has not opened is refused.
#[test]
fn a_hot_swap_keeps_the_host_device() {
    if skip_unless_root("a_hot_swap_keeps_the_host_device").is_some() {
        return;
    }
    let net = network("hs");
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ctl.sock");
    let conf = root().join("conf/host-tun.click");
    let router = start(
        &net,
        &[
            "run",
            conf.to_str().unwrap(),
            "--duration",
            "8",
            "--control",
            sock.to_str().unwrap(),
        ],
        "bricks0",
    );
    let (got, text) = ping(&net, "10.9.0.2", 3);
    assert_eq!(got, 3, "{text}");
    let ctl = |args: &[&str]| {
        let mut argv = vec!["ctl", sock.to_str().unwrap()];
        argv.extend_from_slice(args);
        output_timeout(Command::new(BRICKS).args(&argv), Duration::from_secs(10)).unwrap()
    };
    // The same device, one more Counter in front of the responder.
    let swapped = dir.path().join("swapped.click");
    std::fs::write(
        &swapped,
        "tun :: KernelTun(10.9.0.1/24, DEVNAME bricks0);\n\
         tun -> c :: IPClassifier(icmp type echo, -);\n\
         c[0] -> pings :: Counter -> again :: Counter -> ICMPPingResponder -> tun;\n\
         c[1] -> other :: Counter -> Discard;\n",
    )
    .unwrap();
    let out = ctl(&["hotswap", swapped.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let (got, text) = ping(&net, "10.9.0.2", 3);
    assert_eq!(got, 3, "after the swap: {text}");
    // A device the router has not opened is refused; the old one stays.
    let other = dir.path().join("other.click");
    std::fs::write(
        &other,
        "tun :: KernelTun(10.8.0.1/24, DEVNAME bricks9) -> Discard;\n",
    )
    .unwrap();
    let out = ctl(&["hotswap", other.to_str().unwrap()]);
    assert!(!out.status.success(), "{out:?}");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("not open"), "{said}");
    let (got, text) = ping(&net, "10.9.0.2", 2);
    assert_eq!(got, 2, "after the refused swap: {text}");
    let err = finish(router);
    // The Counter before the swap carried on; the new one counted after.
    assert_eq!(counter(&err, "pings", "count"), 8, "{err}");
    assert_eq!(counter(&err, "again", "count"), 5, "{err}");
    assert!(counter(&err, "tun", "count") >= 8, "{err}");
}

/// The Internet checksum of `b`.
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A broadcast Ethernet frame holding an ICMP echo request from 10.9.7.2
/// to `dst`, every checksum right, as a Click data literal.
fn echo_request_to(dst: [u8; 4]) -> String {
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend_from_slice(b"sniffed!");
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 1, 0, 0, 10, 9, 7, 2];
    ip.extend_from_slice(&dst);
    let total = (ip.len() + icmp.len()) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0x07, 0x02, 0x08, 0x00]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&icmp);
    let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
    format!("\\<{hex}>")
}

/// tcpdump on every interface of namespace `h`, printing a line a packet;
/// ready once it listens.
struct Tcpdump {
    child: ChildGuard,
    lines: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Tcpdump {
    fn start(net: &Network) -> Tcpdump {
        let mut cmd = net.exec("h", &["tcpdump", "-i", "any", "-n", "-l"]);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = ChildGuard::spawn(&mut cmd).unwrap();
        let collect = |r: Box<dyn std::io::Read + Send>| {
            let text = Arc::new(Mutex::new(String::new()));
            let t = text.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
                    let mut s = t.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
            text
        };
        let lines = collect(Box::new(child.child_mut().stdout.take().unwrap()));
        let stderr = collect(Box::new(child.child_mut().stderr.take().unwrap()));
        let end = Instant::now() + Duration::from_secs(10);
        while !stderr.lock().unwrap().contains("listening on") {
            assert!(
                Instant::now() < end && child.try_wait().is_none(),
                "tcpdump did not start: {}",
                stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Tcpdump {
            child,
            lines,
            stderr,
        }
    }

    /// Stops tcpdump (as Ctrl-C) and returns its lines.
    fn stop(mut self) -> String {
        std::thread::sleep(Duration::from_millis(500));
        self.child.signal(libc::SIGINT);
        assert!(
            self.child.wait_timeout(Duration::from_secs(10)).is_some(),
            "tcpdump did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
        let lines = self.lines.lock().unwrap().clone();
        assert!(
            !self.stderr.lock().unwrap().contains("dropped by kernel")
                || self
                    .stderr
                    .lock()
                    .unwrap()
                    .contains("0 packets dropped by kernel"),
            "{}",
            self.stderr.lock().unwrap()
        );
        lines
    }
}

/// The namespace's count of ICMP echo requests its stack received.
fn in_echos(net: &Network) -> u64 {
    let snmp = cmd_out(&mut net.exec("h", &["cat", "/proc/net/snmp"]));
    let mut icmp = snmp.lines().filter(|l| l.starts_with("Icmp:"));
    let (names, values) = (icmp.next().unwrap(), icmp.next().unwrap());
    let at = names
        .split_whitespace()
        .position(|n| n == "InEchos")
        .unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

#[test]
fn to_host_sniffers_shows_packets_to_tcpdump_and_nothing_else() {
    if skip_unless_root("to_host_sniffers_shows_packets_to_tcpdump_and_nothing_else").is_some() {
        return;
    }
    let net = network("sn");
    // Echo requests to an address of the namespace: its stack would
    // answer them, and count them, if it saw them.
    bricks_netns::ip(&[
        "-n",
        &net.ns_name("h"),
        "addr",
        "add",
        "10.9.7.1/32",
        "dev",
        "lo",
    ])
    .unwrap();
    // An interface made beforehand (dummy, or ifb where the kernel has no
    // dummy driver) is used and kept.
    let ns = net.ns_name("h");
    if bricks_netns::ip(&["-n", &ns, "link", "add", "keep0", "type", "dummy"]).is_err() {
        bricks_netns::ip(&["-n", &ns, "link", "add", "keep0", "type", "ifb"]).unwrap();
    }
    let echo = echo_request_to([10, 9, 7, 1]);
    let conf = format!(
        "src :: InfiniteSource(DATA {echo}, LIMIT 4, STOP true) -> t :: Tee(4);\n\
         t[0] -> made :: ToHostSniffers(snf0);\n\
         t[1] -> real :: ToHostSniffers(lo);\n\
         t[2] -> kernel :: ToHost(SNIFFERS true);\n\
         t[3] -> Strip(14) -> kept :: ToHostSniffers(keep0, TYPE IP);\n"
    );
    let before = in_echos(&net);
    let dump = Tcpdump::start(&net);
    let out = output_timeout(
        &mut net.exec("h", &[BRICKS, "run", "-e", &conf]),
        Duration::from_secs(20),
    )
    .unwrap();
    let lines = dump.stop();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    for e in ["made", "real", "kernel", "kept"] {
        assert_eq!(counter(&err, e, "count"), 4, "{e}: {err}");
        assert_eq!(counter(&err, e, "drops"), 0, "{e}: {err}");
    }
    // lo is no interface to send on: its packets went to lo-sniff.
    assert!(err.contains("(tcpdump -i lo-sniff)"), "{err}");
    let requests = lines
        .lines()
        .filter(|l| l.contains("Out IP 10.9.7.2 > 10.9.7.1: ICMP echo request"))
        .count();
    assert_eq!(requests, 16, "{lines}");
    assert!(!lines.contains("echo reply"), "{lines}");
    assert_eq!(in_echos(&net), before, "the stack saw the packets");
    // What the router made is gone; what it found stays.
    let links = cmd_out(&mut net.exec("h", &["ip", "-o", "link", "show"]));
    for gone in ["snf0", "lo-sniff", "bricks-sniff"] {
        assert!(!links.contains(&format!(" {gone}:")), "{gone}: {links}");
    }
    assert!(links.contains(" keep0:"), "{links}");
}

#[test]
fn to_host_sniffers_refuses_nothing_and_says_why_without_an_interface() {
    if skip_unless_root("to_host_sniffers_refuses_nothing_and_says_why_without_an_interface")
        .is_some()
    {
        return;
    }
    let net = network("sx");
    // A name Linux cannot hold: the packets are counted in drops, the
    // reason is printed, and the router runs on.
    let echo = echo_request_to([10, 9, 7, 1]);
    let conf = format!(
        "InfiniteSource(DATA {echo}, LIMIT 3, STOP true) -> t :: Tee;\n\
         t[0] -> long :: ToHostSniffers(a-name-too-long-for-linux);\n\
         t[1] -> c :: Counter -> Discard;\n"
    );
    let out = output_timeout(
        &mut net.exec("h", &[BRICKS, "run", "-e", &conf]),
        Duration::from_secs(20),
    )
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("cannot name a Linux interface"), "{err}");
    assert_eq!(counter(&err, "long", "drops"), 3, "{err}");
    assert_eq!(counter(&err, "c", "count"), 3, "{err}");
}
