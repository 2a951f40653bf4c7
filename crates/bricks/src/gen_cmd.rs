//! `bricks gen`: a traffic generator that is a bricks configuration:
//! `WorkloadSource -> GenStamp -> ToDevice`, or a capture replayed through
//! `GenStamp`. The command only writes the configuration and reports.

use crate::runner::{self, si, RunSettings};
use anyhow::Context as _;
use bricks_runtime::RunSummary;
use clap::ValueEnum;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Which device backend serves the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Backend {
    /// AF_XDP where it can be set up, AF_PACKET otherwise.
    Auto,
    /// AF_XDP.
    Xdp,
    /// AF_PACKET.
    Packet,
    /// XDP live frames: an XDP program sends from inside the kernel
    /// (BPF_PROG_RUN, Linux 5.18), two to three times AF_XDP's rate on a
    /// veth. One thread, IPv4 UDP frames of one size, flows in turn; a veth
    /// peer needs NAPI (an XDP program or GRO on).
    Live,
}

impl Backend {
    /// The `, BACKEND x` argument of a device element (none for auto, the
    /// device elements' default).
    pub(crate) fn arg(self) -> &'static str {
        match self {
            Backend::Auto => "",
            Backend::Xdp => ", BACKEND xdp",
            Backend::Packet => ", BACKEND packet",
            Backend::Live => "",
        }
    }
}

/// Frame size: a number of bytes, the IMIX mix or the Abilene-like mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// Every frame this many bytes (without the FCS).
    Bytes(u16),
    /// 64, 594 and 1518 bytes in the ratio 7:4:1.
    Imix,
    /// The Internet-like mix standing for RouteBricks' Abilene trace
    /// (`WorkloadSource`'s ABILENE: 60 to 1514 bytes, mean 428).
    Abilene,
}

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Size, String> {
        if s.eq_ignore_ascii_case("imix") {
            return Ok(Size::Imix);
        }
        if s.eq_ignore_ascii_case("abilene") {
            return Ok(Size::Abilene);
        }
        match s.parse::<u16>() {
            Ok(n) if (60..=2048).contains(&n) => Ok(Size::Bytes(n)),
            _ => Err(format!(
                "`{s}`: expected a frame size from 60 to 2048 bytes, `imix` or `abilene`"
            )),
        }
    }
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    bricks gen veth0 --rate 100000 --duration 10 --dst-mac 02:00:00:00:00:02\n  \
    bricks gen eth1 --count 1000000 --size imix --flows 1000 --routes table.txt\n  \
    bricks gen eth1 --rate 100000 --size 80 --dst 2001:db8:2::/64    # IPv6/UDP\n  \
    bricks gen eth1 --replay trace.pcap\n  \
    bricks gen tx0 --count 1000 -d tx0=pcap:,out.pcap    # offline, into a capture")]
pub(crate) struct GenArgs {
    /// Interface to send on.
    pub iface: String,
    /// Packets per second; without it, as fast as the device takes them.
    #[arg(long, value_name = "PPS", conflicts_with = "replay")]
    pub rate: Option<u64>,
    /// Packets to send, then stop.
    #[arg(long, short = 'n', value_name = "N", conflicts_with = "replay")]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Frame size in bytes without the FCS (60 to 2048), `imix` (64, 594
    /// and 1518 bytes, 7:4:1) or `abilene` (an Internet-like mix of 60 to
    /// 1514 bytes, mean 428, standing for RouteBricks' Abilene trace).
    #[arg(long, default_value = "64", conflicts_with = "replay")]
    pub size: Size,
    /// Distinct flows (5-tuples); each packet belongs to one at random.
    #[arg(long, default_value_t = 16, conflicts_with = "replay")]
    pub flows: usize,
    /// Take the flows in turn rather than at random, so that each flow's
    /// packets are evenly spaced (for measuring how long flows stop).
    #[arg(long, conflicts_with = "replay")]
    pub round_robin: bool,
    /// Source address or prefix the flows' sources are drawn from.
    #[arg(long, value_name = "IP[/LEN]", conflicts_with = "replay")]
    pub src: Option<String>,
    /// Destination address or prefixes (comma-separated) the flows'
    /// destinations are drawn from [default: 198.18.0.0/15].
    #[arg(long, value_name = "IP[/LEN],...", conflicts_with_all = ["replay", "routes"])]
    pub dst: Option<String>,
    /// Draw destinations from the IPv4 prefixes of this route file (text
    /// or MRT, as `bricks routes` reads), or its IPv6 ones with --ipv6.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub routes: Option<PathBuf>,
    /// Send IPv6/UDP (with a UDP checksum, hop limit 64); implied when
    /// --src or --dst is an IPv6 prefix [default destinations:
    /// 2001:2::/48, sources 2001:db8::/64].
    #[arg(long, conflicts_with = "replay")]
    pub ipv6: bool,
    /// Destination MAC [default: ff:ff:ff:ff:ff:ff; with --replay, the
    /// capture's].
    #[arg(long, value_name = "MAC")]
    pub dst_mac: Option<String>,
    /// Source MAC [default: the interface's, or 02:00:00:00:00:01].
    #[arg(long, value_name = "MAC")]
    pub src_mac: Option<String>,
    /// Send the packets of this capture instead (UDP ones get probes).
    #[arg(long, value_name = "PCAP")]
    pub replay: Option<PathBuf>,
    /// With --replay: at the pace they were captured.
    #[arg(long, requires = "replay")]
    pub timing: bool,
    /// Leave payloads alone: no probe header (the sink then measures only
    /// rates).
    #[arg(long)]
    pub no_stamp: bool,
    /// Seed of every random choice (flows, sizes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Device backend.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Backend,
    /// Generate on N pinned workers, each sending its share of the flows,
    /// the rate and the count on a transmit queue of its own (so the
    /// receiver's queues all get traffic).
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Print the configuration and exit without running it.
    #[arg(long)]
    pub print_config: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Back the interface with a capture instead of a live device:
    /// NAME=pcap:IN[,OUT] (what is sent goes to OUT).
    #[arg(short = 'd', long = "device", value_name = "NAME=pcap:IN[,OUT]")]
    pub devices: Vec<String>,
}

/// A string argument as Click quotes it.
pub(crate) fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// `IP` or `IP/LEN` as an IPv4 prefix, checked here so the error names
/// the option rather than a line of generated configuration.
fn prefix(option: &str, text: &str) -> anyhow::Result<String> {
    let v6 = text.contains(':');
    let (addr, len) = text
        .split_once('/')
        .unwrap_or((text, if v6 { "128" } else { "32" }));
    let ok = if v6 {
        addr.parse::<std::net::Ipv6Addr>().is_ok() && len.parse::<u8>().is_ok_and(|l| l <= 128)
    } else {
        addr.parse::<std::net::Ipv4Addr>().is_ok() && len.parse::<u8>().is_ok_and(|l| l <= 32)
    };
    anyhow::ensure!(
        ok,
        "{option} `{text}`: expected an IPv4 or IPv6 address or prefix \
         (10.0.0.1, 10.0.0.0/8, 2001:db8::/64)"
    );
    Ok(format!("{addr}/{len}"))
}

fn mac(option: &str, text: &str) -> anyhow::Result<String> {
    let m = bricks_io::ifinfo::parse_mac(text).with_context(|| {
        format!("{option} `{text}`: expected a MAC address (02:00:00:00:00:01)")
    })?;
    Ok(format_mac(m))
}

fn format_mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The interface's own MAC, or a locally administered stand-in when it has
/// none here (a capture binding, another namespace).
fn default_src_mac(iface: &str) -> String {
    bricks_io::ifinfo::lookup(iface)
        .ok()
        .filter(|i| i.mac != [0; 6])
        .map_or_else(|| "02:00:00:00:00:01".to_string(), |i| format_mac(i.mac))
}

/// The configuration `bricks gen` runs.
pub(crate) fn config(a: &GenArgs) -> anyhow::Result<String> {
    anyhow::ensure!(
        !a.iface.is_empty()
            && !a
                .iface
                .contains(|c: char| c.is_whitespace() || ",;()\"".contains(c)),
        "`{}` is not an interface name",
        a.iface
    );
    let src_mac = match &a.src_mac {
        Some(m) => mac("--src-mac", m)?,
        None => default_src_mac(&a.iface),
    };
    let dst_mac = a
        .dst_mac
        .as_deref()
        .map(|m| mac("--dst-mac", m))
        .transpose()?;
    let mut text = String::new();
    let _ = writeln!(text, "// bricks gen {}", a.iface);
    let mut chain = vec!["src".to_string()];
    anyhow::ensure!(a.threads >= 1, "--threads must be at least 1");
    if let Some(pcap) = &a.replay {
        anyhow::ensure!(
            a.threads == 1,
            "--replay sends one capture in order: use --threads 1"
        );
        let timing = if a.timing { ", TIMING true" } else { "" };
        let _ = writeln!(
            text,
            "src :: FromDump({}, STOP true{timing});",
            quoted(&pcap.display().to_string())
        );
        if let Some(dst) = &dst_mac {
            chain.push(format!("EtherRewrite({src_mac}, {dst})"));
        } else {
            anyhow::ensure!(
                a.src_mac.is_none(),
                "--src-mac with --replay needs --dst-mac too (both addresses are rewritten)"
            );
        }
    } else {
        anyhow::ensure!(
            (1..=1 << 24).contains(&a.flows),
            "--flows {}: expected 1 to 16777216",
            a.flows
        );
        let mut w = match a.size {
            Size::Bytes(n) => format!("SIZE {n}"),
            Size::Imix => "IMIX true".to_string(),
            Size::Abilene => "ABILENE true".to_string(),
        };
        let _ = write!(w, ", FLOWS {}", a.flows);
        if a.round_robin {
            let _ = write!(w, ", ROUND_ROBIN true");
        }
        if let Some(s) = &a.src {
            let _ = write!(w, ", SRC {}", prefix("--src", s)?);
        }
        if let Some(d) = &a.dst {
            let list = d
                .split(',')
                .map(|p| prefix("--dst", p.trim()))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let _ = write!(w, ", DST {}", list.join(" "));
        }
        if let Some(r) = &a.routes {
            let _ = write!(w, ", ROUTES {}", quoted(&r.display().to_string()));
        }
        if a.ipv6 {
            w.push_str(", IPV6 true");
        }
        let dst_mac = dst_mac.unwrap_or_else(|| "ff:ff:ff:ff:ff:ff".into());
        let _ = write!(w, ", ETHSRC {src_mac}, ETHDST {dst_mac}, SEED {}", a.seed);
        if let Some(r) = a.rate.filter(|&r| r > 0) {
            let _ = write!(w, ", RATE {r}");
        }
        if let Some(n) = a.count {
            let _ = write!(w, ", LIMIT {n}");
        }
        // STOP ends the whole run (Click's semantics), so with a source on
        // every worker the first to finish would cut the others short; the
        // run ends anyway once every source is done.
        if a.threads > 1 {
            w.push_str(", ALL_WORKERS true");
        } else if a.count.is_some() {
            w.push_str(", STOP true");
        }
        let _ = writeln!(text, "src :: WorkloadSource({w});");
    }
    if !a.no_stamp {
        chain.push("stamp :: GenStamp".into());
    }
    // FLUSH 0: a generator's batches leave at once, so the send time
    // stamped in each probe is when it really left.
    chain.push(format!(
        "tx :: ToDevice({}, FLUSH 0{})",
        a.iface,
        a.backend.arg()
    ));
    let _ = writeln!(text, "{};", chain.join(" -> "));
    Ok(text)
}

/// What a generator run did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenReport {
    /// Packets the source made.
    pub generated: u64,
    /// Packets the device took.
    pub sent: u64,
    /// Their bytes (without FCS).
    pub bytes: u64,
    /// Packets the device refused (a full ring).
    pub drops: u64,
    /// Packets that got a probe.
    pub stamped: u64,
    /// Flows seen by GenStamp.
    pub flows: u64,
    /// Packets RATE allowed but the generator could not send in time.
    pub rate_shortfall: u64,
    /// Seconds the run took.
    pub elapsed: f64,
}

impl GenReport {
    pub(crate) fn from_summary(s: &RunSummary) -> GenReport {
        let get = |e: &str, c: &str| s.stats(e).and_then(|st| st.get(c)).unwrap_or(0);
        let sent = get("tx", "count");
        let generated = get("src", "count");
        // Live devices count bytes; a capture binding does not, and then
        // every generated packet is what was sent.
        let bytes = match s.stats("tx").and_then(|st| st.get("bytes")) {
            Some(b) => b,
            None if sent == generated => get("src", "byte_count"),
            None => 0,
        };
        GenReport {
            generated,
            sent,
            bytes,
            drops: get("tx", "drops"),
            stamped: get("stamp", "stamped"),
            flows: get("stamp", "flows"),
            rate_shortfall: get("src", "rate_shortfall"),
            elapsed: s.elapsed.as_secs_f64(),
        }
    }

    fn per_sec(&self, v: f64) -> f64 {
        if self.elapsed > 0.0 {
            v / self.elapsed
        } else {
            0.0
        }
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "generated": self.generated,
            "sent": self.sent,
            "bytes": self.bytes,
            "drops": self.drops,
            "stamped": self.stamped,
            "flows": self.flows,
            "rate_shortfall": self.rate_shortfall,
            "elapsed_s": self.elapsed,
            "mpps": self.per_sec(self.sent as f64) / 1e6,
            "gbps": self.per_sec(self.bytes as f64 * 8.0) / 1e9,
        })
    }

    pub(crate) fn text(&self, iface: &str) -> String {
        let mut s = format!(
            "bricks gen {iface}: sent {} packets, {} bytes in {:.3} s: {} pkt/s, {}bit/s\n",
            self.sent,
            self.bytes,
            self.elapsed,
            si(self.per_sec(self.sent as f64)),
            si(self.per_sec(self.bytes as f64 * 8.0)),
        );
        if self.stamped > 0 {
            let _ = writeln!(s, "  probes      {} in {} flows", self.stamped, self.flows);
        }
        if self.drops > 0 {
            let _ = writeln!(
                s,
                "  dropped     {} by the device (transmit ring full); the sink will count them lost",
                self.drops
            );
        }
        if self.rate_shortfall > 0 {
            let _ = writeln!(
                s,
                "  behind      {} packets short of the rate (the generator could not keep up)",
                self.rate_shortfall
            );
        }
        let _ = writeln!(s, "  (compare with `bricks sink --expect {}`)", self.sent);
        s
    }
}

pub(crate) fn bind_devices(specs: &[String]) -> anyhow::Result<()> {
    for spec in specs {
        let (name, b) = bricks_io::binding::Binding::parse(spec).map_err(anyhow::Error::msg)?;
        bricks_io::binding::bind(&name, b);
    }
    Ok(())
}

pub(crate) fn seconds(option: &str, secs: Option<f64>) -> anyhow::Result<Option<Duration>> {
    secs.map(|s| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| anyhow::anyhow!("{option} {s}: expected a number of seconds"))
    })
    .transpose()
}

pub(crate) fn gen(a: &GenArgs) -> anyhow::Result<ExitCode> {
    if a.backend == Backend::Live {
        return live(a);
    }
    let text = config(a)?;
    if a.print_config {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    bind_devices(&a.devices)?;
    let settings = RunSettings {
        threads: a.threads,
        duration: seconds("--duration", a.duration)?,
        quiet: true,
        ..RunSettings::default()
    };
    let summary = runner::run_text(&format!("<bricks gen {}>", a.iface), &text, &settings)?;
    let report = GenReport::from_summary(&summary);
    if a.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text(&a.iface));
    }
    Ok(runner::exit_status(&summary))
}

/// What `--backend live` sends: the frame of the first flow and every
/// flow, as WorkloadSource would make them with the same options.
fn live_gen(a: &GenArgs) -> anyhow::Result<bricks_io::xdp::LiveGen> {
    use bricks_io::xdp::{LiveFlow, LiveGen, MAX_LIVE_FLOWS};
    use bricks_wire::ipv4::Ipv4Cidr;
    let not = |what: &str| anyhow::anyhow!("{what} is not available with --backend live");
    anyhow::ensure!(a.replay.is_none(), not("--replay"));
    anyhow::ensure!(a.routes.is_none(), not("--routes"));
    anyhow::ensure!(a.devices.is_empty(), not("--device"));
    anyhow::ensure!(a.threads == 1, not("--threads"));
    anyhow::ensure!(
        !a.print_config,
        "--backend live runs no configuration to print"
    );
    let size = match a.size {
        Size::Bytes(n) => usize::from(n),
        _ => return Err(not("a size mix")),
    };
    anyhow::ensure!(
        (1..=MAX_LIVE_FLOWS).contains(&a.flows),
        "--flows {}: expected 1 to {MAX_LIVE_FLOWS} with --backend live",
        a.flows
    );
    anyhow::ensure!(!a.ipv6, "--ipv6: --backend live sends IPv4 only");
    let cidr = |option: &str, text: &str| -> anyhow::Result<Ipv4Cidr> {
        let p = prefix(option, text)?;
        anyhow::ensure!(
            !p.contains(':'),
            "{option} `{text}`: --backend live sends IPv4 only"
        );
        let (addr, len) = p.split_once('/').unwrap_or((&p, "32"));
        Ok(Ipv4Cidr::new(addr.parse()?, len.parse()?))
    };
    let src = match &a.src {
        Some(s) => cidr("--src", s)?,
        None => Ipv4Cidr::new(std::net::Ipv4Addr::new(192, 0, 2, 0), 24),
    };
    let dst = match &a.dst {
        Some(d) => d
            .split(',')
            .map(|p| cidr("--dst", p.trim()))
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => vec![Ipv4Cidr::new(std::net::Ipv4Addr::new(198, 18, 0, 0), 15)],
    };
    let parse_mac = |m: &str| bricks_io::ifinfo::parse_mac(m).context("a MAC address");
    let src_mac = parse_mac(&match &a.src_mac {
        Some(m) => mac("--src-mac", m)?,
        None => default_src_mac(&a.iface),
    })?;
    let dst_mac = match &a.dst_mac {
        Some(m) => parse_mac(&mac("--dst-mac", m)?)?,
        None => [0xff; 6],
    };
    let flows: Vec<LiveFlow> =
        bricks_elements::standard::workload::workload_flows(src, &dst, a.flows, a.seed)
            .into_iter()
            .map(|(src, dst, sport, dport)| LiveFlow {
                src,
                dst,
                sport,
                dport,
            })
            .collect();
    // Ethernet, IPv4 (DF, TTL 64, no options), UDP with no checksum: each
    // flow's headers are this with its addresses, ports and checksum.
    let mut frame = vec![0u8; size];
    frame[0..6].copy_from_slice(&dst_mac);
    frame[6..12].copy_from_slice(&src_mac);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (size - 14) as u16;
    frame[14] = 0x45;
    frame[16..18].copy_from_slice(&ip_len.to_be_bytes());
    frame[20] = 0x40;
    frame[22] = 64;
    frame[23] = 17;
    frame[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    Ok(LiveGen {
        ifname: a.iface.clone(),
        frame,
        flows,
        rate: a.rate.filter(|&r| r > 0),
        count: a.count,
        duration: seconds("--duration", a.duration)?,
        stamp: !a.no_stamp,
        id_base: 0,
    })
}

/// `bricks gen --backend live`.
fn live(a: &GenArgs) -> anyhow::Result<ExitCode> {
    let g = live_gen(a)?;
    let r = g.run(&std::sync::atomic::AtomicBool::new(false))?;
    let report = GenReport {
        generated: r.sent,
        sent: r.sent,
        bytes: r.sent * g.frame.len() as u64,
        drops: 0,
        stamped: if g.stamp { r.sent } else { 0 },
        flows: r.sent.min(g.flows.len() as u64),
        rate_shortfall: r.behind,
        elapsed: r.elapsed.as_secs_f64(),
    };
    if a.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text(&a.iface));
        println!(
            "  (live frames are counted as handed to the device: a veth's peer drops them when \
             its ring is full, and all of them without NAPI: an XDP program or `ethtool -K PEER \
             gro on`)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gen: GenArgs,
    }

    fn args(line: &str) -> GenArgs {
        Cli::try_parse_from(std::iter::once("gen").chain(line.split_whitespace()))
            .unwrap()
            .gen
    }

    fn checks(text: &str, iface: &str) {
        bricks_io::binding::bind(
            iface,
            bricks_io::binding::Binding::Pcap {
                input: None,
                output: None,
            },
        );
        if let Err(e) = crate::plan(
            bricks_config::Source {
                name: "<gen>".into(),
                text: text.into(),
            },
            &Default::default(),
        ) {
            panic!("{text}\n{e}");
        }
    }

    #[test]
    fn default_configuration() {
        let text = config(&args("gtest0 --src-mac 02:aa:00:00:00:01")).unwrap();
        assert_eq!(
            text,
            "// bricks gen gtest0\n\
             src :: WorkloadSource(SIZE 64, FLOWS 16, ETHSRC 02:aa:00:00:00:01, \
             ETHDST ff:ff:ff:ff:ff:ff, SEED 1);\n\
             src -> stamp :: GenStamp -> tx :: ToDevice(gtest0, FLUSH 0);\n"
        );
        checks(&text, "gtest0");
    }

    #[test]
    fn every_option_lands_in_the_configuration() {
        let a = args(
            "gtest1 --rate 5000 --count 100 --size imix --flows 3 --src 10.0.0.1 \
             --dst 10.1.0.0/16,10.2.0.0/16 --dst-mac 02:00:00:00:00:09 --seed 4 --backend packet",
        );
        let text = config(&a).unwrap();
        for part in [
            "IMIX true",
            "FLOWS 3",
            "SRC 10.0.0.1/32",
            "DST 10.1.0.0/16 10.2.0.0/16",
            "ETHDST 02:00:00:00:00:09",
            "SEED 4",
            "RATE 5000",
            "LIMIT 100, STOP true",
            "ToDevice(gtest1, FLUSH 0, BACKEND packet)",
        ] {
            assert!(text.contains(part), "{part} missing from\n{text}");
        }
    }

    #[test]
    fn the_abilene_mix_is_a_size() {
        let text = config(&args("gtest3 --size abilene --src-mac 02:aa:00:00:00:01")).unwrap();
        assert!(
            text.contains("WorkloadSource(ABILENE true, FLOWS 16"),
            "{text}"
        );
        checks(&text, "gtest3");
        assert!("Abilene".parse::<Size>() == Ok(Size::Abilene));
        assert!("trace".parse::<Size>().unwrap_err().contains("`abilene`"));
    }

    #[test]
    fn replay_configuration() {
        let a = args("gtest2 --replay tests/golden/ip-router/eth0-in.pcap --dst-mac 2:0:0:0:0:7 --src-mac 02:00:00:00:00:01");
        let text = config(&a).unwrap();
        assert!(
            text.contains(
                "src :: FromDump(\"tests/golden/ip-router/eth0-in.pcap\", STOP true);\n\
                 src -> EtherRewrite(02:00:00:00:00:01, 02:00:00:00:00:07) -> stamp :: GenStamp"
            ),
            "{text}"
        );
        let a = args("gtest2 --replay x.pcap --no-stamp");
        assert!(config(&a)
            .unwrap()
            .contains("src -> tx :: ToDevice(gtest2, FLUSH 0);"));
        let a = args("gtest2 --replay x.pcap --src-mac 02:00:00:00:00:01");
        assert!(config(&a).unwrap_err().to_string().contains("--dst-mac"));
    }

    #[test]
    fn ipv6_workloads() {
        let text = config(&args(
            "gtest5 --dst 2001:db8:1::/48,2001:db8:2::/64 --src 2001:db8:9::1 \
             --src-mac 02:aa:00:00:00:01 --count 10",
        ))
        .unwrap();
        for part in [
            "DST 2001:db8:1::/48 2001:db8:2::/64",
            "SRC 2001:db8:9::1/128",
        ] {
            assert!(text.contains(part), "{part} missing from\n{text}");
        }
        checks(&text, "gtest5");
        let text = config(&args("gtest5 --ipv6 --src-mac 02:aa:00:00:00:01")).unwrap();
        assert!(text.contains("IPV6 true"), "{text}");
        checks(&text, "gtest5");
        // One family: the source refuses a mix when the router is planned.
        let mixed = config(&args(
            "gtest5 --dst 10.0.0.0/8 --src 2001:db8::1 --src-mac 02:aa:00:00:00:01",
        ))
        .unwrap();
        bricks_io::binding::bind(
            "gtest5",
            bricks_io::binding::Binding::Pcap {
                input: None,
                output: None,
            },
        );
        let e = crate::plan(
            bricks_config::Source {
                name: "<gen>".into(),
                text: mixed,
            },
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must all be IPv4"), "{e}");
        let e = |line: &str| config(&args(line)).unwrap_err().to_string();
        assert!(e("g --dst 2001:db8::/129").contains("--dst"));
        assert!(e("g --src 2001:db8::zz").contains("--src"));
        let live = |line: &str| live_gen(&args(line)).err().unwrap().to_string();
        assert!(live("g --backend live --dst 2001:db8::/64").contains("IPv4 only"));
        assert!(live("g --backend live --ipv6").contains("IPv4 only"));
    }

    #[test]
    fn bad_options_name_themselves() {
        let e = |line: &str| config(&args(line)).unwrap_err().to_string();
        assert!(e("g --src 10.0.0.300 --src-mac 02:00:00:00:00:01").contains("--src"));
        assert!(e("g --dst 10.0.0.0/40").contains("--dst"));
        assert!(e("g --dst-mac zz").contains("--dst-mac"));
        assert!(e("g --flows 0").contains("--flows"));
        assert!(Cli::try_parse_from(["gen", "g", "--size", "59"]).is_err());
        assert!(Cli::try_parse_from(["gen", "g", "--replay", "x", "--rate", "5"]).is_err());
        assert!(Cli::try_parse_from(["gen", "g", "--dst", "1.1.1.1", "--routes", "x"]).is_err());
    }

    #[test]
    fn live_frames_are_the_workload_sources() {
        let g = live_gen(&args(
            "gtest4 --backend live --size 64 --flows 5 --src 10.0.0.0/24 --dst 10.1.0.0/16 \
             --src-mac 02:00:00:00:00:01 --dst-mac 02:00:00:00:00:09 --rate 1000 --count 7",
        ))
        .unwrap();
        let f = &g.frame;
        assert_eq!(f.len(), 64);
        assert_eq!(f[0..6], [2, 0, 0, 0, 0, 9]);
        assert_eq!(f[6..12], [2, 0, 0, 0, 0, 1]);
        assert_eq!(f[12..16], [0x08, 0x00, 0x45, 0x00]);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 50);
        assert_eq!((f[22], f[23]), (64, 17));
        assert_eq!(u16::from_be_bytes([f[38], f[39]]), 30);
        assert_eq!(g.flows.len(), 5);
        for fl in &g.flows {
            assert_eq!(fl.src.octets()[..3], [10, 0, 0]);
            assert_eq!(fl.dst.octets()[..2], [10, 1]);
            assert!(fl.sport >= 1024 && fl.dport >= 1024);
        }
        assert_eq!((g.rate, g.count, g.stamp), (Some(1000), Some(7), true));
    }

    #[test]
    fn live_refuses_what_it_cannot_send() {
        let e = |line: &str| live_gen(&args(line)).unwrap_err().to_string();
        assert!(e("g --backend live --size imix").contains("size mix"));
        assert!(e("g --backend live --threads 2").contains("--threads"));
        assert!(e("g --backend live --routes r.txt").contains("--routes"));
        assert!(e("g --backend live --replay x.pcap").contains("--replay"));
        assert!(e("g --backend live --flows 70000").contains("--flows"));
        assert!(e("g --backend live --print-config").contains("no configuration"));
    }

    #[test]
    fn quoting() {
        assert_eq!(quoted(r#"a "b"\c"#), r#""a \"b\"\\c""#);
    }
}
