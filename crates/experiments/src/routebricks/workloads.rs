//! RouteBricks' three applications (§5.1) as Click text, one worker in
//! memory: minimal forwarding, IP routing with a 256K-prefix table and
//! random destinations, and IPsec encryption.
//!
//! Every workload starts with the same source, a `WorkloadSource` whose
//! 65,536 flows have destinations drawn from the routing table's own
//! prefixes (a random prefix, then a random address inside it) and whose
//! packets pick a flow at random: the paper's "packets with random
//! destination addresses so as to stress cache locality for IP lookup
//! operations", with every lookup hitting a route. The source builds each
//! frame's headers on the fly (valid IPv4 checksum), so it stands where
//! the paper's receive path stood, and it is the same in all three
//! applications: differences between them are the applications' own.

use crate::frames::mac_text;
use crate::measure::Workload;
use std::path::PathBuf;

/// The paper's routing table: "a routing-table size of 256K entries".
pub const ROUTES: usize = 256 * 1024;
/// Flows, each with its own random destination.
pub const FLOWS: usize = 65_536;
/// The frames' source addresses; the IPsec policy protects them.
pub const SRC_NET: &str = "192.0.2.0/24";
/// Ethernet addresses: the neighbour's (where frames come from and go
/// to) and ours.
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// What a workload does to each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum App {
    /// Receive -> Queue -> transmit, no header processing.
    Minimal,
    /// Checks, a DIR-24-8 lookup (Click's DirectIPLookup, the paper's
    /// D-lookup) in the 256K-prefix table, TTL decrement with the
    /// checksum updated, a new Ethernet header.
    Routing,
    /// ESP tunnel mode, AES-128-CBC with HMAC-SHA1-96: what Click's
    /// IPsec elements did (IPsecAES, IPsecAuthHMACSHA1).
    Ipsec,
    /// ESP tunnel mode, AES-128-GCM: what a VPN uses today.
    IpsecGcm,
}

impl App {
    /// Every application.
    pub const ALL: [App; 4] = [App::Minimal, App::Routing, App::Ipsec, App::IpsecGcm];

    /// The name workloads are called by: `routing-64`.
    pub fn name(self) -> &'static str {
        match self {
            App::Minimal => "minimal",
            App::Routing => "routing",
            App::Ipsec => "ipsec",
            App::IpsecGcm => "ipsecgcm",
        }
    }

    /// As tables show it.
    pub fn label(self) -> &'static str {
        match self {
            App::Minimal => "minimal forwarding",
            App::Routing => "IP routing",
            App::Ipsec => "IPsec (AES-128-CBC+HMAC-SHA1)",
            App::IpsecGcm => "IPsec (AES-128-GCM)",
        }
    }
}

/// Frame sizes: fixed, WorkloadSource's simple IMIX or its Abilene-like
/// mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Every frame this many bytes (without the FCS).
    Bytes(usize),
    /// 64, 594 and 1,518 bytes in the ratio 7:4:1: a stand-in for the
    /// paper's Abilene trace, whose mix of small and large packets it
    /// shares (it is not the trace).
    Imix,
    /// WorkloadSource's ABILENE: an Internet-like mix of 60 to 1,514
    /// bytes (mean 428) fitted to published packet-length statistics of
    /// the Abilene trace's era, standing for the trace of §5.1
    /// (`bricks_elements::standard::workload::ABILENE` says where it
    /// comes from).
    Abilene,
}

impl Size {
    /// In workload names: `64`, `imix`.
    pub fn name(self) -> String {
        match self {
            Size::Bytes(n) => n.to_string(),
            Size::Imix => "imix".into(),
            Size::Abilene => "abilene".into(),
        }
    }

    /// The mean frame size in bytes.
    pub fn mean_bytes(self) -> f64 {
        match self {
            Size::Bytes(n) => n as f64,
            Size::Imix => (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0,
            Size::Abilene => bricks_elements::standard::workload::abilene_mean(),
        }
    }

    fn parse(s: &str) -> Option<Size> {
        if s == "imix" {
            return Some(Size::Imix);
        }
        if s == "abilene" {
            return Some(Size::Abilene);
        }
        s.parse()
            .ok()
            .filter(|n| (60..=1518).contains(n))
            .map(Size::Bytes)
    }

    fn source_arg(self) -> String {
        match self {
            Size::Bytes(n) => format!("SIZE {n}"),
            Size::Imix => "IMIX true".into(),
            Size::Abilene => "ABILENE true".into(),
        }
    }
}

/// A file in the temporary directory written once with `contents()`
/// (which is deterministic): renamed into place, so that concurrent
/// writers (tests, a callgrind child) never see half of it.
fn cached_file(name: &str, contents: impl FnOnce() -> String) -> std::io::Result<PathBuf> {
    let file = std::env::temp_dir().join(name);
    if !file.exists() {
        let tmp = file.with_extension(format!(
            "{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&tmp, contents())?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok(file)
}

/// The 256K-prefix table, generated Internet-like by `bricks_lpm::gen`
/// (seeded: the same table every time), as a route file; and the highest
/// output port its routes may use (the generator's next hops are spread
/// over fewer than `HOPS` ports). The table is generated only when the
/// file is missing: a callgrind re-run should not pay for it.
pub fn route_file() -> std::io::Result<(PathBuf, u32)> {
    let file = cached_file(&format!("bricks-routebricks-{ROUTES}-v4.routes"), || {
        let table = bricks_lpm::gen::generate(ROUTES, 0, 1);
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = bricks_lpm::source::text::write_text(&table, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    })?;
    Ok((file, bricks_lpm::gen::HOPS as u32 - 1))
}

/// The SA and policy file of an IPsec application: bench ipsec's
/// gateway state (the same published keys), its policy widened to every
/// destination so that the routing workloads' traffic is what is
/// encrypted.
pub fn sa_file(app: App) -> std::io::Result<PathBuf> {
    let suite = match app {
        App::IpsecGcm => crate::ipsec::Suite::Aes128Gcm,
        _ => crate::ipsec::Suite::Aes128CbcSha1,
    };
    let name = suite.name();
    cached_file(&format!("bricks-routebricks-{name}.sa"), || {
        format!(
            "ip xfrm {}\n\
             ip xfrm policy add src {SRC_NET} dst 0.0.0.0/0 dir out \
             tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel\n",
            suite.state(0x1001, 1)
        )
    })
}

/// The source every workload starts with: `packets` frames of `size`
/// with random destinations from the table in `routes`, at `rate`
/// packets per second (as fast as the worker goes when `None`).
fn source(size: Size, packets: u64, routes: &std::path::Path, rate: Option<u64>) -> String {
    format!(
        "src :: WorkloadSource({}, FLOWS {FLOWS}, SRC {SRC_NET}, ROUTES {}, \
         ETHSRC {}, ETHDST {}, LIMIT {packets}, RATE {}, STOP true)",
        size.source_arg(),
        routes.display(),
        mac_text(PEER_MAC),
        mac_text(OUR_MAC),
        rate.unwrap_or(0),
    )
}

/// Application `app` on `packets` frames of `size`; what reaches `sink`
/// is what was forwarded.
pub fn workload(app: App, size: Size, packets: u64) -> std::io::Result<Workload> {
    workload_at(app, size, packets, None)
}

/// [`workload`] with its packets offered at `rate` per second (RouteBricks
/// Fig. 9's input rate); `None`: as fast as the worker takes them.
pub fn workload_at(
    app: App,
    size: Size,
    packets: u64,
    rate: Option<u64>,
) -> std::io::Result<Workload> {
    let (routes, max_out) = route_file()?;
    let src = source(size, packets, &routes, rate);
    let encap = format!(
        "EtherEncap(0x0800, {}, {})",
        mac_text(OUR_MAC),
        mac_text(PEER_MAC)
    );
    let tail = "q :: Queue(1024) -> sink :: Discard;";
    let text = match app {
        App::Minimal => format!("{src} -> {tail}\n"),
        App::Routing => {
            let outs: String = (0..=max_out).map(|o| format!("rt[{o}] -> dt;\n")).collect();
            format!(
                "{src} -> Strip(14) -> ck :: CheckIPHeader \
                 -> rt :: DirectIPLookup(ROUTES {});\n{outs}\
                 dt :: DecIPTTL -> {encap} -> {tail}\ndt[1] -> expired :: Discard;\n",
                routes.display()
            )
        }
        App::Ipsec | App::IpsecGcm => format!(
            "{src} -> Strip(14) -> enc :: IPsecESPEncap(FILE {}) -> {encap} -> {tail}\n",
            sa_file(app)?.display()
        ),
    };
    Ok(Workload::new(
        format!("{}-{}", app.name(), size.name()),
        text,
        &["sink"],
    ))
}

/// The workload called `name` (`minimal-64`, `routing-1024`,
/// `ipsec-64`, `ipsecgcm-64`, `minimal-imix`), for callgrind's re-runs.
pub fn by_name(name: &str, packets: u64) -> Option<Workload> {
    let (kind, size) = name.split_once('-')?;
    let app = App::ALL.into_iter().find(|a| a.name() == kind)?;
    workload(app, Size::parse(size)?, packets).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_application_delivers_every_packet() {
        for app in App::ALL {
            for size in [
                Size::Bytes(64),
                Size::Bytes(1024),
                Size::Imix,
                Size::Abilene,
            ] {
                let w = workload(app, size, 3_000).unwrap();
                let r = w.run().unwrap();
                assert_eq!(r.delivered, 3_000, "{}", w.name);
                assert_eq!(r.counter("q", "drops"), 0, "{}", w.name);
                match app {
                    App::Routing => {
                        assert_eq!(r.counter("rt", "no_route"), 0);
                        assert_eq!(r.counter("expired", "count"), 0);
                    }
                    App::Ipsec | App::IpsecGcm => {
                        assert_eq!(r.counter("enc", "protected"), 3_000, "{}", w.name);
                    }
                    App::Minimal => {}
                }
            }
        }
    }

    /// The random destinations: valid IPv4 headers (CheckIPHeader drops
    /// none), all inside a route of the table (no lookup misses), spread
    /// over the table (most of its next hops are used).
    #[test]
    fn random_destinations_are_valid_and_all_routed() {
        let (routes, max_out) = route_file().unwrap();
        let outs: String = (0..=max_out)
            .map(|o| format!("rt[{o}] -> c{o} :: Counter -> sink;\n"))
            .collect();
        let text = format!(
            "{} -> Strip(14) -> ck :: CheckIPHeader -> rt :: DirectIPLookup(ROUTES {});\n\
             {outs}sink :: Discard;\n",
            source(Size::Bytes(64), 20_000, &routes, None),
            routes.display()
        );
        let r = Workload::new("check", text, &["sink"]).run().unwrap();
        assert_eq!(r.delivered, 20_000);
        assert_eq!(r.counter("ck", "drops"), 0);
        assert_eq!(r.counter("rt", "no_route"), 0);
        let used = (0..=max_out)
            .filter(|o| r.counter(&format!("c{o}"), "count") > 0)
            .count();
        assert!(used >= 4, "{used} of {} outputs used", max_out + 1);
        assert!(r.counter("rt", "routes") >= ROUTES as u64 * 9 / 10);
    }

    #[test]
    fn names_round_trip() {
        for app in App::ALL {
            let w = by_name(&format!("{}-128", app.name()), 10).unwrap();
            assert_eq!(w.name, format!("{}-128", app.name()));
        }
        assert!(by_name("minimal-imix", 10).is_some());
        assert!(by_name("ipsec-abilene", 10).is_some());
        assert!(by_name("minimal-20", 10).is_none());
        assert!(by_name("other-64", 10).is_none());
        assert!(by_name("minimal", 10).is_none());
    }
}
