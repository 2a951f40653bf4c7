//! Sizing a cluster router: RouteBricks §3.3 and its Fig. 3.
//!
//! The paper's method: give each server as many external ports as it can
//! process (s, so it runs at 2sR to 3sR under Direct VLB, §3.2); that
//! makes M = ceil(N/s) I/O servers. If the per-server fanout K allows a
//! full mesh (M - 1 <= K), the I/O servers are the whole cluster and each
//! internal link carries 2sR/M. Otherwise they are joined by a K-ary
//! n-fly with n = ceil(log_K M), adding its n stages of K^(n-1) servers.
//!
//! [`figure3`] applies it to the paper's three server configurations with
//! a stated model of NICs (below), and [`figure3_table`] and
//! [`figure3_svg`] print and draw the result.

use crate::file::topology_text;
use crate::model::Topology;
use crate::units::format_rate;
use std::fmt::Write as _;
use std::path::Path;

/// How many servers a router needs, and how fast they and their links
/// run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Servers with external ports: M = ceil(N/s).
    pub io_servers: u64,
    /// Intermediate-only servers (a k-ary n-fly's stages; 0 in a mesh).
    pub intermediate_servers: u64,
    /// Full mesh or k-ary n-fly.
    pub topology: Topology,
    /// Rate each internal link must carry: 2sR/M in a full mesh (§3.3),
    /// sR in a k-ary n-fly (an I/O server's link into the first stage may
    /// carry its whole input), 0 for a single server.
    pub internal_link_bps: u64,
    /// 2sR: what each server processes when traffic is uniform (Direct VLB
    /// sends it all directly).
    pub per_server_bps_min: u64,
    /// 3sR: what each server processes in the worst case (VLB's extra
    /// phase).
    pub per_server_bps_max: u64,
}

impl Plan {
    /// All servers.
    pub fn servers(&self) -> u64 {
        self.io_servers + self.intermediate_servers
    }
}

/// Sizes a router of `ports` external ports of `rate_bps` each, from
/// servers that can have `fanout` internal links and process
/// `ports_per_server` ports (RouteBricks §3.3).
///
/// A full mesh when M - 1 <= K; else a K-ary n-fly whose K^n terminals are
/// the M I/O servers, n = ceil(log_K M), with n stages of K^(n-1)
/// intermediate servers: n * K^(n-1), the standard count of a k-ary n-fly's
/// switches (Dally and Towles, ch. 4.1). The s in 2sR and 3sR is the most
/// ports one server gets, ceil(N/M), which is `ports_per_server` unless
/// the router has fewer ports.
pub fn plan(ports: u64, rate_bps: u64, fanout: u64, ports_per_server: u64) -> Result<Plan, String> {
    if ports == 0 {
        return Err("a router needs at least one external port".into());
    }
    if rate_bps == 0 {
        return Err("the port rate must be above 0".into());
    }
    if ports_per_server == 0 {
        return Err("each server must take at least one external port".into());
    }
    let m = ports.div_ceil(ports_per_server);
    let s = ports.div_ceil(m);
    let too_large = || {
        format!(
            "{ports} ports of {}: the numbers overflow",
            format_rate(rate_bps)
        )
    };
    let r = u128::from(rate_bps);
    let sr = u128::from(s) * r;
    let per_server_bps_min = u64::try_from(2 * sr).map_err(|_| too_large())?;
    let per_server_bps_max = u64::try_from(3 * sr).map_err(|_| too_large())?;
    if m - 1 <= fanout {
        let internal_link_bps = if m == 1 {
            0
        } else {
            u64::try_from((2 * sr).div_ceil(u128::from(m))).map_err(|_| too_large())?
        };
        return Ok(Plan {
            io_servers: m,
            intermediate_servers: 0,
            topology: Topology::FullMesh,
            internal_link_bps,
            per_server_bps_min,
            per_server_bps_max,
        });
    }
    if fanout < 2 {
        return Err(format!(
            "a fanout of {fanout} cannot join {m} servers: a full mesh needs {} links per \
             server and a k-ary n-fly needs k >= 2",
            m - 1
        ));
    }
    let k = u32::try_from(fanout).map_err(|_| too_large())?;
    // Smallest n with K^n >= M.
    let mut n: u32 = 1;
    let mut reach = u128::from(fanout);
    while reach < u128::from(m) {
        reach *= u128::from(fanout);
        n += 1;
    }
    let per_stage = u128::from(fanout).pow(n - 1);
    let intermediate_servers = u64::try_from(u128::from(n) * per_stage).map_err(|_| too_large())?;
    Ok(Plan {
        io_servers: m,
        intermediate_servers,
        topology: Topology::Fly { k, n },
        internal_link_bps: u64::try_from(sr).map_err(|_| too_large())?,
        per_server_bps_min,
        per_server_bps_max,
    })
}

/// One of Fig. 3's server configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// The paper's name for it.
    pub name: &'static str,
    /// External ports one server processes (s).
    pub ports_per_server: u64,
    /// NIC slots.
    pub nics: u64,
}

/// Fig. 3's three configurations (RouteBricks §3.3).
pub const FIGURE3_CONFIGS: [ServerConfig; 3] = [
    ServerConfig {
        name: "current servers",
        ports_per_server: 1,
        nics: 5,
    },
    ServerConfig {
        name: "more NICs",
        ports_per_server: 1,
        nics: 20,
    },
    ServerConfig {
        name: "faster servers",
        ports_per_server: 2,
        nics: 20,
    },
];

/// Fig. 3's port rate, R = 10 Gbps.
pub const FIGURE3_RATE_BPS: u64 = 10_000_000_000;

/// One point of a curve of Fig. 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// External ports, N.
    pub ports: u64,
    /// The fanout the plan used (internal links per server).
    pub fanout: u64,
    pub plan: Plan,
}

/// One curve of Fig. 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub config: ServerConfig,
    pub points: Vec<Point>,
}

impl Series {
    /// The largest N of the curve still built as a full mesh.
    pub fn full_mesh_limit(&self) -> Option<u64> {
        self.points
            .iter()
            .filter(|p| p.plan.topology == Topology::FullMesh)
            .map(|p| p.ports)
            .max()
    }
}

/// 10G ports on a NIC.
const NIC_10G_PORTS: u64 = 2;
/// 1G ports on a NIC.
const NIC_1G_PORTS: u64 = 8;
const GBPS: u64 = 1_000_000_000;

/// Internal links a server of `config` can have when each carries
/// `link_bps`: the NIC model of [`figure3`].
pub fn figure3_fanout(config: &ServerConfig, link_bps: u64) -> u64 {
    let external_nics = config.ports_per_server.div_ceil(NIC_10G_PORTS);
    let free = config.nics.saturating_sub(external_nics);
    if link_bps <= GBPS {
        free * NIC_1G_PORTS
    } else {
        // Links faster than a 10G port take several (a 2-server mesh of
        // s = 2 carries 2sR/2 = 20 Gbps per link).
        free * NIC_10G_PORTS / link_bps.div_ceil(10 * GBPS)
    }
}

/// Fig. 3 again: for each configuration, the servers an N-port R = 10 Gbps
/// router needs, N = 4, 8, .., 2048.
///
/// The NIC model, from §3.3 ("each NIC accommodates 2 10Gbps or 8 1Gbps
/// ports"): a server's s external 10G ports take ceil(s/2) of its NICs;
/// every other NIC carries internal links, with 8 1G ports if the links
/// need no more than 1 Gbps, else 2 10G ports. A full mesh of M =
/// ceil(N/s) servers carries 2sR/M per link, so its fanout is counted at
/// that rate; if M - 1 links do not fit, the servers form a k-ary n-fly
/// whose links carry R or more (an I/O server has one link into the first
/// stage), so its k is counted in 10G ports, as the paper does when it
/// takes k to be the fanout.
///
/// What it gives, against the paper's text:
///
/// * current servers (1 port, 5 NICs): a full mesh up to N = 32 (the
///   paper's 32: 4 NICs of 8 1G ports), then an 8-ary n-fly; at N = 1024
///   an 8-ary 4-fly of 2048 intermediate servers, the paper's "2
///   intermediate servers per port". At N = 16 the mesh's links need 1.25
///   Gbps, too much for a 1G port, and 8 10G ports cannot join 16 servers:
///   an 8-ary 2-fly of 32 servers, as many as the mesh of N = 32.
/// * more NICs (1 port, 20 NICs): a full mesh up to N = 128 (the paper's
///   128: 152 1G ports), then a 38-ary n-fly (6380 servers at N = 2048).
/// * faster servers (2 ports, 20 NICs): a full mesh up to N = 256 (128
///   servers of 152 1G ports), then 38-ary 2-flies (1100 servers at N =
///   2048). The paper says a full mesh reaches N = 2048; that is 1024
///   servers of 1023 links each, more ports than 20 NICs have under this
///   (or any 8-port-NIC) model, so the model and the paper part here.
pub fn figure3() -> Vec<Series> {
    FIGURE3_CONFIGS
        .iter()
        .map(|config| {
            let points = (2..=11)
                .map(|e| {
                    let ports = 1u64 << e;
                    let s = config.ports_per_server;
                    let m = ports.div_ceil(s);
                    let mesh_link = (2 * s * FIGURE3_RATE_BPS).div_ceil(m);
                    let mesh_fanout = figure3_fanout(config, mesh_link);
                    let fanout = if m - 1 <= mesh_fanout {
                        mesh_fanout
                    } else {
                        figure3_fanout(config, FIGURE3_RATE_BPS)
                    };
                    let plan = plan(ports, FIGURE3_RATE_BPS, fanout, s)
                        .expect("Fig. 3's configurations have fanouts of 8 and more");
                    Point {
                        ports,
                        fanout,
                        plan,
                    }
                })
                .collect();
            Series {
                config: *config,
                points,
            }
        })
        .collect()
}

fn topology_short(t: Topology) -> String {
    match t {
        Topology::FullMesh => "mesh".into(),
        other => topology_text(other),
    }
}

/// Fig. 3 as a table: servers (and topology) per configuration and N.
pub fn figure3_table() -> String {
    let series = figure3();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Servers for an N-port router, R = {} per port (RouteBricks Fig. 3)",
        format_rate(FIGURE3_RATE_BPS)
    );
    let _ = write!(s, "{:>6}", "N");
    for x in &series {
        let _ = write!(
            s,
            "  {:>24}",
            format!(
                "{} ({}p, {} NICs)",
                x.config.name, x.config.ports_per_server, x.config.nics
            )
        );
    }
    let _ = writeln!(s);
    for i in 0..series[0].points.len() {
        let _ = write!(s, "{:>6}", series[0].points[i].ports);
        for x in &series {
            let p = &x.points[i];
            let _ = write!(
                s,
                "  {:>24}",
                format!("{} {}", p.plan.servers(), topology_short(p.plan.topology))
            );
        }
        let _ = writeln!(s);
    }
    for x in &series {
        let _ = writeln!(
            s,
            "{}: full mesh up to N = {}",
            x.config.name,
            x.full_mesh_limit().unwrap_or(0)
        );
    }
    s
}

/// Draws Fig. 3 (servers against external ports, log-log) as SVG.
pub fn figure3_svg(path: &Path) -> std::io::Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| std::io::Error::other(e.to_string());
    let series = figure3();
    let max_servers = series
        .iter()
        .flat_map(|x| x.points.iter().map(|p| p.plan.servers()))
        .max()
        .unwrap_or(1);
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Servers for an N-port, R = 10 Gbps router (RouteBricks Fig. 3)",
            ("sans-serif", 20),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (2u64..4096u64).log_scale(),
            (1u64..max_servers.next_power_of_two() * 2).log_scale(),
        )
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("external ports N")
        .y_desc("servers")
        .draw()
        .map_err(|e| err(&e))?;
    let colors = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
    ];
    for (x, color) in series.iter().zip(colors) {
        let points: Vec<(u64, u64)> = x
            .points
            .iter()
            .map(|p| (p.ports, p.plan.servers()))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!(
                "{} ({} port{}/server, {} NICs)",
                x.config.name,
                x.config.ports_per_server,
                if x.config.ports_per_server == 1 {
                    ""
                } else {
                    "s"
                },
                x.config.nics
            ))
            .legend(move |(lx, ly)| {
                PathElement::new(vec![(lx, ly), (lx + 20, ly)], color.stroke_width(2))
            });
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(n, servers)| Circle::new((n, servers), 3, color.filled())),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1_000_000_000;

    #[test]
    fn rb4_is_a_full_mesh() {
        let p = plan(4, 10 * G, 3, 1).unwrap();
        assert_eq!(
            p,
            Plan {
                io_servers: 4,
                intermediate_servers: 0,
                topology: Topology::FullMesh,
                internal_link_bps: 5 * G,
                per_server_bps_min: 20 * G,
                per_server_bps_max: 30 * G,
            }
        );
    }

    #[test]
    fn faster_servers_halve_the_mesh() {
        // §3.3: N/s servers, fanout N/s - 1, links 2sR/N.
        let p = plan(8, 10 * G, 3, 2).unwrap();
        assert_eq!(p.io_servers, 4);
        assert_eq!(p.topology, Topology::FullMesh);
        assert_eq!(p.internal_link_bps, 10 * G);
        assert_eq!(
            (p.per_server_bps_min, p.per_server_bps_max),
            (40 * G, 60 * G)
        );
        // Odd N: ceil.
        assert_eq!(plan(5, 10 * G, 3, 2).unwrap().io_servers, 3);
        // Fewer ports than a server takes: s is what it gets.
        let p = plan(1, 10 * G, 0, 4).unwrap();
        assert_eq!(
            (p.io_servers, p.internal_link_bps, p.per_server_bps_min),
            (1, 0, 20 * G)
        );
    }

    #[test]
    fn fly_when_the_fanout_is_too_small() {
        let p = plan(4, 10 * G, 2, 1).unwrap();
        assert_eq!(p.topology, Topology::Fly { k: 2, n: 2 });
        assert_eq!(p.intermediate_servers, 4);
        assert_eq!(p.internal_link_bps, 10 * G);
        // The paper's 1024 ports on current servers: 2 intermediate
        // servers per port.
        let p = plan(1024, 10 * G, 8, 1).unwrap();
        assert_eq!(p.topology, Topology::Fly { k: 8, n: 4 });
        assert_eq!(p.intermediate_servers, 2048);
        assert_eq!(p.servers(), 3072);
        // 10^3 = 1000 < 1024: four stages.
        let p = plan(1024, 10 * G, 10, 1).unwrap();
        assert_eq!(p.topology, Topology::Fly { k: 10, n: 4 });
        assert_eq!(p.intermediate_servers, 4000);
        let p = plan(1000, 10 * G, 10, 1).unwrap();
        assert_eq!(p.topology, Topology::Fly { k: 10, n: 3 });
        assert_eq!(p.intermediate_servers, 300);
    }

    #[test]
    fn bad_plans_are_refused() {
        assert!(plan(0, G, 4, 1).is_err());
        assert!(plan(4, 0, 4, 1).is_err());
        assert!(plan(4, G, 4, 0).is_err());
        assert_eq!(
            plan(3, G, 1, 1).unwrap_err(),
            "a fanout of 1 cannot join 3 servers: a full mesh needs 2 links per server and a \
             k-ary n-fly needs k >= 2"
        );
        assert!(plan(u64::MAX, u64::MAX, 2, 1)
            .unwrap_err()
            .contains("overflow"));
    }

    #[test]
    fn nic_model() {
        let [current, more, faster] = FIGURE3_CONFIGS;
        assert_eq!(figure3_fanout(&current, G), 32);
        assert_eq!(figure3_fanout(&current, G + 1), 8);
        assert_eq!(figure3_fanout(&more, G), 152);
        assert_eq!(figure3_fanout(&more, 10 * G), 38);
        assert_eq!(figure3_fanout(&faster, G), 152);
        assert_eq!(figure3_fanout(&faster, 20 * G), 19);
    }

    #[test]
    fn figure3_matches_the_paper() {
        let f = figure3();
        assert_eq!(f.len(), 3);
        let ns: Vec<u64> = f[0].points.iter().map(|p| p.ports).collect();
        assert_eq!(ns, [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]);
        // "a full mesh is feasible for a maximum of N = 32 external ports;
        // the more NICs configuration extends this to N = 128".
        assert_eq!(f[0].full_mesh_limit(), Some(32));
        assert_eq!(f[1].full_mesh_limit(), Some(128));
        // Where the model parts from the paper's 2048 (see figure3's doc).
        assert_eq!(f[2].full_mesh_limit(), Some(256));
        // "with current servers, we need 2 intermediate servers per port
        // to provide N = 1024 external ports".
        let p = &f[0].points[8];
        assert_eq!(p.ports, 1024);
        assert_eq!(p.plan.intermediate_servers, 2 * 1024);
        let servers =
            |x: usize| -> Vec<u64> { f[x].points.iter().map(|p| p.plan.servers()).collect() };
        assert_eq!(servers(0), [4, 8, 32, 32, 80, 320, 448, 704, 3072, 4096]);
        assert_eq!(servers(1), [4, 8, 16, 32, 64, 128, 332, 588, 1100, 6380]);
        assert_eq!(servers(2), [2, 4, 8, 16, 32, 64, 128, 332, 588, 1100]);
    }

    #[test]
    fn table_and_plot() {
        let t = figure3_table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2 + 10 + 3);
        assert!(lines[2].starts_with("     4"), "{t}");
        assert!(lines[10].contains("3072 8-ary 4-fly"), "{t}");
        assert!(t.contains("current servers: full mesh up to N = 32"));
        assert!(t.contains("more NICs: full mesh up to N = 128"));

        let path = std::env::temp_dir().join(format!("bricks-fig3-{}.svg", std::process::id()));
        figure3_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("current servers (1 port/server, 5 NICs)"));
        assert!(svg.contains("faster servers (2 ports/server, 20 NICs)"));
        // Three lines, ten points each.
        assert_eq!(
            svg.matches("<polyline").count()
                - svg
                    .matches("stroke=\"#000000\" stroke-width=\"1\" points")
                    .count(),
            3 + 3,
            "lines and legend marks"
        );
        assert_eq!(svg.matches("<circle").count(), 30);
    }
}
