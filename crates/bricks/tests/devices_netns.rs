//! Live devices across workers, in network namespaces: every queue has
//! one owner, and software steering and the whole configuration (a hot
//! swap) can be changed while traffic flows without losing a packet.
//!
//! Topology: gen:g0 <-> r:r0, r:r1 <-> sink:s0, two queues per veth. The
//! router forwards r0 to r1 as it is; the generator and the sink are
//! bricks configurations too.

use bricks_netns::{output_timeout, skip_unless_root, Captured, Network};
use std::process::Command;
use std::time::Duration;

const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");

/// These tests count every packet; run them one at a time so that two
/// of them never compete for this machine's two cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn network(tag: &str) -> Network {
    let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
    for ns in ["gen", "r", "sink"] {
        net.add_namespace(ns).unwrap();
        // No IPv6 router solicitations or other chatter in the counts.
        net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            .unwrap();
        net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
            .unwrap();
    }
    net.add_link("gen", "g0", "r", "r0", 2).unwrap();
    net.add_link("r", "r1", "sink", "s0", 2).unwrap();
    net
}

fn bricks(net: &Network, ns: &str, args: &[&str]) -> Command {
    let mut argv = vec![BRICKS];
    argv.extend_from_slice(args);
    net.exec(ns, &argv)
}

/// The value of `counter` of element `name` in a run's final summary.
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

fn wait_for_socket(path: &std::path::Path) {
    for _ in 0..800 {
        if path.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{} never appeared", path.display());
}

fn ctl(net: &Network, sock: &str, cmd: &[&str]) -> String {
    let mut args = vec!["ctl", sock];
    args.extend_from_slice(cmd);
    let out = output_timeout(&mut bricks(net, "r", &args), Duration::from_secs(10)).unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "bricks ctl {cmd:?}: {text}");
    text
}

const PACKETS: u64 = 20_000;

/// Sends PACKETS frames of 64 flows at 20,000 a second from gen to the
/// router and counts what reaches the sink, running `during` while the
/// traffic flows. Returns (router summary, packets at the sink).
fn forward(
    net: &Network,
    router_args: &[&str],
    backend: &str,
    during: impl FnOnce(&str),
) -> (String, u64) {
    forward_by(net, router_args, ("r0", "r1"), backend, during)
}

/// [`forward`] with the router's two interfaces named as given.
fn forward_by(
    net: &Network,
    router_args: &[&str],
    (input, output): (&str, &str),
    backend: &str,
    during: impl FnOnce(&str),
) -> (String, u64) {
    let conf = format!(
        "FromDevice({input}, BACKEND {backend}, PROMISC true) -> c :: Counter -> Queue(4096) -> ToDevice({output}, BACKEND {backend});"
    );
    forward_conf(net, router_args, &conf, during)
}

/// [`forward`] through the router configuration `conf`.
fn forward_conf(
    net: &Network,
    router_args: &[&str],
    conf: &str,
    during: impl FnOnce(&str),
) -> (String, u64) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ctl.sock");
    let sock_s = sock.to_str().unwrap().to_string();
    let sink = Captured::spawn(&mut bricks(
        net,
        "sink",
        &[
            "run",
            "-e",
            "FromDevice(s0, PROMISC true) -> Classifier(12/0800) -> c :: Counter -> Discard;",
            "--duration",
            "6",
        ],
    ))
    .unwrap();
    let mut args = vec!["run", "-e", conf, "--duration", "5", "--control", &sock_s];
    args.extend_from_slice(router_args);
    let router = Captured::spawn(&mut bricks(net, "r", &args)).unwrap();
    wait_for_socket(&sock);
    std::thread::sleep(Duration::from_millis(300));
    let gen = Captured::spawn(&mut bricks(
        net,
        "gen",
        &[
            "run",
            "-e",
            &format!(
                "WorkloadSource(FLOWS 64, RATE 20000, LIMIT {PACKETS}, SEED 7) -> ToDevice(g0);"
            ),
        ],
    ))
    .unwrap();
    during(&sock_s);
    let g = gen.wait(Duration::from_secs(20), None).unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let r = router.wait(Duration::from_secs(20), None).unwrap();
    let rs = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "router: {rs}");
    let s = sink.wait(Duration::from_secs(20), None).unwrap();
    let ss = String::from_utf8_lossy(&s.stderr).into_owned();
    (rs, counter(&ss, "c", "count"))
}

fn queue_ownership_is_exclusive(backend: &str, tag: &str) {
    let _serial = serial();
    let net = network(tag);
    let mut owners = String::new();
    let (summary, at_sink) = forward(&net, &["--threads", "2"], backend, |sock| {
        std::thread::sleep(Duration::from_millis(500));
        owners = ctl(&net, sock, &["queues"]);
    });
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
    // r0's receive queues and r1's transmit queues: each owned once, and
    // each worker owns something.
    let rx: Vec<&str> = owners.lines().filter(|l| l.starts_with("r0 rx")).collect();
    let tx: Vec<&str> = owners.lines().filter(|l| l.starts_with("r1 tx")).collect();
    assert!(!rx.is_empty() && tx.len() == 2, "ownership:\n{owners}");
    let mut seen = std::collections::HashSet::new();
    for l in rx.iter().chain(&tx) {
        let key = l.split(" -> ").next().unwrap();
        assert!(seen.insert(key.to_string()), "{key} owned twice:\n{owners}");
    }
    for w in ["worker 0", "worker 1"] {
        assert!(
            rx.iter().any(|l| l.ends_with(w)),
            "{w} owns no rx queue:\n{owners}"
        );
        assert!(
            tx.iter().any(|l| l.ends_with(w)),
            "{w} owns no tx queue:\n{owners}"
        );
    }
}

#[test]
fn queue_ownership_is_exclusive_af_xdp() {
    if skip_unless_root("queue_ownership_is_exclusive_af_xdp").is_none() {
        queue_ownership_is_exclusive("xdp", "dqx");
    }
}

#[test]
fn queue_ownership_is_exclusive_af_packet() {
    if skip_unless_root("queue_ownership_is_exclusive_af_packet").is_none() {
        queue_ownership_is_exclusive("packet", "dqp");
    }
}

/// Click's kernel devices may be named by their Ethernet address
/// (`FromDevice(00:e0:98:09:ab:af)` in Click's conf/mazu-nat.click): the
/// interface with that address is opened.
#[test]
fn devices_named_by_their_ethernet_address_forward() {
    if skip_unless_root("devices_named_by_their_ethernet_address_forward").is_some() {
        return;
    }
    let _serial = serial();
    let net = network("dmac");
    let r0 = net.mac("r", "r0").unwrap();
    // Upper case and dashes, as Click reads them too.
    let r1 = net.mac("r", "r1").unwrap().to_uppercase().replace(':', "-");
    let (summary, at_sink) = forward_by(&net, &[], (&r0, &r1), "auto", |_| {});
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
    assert_eq!(counter(&summary, "c", "count"), PACKETS, "{summary}");
    // An address no interface has is refused by name.
    let out = output_timeout(
        &mut bricks(
            &net,
            "r",
            &[
                "run",
                "-e",
                "FromDevice(02:00:00:00:00:99) -> Discard",
                "--duration",
                "1",
            ],
        ),
        Duration::from_secs(10),
    )
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no interface `02:00:00:00:00:99`"), "{err}");
}

/// Click's SMP idiom: the receiver on one thread, the transmitter on
/// another (`StaticThreadSched(fd 0, td 1)`). Here the receiver reads on
/// every worker (its placement is ignored with a warning) and the Queue
/// between it and the transmitter placed on worker 1 is shared by the
/// workers, so every packet received on worker 0 is sent on worker 1.
#[test]
fn a_transmitter_placed_on_another_worker_sends_what_every_worker_received() {
    if skip_unless_root("a_transmitter_placed_on_another_worker_sends_what_every_worker_received")
        .is_some()
    {
        return;
    }
    let _serial = serial();
    let net = network("smp");
    let conf = "fd :: FromDevice(r0, PROMISC true) -> c :: Counter -> q :: Queue(4096) \
                -> td :: ToDevice(r1); StaticThreadSched(fd 0, td 1);";
    let (summary, at_sink) = forward_conf(&net, &["--threads", "2"], conf, |_| {});
    assert!(
        summary.contains("warning: `fd` (FromDevice) stays on every worker"),
        "{summary}"
    );
    assert_eq!(counter(&summary, "c", "count"), PACKETS, "{summary}");
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
}

#[test]
fn resteering_while_traffic_flows_loses_nothing() {
    if skip_unless_root("resteering_while_traffic_flows_loses_nothing").is_some() {
        return;
    }
    let _serial = serial();
    let net = network("drs");
    let (summary, at_sink) = forward(
        &net,
        &["--threads", "2", "--mode", "serial"],
        "auto",
        |sock| {
            // 20,000 packets take a second; change the rules every 100 ms.
            let steps: [&[&str]; 7] = [
                &["steer", "queues", "1"],
                &["steer", "key", "symmetric"],
                &["steer", "queues", "2"],
                &["steer", "mac", "02:00:00:00:00:02", "1"],
                &["steer", "mac", "del", "02:00:00:00:00:02"],
                &["steer", "key", "default"],
                &["steer", "show"],
            ];
            for step in steps {
                std::thread::sleep(Duration::from_millis(100));
                ctl(&net, sock, step);
            }
        },
    );
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
    assert!(summary.contains("dropped=0"), "{summary}");
}

#[test]
fn an_interface_that_disappears_is_reported_and_the_rest_keeps_forwarding() {
    if skip_unless_root("an_interface_that_disappears").is_some() {
        return;
    }
    let _serial = serial();
    let mut net = network("dgo");
    net.add_link("gen", "g2", "r", "r2", 1).unwrap();
    let sink = Captured::spawn(&mut bricks(
        &net,
        "sink",
        &[
            "run",
            "-e",
            "FromDevice(s0, PROMISC true) -> Classifier(12/0800) -> c :: Counter -> Discard;",
            "--duration",
            "5",
        ],
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ctl.sock");
    let router = Captured::spawn(&mut bricks(
        &net,
        "r",
        &[
            "run",
            "-e",
            "FromDevice(r0, PROMISC true) -> Queue(4096) -> ToDevice(r1); \
             FromDevice(r2, PROMISC true) -> Queue -> ToDevice(r2);",
            "--duration",
            "4",
            "--control",
            sock.to_str().unwrap(),
        ],
    ))
    .unwrap();
    // The interface goes only once the router has it (a loaded machine
    // can take more than a second to start a debug build).
    wait_for_socket(&sock);
    let gen = Captured::spawn(&mut bricks(
        &net,
        "gen",
        &[
            "run",
            "-e",
            &format!("WorkloadSource(FLOWS 8, RATE 20000, LIMIT {PACKETS}) -> ToDevice(g0);"),
        ],
    ))
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    bricks_netns::ip(&["-n", &net.ns_name("r"), "link", "del", "r2"]).unwrap();
    assert!(gen
        .wait(Duration::from_secs(20), None)
        .unwrap()
        .status
        .success());
    let r = router.wait(Duration::from_secs(20), None).unwrap();
    let rs = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(rs.contains("r2") && rs.contains("gone"), "{rs}");
    assert!(rs.contains("keeps forwarding"), "{rs}");
    // The run reports the error in its exit status, after forwarding on.
    assert_eq!(r.status.code(), Some(1), "{rs}");
    let s = sink.wait(Duration::from_secs(20), None).unwrap();
    let ss = String::from_utf8_lossy(&s.stderr).into_owned();
    assert_eq!(counter(&ss, "c", "count"), PACKETS, "router said:\n{rs}");
}

#[test]
fn an_interface_that_cannot_take_our_xdp_program_falls_back_to_af_packet() {
    if skip_unless_root("an_interface_that_cannot_take_our_xdp_program").is_some() {
        return;
    }
    let _serial = serial();
    let net = network("dfb");
    // Someone else's XDP program on r0: bricks must not replace it.
    let _theirs = bricks_netns::in_namespace(&net.ns_name("r"), || {
        bricks_io::xdp::attach_pass("r0", bricks_io::xdp::XdpMode::Auto).unwrap()
    });
    let (summary, at_sink) = forward(&net, &[], "auto", |_| {});
    assert!(summary.contains("using AF_PACKET"), "{summary}");
    assert!(summary.contains("r0: af_packet"), "{summary}");
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
    // Asked for AF_XDP only, it refuses with the reason.
    let out = output_timeout(
        &mut bricks(
            &net,
            "r",
            &["run", "-e", "FromDevice(r0, BACKEND xdp) -> Discard;"],
        ),
        Duration::from_secs(20),
    )
    .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("r0") && e.contains("XDP"), "{e}");
}

/// Hot swaps while traffic flows through software steering: the device
/// elements are anonymous, and their generated names move as a counter
/// comes and goes, so the new ones find the rings the old ones gave back.
#[test]
fn hotswap_in_serial_mode_loses_nothing() {
    if skip_unless_root("hotswap_in_serial_mode_loses_nothing").is_some() {
        return;
    }
    let _serial = serial();
    let net = network("dhs");
    let dir = tempfile::tempdir().unwrap();
    let with = dir.path().join("with.click");
    let without = dir.path().join("without.click");
    std::fs::write(
        &with,
        "FromDevice(r0, PROMISC true) -> extra :: Counter -> c :: Counter -> Queue(4096) \
         -> ToDevice(r1);",
    )
    .unwrap();
    std::fs::write(
        &without,
        "FromDevice(r0, PROMISC true) -> c :: Counter -> Queue(4096) -> ToDevice(r1);",
    )
    .unwrap();
    let (summary, at_sink) = forward(
        &net,
        &["--threads", "2", "--mode", "serial"],
        "auto",
        |sock| {
            for file in [&with, &without, &with, &without] {
                std::thread::sleep(Duration::from_millis(200));
                let out = ctl(&net, sock, &["hotswap", file.to_str().unwrap()]);
                assert!(out.starts_with("ok: hot-swapped"), "{out}");
            }
        },
    );
    assert_eq!(at_sink, PACKETS, "router said:\n{summary}");
    assert_eq!(counter(&summary, "c", "count"), PACKETS, "{summary}");
}
