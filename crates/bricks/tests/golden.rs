//! Golden tests: a configuration runs on input captures, and its output
//! captures must equal the checked-in ones byte for byte. Set
//! `BRICKS_BLESS=1` to rewrite the expected captures after a deliberate
//! change (then read them with tshark before committing).
//!
//! Besides the byte comparison, the tests assert what the outputs mean,
//! so that a wrong expectation cannot be blessed unnoticed.

use bricks_io::pcap::{PcapReader, Record};
use bricks_wire::ipv4::Ipv4Packet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn frames(path: &Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapReader::new(f).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Packet(p) = rec {
            v.push(p.data().to_vec());
        }
    }
    v
}

/// Runs `config` with the arguments `args` gives for a scratch directory,
/// compares each file named in `outputs` (written there by the run) with
/// the expected one in `tests/golden/DIR/`, and returns their frames.
fn golden(
    dir: &str,
    config: &str,
    args: impl Fn(&Path, &Path) -> Vec<String>,
    outputs: &[&str],
) -> Vec<Vec<Vec<u8>>> {
    let gdir = root().join("tests/golden").join(dir);
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .current_dir(root())
        .args(["run", config, "--clock", "trace", "--quiet"])
        .args(args(&gdir, tmp.path()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bless = std::env::var_os("BRICKS_BLESS").is_some();
    let mut result = Vec::new();
    for output in outputs {
        let got = tmp.path().join(output);
        let want = gdir.join(output);
        if bless {
            std::fs::copy(&got, &want).unwrap();
        }
        let g = std::fs::read(&got).unwrap();
        let w = std::fs::read(&want)
            .unwrap_or_else(|e| panic!("{}: {e} (run with BRICKS_BLESS=1 once)", want.display()));
        if g != w {
            let (gf, wf) = (frames(&got), frames(&want));
            let first = gf
                .iter()
                .zip(&wf)
                .position(|(a, b)| a != b)
                .unwrap_or(gf.len().min(wf.len()));
            panic!(
                "{output} differs from {}: {} frames vs {} expected, first difference at frame {first}",
                want.display(),
                gf.len(),
                wf.len()
            );
        }
        result.push(frames(&got));
    }
    result
}

/// `-d NAME=pcap:IN,OUT` arguments for devices given as (name, input in
/// the golden directory, output in the scratch directory).
fn devices(gdir: &Path, tmp: &Path, devs: &[(&str, Option<&str>, &str)]) -> Vec<String> {
    devs.iter()
        .flat_map(|(name, input, output)| {
            let i = input
                .map(|i| gdir.join(i).display().to_string())
                .unwrap_or_default();
            [
                "-d".to_string(),
                format!("{name}=pcap:{i},{}", tmp.join(output).display()),
            ]
        })
        .collect()
}

fn ip_of(frame: &[u8]) -> Option<Ipv4Packet<&[u8]>> {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    Ipv4Packet::new_checked(&frame[14..]).ok()
}

fn idents(frames: &[Vec<u8>]) -> Vec<u16> {
    frames
        .iter()
        .filter_map(|f| ip_of(f).map(|ip| ip.ident()))
        .collect()
}

fn is_arp(f: &[u8], op: u16, target_ip: [u8; 4]) -> bool {
    f.len() >= 42
        && f[12..14] == [0x08, 0x06]
        && f[20..22] == op.to_be_bytes()
        && f[38..42] == target_ip
}

#[test]
fn click_ip_router() {
    let out = golden(
        "ip-router",
        "conf/ip-router.click",
        |g, t| {
            devices(
                g,
                t,
                &[
                    ("eth0", Some("eth0-in.pcap"), "eth0-out.pcap"),
                    ("eth1", Some("eth1-in.pcap"), "eth1-out.pcap"),
                    ("host", None, "host.pcap"),
                ],
            )
        },
        &["eth0-out.pcap", "eth1-out.pcap", "host.pcap"],
    );
    let eth0 = &out[0];
    let eth1 = &out[1];
    let host = &out[2];

    // ARP: the router answers for itself on eth0 and, as proxy, for
    // 1.0.0.77 on eth1; it asks for A, for the default gateway and for
    // 18.26.4.200 on eth0 and for C on eth1.
    assert!(eth0
        .iter()
        .any(|f| is_arp(f, 2, [18, 26, 4, 99]) && f[28..32] == [18, 26, 4, 1]));
    assert!(eth1
        .iter()
        .any(|f| is_arp(f, 2, [1, 0, 0, 2]) && f[28..32] == [1, 0, 0, 77]));
    assert!(eth1.iter().any(|f| is_arp(f, 1, [1, 0, 0, 2])));
    assert!(eth0.iter().any(|f| is_arp(f, 1, [18, 26, 4, 99])));
    assert!(eth0.iter().any(|f| is_arp(f, 1, [18, 26, 4, 254])));

    // Forwarded A -> C with the TTL decremented and a valid checksum,
    // addressed to C's MAC from the router's eth1 MAC.
    let fwd = eth1
        .iter()
        .find(|f| ip_of(f).is_some_and(|ip| ip.ident() == 10))
        .expect("ident 10 forwarded");
    let ip = ip_of(fwd).unwrap();
    assert_eq!(ip.hop_limit(), 63);
    assert!(ip.verify_checksum());
    assert_eq!(&fwd[0..6], &[0x00, 0x20, 0x6a, 0x00, 0x00, 0x02]);
    assert_eq!(&fwd[6..12], &[0x00, 0x00, 0xC0, 0xAE, 0x67, 0xEF]);

    // Bad checksum, bad version, truncated and martian sources: dropped.
    for dropped in [20, 21, 22, 23, 24] {
        assert!(
            !idents(eth0).contains(&dropped) && !idents(eth1).contains(&dropped),
            "ident {dropped} leaked"
        );
    }

    // ICMP errors to A, sourced from the eth0 address: time exceeded for the
    // TTL-1 packet, needfrag with MTU 1500 for the DF packet, redirect (host)
    // to 18.26.4.200 for the same-interface packet.
    let icmp_to_a: Vec<(u8, u8, [u8; 4])> = eth0
        .iter()
        .filter_map(|f| {
            let ip = ip_of(f)?;
            (ip.next_header().0 == 1 && ip.dst_addr().octets() == [18, 26, 4, 99]).then(|| {
                assert!(ip.verify_checksum());
                assert_eq!(ip.src_addr().octets(), [18, 26, 4, 1]);
                let icmp = &f[14 + ip.header_len()..];
                (icmp[0], icmp[1], [icmp[4], icmp[5], icmp[6], icmp[7]])
            })
        })
        .collect();
    assert!(icmp_to_a.contains(&(11, 0, [0, 0, 0, 0])), "{icmp_to_a:?}");
    assert!(
        icmp_to_a.contains(&(3, 4, [0, 0, 0x05, 0xdc])),
        "{icmp_to_a:?}"
    );
    assert!(
        icmp_to_a.contains(&(5, 1, [18, 26, 4, 200])),
        "{icmp_to_a:?}"
    );

    // Fragmentation: ident 35 leaves as fragments of at most 1500 bytes
    // whose payloads add up to the original's.
    let frags: Vec<Ipv4Packet<&[u8]>> = eth1
        .iter()
        .filter_map(|f| ip_of(f))
        .filter(|ip| ip.ident() == 35)
        .collect();
    assert!(frags.len() >= 2, "{} fragments", frags.len());
    assert!(frags
        .iter()
        .all(|ip| ip.total_len() <= 1500 && ip.verify_checksum()));
    let payload: usize = frags
        .iter()
        .map(|ip| ip.total_len() as usize - ip.header_len())
        .sum();
    assert_eq!(payload, 1580);

    // Record Route: the router recorded its outgoing address.
    let rr = eth1
        .iter()
        .filter_map(|f| ip_of(f))
        .find(|ip| ip.ident() == 40)
        .expect("RR packet forwarded");
    let opts = rr.options();
    assert_eq!(&opts[..3], &[7, 11, 8]);
    assert_eq!(&opts[3..7], &[1, 0, 0, 1]);

    // Local delivery: the ping to the router reaches the host.
    assert!(idents(host).contains(&45));
    // C -> A forwarded once A's address was learnt.
    assert!(idents(eth0).contains(&60));
}

/// The dual-stack version of Click's router forwards IPv4 exactly as the
/// IPv4 one: the same captures in, the same bytes out.
#[test]
fn click_ip_router_dual_stack_is_the_same_for_ipv4() {
    let out = golden(
        "ip-router",
        "conf/ip-router-dual-stack.click",
        |g, t| {
            devices(
                g,
                t,
                &[
                    ("eth0", Some("eth0-in.pcap"), "eth0-out.pcap"),
                    ("eth1", Some("eth1-in.pcap"), "eth1-out.pcap"),
                    ("host", None, "host.pcap"),
                ],
            )
        },
        &["eth0-out.pcap", "eth1-out.pcap", "host.pcap"],
    );
    assert!(idents(&out[1]).contains(&10));
}

/// Raw-IP capture in (big-endian, nanosecond), fragmented to 576 bytes.
#[test]
fn fragmentation_on_raw_ip_captures() {
    let out = golden(
        "fragment",
        "conf/fragment.click",
        |g, t| {
            vec![
                "-D".into(),
                format!("IN={}", g.join("in.pcap").display()),
                "-D".into(),
                format!("OUT={}", t.join("out.pcap").display()),
            ]
        },
        &["out.pcap"],
    );
    let ips: Vec<Ipv4Packet<&[u8]>> = out[0]
        .iter()
        .map(|f| Ipv4Packet::new_checked(&f[..]).unwrap())
        .collect();
    assert!(ips
        .iter()
        .all(|ip| ip.total_len() <= 576 && ip.verify_checksum()));
    let of = |id: u16| {
        ips.iter()
            .filter(|ip| ip.ident() == id && ip.next_header().0 == 17)
            .collect::<Vec<_>>()
    };
    assert_eq!(of(1).len(), 1);
    // Payload bytes add up and offsets follow each other.
    for (id, total) in [(2u16, 1408usize), (3, 1408), (4, 1008)] {
        let frags = of(id);
        assert!(frags.len() >= 2, "ident {id}");
        let mut next = 0;
        for f in &frags {
            assert_eq!(f.frag_offset() as usize, next, "ident {id}");
            next += f.total_len() as usize - f.header_len();
        }
        assert_eq!(next, total, "ident {id}");
        assert!(!frags.last().unwrap().more_frags());
    }
    // Router Alert (copied) is in every fragment; Record Route only in the first.
    assert!(of(3).iter().all(|f| f.options().first() == Some(&148)));
    assert_eq!(of(4)[0].options().first(), Some(&7));
    assert!(of(4)[1..].iter().all(|f| f.header_len() == 20));
    // The DF packet is answered with needfrag carrying the MTU.
    let icmp = ips
        .iter()
        .find(|ip| ip.next_header().0 == 1)
        .expect("ICMP error");
    let body = &icmp.payload()[..8];
    assert_eq!(&body[..2], &[3, 4]);
    assert_eq!(u16::from_be_bytes([body[6], body[7]]), 576);
}

/// The same router with each Internet-scale lookup element in place of
/// StaticIPLookup must produce the very same captures.
#[test]
fn click_ip_router_with_every_lookup_element() {
    let text = std::fs::read_to_string(root().join("conf/ip-router.click")).unwrap();
    for class in ["LookupIPRoute", "DirectIPLookup", "RadixIPLookup"] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("router.click");
        std::fs::write(
            &config,
            text.replace("StaticIPLookup(", &format!("{class}(")),
        )
        .unwrap();
        let config = config.display().to_string();
        golden(
            "ip-router",
            &config,
            |g, t| {
                devices(
                    g,
                    t,
                    &[
                        ("eth0", Some("eth0-in.pcap"), "eth0-out.pcap"),
                        ("eth1", Some("eth1-in.pcap"), "eth1-out.pcap"),
                        ("host", None, "host.pcap"),
                    ],
                )
            },
            &["eth0-out.pcap", "eth1-out.pcap", "host.pcap"],
        );
    }
}
