//! `bricks vr` as a user meets it: validating virtual-router files
//! (`check`: a description, or the line, the reason and exit status 2),
//! the configuration they expand into (`config`), which `bricks check`
//! accepts, and conf/vr/two-tenants.toml run with plain `bricks run` on
//! captures: two tenants with the same addresses on shared VLAN trunks,
//! each answered and routed on its own VLANs by its own table.

use bricks_wire::{
    EtherType, Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Addr, Ipv4Packet, UdpPacket, UdpRepr,
};
use std::path::Path;

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{bricks, ether, ipv4, read_pcap, root, stderr, stdout, write_pcap};

const EXAMPLES: [&str; 5] = [
    "conf/vr/two-tenants.toml",
    "conf/vr/weighted.toml",
    "conf/vr/mac.toml",
    "conf/vr/ipip.toml",
    "conf/vr/mpls.toml",
];

#[test]
fn vr_help_has_examples() {
    let o = bricks(&["vr", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("check") && t.contains("config"), "{t}");
    assert!(
        t.contains("Examples:") && t.contains("bricks vr check conf/vr/two-tenants.toml"),
        "{t}"
    );
    for sub in ["check", "config"] {
        let o = bricks(&["vr", sub, "--help"]);
        assert!(o.status.success());
        let t = stdout(&o);
        assert!(
            t.contains("Examples:") && t.contains(&format!("bricks vr {sub} conf/vr/")),
            "{t}"
        );
    }
    assert!(stdout(&bricks(&["--help"])).contains("vr"));
}

#[test]
fn the_examples_check_and_their_configurations_check() {
    for f in EXAMPLES {
        let o = bricks(&["vr", "check", f]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let t = stdout(&o);
        assert!(t.contains(&format!("ok: {f}")), "{t}");
        assert!(t.contains("/rt output 0: local delivery"), "{t}");

        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("vr.click");
        let o = bricks(&[
            "vr",
            "config",
            f,
            "-o",
            out.to_str().unwrap(),
            "--backend",
            "packet",
        ]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.contains(&format!("//   bricks run {}", out.display())),
            "{text}"
        );
        let o = bricks(&["check", out.to_str().unwrap()]);
        assert!(o.status.success(), "{f}:\n{}", stderr(&o));
    }
}

#[test]
fn config_prints_one_compound_per_router_and_the_run_command() {
    let o = bricks(&["vr", "config", "conf/vr/two-tenants.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("//   bricks run two-tenants.click"), "{t}");
    assert!(
        t.contains("--router-control red=/run/bricks/red.sock"),
        "{t}"
    );
    assert!(
        t.contains("--router-control blue=/run/bricks/blue.sock"),
        "{t}"
    );
    assert!(t.contains("elementclass VRouter_red {") && t.contains("red :: VRouter_red;"));
    assert!(t.contains("// Router blue (weight 1): StaticIPLookup, 2 interfaces."));
    assert!(t.contains("// Link eth0: a VLAN trunk"));
    // A link without a MAC in the file: a placeholder and a -D in the
    // run command.
    let o = bricks(&[
        "vr",
        "config",
        "conf/vr/weighted.toml",
        "--socket-dir",
        "/tmp/s",
    ]);
    let t = stdout(&o);
    assert!(t.contains("--router-control gold=/tmp/s/gold.sock"), "{t}");
    assert!(t.contains("-D MAC_eth0=<eth0's MAC>"), "{t}");
    assert!(
        t.contains(
            "$MAC_eth0 02:76:ff:00:00:01,  // a placeholder: give eth0's MAC with -D MAC_eth0=..."
        ),
        "{t}"
    );
    let o = bricks(&["vr", "config", "conf/vr/weighted.toml", "--backend", "dpdk"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("expected auto, xdp or packet"));
}

/// Checks the file `text`; returns (exit status, stdout, stderr).
fn check_text(text: &str) -> (Option<i32>, String, String) {
    common::check_text("vr", "vr.toml", text)
}

#[test]
fn check_refuses_what_cannot_work_with_the_line() {
    let good = std::fs::read_to_string(root().join("conf/vr/two-tenants.toml")).unwrap();
    let line_of = |needle: &str| good.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (code, _, e) = check_text(&good.replace("vlan = 20", "vlan = 10"));
    assert_eq!(code, Some(2));
    assert_eq!(
        e.trim_end(),
        format!(
            "error: line {}: VLAN 10 on link eth0 is claimed by both router red (line {}) and \
             router blue",
            line_of("vlan = 20"),
            line_of("vlan = 10")
        )
    );
    let (code, _, e) = check_text(&good.replace("vlan = 110", "vlan = 4095"));
    assert_eq!(code, Some(2));
    assert!(
        e.starts_with(&format!(
            "error: line {}: router red interface on eth1: VLAN 4095",
            line_of("vlan = 110")
        )),
        "{e}"
    );
    let (code, _, e) = check_text(&good.replace(
        "lookup = \"DirectIPLookup\"",
        "lookup = \"DirectIPLookup\"\nweight = 0",
    ));
    assert_eq!(code, Some(2));
    assert!(e.contains("weight 0 would never schedule it"), "{e}");
    let (code, _, e) =
        check_text(&good.replace("demux = \"vlan\"", "demux = \"vlan\"\nspeed = 10"));
    assert_eq!(code, Some(2));
    assert!(e.contains("unknown field `speed`"), "{e}");
    // The routes file is read relative to the file: here it is missing.
    let (code, _, e) = check_text(&good);
    assert_eq!(code, Some(2));
    assert!(e.contains("routes_file: cannot read blue.routes"), "{e}");
    let (code, _, e) = check_text("not toml [");
    assert_eq!(code, Some(2));
    assert!(e.starts_with("error: line 1"), "{e}");
    let o = bricks(&["vr", "check", "conf/vr/none.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read conf/vr/none.toml"));
    let o = bricks(&["vr", "config", "conf/vr/none.toml"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_accepts_overlapping_addresses_between_routers() {
    let text = std::fs::read_to_string(root().join("conf/vr/two-tenants.toml"))
        .unwrap()
        .replace("routes_file = \"blue.routes\"", "");
    let (code, out, e) = check_text(&format!(
        "{text}\n  [[router.route]]\n  prefix = \"172.16.0.0/12\"\n  gateway = \"10.1.0.253\"\n"
    ));
    assert_eq!(code, Some(0), "{e}");
    assert!(out.contains("vlan 10") && out.contains("vlan 20"), "{out}");
    assert!(out.contains("red eth0 10.0.0.1/24") && out.contains("blue eth0 10.0.0.1/24"));
}

// ---------------------------------------------------------------------
// The two tenants, run on captures.

const BOX0: [u8; 6] = [2, 0, 0, 0, 0, 1];
const BOX1: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// Red's and blue's hosts behind eth0: the same address, two MACs.
const H_RED: [u8; 6] = [2, 0, 0, 0, 0x10, 2];
const H_BLUE: [u8; 6] = [2, 0, 0, 0, 0x20, 2];
/// Red's gateway 10.1.0.254 and blue's 10.1.0.253 behind eth1.
const G_RED: [u8; 6] = [2, 0, 0, 0, 0x11, 0xfe];
const G_BLUE: [u8; 6] = [2, 0, 0, 0, 0x12, 0xfd];
const HOST: [u8; 4] = [10, 0, 0, 2];
const ROUTER0: [u8; 4] = [10, 0, 0, 1];
const FAR: [u8; 4] = [172, 16, 5, 5];

fn echo_request(ident: u16) -> Vec<u8> {
    let data = b"tenant ping";
    let icmp = Icmpv4Repr::EchoRequest {
        ident,
        seq_no: 1,
        data,
    };
    let mut b = vec![0u8; icmp.buffer_len()];
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
    ipv4(HOST, ROUTER0, IpProtocol::ICMP, ident, 64, &b)
}

fn udp_to_far(ident: u16) -> Vec<u8> {
    let payload = b"tenant data";
    let udp = UdpRepr {
        src_port: 12345,
        dst_port: 9,
        payload_len: payload.len(),
    };
    let mut b = vec![0u8; udp.buffer_len() + payload.len()];
    let mut d = UdpPacket::new_unchecked(&mut b[..]);
    udp.emit(&mut d);
    d.payload_mut().copy_from_slice(payload);
    d.fill_checksum_v4(Ipv4Addr::from(HOST), Ipv4Addr::from(FAR));
    ipv4(HOST, FAR, IpProtocol::UDP, ident, 64, &b)
}

/// An ARP reply from (`mac`, `ip`) to (`to_mac`, `to_ip`).
fn arp_reply(mac: [u8; 6], ip: [u8; 4], to_mac: [u8; 6], to_ip: [u8; 4]) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4, 0, 2];
    a.extend_from_slice(&mac);
    a.extend_from_slice(&ip);
    a.extend_from_slice(&to_mac);
    a.extend_from_slice(&to_ip);
    ether(to_mac, mac, EtherType::ARP, &a)
}

/// `frame` with an 802.1Q tag of VLAN `vid` after its addresses.
fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00]);
    f.extend_from_slice(&vid.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

/// A frame's VLAN ID and untagged form, if it is tagged.
fn untag(f: &[u8]) -> Option<(u16, Vec<u8>)> {
    if f.len() < 18 || f[12..14] != [0x81, 0x00] {
        return None;
    }
    let vid = u16::from_be_bytes([f[14], f[15]]) & 0x0fff;
    let mut u = f[..12].to_vec();
    u.extend_from_slice(&f[16..]);
    Some((vid, u))
}

/// The IPv4 packet of an untagged frame.
fn ip_of(f: &[u8]) -> Option<Ipv4Packet<&[u8]>> {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    Ipv4Packet::new_checked(&f[14..]).ok()
}

fn is_arp_request_for(f: &[u8], target: [u8; 4], from: [u8; 6]) -> bool {
    f.len() >= 42
        && f[12..14] == [0x08, 0x06]
        && f[20..22] == [0, 1]
        && f[22..28] == from
        && f[38..42] == target
}

#[test]
fn two_tenants_with_the_same_addresses_are_routed_on_their_own_vlans() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("two-tenants.click");
    let o = bricks(&[
        "vr",
        "config",
        "conf/vr/two-tenants.toml",
        "-o",
        conf.to_str().unwrap(),
        "--backend",
        "packet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // eth0: each tenant's host pings its router and sends UDP far away;
    // it answers the router's ARP query a little later. Then a frame on
    // a VLAN nobody has, and an untagged one.
    let eth0_in = dir.path().join("eth0-in.pcap");
    write_pcap(
        &eth0_in,
        &[
            (
                0,
                tagged(
                    &ether(BOX0, H_RED, EtherType::IPV4, &echo_request(0x0a01)),
                    10,
                ),
            ),
            (
                1,
                tagged(
                    &ether(BOX0, H_BLUE, EtherType::IPV4, &echo_request(0x0b01)),
                    20,
                ),
            ),
            (100, tagged(&arp_reply(H_RED, HOST, BOX0, ROUTER0), 10)),
            (101, tagged(&arp_reply(H_BLUE, HOST, BOX0, ROUTER0), 20)),
            (
                200,
                tagged(
                    &ether(BOX0, H_RED, EtherType::IPV4, &udp_to_far(0x1010)),
                    10,
                ),
            ),
            (
                201,
                tagged(
                    &ether(BOX0, H_BLUE, EtherType::IPV4, &udp_to_far(0x2020)),
                    20,
                ),
            ),
            (
                400,
                tagged(
                    &ether(BOX0, H_RED, EtherType::IPV4, &udp_to_far(0x3030)),
                    30,
                ),
            ),
            (
                401,
                ether(BOX0, H_RED, EtherType::IPV4, &udp_to_far(0x4040)),
            ),
        ],
        1000,
    );
    // eth1: each tenant's gateway answers its router's query.
    let eth1_in = dir.path().join("eth1-in.pcap");
    write_pcap(
        &eth1_in,
        &[
            (
                300,
                tagged(&arp_reply(G_RED, [10, 1, 0, 254], BOX1, [10, 1, 0, 1]), 110),
            ),
            (
                301,
                tagged(
                    &arp_reply(G_BLUE, [10, 1, 0, 253], BOX1, [10, 1, 0, 1]),
                    120,
                ),
            ),
        ],
        1000,
    );
    let (eth0_out, eth1_out) = (
        dir.path().join("eth0-out.pcap"),
        dir.path().join("eth1-out.pcap"),
    );
    let dev =
        |name: &str, i: &Path, o: &Path| format!("{name}=pcap:{},{}", i.display(), o.display());
    let o = bricks(&[
        "run",
        conf.to_str().unwrap(),
        "--clock",
        "trace",
        "-d",
        &dev("eth0", &eth0_in, &eth0_out),
        "-d",
        &dev("eth1", &eth1_in, &eth1_out),
    ]);
    let counters = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{counters}");

    let eth0: Vec<(u16, Vec<u8>)> = read_pcap(&eth0_out)
        .iter()
        .map(|f| untag(f).expect("every frame on the trunk is tagged"))
        .collect();
    let eth1: Vec<(u16, Vec<u8>)> = read_pcap(&eth1_out)
        .iter()
        .map(|f| untag(f).expect("every frame on the trunk is tagged"))
        .collect();

    // Each router asks for its host on its own VLAN, from the link's MAC.
    for vid in [10, 20] {
        assert_eq!(
            eth0.iter()
                .filter(|(v, f)| *v == vid && is_arp_request_for(f, HOST, BOX0))
                .count(),
            1,
            "VLAN {vid}: {eth0:?}"
        );
    }
    // Each echo is answered on its tenant's VLAN, to its tenant's host.
    for (vid, host, ident) in [(10, H_RED, 0x0a01u16), (20, H_BLUE, 0x0b01)] {
        let replies: Vec<&Vec<u8>> = eth0
            .iter()
            .filter(|(v, f)| {
                *v == vid
                    && ip_of(f).is_some_and(|ip| {
                        ip.next_header() == IpProtocol::ICMP
                            && ip.src_addr() == Ipv4Addr::from(ROUTER0)
                            && ip.dst_addr() == Ipv4Addr::from(HOST)
                            && ip.payload()[0] == 0
                            && ip.payload()[4..6] == ident.to_be_bytes()
                    })
            })
            .map(|(_, f)| f)
            .collect();
        assert_eq!(replies.len(), 1, "VLAN {vid}: {eth0:?}");
        assert_eq!(replies[0][0..6], host);
        assert_eq!(replies[0][6..12], BOX0);
    }
    // Nothing else leaves eth0: no UDP came back, no VLAN 30.
    assert_eq!(eth0.len(), 4, "{eth0:?}");

    // Each router resolves its own gateway on its own eth1 VLAN.
    assert!(eth1
        .iter()
        .any(|(v, f)| *v == 110 && is_arp_request_for(f, [10, 1, 0, 254], BOX1)));
    assert!(eth1
        .iter()
        .any(|(v, f)| *v == 120 && is_arp_request_for(f, [10, 1, 0, 253], BOX1)));
    assert!(!eth1
        .iter()
        .any(|(v, f)| *v == 110 && is_arp_request_for(f, [10, 1, 0, 253], BOX1)));
    // Each tenant's UDP leaves on its own VLAN to its own gateway, with
    // its TTL decremented; the unknown VLAN's and the untagged one do not.
    let udp: Vec<(u16, [u8; 6], u16, u8)> = eth1
        .iter()
        .filter_map(|(v, f)| {
            let ip = ip_of(f)?;
            (ip.next_header() == IpProtocol::UDP)
                .then(|| (*v, f[0..6].try_into().unwrap(), ip.ident(), ip.hop_limit()))
        })
        .collect();
    assert_eq!(
        udp,
        vec![(110, G_RED, 0x1010, 63), (120, G_BLUE, 0x2020, 63)],
        "{eth1:?}"
    );
    assert_eq!(eth1.len(), 4, "{eth1:?}");

    // The demultiplexer counted the unknown VLAN and the untagged frame.
    let demux = counters
        .lines()
        .find(|l| l.starts_with("eth0/demux (VRDemux):"))
        .unwrap_or_else(|| panic!("{counters}"));
    assert!(demux.contains("unknown_tag=1"), "{demux}");
    assert!(demux.contains("no_tag=1"), "{demux}");
}
