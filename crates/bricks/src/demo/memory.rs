//! The demo without root: the same router configuration, its interfaces
//! bound to capture files of frames made here, run on the capture clock.
//!
//! The hosts' side is scripted: h1 asks for the router's MAC and sends
//! UDP to h2, then a ping with TTL 1; each host answers the router's ARP
//! query a millisecond after the router sends it; h2 then sends UDP back.
//! Everything the router sends is real output of the configuration.

use super::topology::PORTS;
use anyhow::Context as _;
use bricks_io::binding::{self, Binding};
use bricks_io::pcap::{LinkType, PcapReader, PcapWriter, Record};
use bricks_packet::Timestamp;
use bricks_wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr,
    IpProtocol, Ipv4Addr, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// MACs of the router's interfaces (the configuration's defaults) and of
/// the hosts.
const ROUTER_MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 2, 1]];
const HOST_MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 1, 2], [2, 0, 0, 0, 2, 2]];

/// UDP packets each host sends.
const UDP_EACH: usize = 8;

/// Runs the configuration at `config` on the scripted frames and prints
/// what came out.
pub(crate) fn run(config: &Path) -> anyhow::Result<ExitCode> {
    let dir = tempfile::tempdir().context("making a scratch directory")?;
    let (h1, h2) = script();
    let mut bound = Vec::new();
    for (i, (port, frames)) in PORTS.iter().zip([h1, h2]).enumerate() {
        let input = dir.path().join(format!("{}-in.pcap", port.dev));
        let output = dir.path().join(format!("{}-out.pcap", port.dev));
        write_pcap(&input, &frames)?;
        binding::bind(
            port.dev,
            Binding::Pcap {
                input: Some(input),
                output: Some(output.clone()),
            },
        );
        bound.push((i, port, frames.len(), output));
    }
    let text =
        std::fs::read_to_string(config).with_context(|| format!("reading {}", config.display()))?;
    let plan = crate::plan(
        bricks_config::Source {
            name: config.display().to_string(),
            text,
        },
        &Default::default(),
    )
    .map_err(anyhow::Error::msg)?;
    let settings = crate::runner::RunSettings {
        threads: 1,
        trace_clock: true,
        quiet: true,
        ..Default::default()
    };
    let summary = crate::runner::run_plan(plan, &settings)?;

    println!("In memory: {} on scripted frames\n", config.display());
    for (i, port, sent, output) in &bound {
        let out = read_pcap(output)?;
        println!(
            "  {}  {} frames in from {} ({}), {} frames out:",
            port.dev,
            sent,
            port.host,
            port.host_ip,
            out.len()
        );
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for f in &out {
            *kinds.entry(describe(f, &ROUTER_MAC[*i])).or_default() += 1;
        }
        for (kind, n) in kinds {
            println!("        {n:>3} x {kind}");
        }
    }
    println!("\n  Counters:");
    for line in summary.render().lines() {
        println!("    {line}");
    }
    for e in &summary.errors {
        eprintln!("error: {e}");
    }
    Ok(if summary.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Frames one host sends, each with its time in microseconds.
type Frames = Vec<(u64, Vec<u8>)>;

/// The frames each host sends: (h1's, h2's).
fn script() -> (Frames, Frames) {
    let ip = |i: usize| PORTS[i].host_ip;
    let gw = |i: usize| PORTS[i].router_ip;
    let mut h1 = vec![(0, arp(ArpOperation::Request, 0, None, gw(0)))];
    for n in 0..UDP_EACH {
        h1.push((1_000 + n as u64 * 100, udp(0, ip(0), ip(1), 64, n as u16)));
    }
    // TTL 1: the router owes h1 an ICMP time exceeded.
    h1.push((3_000, udp(0, ip(0), ip(1), 1, 99)));
    // The router asks for h1 (to send it that error); h1 answers.
    h1.push((
        5_000,
        arp(ArpOperation::Reply, 0, Some(ROUTER_MAC[0]), gw(0)),
    ));
    // The router asks for h2 when the first UDP packet arrives.
    let mut h2 = vec![(
        2_000,
        arp(ArpOperation::Reply, 1, Some(ROUTER_MAC[1]), gw(1)),
    )];
    for n in 0..UDP_EACH {
        h2.push((6_000 + n as u64 * 100, udp(1, ip(1), ip(0), 64, n as u16)));
    }
    (h1, h2)
}

/// An ARP packet from host `h`: a broadcast request for `target`, or a
/// reply to `to` (the router) for its query.
fn arp(op: ArpOperation, h: usize, to: Option<[u8; 6]>, target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    EthernetRepr {
        src_addr: EthernetAddress(HOST_MAC[h]),
        dst_addr: EthernetAddress(to.unwrap_or([0xff; 6])),
        ethertype: EtherType::ARP,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    ArpRepr::EthernetIpv4 {
        operation: op,
        source_hardware_addr: EthernetAddress(HOST_MAC[h]),
        source_protocol_addr: PORTS[h].host_ip,
        target_hardware_addr: EthernetAddress(to.unwrap_or([0; 6])),
        target_protocol_addr: target,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut f[14..]));
    f
}

/// A UDP packet from host `h` to the router's MAC.
fn udp(h: usize, src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, seq: u16) -> Vec<u8> {
    let payload = b"bricks demo, in memory";
    let udp_len = 8 + payload.len();
    let mut f = vec![0u8; 14 + 20 + udp_len];
    EthernetRepr {
        src_addr: EthernetAddress(HOST_MAC[h]),
        dst_addr: EthernetAddress(ROUTER_MAC[h]),
        ethertype: EtherType::IPV4,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::UDP,
        payload_len: udp_len,
        hop_limit: ttl,
        dscp_ecn: 0,
        ident: seq,
        dont_frag: true,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
    let mut u = UdpPacket::new_unchecked(&mut f[34..]);
    UdpRepr {
        src_port: 40_000 + h as u16,
        dst_port: 9,
        payload_len: payload.len(),
    }
    .emit(&mut u);
    u.payload_mut()[..payload.len()].copy_from_slice(payload);
    u.fill_checksum_v4(src, dst);
    f
}

/// One line about a frame the router sent from its interface `mac`.
fn describe(f: &[u8], mac: &[u8; 6]) -> String {
    let Ok(eth) = EthernetFrame::new_checked(f) else {
        return "runt frame".into();
    };
    let from_us = eth.src_addr().0 == *mac;
    let who = if from_us { "" } else { " (not from our MAC!)" };
    if eth.ethertype() == EtherType::ARP {
        let Ok(ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_protocol_addr,
            ..
        }) = ArpPacket::new_checked(eth.payload()).and_then(|p| ArpRepr::parse(&p))
        else {
            return format!("ARP, malformed{who}");
        };
        return match operation {
            ArpOperation::Request => format!("ARP who-has {target_protocol_addr}{who}"),
            ArpOperation::Reply => {
                format!("ARP reply {source_protocol_addr} is-at {source_hardware_addr}{who}")
            }
            _ => format!("ARP {operation:?}{who}"),
        };
    }
    let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
        return format!("{}{who}", eth.ethertype());
    };
    let what = match ip.next_header() {
        IpProtocol::UDP => "UDP".to_string(),
        IpProtocol::ICMP => match ip.payload().first() {
            Some(11) => "ICMP time exceeded".to_string(),
            Some(3) => "ICMP unreachable".to_string(),
            t => format!("ICMP type {t:?}"),
        },
        p => format!("{p}"),
    };
    format!(
        "IPv4 {} > {} {what}, TTL {}{}{who}",
        ip.src_addr(),
        ip.dst_addr(),
        ip.hop_limit(),
        if ip.verify_checksum() {
            ""
        } else {
            ", bad checksum"
        }
    )
}

fn write_pcap(path: &Path, frames: &Frames) -> anyhow::Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = PcapWriter::new(std::io::BufWriter::new(f), LinkType::Ethernet, false, 0)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (us, data) in frames {
        let ts = Timestamp::from_parts(us / 1_000_000, (us % 1_000_000) as u32 * 1000);
        w.write(ts, data).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    w.flush().map_err(|e| anyhow::anyhow!("{e}"))
}

fn read_pcap(path: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut r = PcapReader::new(std::io::BufReader::new(f)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().map_err(|e| anyhow::anyhow!("{e}"))? {
        if let Record::Packet(p) = rec {
            v.push(p.data().to_vec());
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_frames_are_well_formed() {
        let (h1, h2) = script();
        assert!(h1.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(h2.windows(2).all(|w| w[0].0 < w[1].0));
        let req = &h1[0].1;
        assert_eq!(
            describe(req, &HOST_MAC[0]),
            format!("ARP who-has {}", PORTS[0].router_ip)
        );
        let u = &h1[1].1;
        let ip = Ipv4Packet::new_checked(&u[14..]).unwrap();
        assert!(ip.verify_checksum());
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum_v4(ip.src_addr(), ip.dst_addr()));
        assert_eq!(
            describe(u, &HOST_MAC[0]),
            "IPv4 10.1.0.2 > 10.2.0.2 UDP, TTL 64"
        );
    }
}
