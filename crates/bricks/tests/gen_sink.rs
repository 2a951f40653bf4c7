//! `bricks gen` and `bricks sink` end to end: offline through a capture
//! that the test damages on purpose (lost, swapped and repeated packets),
//! and live between two network namespaces over a veth link.

use bricks_io::pcap::{LinkType, PcapReader, PcapWriter, Record};
use bricks_packet::Timestamp;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("bricks runs")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "status {}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text.lines().last().unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {text}"))
}

fn read_pcap(path: &Path) -> Vec<(Timestamp, Vec<u8>)> {
    let mut r = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Packet(p) = rec {
            out.push((p.anno().timestamp, p.data().to_vec()));
        }
    }
    out
}

fn write_pcap(path: &Path, records: &[(Timestamp, Vec<u8>)]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(f), LinkType::Ethernet, true, 0).unwrap();
    for (t, d) in records {
        w.write(*t, d).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn a_damaged_capture_shows_loss_reordering_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let sent = dir.path().join("sent.pcap");
    let got = dir.path().join("received.pcap");
    // One flow, so that the capture's order is the flow's order.
    let g = json(&bricks(&[
        "gen",
        "gs0",
        "--count",
        "1000",
        "--flows",
        "1",
        "--json",
        "-d",
        &format!("gs0=pcap:,{}", sent.display()),
    ]));
    assert_eq!(g["sent"], 1000);
    assert_eq!(g["stamped"], 1000);
    assert_eq!(g["flows"], 1);

    let mut records = read_pcap(&sent);
    assert_eq!(records.len(), 1000);
    records.swap(100, 101); // one reordered packet
    let dup = records[200].clone();
    records.insert(201, dup); // one duplicate
    records.remove(500); // seq 499 (after the insert) lost
    records.remove(10); // seq 10 and 11 lost
    records.remove(10);
    records.truncate(records.len() - 5); // the tail: only --expect sees it
    write_pcap(&got, &records);

    let input = format!("gr0=pcap:{}", got.display());
    let s = json(&bricks(&[
        "sink", "gr0", "--expect", "1000", "--json", "-d", &input,
    ]));
    assert_eq!(s["packets"], 1000 + 1 - 3 - 5);
    assert_eq!(s["probes"], s["packets"]);
    assert_eq!(s["flows"], 1);
    assert_eq!(s["lost"], 3 + 5);
    assert_eq!(s["duplicates"], 1);
    assert_eq!(s["reordered"], 1);
    assert_eq!(s["reorder_sequences"], 1);
    assert!((s["loss_pct"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{s}");
    let lat = &s["latency_ns"];
    assert_eq!(lat["samples"], s["probes"]);
    assert!(lat["p50"].as_u64().unwrap() > 0 && lat["max"].as_u64() >= lat["p50"].as_u64());

    // Without --expect the sink sees only the gaps inside the flow.
    let s = json(&bricks(&["sink", "gr0", "--json", "-d", &input]));
    assert_eq!(s["lost"], 3);
    // And the text report says the same.
    let o = bricks(&["sink", "gr0", "--expect", "1000", "-d", &input]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("lost        8 (0.800%) of 1000 sent"),
        "{text}"
    );
    assert!(text.contains("reordered   1 "), "{text}");
}

#[test]
fn generated_configurations_print_and_check() {
    let o = bricks(&[
        "gen",
        "eth9",
        "--print-config",
        "--rate",
        "1000",
        "--size",
        "imix",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success());
    assert!(text.contains("WorkloadSource(IMIX true"), "{text}");
    assert!(text.contains("RATE 1000"), "{text}");
    assert!(
        text.contains("GenStamp -> tx :: ToDevice(eth9, FLUSH 0)"),
        "{text}"
    );
    let o = bricks(&["sink", "eth9", "--print-config"]);
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("FromDevice(eth9, PROMISC true) -> sink :: TrafficSink"));
}

/// Live: a sink in one namespace, a generator in another, a veth between.
#[test]
fn live_over_a_veth() {
    over_a_veth("live_over_a_veth", "gs", &[]);
}

/// The same with the generator inside the kernel (XDP live frames): every
/// frame arrives once, in order, stamped, at the rate asked for.
#[test]
fn live_frames_over_a_veth() {
    let g = over_a_veth("live_frames_over_a_veth", "gl", &["--backend", "live"]);
    // 2,000 frames at 20,000 a second take a tenth of a second: not all at
    // once.
    assert!(g["elapsed_s"].as_f64().unwrap() >= 0.09, "{g}");
}

/// Sends 2,000 frames in 8 flows at 20,000 a second from one namespace
/// to a sink in another (namespaces tagged `tag`), with `gen_args` added
/// to `bricks gen`'s, checks what the sink received and returns the
/// generator's report.
fn over_a_veth(name: &str, tag: &str, gen_args: &[&str]) -> serde_json::Value {
    if bricks_netns::skip_unless_root(name).is_some() {
        return serde_json::json!({"elapsed_s": 1.0});
    }
    let prefix = bricks_netns::Network::unique_prefix(tag);
    let mut net = bricks_netns::Network::new(&prefix).unwrap();
    net.add_namespace("g").unwrap();
    net.add_namespace("s").unwrap();
    net.add_link("g", "vg", "s", "vs", 1).unwrap();
    let bin = env!("CARGO_BIN_EXE_bricks");

    // Can FromDevice open a live interface (yet)? A short run says.
    let probe = net
        .exec("s", &[bin, "sink", "vs", "--duration", "0.2", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if !probe.status.success() {
        eprintln!(
            "SKIP {name}: FromDevice cannot open a live interface here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return serde_json::json!({"elapsed_s": 1.0});
    }

    let sink = net
        .exec(
            "s",
            &[
                bin,
                "sink",
                "vs",
                "--duration",
                "8",
                "--expect",
                "2000",
                "--json",
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the sink open its sockets before anything is sent (it says
    // nothing until it ends; attaching XDP on a loaded machine is slow).
    std::thread::sleep(Duration::from_secs(3));
    let dst_mac = net.mac("s", "vs").unwrap();
    let mut args = vec![
        bin,
        "gen",
        "vg",
        "--count",
        "2000",
        "--rate",
        "20000",
        "--flows",
        "8",
        "--dst-mac",
        &dst_mac,
        "--json",
    ];
    args.extend_from_slice(gen_args);
    let g = net.exec("g", &args).stdin(Stdio::null()).output().unwrap();
    let g = json(&g);
    let s = json(&sink.wait_with_output().unwrap());
    let sent = g["sent"].as_u64().unwrap();
    assert_eq!(sent, 2000, "generator: {g}");
    assert_eq!(s["probes"], 2000, "sink: {s}\ngenerator: {g}");
    assert_eq!(s["lost"], 0, "{s}");
    assert_eq!(s["duplicates"], 0, "{s}");
    assert_eq!(s["flows"], 8, "{s}");
    assert_eq!(s["reordered"], 0, "{s}");
    let lat = &s["latency_ns"];
    assert_eq!(lat["samples"], 2000, "{s}");
    // A veth hands a frame over within the same kernel: well under a
    // second even on a loaded machine.
    assert!(lat["p50"].as_u64().unwrap() < 1_000_000_000, "{s}");
    g
}

/// IPv6 workloads as a Linux host takes them: `bricks gen` sends IPv6/UDP
/// frames (stamped by GenStamp, which rewrites the payload and updates the
/// checksum) to a namespace's own address, with the veth's receive
/// checksum offload off so that the kernel verifies every UDP checksum.
/// With no socket on the ports, each good datagram counts once in
/// Udp6NoPorts; a bad checksum would count in Udp6InCsumErrors.
#[test]
fn ipv6_checksums_pass_linux() {
    if bricks_netns::skip_unless_root("ipv6_checksums_pass_linux").is_some() {
        return;
    }
    let prefix = bricks_netns::Network::unique_prefix("g6");
    let mut net = bricks_netns::Network::new(&prefix).unwrap();
    net.add_namespace("g").unwrap();
    net.add_namespace("s").unwrap();
    net.add_link("g", "vg", "s", "vs", 1).unwrap();
    net.disable_offloads("s", "vs").unwrap();
    let s = net.ns_name("s");
    bricks_netns::ip(&[
        "-n",
        &s,
        "addr",
        "add",
        "2001:db8:5::2/64",
        "dev",
        "vs",
        "nodad",
    ])
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_bricks");
    let snmp6 = |net: &bricks_netns::Network| -> (u64, u64) {
        let o = net.exec("s", &["cat", "/proc/net/snmp6"]).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{key} missing from\n{text}"))
        };
        (get("Udp6NoPorts "), get("Udp6InCsumErrors "))
    };
    let dst_mac = net.mac("s", "vs").unwrap();
    for size in ["80", "300"] {
        let before = snmp6(&net);
        let g = net
            .exec(
                "g",
                &[
                    bin,
                    "gen",
                    "vg",
                    "--count",
                    "500",
                    "--rate",
                    "20000",
                    "--flows",
                    "8",
                    "--dst",
                    "2001:db8:5::2",
                    "--size",
                    size,
                    "--dst-mac",
                    &dst_mac,
                    "--json",
                ],
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let g = json(&g);
        assert_eq!(g["sent"], 500, "{g}");
        // The kernel takes the frames in its own time.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let after = loop {
            let now = snmp6(&net);
            if now.0 - before.0 + now.1 - before.1 >= 500 || std::time::Instant::now() > deadline {
                break now;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(after.1 - before.1, 0, "size {size}: checksum errors");
        assert_eq!(after.0 - before.0, 500, "size {size}: datagrams Linux took");
    }
}
