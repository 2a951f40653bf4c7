//! Click's IPsec elements (elements/ipsec/ of kohler/click) in whole
//! configurations run by the `bricks` binary: Click's own
//! conf/ipsec-router.click checked and run over captures, its output
//! compared with what Click itself sent for the same input, packets
//! encapsulated byte for byte as Click encapsulates them, Click's packets
//! decapsulated, and hostile ESP dropped and counted.
//!
//! Click's ESP is its own (an 8-byte IV for AES too, 8 of every 16 bytes
//! chained, the plaintext authenticated before it is encrypted, the inner
//! protocol as next header): no RFC 4303 peer such as Linux XFRM reads it,
//! so the peer here is Click. The vectors below are captures of Click
//! (kohler/click at the mirror's HEAD, userlevel, `--enable-ipsec`) run on
//! [`INNER`]; where Click draws IVs from `random()`, it was seeded with
//! RandomSeed, and bricks with the same seed and `IPsecESPEncap(IV click)`
//! draws the same IVs from its copy of Click's random stream.
//!
//! With a Click binary at hand, `BRICKS_CLICK=/path/to/click` also runs
//! Click on what bricks writes (`a_live_click_reads_what_bricks_writes`).

#[allow(dead_code)] // the helpers this test does not use
mod common;

use common::{read_pcap, write_pcap};
use std::path::Path;
use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Runs `config` to its end; returns what it printed (the final report
/// unless `quiet`).
fn run(config: &str, quiet: bool) -> String {
    let mut args = vec!["run", "-e", config];
    if quiet {
        args.push("--quiet");
    }
    let o = bricks(&args);
    let out = text(&o);
    assert!(o.status.success(), "{config}\n{out}");
    out
}

/// A counter of the final report (`element (Class): a=1 b=2 ...`), which
/// leaves out counters that are zero: 0 then.
fn counter(out: &str, element: &str, name: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{element} (")))
        .unwrap_or_else(|| panic!("no line for {element} in\n{out}"));
    let key = format!(" {name}=");
    line.find(&key).map_or(0, |at| {
        line[at + key.len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn frames(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| unhex(s)).collect()
}

/// `frames` as a capture, 10 ms apart from `start_ms`.
fn capture(path: &Path, frames: &[Vec<u8>], start_ms: u64) {
    let timed: Vec<(u64, Vec<u8>)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (start_ms + 10 * i as u64, f.clone()))
        .collect();
    write_pcap(path, &timed, 1000);
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// Click's conf/ipsec-router.click as kohler/click has it, unchanged: its
/// keys are 32 hex digits, which Click itself refuses ("key has bad
/// length": its SA keys are 16-byte strings, `\<...>` in Click's syntax)
/// and bricks reads as hex.
const IPSEC_ROUTER: &str = r#"// simple-ipsec.click An IP Router Configuration with IPsec/ESP support
 
// This file is an extended version of a canonical IP router that also supports
// IPsec ESP tunnels between gateways
// This configuration uses network sources (FromDevice and to Device elements) 
 
 
// Kernel configuration for cone as a router between
// 18.26.4 (eth0) and 18.26.7 (eth1). Moreover an 
// IPsec tunnel is configured between this router(18.26.4.24) and another(18.26.4.1) which
// are used for connecting 18.26.7 and 18.26.8. At the end of the day a packet that is
// sent from 18.26.7 and has to arrive somewhere at 18.26.8 enters the IPsec tunnel between
// the aformentioned gateways. 
// To illustrate details:
// (18.26.7)<-->(Router1)<-->(18.26.4)<-->(Router2)<-->(18.26.8)
// To illustrate the IPsec/ESP Tunnel:
// (18.26.7)<-->(Router1)<--IPsec/ESP-->(Router2)<-->(18.26.8) 
 
// Proxy ARPs for 18.26.7 on eth0.
 
// This routers interfaces are configured as follows:
// eth0, 00:50:BF:01:0C:91, 18.26.4.24
// eth1, 00:50:BF:01:0C:5D, 18.26.7.1
 
// 0. ARP queries
// 1. ARP replies
// 2. IP
// 3. Other
// We need separate classifiers for each interface because
// we only want proxy ARP on eth0.
 
c0 :: Classifier(12/0806 20/0001,
                  12/0806 20/0002,
                  12/0800,
                  -);
 
c1 :: Classifier(12/0806 20/0001,
                  12/0806 20/0002,
                  12/0800,
                  -);
  
FromDevice(eth0) -> [0]c0;
FromDevice(eth1) -> [0]c1;
 
 
out0 :: Queue(200) -> ToDevice(eth0);
out1 :: Queue(200) -> ToDevice(eth1);
//This packet goes to linux stack
tol :: ToHost();
  
// An "ARP querier" for each interface.
arpq0 :: ARPQuerier(18.26.4.24, 00:50:BF:01:0C:91);
arpq1 :: ARPQuerier(18.26.7.1, 00:50:BF:01:0C:5D);
 
// Deliver ARP responses to ARP queriers as well as Linux.
t :: Tee(3);
c0[1] -> t;
c1[1] -> t;
t[0] -> tol;
t[1] ->[1]arpq0
t[2] ->[1]arpq1
 
// Connect ARP outputs to the interface queues.
arpq0 -> out0;
arpq1 -> out1;
 
// Proxy ARP on eth0 for 18.26.8, as well as cone's IP address.
ar0 :: ARPResponder(18.26.4.24 00:50:BF:01:0C:91,
                    18.26.7.0/24 00:50:BF:01:0C:91);
c0[0] ->ar0 -> out0;
 
// Ordinary ARP on eth1.
ar1 :: ARPResponder(18.26.7.1 00:50:BF:01:0C:5D);
c1[0] -> ar1 -> out1;
 
// The IP routing table determines which incoming and outgoing packets are comming from or need to enter the IPsec tunnel respectively.
// Incoming packets will have this routers' IP as destination address and in that case the IP protocol number is checked to determine
// whether this packet is an IPsec/ESP packet, in which case it is propagated to the IPsec incoming processing path, or a packet for 
// this router that should be propagated to the linux stack. The packets that exit the IPsec processing path visit IP routing 
// table again to be properly forwarded. 
// Outgoing packets are sent to the outgoing IPsec/ESP processing path, they get encapsulated and therefore they visit the IP routing
// table a second time in order to be properly forwarded.
 
//IP routing table. The 0,1,2 outputs are _reserved_ for the described usage below in RadixIPsecLookup:
// 0: packets for this machine that may belong to an IPsec tunnel (if they don't the RadixIPsecLookup code changes outgoing port to number 2 below)  
// 1: packets for 18.26.8 via corresponding gateway (18.26.4.1) with which there is an IPsec tunnel.
// 2: packets for this machine which cannot belong to IPsec tunnel (because they originate from a 18.26.7).This port must be connected to 
//    linux stack
//
// Apart from these you have to enter canonical IP router paths from output port 3 and onwards:
// 3: packets for 18.26.4.1 which is a router to which we send prepared outgoing ESP packets that visit IP routing table for the second time
//    as regular outgoing packets
// 4: Canonical IP routing for packets that are for any machine at 18.26.7
  
 rt :: RadixIPsecLookup(18.26.4.24/32 0,
		        18.26.4.1/32 3, 
		        18.26.7.1/32 2,
		        18.26.7.0/24 4,  	
		        18.26.8.0/24 18.26.4.1 1 234 ABCDEFFF001DEFD2354550FE40CD708E 112233EE556677888877665544332211 300 64);
 
// IPsec incoming packet IP table visit order 
// rt[0]->rt[4]
// IPsec outgoing packet IP table visit order
// rt[1]->rt[3]
 
// Hand incoming IP packets to the routing table.
// CheckIPHeader checks all the lengths and length fields
// for sanity.
ip ::   Strip(14)
     -> CheckIPHeader(INTERFACES 18.26.4.24/24 18.26.7.1/24)
     -> [0]rt;
c0[2] -> Paint(1) -> ip;
c1[2] -> Paint(2) -> ip;
 
// IP packets for this machine.
// ToHost expects ethernet packets, so cook up a fake header.
rt[2] -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> tol;
 
//1 entering the ipsec tunnel...
//ESP Encapsulate -> Authenticate -> Encrypt -> IP Encapsulate -> send back to IP routing table 
rt[1]  	-> espen :: IPsecESPEncap()
        -> cauth :: IPsecAuthHMACSHA1(0)
        -> encr :: IPsecAES(1)
        -> ipencap :: IPsecEncap(50)
        -> [0]rt;
 
//0 packets arriving from a tunnel...
//Strip IP header -> Decrypt -> Authenticate -> Decapsulate ESP -> send back to IP routing table
rt[0] -> StripIPHeader()
      -> decr :: IPsecAES(0)
      -> vauth :: IPsecAuthHMACSHA1(1)
      -> espuncap :: IPsecESPUnencap()
      -> CheckIPHeader()
      -> [0]rt;
 
rt[3] -> DropBroadcasts
      -> cp1 :: PaintTee(1)
      -> gio1 :: IPGWOptions(18.26.4.24)
      -> FixIPSrc(18.26.4.24)
      -> dt1 :: DecIPTTL
      -> fr1 :: IPFragmenter(1500)
      -> [0]arpq0
 
// Canonical IP router processing paths
// we've committed to a
// particular output device.
// Check paint to see if a redirect is required.
// Process record route and timestamp IP options.
// Fill in missing ip_src fields.
// Discard packets that arrived over link-level broadcast or multicast.
// Decrement and check the TTL after deciding to forward.
// Fragment.
// Send outgoing packets through ARP to the interfaces.
 
rt[4] -> DropBroadcasts
      -> cp2 :: PaintTee(2)
      -> gio2 :: IPGWOptions(18.26.7.1)
      -> FixIPSrc(18.26.7.1)
      -> dt2 :: DecIPTTL
      -> fr2 :: IPFragmenter(1500)
      -> [0]arpq1;
 
// DecIPTTL[1] emits packets with expired TTLs.
// Reply with ICMPs. Rate-limit them?
dt1[1] -> ICMPError(18.26.4.24, timeexceeded) -> [0]rt;
dt2[1] -> ICMPError(18.26.4.24, timeexceeded) -> [0]rt;
 
// Send back ICMP UNREACH/NEEDFRAG messages on big packets with DF set.
// This makes path mtu discovery work.
fr1[1] -> ICMPError(18.26.7.1, unreachable, needfrag) -> [0]rt;
fr2[1] -> ICMPError(18.26.7.1, unreachable, needfrag) -> [0]rt;
 
// Send back ICMP Parameter Problem messages for badly formed
// IP options. Should set the code to point to the
// bad byte, but that's too hard.
gio1[1] -> ICMPError(18.26.4.24, parameterproblem) -> [0]rt;
gio2[1] -> ICMPError(18.26.4.24, parameterproblem) -> [0]rt;
 
// Send back an ICMP redirect if required.
cp1[1] -> ICMPError(18.26.4.24, redirect, host) -> [0]rt;
cp2[1] -> ICMPError(18.26.7.1, redirect, host) -> [0]rt;
 
// Unknown ethernet type numbers.
c0[3] -> Discard;
c1[3] -> Discard;
"#;

/// The SA of the tunnel, as Click writes keys.
const SA: &str = "234 \\<ABCDEFFF001DEFD2354550FE40CD708E> \
    \\<112233EE556677888877665544332211> 300 64";

/// The far gateway's table: 18.26.4.1 receives ESP and tunnels traffic
/// for 18.26.7.0/24 to 18.26.4.24.
fn far_table() -> String {
    format!(
        "rt :: RadixIPsecLookup(18.26.4.1/32 0, 18.26.7.0/24 18.26.4.24 1 {SA}, 0/0 2); \
         rt[1] -> Discard; rt[2] -> Discard;"
    )
}

/// This gateway's table (18.26.4.24), as conf/ipsec-router.click's.
fn near_table() -> String {
    format!(
        "rt :: RadixIPsecLookup(18.26.4.24/32 0, 18.26.8.0/24 18.26.4.1 1 {SA}, 0/0 2); \
         rt[0] -> Discard; rt[2] -> Discard;"
    )
}

/// Encapsulates capture `input` as 18.26.4.24 does with `chain` (the
/// elements between IPsecESPEncap and IPsecEncap) into `output`.
fn encap_config(input: &str, output: &str, esp: &str, chain: &str) -> String {
    format!(
        "RandomSeed(7); FromDump({input}, STOP true) -> Strip(14) -> CheckIPHeader -> {} \
         rt[1] -> {esp} -> {chain} -> IPsecEncap(50) -> FixIPSrc(18.26.4.24) \
         -> EtherEncap(0x0800, 00:50:BF:01:0C:91, 00:11:22:33:44:55) -> ToDump({output});",
        near_table()
    )
}

/// Decapsulates capture `input` as 18.26.4.1 does with `chain` (the
/// elements between StripIPHeader and IPsecESPUnencap) into `output`, with
/// INNER's Ethernet header.
fn decap_config(input: &str, output: &str, chain: &str) -> String {
    format!(
        "FromDump({input}, STOP true) -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader \
         -> {} rt[0] -> StripIPHeader -> {chain} -> espuncap :: IPsecESPUnencap \
         -> CheckIPHeader -> EtherEncap(0x0800, 00:01:02:03:04:05, 00:50:BF:01:0C:5D) \
         -> ToDump({output});",
        far_table()
    )
}

const CHAINS: [(&str, &str, &str); 3] = [
    (
        "aes",
        "IPsecAuthHMACSHA1(0) -> IPsecAES(1)",
        "IPsecAES(0) -> IPsecAuthHMACSHA1(1)",
    ),
    (
        "des",
        "IPsecAuthHMACSHA1(0) -> IPsecDES(1)",
        "IPsecDES(0) -> IPsecAuthHMACSHA1(1)",
    ),
    (
        "sha1",
        "IPsecAuthSHA1(0) -> IPsecAES(1)",
        "IPsecAES(0) -> IPsecAuthSHA1(1)",
    ),
];

fn click_vectors(name: &str) -> Vec<Vec<u8>> {
    frames(match name {
        "aes" => CLICK_AES,
        "des" => CLICK_DES,
        _ => CLICK_SHA1,
    })
}

#[test]
fn clicks_ipsec_router_conf_checks() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("ipsec-router.click");
    std::fs::write(&conf, IPSEC_ROUTER).unwrap();
    let o = bricks(&["check", conf.to_str().unwrap()]);
    let all = text(&o);
    assert!(o.status.success(), "{all}");
    assert!(all.contains("ok: 51 elements, 66 connections"), "{all}");
    for class in [
        "rt :: RadixIPsecLookup",
        "espen :: IPsecESPEncap",
        "cauth :: IPsecAuthHMACSHA1",
        "encr :: IPsecAES",
        "ipencap :: IPsecEncap",
        "espuncap :: IPsecESPUnencap",
    ] {
        assert!(all.contains(class), "{class}\n{all}");
    }
}

/// ARP replies: `from` (MAC, IP) to `to` (MAC, IP).
fn arp_reply(from: ([u8; 6], [u8; 4]), to: ([u8; 6], [u8; 4])) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&to.0);
    f.extend_from_slice(&from.0);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2]);
    f.extend_from_slice(&from.0);
    f.extend_from_slice(&from.1);
    f.extend_from_slice(&to.0);
    f.extend_from_slice(&to.1);
    f
}

const ETH0: [u8; 6] = [0x00, 0x50, 0xbf, 0x01, 0x0c, 0x91];
const ETH1: [u8; 6] = [0x00, 0x50, 0xbf, 0x01, 0x0c, 0x5d];
const FAR_GW: [u8; 6] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55];
const HOST: [u8; 6] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05];

/// Click's conf/ipsec-router.click, unchanged, over captures: the hosts'
/// traffic on eth1 leaves eth0 in the tunnel, and the far gateway's
/// tunnel traffic on eth0 leaves eth1 decapsulated, exactly as Click sent
/// it for the same input. The ARP replies come after the queries (bricks'
/// ARPQuerier takes no unsolicited replies).
#[test]
fn clicks_ipsec_router_conf_runs_as_click_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let conf = d.join("ipsec-router.click");
    std::fs::write(&conf, IPSEC_ROUTER).unwrap();
    let inner = frames(INNER);
    let mut eth1: Vec<(u64, Vec<u8>)> = inner
        .iter()
        .enumerate()
        .map(|(i, f)| (2000 + 10 * i as u64, f.clone()))
        .collect();
    eth1.push((
        3500,
        arp_reply((HOST, [18, 26, 7, 5]), (ETH1, [18, 26, 7, 1])),
    ));
    let mut eth0 = vec![(
        2500,
        arp_reply((FAR_GW, [18, 26, 4, 1]), (ETH0, [18, 26, 4, 24])),
    )];
    eth0.extend(
        frames(ROUTER2_ESP)
            .into_iter()
            .enumerate()
            .map(|(i, f)| (3000 + 10 * i as u64, f)),
    );
    write_pcap(&d.join("eth0-in.pcap"), &eth0, 0);
    write_pcap(&d.join("eth1-in.pcap"), &eth1, 0);
    let dev = |n: &str| {
        format!(
            "{n}=pcap:{},{}",
            path(d, &format!("{n}-in.pcap")),
            path(d, &format!("{n}-out.pcap"))
        )
    };
    let host = format!("host=pcap:/dev/null,{}", path(d, "host.pcap"));
    let o = bricks(&[
        "run",
        conf.to_str().unwrap(),
        "--clock",
        "trace",
        "-d",
        &dev("eth0"),
        "-d",
        &dev("eth1"),
        "-d",
        &host,
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert_eq!(counter(&out, "espen", "encapsulated"), 9, "{out}");
    assert_eq!(counter(&out, "espuncap", "decapsulated"), 9, "{out}");
    assert_eq!(counter(&out, "vauth", "drops"), 0, "{out}");

    // eth1: what Click sent, byte for byte.
    let got1 = read_pcap(&d.join("eth1-out.pcap"));
    assert_eq!(got1, frames(CLICK_ETH1_OUT));

    // eth0: an ARP query for the far gateway, then the tunnel packets,
    // which Click's chain at the far end (here bricks' copy of it) opens.
    let got0 = read_pcap(&d.join("eth0-out.pcap"));
    assert_eq!(got0.len(), 10);
    assert_eq!(&got0[0][..14], &unhex("ffffffffffff0050bf010c910806")[..]);
    assert_eq!(&got0[0][38..42], &[18, 26, 4, 1]);
    let click = frames(CLICK_AES);
    for (i, (f, c)) in got0[1..].iter().zip(&click).enumerate() {
        assert_eq!(f.len(), c.len(), "packet {i}");
        assert_eq!(&f[..14], &c[..14]);
        // As IPsecEncap(50) and the router's FixIPSrc and DecIPTTL make
        // it: TTL 250 - 1, protocol 50, 18.26.4.24 to 18.26.4.1.
        assert_eq!(f[22], 249);
        assert_eq!(f[23], 50);
        assert_eq!(&f[26..34], &[18, 26, 4, 24, 18, 26, 4, 1]);
        // SPI 234, sequence numbers from 300.
        assert_eq!(&f[34..38], &234u32.to_be_bytes());
        assert_eq!(&f[38..42], &(300 + i as u32).to_be_bytes());
    }
    // The IVs are bricks' own: no two alike.
    let mut ivs: Vec<&[u8]> = got0[1..].iter().map(|f| &f[42..50]).collect();
    ivs.sort();
    ivs.dedup();
    assert_eq!(ivs.len(), 9);
    let esp = path(d, "eth0-esp.pcap");
    capture(Path::new(&esp), &got0[1..], 0);
    let back = path(d, "back.pcap");
    run(&decap_config(&esp, &back, CHAINS[0].2), true);
    assert_eq!(read_pcap(Path::new(&back)), inner);

    // The host got the two ARP replies (Tee to ToHost), nothing else.
    assert_eq!(read_pcap(&d.join("host.pcap")).len(), 2);
}

/// With Click's IVs (RandomSeed and `IV click`), bricks' encapsulation is
/// Click's, byte for byte, for AES, DES and plain SHA-1.
#[test]
fn encapsulation_is_clicks_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = path(d, "inner.pcap");
    capture(Path::new(&input), &frames(INNER), 0);
    for (name, enc, _) in CHAINS {
        let out = path(d, &format!("{name}.pcap"));
        run(
            &encap_config(&input, &out, "IPsecESPEncap(IV click)", enc),
            true,
        );
        assert_eq!(read_pcap(Path::new(&out)), click_vectors(name), "{name}");
    }
}

/// Click's packets, decapsulated: the very packets Click was given.
#[test]
fn decapsulation_opens_clicks_packets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, _, dec) in CHAINS {
        let input = path(d, &format!("click-{name}.pcap"));
        capture(Path::new(&input), &click_vectors(name), 0);
        let out = path(d, &format!("{name}.pcap"));
        run(&decap_config(&input, &out, dec), true);
        assert_eq!(read_pcap(Path::new(&out)), frames(INNER), "{name}");
    }
}

/// bricks to bricks with its own IVs, which are neither Click's nor the
/// same from one run to the next.
#[test]
fn a_tunnel_with_unpredictable_ivs_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = path(d, "inner.pcap");
    capture(Path::new(&input), &frames(INNER), 0);
    let mut runs = Vec::new();
    for (name, enc, dec) in CHAINS {
        for n in 0..2 {
            let esp = path(d, &format!("{name}{n}.pcap"));
            run(&encap_config(&input, &esp, "IPsecESPEncap()", enc), true);
            let back = path(d, &format!("{name}{n}-back.pcap"));
            run(&decap_config(&esp, &back, dec), true);
            assert_eq!(read_pcap(Path::new(&back)), frames(INNER), "{name}");
            let got = read_pcap(Path::new(&esp));
            assert_ne!(got, click_vectors(name));
            runs.push(got);
        }
    }
    for pair in runs.chunks(2) {
        for (a, b) in pair[0].iter().zip(&pair[1]) {
            assert_ne!(a[42..50], b[42..50], "an IV repeated across runs");
        }
    }
}

/// Fixes the IPv4 total length and header checksum of an Ethernet frame
/// after its end moved.
fn fix_ip(f: &mut [u8]) {
    let len = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&len.to_be_bytes());
    f[24] = 0;
    f[25] = 0;
    let mut sum: u32 = 0;
    for i in (14..34).step_by(2) {
        sum += u32::from(u16::from_be_bytes([f[i], f[i + 1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Truncated ESP, a wrong ICV, an unknown SPI, a replay, a length Click's
/// AES would overrun, and padding that is not Click's: each dropped and
/// counted where it is found, and the good packets still go through.
#[test]
fn hostile_esp_is_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let click = click_vectors("aes");
    let mut hostile = Vec::new();
    // 0: good. 1: its replay.
    hostile.push(click[0].clone());
    hostile.push(click[0].clone());
    // 2: a wrong ICV (its last byte).
    let mut f = click[1].clone();
    *f.last_mut().unwrap() ^= 1;
    hostile.push(f);
    // 3: a ciphertext byte changed: the ICV no longer matches.
    let mut f = click[2].clone();
    f[60] ^= 0x80;
    hostile.push(f);
    // 4: an SPI no SA has.
    let mut f = click[3].clone();
    f[34..38].copy_from_slice(&999u32.to_be_bytes());
    hostile.push(f);
    // 5: ESP cut to 10 bytes: shorter than its header.
    let mut f = click[4][..34 + 10].to_vec();
    fix_ip(&mut f);
    hostile.push(f);
    // 6: 20 bytes: a header, no room for an ICV.
    let mut f = click[4][..34 + 20].to_vec();
    fix_ip(&mut f);
    hostile.push(f);
    // 7: 16 + 13 + 12 bytes: Click's AES would run past the end.
    let mut f = click[4][..34 + 41].to_vec();
    fix_ip(&mut f);
    hostile.push(f);
    // 8: an IP header that ends before the SPI.
    let mut f = click[5][..34 + 2].to_vec();
    fix_ip(&mut f);
    hostile.push(f);
    // 9 to 13: good ones after all that.
    hostile.extend(click[5..].iter().cloned());
    let input = path(d, "hostile.pcap");
    capture(Path::new(&input), &hostile, 0);
    let out = path(d, "out.pcap");
    let conf = format!(
        "FromDump({input}, STOP true) -> Strip(14) -> CheckIPHeader -> {} \
         rt[0] -> StripIPHeader -> decr :: IPsecAES(0) -> vauth :: IPsecAuthHMACSHA1(1) \
         -> espuncap :: IPsecESPUnencap -> CheckIPHeader \
         -> EtherEncap(0x0800, 00:01:02:03:04:05, 00:50:BF:01:0C:5D) -> ToDump({out}); \
         vauth[1] -> bad :: Counter -> Discard;",
        far_table()
    );
    let report = run(&conf, false);
    assert_eq!(counter(&report, "rt", "unknown_spi"), 1, "{report}");
    assert_eq!(counter(&report, "rt", "truncated"), 1, "{report}");
    assert_eq!(counter(&report, "decr", "truncated"), 1, "{report}");
    assert_eq!(counter(&report, "decr", "bad_length"), 1, "{report}");
    assert_eq!(counter(&report, "vauth", "truncated"), 1, "{report}");
    assert_eq!(counter(&report, "vauth", "drops"), 2, "{report}");
    assert_eq!(counter(&report, "bad", "count"), 2, "{report}");
    assert_eq!(counter(&report, "espuncap", "replay"), 1, "{report}");
    assert_eq!(counter(&report, "espuncap", "decapsulated"), 5, "{report}");
    let inner = frames(INNER);
    let mut want = vec![inner[0].clone()];
    want.extend(inner[5..].iter().cloned());
    assert_eq!(read_pcap(Path::new(&out)), want);

    // Padding that is not 1, 2, 3, ... under a good ICV: the sender
    // writes a 9 over the first padding byte of a 28-byte packet (ESP
    // header 16, packet 28, trailer 1 2, pad length 2, next header 17)
    // before authenticating.
    let one = path(d, "one.pcap");
    capture(Path::new(&one), &inner[..1], 0);
    let conf = format!(
        "FromDump({one}, STOP true) -> Strip(14) -> CheckIPHeader \
         -> near :: RadixIPsecLookup(18.26.8.0/24 18.26.4.1 1 {SA}, 0/0 0); near[0] -> Discard; \
         near[1] -> IPsecESPEncap() -> StoreData(44, \\<09>) -> IPsecAuthHMACSHA1(0) \
         -> IPsecAES(1) -> IPsecEncap(50) -> FixIPSrc(18.26.4.24) -> CheckIPHeader -> {} \
         rt[0] -> StripIPHeader -> IPsecAES(0) -> vauth :: IPsecAuthHMACSHA1(1) \
         -> espuncap :: IPsecESPUnencap -> Discard;",
        far_table()
    );
    let report = run(&conf, false);
    assert_eq!(counter(&report, "vauth", "verified"), 1, "{report}");
    assert_eq!(counter(&report, "espuncap", "bad_padding"), 1, "{report}");
    assert_eq!(counter(&report, "espuncap", "decapsulated"), 0, "{report}");
}

/// Packets RadixIPsecLookup cannot tunnel, and tables it refuses.
#[test]
fn lookup_drops_what_it_cannot_tunnel_and_refuses_bad_sas() {
    // A route to output 1 without an SA; a destination no route has.
    let conf = "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 12 1a \
        08 02 00 07 00 09 00 08 00 00>, LIMIT 3) -> SetIPChecksum -> CheckIPHeader \
        -> rt :: RadixIPsecLookup(18.26.8.0/24 1, 18.26.4.24/32 0); \
        rt[0] -> Discard; rt[1] -> IPsecESPEncap() -> Discard; \
        InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 08 08 \
        08 08 00 07 00 09 00 08 00 00>, LIMIT 2) -> SetIPChecksum -> CheckIPHeader -> rt;";
    let report = run(conf, false);
    assert_eq!(counter(&report, "rt", "no_sa"), 3, "{report}");
    assert_eq!(counter(&report, "rt", "no_route"), 2, "{report}");
    for (bad, says) in [
        ("18.26.8.0/24 1 0 \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 300 64", "SPI"),
        ("18.26.8.0/24 1 234 \\<ABCDEF> \\<112233EE556677888877665544332211> 300 64", "16 bytes"),
        ("18.26.8.0/24 1 234 \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 0 64", "REPLAY"),
        ("18.26.8.0/24 1 234 \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 300 256", "OOSIZE"),
    ] {
        let conf = format!(
            "Idle -> rt :: RadixIPsecLookup({bad}); rt[0] -> Discard; rt[1] -> Discard;"
        );
        let o = bricks(&["check", "-e", &conf]);
        assert!(!o.status.success(), "{bad}");
        assert!(text(&o).contains(says), "{bad}: {}", text(&o));
    }
    // The chains' elements need a RadixIPsecLookup's SAs.
    let o = bricks(&["check", "-e", "Idle -> IPsecAES(1) -> Discard;"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("RadixIPsecLookup"), "{}", text(&o));
}

/// Click's manual gives IPsecESPEncap an SPI, which Click's code ignores:
/// so does bricks, saying so; a FILE is IPsecESPEncap(FILE) as before.
#[test]
fn an_spi_argument_is_clicks_and_ignored() {
    let conf = format!(
        "Idle -> rt :: RadixIPsecLookup(0/0 1 {SA}); rt[0] -> Discard; \
         rt[1] -> IPsecESPEncap(1234) -> Discard;"
    );
    let o = bricks(&["check", "-e", &conf]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("SPI 1234 ignored"), "{}", text(&o));
    let o = bricks(&[
        "check",
        "-e",
        "Idle -> IPsecESPEncap(no/such.sa) -> Discard;",
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("cannot read SA file"), "{}", text(&o));
}

/// Click's `table` and `lookup` handlers, as Click prints them for
/// conf/ipsec-router.click's table (kohler/click, `-h rt.table`).
#[test]
fn handlers_print_as_clicks() {
    let conf = format!(
        "rt :: RadixIPsecLookup(18.26.4.24/32 0, 18.26.8.0/24 18.26.4.1 1 {SA}, \
         18.26.7.0/24 4); Idle -> rt; rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard; \
         rt[3] -> Discard; rt[4] -> Discard; Script(stop)"
    );
    let o = bricks(&["run", "--quiet", "-e", &conf, "-h", "rt.table"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "18.26.4.24/32\t\t-\t\t0\n\
         18.26.8.0/24\t\t18.26.4.1\t1  |TUNNELED CONNECTION| \n\
         |SPI| |ENC KEY| |AUTH KEY| ||\n \
         |234| |abcdefff001defd2354550fe40cd708e| |112233ee556677888877665544332211|\n\n\
         18.26.7.0/24\t\t-\t\t4\n"
    );
}

/// With `BRICKS_CLICK` naming a Click built with `--enable-ipsec`, Click
/// opens what bricks writes with its random IVs, and bricks' Click-IV
/// output is what that Click writes. Without it, nothing to do.
#[test]
fn a_live_click_reads_what_bricks_writes() {
    let Some(click) = std::env::var_os("BRICKS_CLICK") else {
        eprintln!("BRICKS_CLICK is not set: no Click to run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = path(d, "inner.pcap");
    capture(Path::new(&input), &frames(INNER), 0);
    for (name, enc, dec) in CHAINS {
        let esp = path(d, &format!("{name}.pcap"));
        run(&encap_config(&input, &esp, "IPsecESPEncap()", enc), true);
        let back = path(d, &format!("{name}-click.pcap"));
        // Click's FromDump reads any capture; its config is the same text.
        let o = Command::new(&click)
            .arg("-e")
            .arg(decap_config(&esp, &back, dec))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(read_pcap(Path::new(&back)), frames(INNER), "{name}");
        let clicks = path(d, &format!("{name}-click-enc.pcap"));
        let o = Command::new(&click)
            .arg("-e")
            .arg(encap_config(&input, &clicks, "IPsecESPEncap", enc))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let mine = path(d, &format!("{name}-bricks-enc.pcap"));
        run(
            &encap_config(&input, &mine, "IPsecESPEncap(IV click)", enc),
            true,
        );
        assert_eq!(read_pcap(Path::new(&mine)), read_pcap(Path::new(&clicks)));
    }
}

/// The traffic of the hosts behind the router (18.26.7.5 to 18.26.8.2): UDP
/// with 0, 1, 4, 8, 12, 20, 36 and 100 bytes of data, and an ICMP echo.
const INNER: &[&str] = &[
    concat!(
        "0050bf010c5d00010203040508004500001c0064000040114733121a0705121a0802000700090008",
        "0000",
    ),
    concat!(
        "0050bf010c5d00010203040508004500001d0065000040114731121a0705121a0802000700090009",
        "000003",
    ),
    concat!(
        "0050bf010c5d000102030405080045000020006600004011472d121a0705121a080200070009000c",
        "0000030a1118",
    ),
    concat!(
        "0050bf010c5d0001020304050800450000240067000040114728121a0705121a0802000700090010",
        "0000030a11181f262d34",
    ),
    concat!(
        "0050bf010c5d0001020304050800450000280068000040114723121a0705121a0802000700090014",
        "0000030a11181f262d343b424950",
    ),
    concat!(
        "0050bf010c5d000102030405080045000030006900004011471a121a0705121a080200070009001c",
        "0000030a11181f262d343b424950575e656c737a8188",
    ),
    concat!(
        "0050bf010c5d000102030405080045000040006a000040114709121a0705121a080200070009002c",
        "0000030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8",
    ),
    concat!(
        "0050bf010c5d000102030405080045000080006b0000401146c8121a0705121a080200070009006c",
        "0000030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff06",
        "0d141b222930373e454c535a61686f767d848b9299a0a7aeb5bcc3cad1d8dfe6edf4fb020910171e",
        "252c333a41484f565d646b727980878e959ca3aab1b8",
    ),
    concat!(
        "0050bf010c5d00010203040508004500005400c80000400146a7121a0705121a08020800eeb71234",
        "0001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425",
        "262728292a2b2c2d2e2f3031323334353637",
    ),
];
/// Click's `RandomSeed(7)` run of [`INNER`] through `IPsecESPEncap ->
/// IPsecAuthHMACSHA1(0) -> IPsecAES(1) -> IPsecEncap(50) -> FixIPSrc`.
const CLICK_AES: &[&str] = &[
    concat!(
        "0011223344550050bf010c9108004500005000000000fa32942f121a0418121a0401000000ea0000",
        "012cfdb7940f9078c61b85a02107072a0568737040abe90c147ae91bf5b84aea24f1d54deb49c00d",
        "be13fea36ed62f695fc188edb223",
    ),
    concat!(
        "0011223344550050bf010c9108004500005000010000fa32942e121a0418121a0401000000ea0000",
        "012dce81f6122be7de06c7667d07c6546e19a84282ed3aff0a1df3a16b7caaf4466490746cce6b2b",
        "d41518c2d01fc50fc742964caa73",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800020000fa329425121a0418121a0401000000ea0000",
        "012e9bc65300c66479108322b4c0b87ba27646541a4defcf140055423aaa7f5b2dc975d2b955cad7",
        "683afbf825ebeac73c1067d94abf7c6212f8cfeb3781",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800030000fa329424121a0418121a0401000000ea0000",
        "012fdecede1fe4960501cbe75f7d309756b9a137ffe3f3a9fba2fe2b3b891e536216ee4d3aa3b901",
        "18bd46e96205bed4862d670aee55cbe3f2ab6ed23aa0",
    ),
    concat!(
        "0011223344550050bf010c9108004500006000040000fa32941b121a0418121a0401000000ea0000",
        "0130d40540138e62c50191bd655d9e45cdc470c39ff7ba40270a943f1fd608a911ef1fc44087963a",
        "723072c244795a32ce513438d8dbdee7c274fc1f0e3f99fcc375843502c6",
    ),
    concat!(
        "0011223344550050bf010c9108004500006800050000fa329412121a0418121a0401000000ea0000",
        "01319c61db10fa26dc023501efb992cd3f58914f1f26fa5f5d00ea720eeba2de72f0acbcb321f3a5",
        "9bc3096885c72095d0765e312c720da6d89c530ae2abc46c8b0f5f69a9cd2deae5522f770896",
    ),
    concat!(
        "0011223344550050bf010c9108004500007800060000fa329401121a0418121a0401000000ea0000",
        "0132f84376187982181ada5de0ce45de9e975042ef75308f5dd335432b86bfec428e41b559a5852f",
        "073e115804e4b1057175e7b2cfa7d7f996e6f0bcaa1f80d55eaf2e4b2746d5ca4e583b794b486755",
        "8582ff3d39dd84e78e6a3d5e75c3",
    ),
    concat!(
        "0011223344550050bf010c910800450000b800070000fa3293c0121a0418121a0401000000ea0000",
        "01336a76721c6ea83e0593797194cc677de650eca6fb58ae665c5acef45a0371bef37a43b422496c",
        "b1c052ed806f2c5c4cbf4a9c470f2f838f2264a9cc00947549e1b61bbfd7c64b6517ac8546261284",
        "5788561e8835c548495f7b4dd5a3b435ca1798a53efef4058dd38b27a7166b0ca6101adbdeb5e000",
        "b4411f46651f819b870e653af5d0651911bf3d1476d9ec1b91a2f338bbb2821d3ae7b28c28e8",
    ),
    concat!(
        "0011223344550050bf010c9108004500008800080000fa3293ef121a0418121a0401000000ea0000",
        "01347c69e50660b2341976e3e86dc379d2b7d9687b5087114278e5514548fd22407e5c7e5577c978",
        "78bd3c4730700d1ea35b158f7825c94bc96dd366a1f19cecaac118062027d46bbd847e1989cc2c8c",
        "9884a0d94a455c74ba752f59adde6c135dec506968f7c7008c1aaa2b730e",
    ),
];
/// The same with `IPsecDES(1)`.
const CLICK_DES: &[&str] = &[
    concat!(
        "0011223344550050bf010c9108004500005000000000fa32942f121a0418121a0401000000ea0000",
        "012cfdb7940f9078c61b2959c059723fcf18c9de986c992674c1239fce9c45e15286e0fca6d39d64",
        "0581fea36ed62f695fc188edb223",
    ),
    concat!(
        "0011223344550050bf010c9108004500005000010000fa32942e121a0418121a0401000000ea0000",
        "012dce81f6122be7de0619e0c97a97326d3de4db71606af4a2352884cd219b53fc8c5fdbbc8f5c3c",
        "d83318c2d01fc50fc742964caa73",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800020000fa329425121a0418121a0401000000ea0000",
        "012e9bc65300c6647910bb457e45bcd1c1fe9e8a914a16d1439132e2b28c45bc0686cdc0b8aa0d96",
        "b773f22d5004c1a94a474f9416d4135134e7cfeb3781",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800030000fa329424121a0418121a0401000000ea0000",
        "012fdecede1fe496050131f595aaa589aef1b27bb663c682156d22ac0b4633bc186c3aed1ea4c613",
        "ec842ddbbc8ef29c13b666062ce35fcdeb1e6ed23aa0",
    ),
    concat!(
        "0011223344550050bf010c9108004500006000040000fa32941b121a0418121a0401000000ea0000",
        "0130d40540138e62c50196d121da6806d67a5dfd44e02884b96293f1c283e00119734e5ec1bd3c73",
        "ae831cc2a7f0bb4c306dcfc9df09517ad048fc1f0e3f99fcc375843502c6",
    ),
    concat!(
        "0011223344550050bf010c9108004500006800050000fa329412121a0418121a0401000000ea0000",
        "01319c61db10fa26dc02206e66dd47741841f6e744e60b31a78c6d6309b0b31a46b4fa1ef4699b9a",
        "1eff7dcc193fbad9f07100e64f0d679bb2ae17b0132c5f1384b665e52331341c609c2f770896",
    ),
    concat!(
        "0011223344550050bf010c9108004500007800060000fa329401121a0418121a0401000000ea0000",
        "0132f84376187982181aeac27bfff7e69d420041a551b828a45c98d58b7291ae58973c45a3512113",
        "6dd2144f6be9346c31dc8d22568894b3650286f1f2387f407cb40ce650f26c87e2783e258c700778",
        "8dc71cb701272f7fcd123d5e75c3",
    ),
    concat!(
        "0011223344550050bf010c910800450000b800070000fa3293c0121a0418121a0401000000ea0000",
        "01336a76721c6ea83e05bf17c258aef5f2a239cb66d142af8a10a630cd4cf8ce3195111c4d410a6a",
        "192752e7f72b19732b22a9c12396656834f5c04ff03416428231f4a5639826b162f91984b7d8d9ad",
        "7e187d65aa2c7ab17bf204081727944900cfbf9555af9ac8abf891dbefce3cb249967bc5eace2c9e",
        "647ba040a89471ba475a8197a09670ddaa827570ef8eb2074d5c99568adb188172aeb28c28e8",
    ),
    concat!(
        "0011223344550050bf010c9108004500008800080000fa3293ef121a0418121a0401000000ea0000",
        "01347c69e50660b2341990f691174eaa7c1f7f09e35ea90293600eab9d13328ca541ecebcedcc09f",
        "ac477c01737173964b979ef4b4934db363d0de8a231e635623cf4de54a8ca2d5e63fe498a610347b",
        "0492f61187b276e15db9610a11118cadd00033490a61d79017b9aa2b730e",
    ),
];
/// The same with `IPsecAuthSHA1(0) -> IPsecAES(1)`.
const CLICK_SHA1: &[&str] = &[
    concat!(
        "0011223344550050bf010c9108004500005000000000fa32942f121a0418121a0401000000ea0000",
        "012cfdb7940f9078c61b85a02107072a0568737040abe90c147ae91bf5b84aea24f1d54deb49c00d",
        "be130779eb6927a70db7be0e0cf6",
    ),
    concat!(
        "0011223344550050bf010c9108004500005000010000fa32942e121a0418121a0401000000ea0000",
        "012dce81f6122be7de06c7667d07c6546e19a84282ed3aff0a1df3a16b7caaf4466490746cce6b2b",
        "d4159fe3fa3fe168d42f48da5473",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800020000fa329425121a0418121a0401000000ea0000",
        "012e9bc65300c66479108322b4c0b87ba27646541a4defcf140055423aaa7f5b2dc975d2b955cad7",
        "683a19d212d8fb41c1350aeb5b837cf2f92f947850df",
    ),
    concat!(
        "0011223344550050bf010c9108004500005800030000fa329424121a0418121a0401000000ea0000",
        "012fdecede1fe4960501cbe75f7d309756b9a137ffe3f3a9fba2fe2b3b891e536216ee4d3aa3b901",
        "18bdafd782fbe01379a6e502ba61716cca14b0c90563",
    ),
    concat!(
        "0011223344550050bf010c9108004500006000040000fa32941b121a0418121a0401000000ea0000",
        "0130d40540138e62c50191bd655d9e45cdc470c39ff7ba40270a943f1fd608a911ef1fc44087963a",
        "723072c244795a32ce513438d8dbdee7c274c38a3a9b4b09ee22f903764d",
    ),
    concat!(
        "0011223344550050bf010c9108004500006800050000fa329412121a0418121a0401000000ea0000",
        "01319c61db10fa26dc023501efb992cd3f58914f1f26fa5f5d00ea720eeba2de72f0acbcb321f3a5",
        "9bc3096885c72095d0765e312c720da6d89c3595221a39d22f45cba49504fdf8c83fb0c71810",
    ),
    concat!(
        "0011223344550050bf010c9108004500007800060000fa329401121a0418121a0401000000ea0000",
        "0132f84376187982181ada5de0ce45de9e975042ef75308f5dd335432b86bfec428e41b559a5852f",
        "073e115804e4b1057175e7b2cfa7d7f996e6f0bcaa1f80d55eaf2e4b2746d5ca4e58b0f9d0726b4b",
        "d26e61c947d60a2364ade84e729f",
    ),
    concat!(
        "0011223344550050bf010c910800450000b800070000fa3293c0121a0418121a0401000000ea0000",
        "01336a76721c6ea83e0593797194cc677de650eca6fb58ae665c5acef45a0371bef37a43b422496c",
        "b1c052ed806f2c5c4cbf4a9c470f2f838f2264a9cc00947549e1b61bbfd7c64b6517ac8546261284",
        "5788561e8835c548495f7b4dd5a3b435ca1798a53efef4058dd38b27a7166b0ca6101adbdeb5e000",
        "b4411f46651f819b870e653af5d0651911bfdbf2419b6b592542abe90dbfba445816bb845894",
    ),
    concat!(
        "0011223344550050bf010c9108004500008800080000fa3293ef121a0418121a0401000000ea0000",
        "01347c69e50660b2341976e3e86dc379d2b7d9687b5087114278e5514548fd22407e5c7e5577c978",
        "78bd3c4730700d1ea35b158f7825c94bc96dd366a1f19cecaac118062027d46bbd847e1989cc2c8c",
        "9884a0d94a455c74ba75f7758505fa958a7208aac611ee550079cf425beb",
    ),
];
/// The far gateway (18.26.4.1), Click with `RandomSeed(11)`: traffic from
/// 18.26.8.2 to 18.26.7.5 in the tunnel, sequence numbers from 300.
const ROUTER2_ESP: &[&str] = &[
    concat!(
        "0050bf010c9100112233445508004500005000000000fa32942f121a0401121a0418000000ea0000",
        "012cef9ea41de515d910536d8f908ba035918fcffaae01dbd26fb804d54f4582400f3d999dcb688e",
        "8e64de09f8c8081cbbf08f633136",
    ),
    concat!(
        "0050bf010c9100112233445508004500005000010000fa32942e121a0401121a0418000000ea0000",
        "012d9db9e909c31b1210f45392074c07de6ba20ccc99268cd621419c7fdd2004d808b93e49280883",
        "17c00b9b4ca56d07d750a1308c7b",
    ),
    concat!(
        "0050bf010c9100112233445508004500005800020000fa329425121a0401121a0418000000ea0000",
        "012e0add1e1899c3fd0ceee4ced1cba70c35bccbcb66d9860acd571a9ced59943b3113b4daaec53b",
        "01465c01a2923e88cebe6c23eb3f677ec74debc7832f",
    ),
    concat!(
        "0050bf010c9100112233445508004500005800030000fa329424121a0401121a0418000000ea0000",
        "012f3ad6590e4692110760da0cb9b29215060e37d0063d67c908479fdb93c5df1145230c642863bb",
        "dd3000ffa8ecf49062625317033a9eb35dd63164a4d1",
    ),
    concat!(
        "0050bf010c9100112233445508004500006000040000fa32941b121a0401121a0418000000ea0000",
        "0130423fa71acc6fee0c02de3f68bc5481302426746408eeee0dbcdcdabbd2fde6976e15c6717670",
        "ace003d3280228f19ccd4d80950ef3048391ab72153736cd8d6adfaf3942",
    ),
    concat!(
        "0050bf010c9100112233445508004500006800050000fa329412121a0401121a0418000000ea0000",
        "01311d5f68028701f10714a44c27c5b40c632ae0b675c78d0928d374505d08b77db1fc24b259e542",
        "28bdcfddbf6d49cf43628baec4167c61c0e7ee10ee29b92eb8d99b09da486042cecf1254e770",
    ),
    concat!(
        "0050bf010c9100112233445508004500007800060000fa329401121a0401121a0418000000ea0000",
        "0132a1f7360cc3c320012413c73f93e95699cc3e47c20eb446a87fd62c8029da023050438cc153d0",
        "ef369dd7e7ddcf0808c94cf6db409911f3b2b3aaa8706b6271b550412f6d7f523321e674dd97dda8",
        "df176aa243cbf63e1fbb0eb93329",
    ),
    concat!(
        "0050bf010c910011223344550800450000b800070000fa3293c0121a0401121a0418000000ea0000",
        "0133dcfacc0bf2ca8910d1245220c8c2ad00d78e24174f464d63d6432ecfba0464afcec10a8ffcd7",
        "95e0914a3b58ca39ff41ede1c4ccbe3d3a1ac89fa7c5a03abfebbe41f8f836b05e3fb970c6c10bd0",
        "213b27886daa79af3f0ddf88e4443660f7c39ebce5df40678eef1a8bed7f00c2e353844d3554ba55",
        "9ec05376b884e4b98dc5827ce344992ff18cd968694fc963128ab51b1bc3e4869c568a2ad50f",
    ),
    concat!(
        "0050bf010c9100112233445508004500008800080000fa3293ef121a0401121a0418000000ea0000",
        "0134ce81a01e0d0d8b0b5f97f2e153b808f09773afc5255a0a7c19d32d1d9c34e1dfaf4129c793d3",
        "ffa6ffad979ae1d318f7e6970a3d00142ac27a2ad87bfd443d7f6cee51687615cd0531f5930ca070",
        "a763687636bd3318c5569b01dd35ec0c1444a9e884283325012cc8d77914",
    ),
];
/// What Click running conf/ipsec-router.click sent on eth1 for
/// [`ROUTER2_ESP`]: an ARP query for 18.26.7.5, then the inner packets, TTL
/// 63.
const CLICK_ETH1_OUT: &[&str] = &[
    concat!(
        "ffffffffffff0050bf010c5d080600010800060400010050bf010c5d121a0701000000000000121a",
        "0705",
    ),
    concat!(
        "0001020304050050bf010c5d08004500001c012c00003f11476b121a0802121a0705000700090008",
        "0000",
    ),
    concat!(
        "0001020304050050bf010c5d08004500001d012d00003f114769121a0802121a0705000700090009",
        "000003",
    ),
    concat!(
        "0001020304050050bf010c5d080045000020012e00003f114765121a0802121a070500070009000c",
        "0000030a1118",
    ),
    concat!(
        "0001020304050050bf010c5d080045000024012f00003f114760121a0802121a0705000700090010",
        "0000030a11181f262d34",
    ),
    concat!(
        "0001020304050050bf010c5d080045000028013000003f11475b121a0802121a0705000700090014",
        "0000030a11181f262d343b424950",
    ),
    concat!(
        "0001020304050050bf010c5d080045000030013100003f114752121a0802121a070500070009001c",
        "0000030a11181f262d343b424950575e656c737a8188",
    ),
    concat!(
        "0001020304050050bf010c5d080045000040013200003f114741121a0802121a070500070009002c",
        "0000030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8",
    ),
    concat!(
        "0001020304050050bf010c5d080045000080013300003f114700121a0802121a070500070009006c",
        "0000030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff06",
        "0d141b222930373e454c535a61686f767d848b9299a0a7aeb5bcc3cad1d8dfe6edf4fb020910171e",
        "252c333a41484f565d646b727980878e959ca3aab1b8",
    ),
    concat!(
        "0001020304050050bf010c5d080045000054019000003f0146df121a0802121a07050800eeb71234",
        "0001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425",
        "262728292a2b2c2d2e2f3031323334353637",
    ),
];
