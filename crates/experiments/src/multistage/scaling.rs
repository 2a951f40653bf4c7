//! Fig. 7 (§IV-B): the multistage router's throughput as balancers and
//! routers are added. The paper: 2 balancers and 2 routers forwarded 1280
//! kpps of 64-byte frames, "exactly" twice one PC router's 640 kpps;
//! 1 balancer (DTX-3, 1488 kpps) and 3 routers fill a gigabit port; in
//! general the throughput is min(B x balancer rate, R x router rate).
//!
//! Here every configuration is a whole multistage router brought up by
//! `bricks multistage up` (a namespace per box, a Linux bridge as the
//! switch, a host behind every front port), per-packet round robin. Two
//! cores cannot show several PCs' worth of forwarding, so every box is
//! capped at a fixed rate, far below what one box forwards here, so that
//! the boxes and not the shared cores are the limit: the configurations
//! `bricks multistage up` wrote get a `Queue(64) -> RatedUnqueue(RATE)`
//! in the box's data path, and each box is restarted on it (`bricks
//! multistage restart`). A router's cap sits after its probe classifier
//! (liveness probes are never held up), a balancer's takes the frames of
//! all its front ports (painted with their port, sorted again by
//! `CheckPaint` behind the cap). The caps are the paper's rates divided
//! by 100: 14,880 packets/s for a balancer (its DTX-3 1488 kpps), 6,400
//! for a router (640 kpps).
//!
//! Balancer b has two front ports: behind port 2b a sender, behind port
//! 2b+1 a receiver (so each balancer carries its own traffic both ways).
//! After a ping between each pair (ARP learnt everywhere), `bricks sink`
//! counts at every receiver while `bricks gen` sends 64-byte frames from
//! every sender at 1.25 times a balancer's cap. The aggregate is what the
//! sinks received per second, against min(B x balancer cap, R x router
//! cap).

use super::procs::{in_ns, last_json, report, run_checked, run_error, GenReport, SinkReport};
use super::{cannot_use_namespaces, not_run, Experiment, Settings};
use crate::measure::Sample;
use crate::plot::{Chart, Series};
use crate::report::{within, Row, Table, Verdict};
use crate::Error;
use bricks_netns::Captured;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A balancer's cap: the paper's DTX-3 rate (1488 kpps) / 100.
pub const BALANCER_CAP: f64 = 14_880.0;
/// A router's cap: the paper's single PC (640 kpps) / 100.
pub const ROUTER_CAP: f64 = 6_400.0;
/// What each sender offers, in balancer caps.
pub const OFFER: f64 = 1.25;
/// The measured aggregate must be within this fraction of the expected.
pub const TOLERANCE: f64 = 0.10;
/// The paper's 2 balancers + 2 routers: 1280 kpps, 2 x 640.
pub const PAPER_2X2_KPPS: f64 = 1280.0;
/// Queue in front of each cap: small, so that little is left to drain
/// when the senders stop.
const CAP_QUEUE: usize = 64;
/// The sinks' head start and how long they wait after the senders.
const SINK_LEAD: f64 = 0.8;
const SINK_TAIL: f64 = 1.0;

/// The throughput a multistage router of `b` balancers capped at `cb`
/// and `r` routers capped at `cr` packets/s reaches when the balancers
/// are loaded evenly beyond their cap and spread evenly over the routers.
pub fn expected(b: usize, r: usize, cb: f64, cr: f64) -> f64 {
    (b as f64 * cb).min(r as f64 * cr)
}

/// Whether 2+2's throughput is twice 1+1's within `tol`.
pub fn doubles(one_one: f64, two_two: f64, tol: f64) -> bool {
    within(two_two, 2.0 * one_one, tol)
}

/// The multistage file of `b` balancers (two front ports, one back port
/// each) and `r` routers, named `name`.
pub fn multistage_file(name: &str, b: usize, r: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# bricks bench multistage, Fig. 7: {b} balancer(s), {r} router(s)\n\
         name = \"{name}\"\nmode = \"dtx\"\npolicy = \"rr\"\nprobe_interval = \"50ms\"\n\
         probe_misses = 3\n\n[switch]\nname = \"sw\"\n"
    );
    for i in 0..b {
        let _ = writeln!(
            s,
            "[[balancer]]\nname = \"lb{}\"\n  [[balancer.front]]\n  iface = \"ext0\"\n  \
             address = \"10.{}.0.1/24\"\n  [[balancer.front]]\n  iface = \"ext1\"\n  \
             address = \"10.{}.0.1/24\"\n  [[balancer.back]]\n  iface = \"back0\"\n",
            i + 1,
            2 * i,
            2 * i + 1
        );
    }
    for i in 0..r {
        let _ = writeln!(s, "[[router]]\nname = \"r{}\"\niface = \"eth0\"\n", i + 1);
    }
    s
}

/// A router's configuration with its data path capped at `rate`
/// packets/s (after the probe classifier).
pub fn cap_router(text: &str, rate: u64) -> Result<String, String> {
    let from = "c[1] -> demux :: VRDemux(";
    if !text.contains(from) {
        return Err(format!("no `{from}` line to cap"));
    }
    Ok(text.replacen(
        from,
        &format!(
            "c[1] -> cap_q :: Queue({CAP_QUEUE}) -> cap :: RatedUnqueue({rate}) \
             -> demux :: VRDemux("
        ),
        1,
    ))
}

/// A balancer's configuration with the frames of all its front ports
/// capped at `rate` packets/s together before the `L2Balancer`.
pub fn cap_balancer(text: &str, rate: u64) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 512);
    let mut inputs = Vec::new();
    for line in text.lines() {
        // `c_fK[1] -> [I]lb;`: what front port K hands the balancer.
        let capped = line
            .strip_prefix("c_f")
            .and_then(|l| l.split_once("[1] -> ["))
            .and_then(|(k, rest)| {
                let i = rest.strip_suffix("]lb;")?;
                Some((k.parse::<usize>().ok()?, i.parse::<usize>().ok()?))
            });
        match capped {
            Some((k, i)) => {
                let _ = writeln!(out, "c_f{k}[1] -> Paint({i}) -> cap_q;");
                inputs.push(i);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if inputs.is_empty() {
        return Err("no `c_fK[1] -> [I]lb;` line to cap".into());
    }
    inputs.sort_unstable();
    // Sorted again by paint behind the cap: CheckPaint(I) lets input I's
    // frames through and hands on the rest; the last input takes what is
    // left.
    let last = inputs.len() - 1;
    let target = |n: usize| {
        if n == last {
            format!("[{}]lb", inputs[n])
        } else {
            format!("cp{}", inputs[n])
        }
    };
    let _ = writeln!(
        out,
        "\n// Every front port's frames, capped at {rate} packets/s together.\n\
         cap_q :: Queue({CAP_QUEUE}) -> cap :: RatedUnqueue({rate}) -> {};",
        target(0)
    );
    for (n, &i) in inputs.iter().enumerate().take(last) {
        let _ = writeln!(
            out,
            "cp{i} :: CheckPaint({i}) -> [{i}]lb;\ncp{i}[1] -> {};",
            target(n + 1)
        );
    }
    Ok(out)
}

/// A host behind a front port, from the state record.
#[derive(Debug, Clone)]
struct Host {
    ns: String,
    address: String,
    gateway_mac: String,
}

/// A multistage router brought up by `bricks multistage up`, taken down
/// when dropped.
struct Up {
    exe: PathBuf,
    name: String,
    state: Value,
    _dir: PathBuf,
}

impl Up {
    fn start(exe: &Path, name: &str, b: usize, r: usize) -> Result<Up, Error> {
        let dir = std::env::temp_dir().join(format!("bricks-bench-{name}"));
        std::fs::create_dir_all(&dir)?;
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, multistage_file(name, b, r))?;
        let mut up = Up {
            exe: exe.to_path_buf(),
            name: name.to_string(),
            state: Value::Null,
            _dir: dir,
        };
        run_checked(
            Command::new(exe).args([
                "multistage",
                "up",
                &file.display().to_string(),
                "--name",
                name,
                "--backend",
                "packet",
                "--quiet",
                // As the generators and sinks: other jobs on the machine
                // disturb the boxes less (they nap when idle, and their
                // caps keep them mostly idle).
                "--nice",
                "-20",
                "--timeout",
                "60",
            ]),
            Duration::from_secs(120),
            "bricks multistage up",
        )?;
        let path = format!("/run/bricks-multistage/{name}/state.json");
        let text = std::fs::read_to_string(&path)?;
        up.state = serde_json::from_str(&text)
            .map_err(|e| run_error("bricks multistage up", format!("{path}: {e}")))?;
        Ok(up)
    }

    fn boxes(&self) -> Vec<(String, String, PathBuf)> {
        self.state["boxes"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|b| {
                        Some((
                            b["name"].as_str()?.to_string(),
                            b["role"].as_str()?.to_string(),
                            PathBuf::from(b["config"].as_str()?),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn hosts(&self) -> Vec<Host> {
        self.state["hosts"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|h| {
                        Some(Host {
                            ns: h["namespace"].as_str()?.to_string(),
                            address: h["address"].as_str()?.to_string(),
                            gateway_mac: h["gateway_mac"].as_str()?.to_string(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Caps every box and restarts it on its capped configuration.
    fn cap(&self) -> Result<(), Error> {
        for (name, role, config) in self.boxes() {
            let text = std::fs::read_to_string(&config)?;
            let capped = match role.as_str() {
                "balancer" => cap_balancer(&text, BALANCER_CAP as u64),
                _ => cap_router(&text, ROUTER_CAP as u64),
            }
            .map_err(|e| run_error(&name, format!("{}: {e}", config.display())))?;
            std::fs::write(&config, capped)?;
            run_checked(
                Command::new(&self.exe).args([
                    "multistage",
                    "restart",
                    &self.name,
                    &name,
                    "--timeout",
                    "30",
                ]),
                Duration::from_secs(60),
                "bricks multistage restart",
            )?;
        }
        Ok(())
    }

    /// The (sender, receiver) pairs: behind each balancer's two ports.
    fn pairs(&self) -> Vec<(Host, Host)> {
        let h = self.hosts();
        h.chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect()
    }

    /// A ping each way between every pair, so that hosts, balancers and
    /// routers have learnt every address before the traffic.
    fn warm(&self) -> Result<(), Error> {
        for (a, b) in self.pairs() {
            for (from, to) in [(&a, &b), (&b, &a)] {
                let out = bricks_netns::output_timeout(
                    Command::new("ip").args([
                        "netns",
                        "exec",
                        &from.ns,
                        "ping",
                        "-n",
                        "-c",
                        "3",
                        "-i",
                        "0.2",
                        "-W",
                        "2",
                        &to.address,
                    ]),
                    Duration::from_secs(20),
                )
                .map_err(|e| run_error("ping", e.0))?;
                let text = String::from_utf8_lossy(&out.stdout);
                if text.contains(" 0 received") || !text.contains("received") {
                    return Err(run_error(
                        "ping",
                        format!("{} -> {}: {text}", from.ns, to.address),
                    ));
                }
            }
        }
        Ok(())
    }

    /// One measurement: every sender at `rate` for `secs`; the aggregate
    /// packets/s the receivers got.
    fn measure(&self, rate: f64, secs: f64) -> Result<f64, Error> {
        let sink_secs = SINK_LEAD + secs + SINK_TAIL;
        let mut sinks = Vec::new();
        let pairs = self.pairs();
        for (_, rx) in &pairs {
            sinks.push(
                Captured::spawn(&mut in_ns(
                    &rx.ns,
                    None,
                    &self.exe,
                    &[
                        "sink",
                        "eth0",
                        "--duration",
                        &format!("{sink_secs:.3}"),
                        "--backend",
                        "packet",
                        "--json",
                    ],
                ))
                .map_err(|e| run_error("bricks sink", e.0))?,
            );
        }
        std::thread::sleep(Duration::from_secs_f64(SINK_LEAD));
        let mut gens = Vec::new();
        for (tx, rx) in &pairs {
            gens.push(
                Captured::spawn(&mut in_ns(
                    &tx.ns,
                    None,
                    &self.exe,
                    &[
                        "gen",
                        "eth0",
                        "--rate",
                        &format!("{}", rate.round() as u64),
                        "--duration",
                        &format!("{secs:.3}"),
                        "--src",
                        &tx.address,
                        "--dst",
                        &rx.address,
                        "--dst-mac",
                        &tx.gateway_mac,
                        "--flows",
                        "64",
                        "--size",
                        "60",
                        "--backend",
                        "packet",
                        "--json",
                    ],
                ))
                .map_err(|e| run_error("bricks gen", e.0))?,
            );
        }
        let limit = Duration::from_secs_f64(sink_secs + 30.0);
        let mut elapsed = Vec::new();
        for g in gens {
            let j = report(g, limit, "bricks gen")?;
            let g = GenReport::parse(&j).ok_or_else(|| run_error("bricks gen", "no report"))?;
            elapsed.push(g.elapsed);
        }
        let mut received = 0;
        for k in sinks {
            let j = report(k, limit, "bricks sink")?;
            received += SinkReport::parse(&j)
                .ok_or_else(|| run_error("bricks sink", "no report"))?
                .received;
        }
        let secs = elapsed.iter().sum::<f64>() / elapsed.len().max(1) as f64;
        Ok(received as f64 / secs.max(1e-9))
    }

    /// Each balancer's frames per router so far (`to_routerI`).
    fn shares(&self) -> Vec<Vec<u64>> {
        let mut v = Vec::new();
        for (name, role, _) in self.boxes() {
            if role != "balancer" {
                continue;
            }
            let sock = format!("/run/bricks-multistage/{}/{name}.sock", self.name);
            let Ok(text) = run_checked(
                Command::new(&self.exe).args(["ctl", &sock, "stats"]),
                Duration::from_secs(10),
                "bricks ctl",
            ) else {
                continue;
            };
            let Some(j) = last_json(&text) else { continue };
            let lb = &j["total"]["lb"];
            v.push(
                (0..255)
                    .map_while(|i| lb[format!("to_router{i}")].as_u64())
                    .collect(),
            );
        }
        v
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = run_checked(
            Command::new(&self.exe).args(["multistage", "down", &self.name]),
            Duration::from_secs(60),
            "bricks multistage down",
        );
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

/// One configuration's measurements.
struct Point {
    b: usize,
    r: usize,
    agg: Sample,
    shares: Vec<Vec<u64>>,
}

impl Point {
    fn expected(&self) -> f64 {
        expected(self.b, self.r, BALANCER_CAP, ROUTER_CAP)
    }
}

/// Runs Fig. 7.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig7;
    let measure = "aggregate throughput as balancers and routers are added";
    let paper = "min(B x 1488, R x 640) kpps; 2+2 = 1280 = 2 x 640";
    let (Some(exe), None) = (s.exe.as_deref(), cannot_use_namespaces(s)) else {
        let why = cannot_use_namespaces(s).unwrap_or_else(|| "no bricks binary".into());
        println!("(skipped: {why})");
        return Ok(vec![not_run(exp, measure, paper, why)]);
    };
    let configs: Vec<(usize, usize)> = if s.quick {
        vec![(1, 1), (2, 2)]
    } else {
        vec![(1, 1), (1, 2), (2, 2), (1, 3), (2, 3)]
    };
    let secs = s.pick(4.0, 2.0);
    let rate = OFFER * BALANCER_CAP;
    let mut points = Vec::new();
    for &(b, r) in &configs {
        let name = format!("f7{}{b}{r}", std::process::id() % 1000);
        println!("{b} balancer(s), {r} router(s): bricks multistage up, caps, warm-up ...");
        let up = Up::start(exe, &name, b, r)?;
        up.cap()?;
        up.warm()?;
        // An unmeasured second: queues and caps in their steady state.
        up.measure(rate, 1.0)?;
        let mut agg = Vec::new();
        for _ in 0..s.runs {
            agg.push(up.measure(rate, secs)?);
        }
        let shares = up.shares();
        drop(up);
        points.push(Point {
            b,
            r,
            agg: Sample(agg),
            shares,
        });
    }
    let mut t = Table::new(&[
        "balancers + routers",
        "offered (kpps)",
        "throughput (kpps)",
        "expected min(B x cap_b, R x cap_r) (kpps)",
        "measured / expected",
        "frames per router (each balancer)",
        "paper's model (kpps)",
    ]);
    for p in &points {
        t.push(vec![
            format!("{} + {}", p.b, p.r),
            format!("{:.1}", p.b as f64 * rate / 1e3),
            p.agg.map(|v| v / 1e3).show(2),
            format!("{:.2}", p.expected() / 1e3),
            format!("{:.3}", p.agg.median() / p.expected()),
            p.shares
                .iter()
                .map(|v| v.iter().map(u64::to_string).collect::<Vec<_>>().join("/"))
                .collect::<Vec<_>>()
                .join("; "),
            format!("{:.0}", expected(p.b, p.r, 1488e3, 640e3) / 1e3),
        ]);
    }
    println!(
        "\nFig. 7: bricks multistage up, per-packet round robin; each balancer capped at {:.0} \
         and each router at {:.0} packets/s (the paper's 1488 and 640 kpps / 100); each sender \
         offers {:.0} packets/s of 64-byte frames for {secs} s\n",
        BALANCER_CAP, ROUTER_CAP, rate
    );
    print!("{}", t.render());

    let mut series = Vec::new();
    for b in [1, 2] {
        let pts: Vec<&Point> = points.iter().filter(|p| p.b == b).collect();
        if pts.is_empty() {
            continue;
        }
        series.push(Series::measured(
            format!("bricks, {b} balancer{}", if b == 1 { "" } else { "s" }),
            pts.iter()
                .map(|p| (p.r as f64, p.agg.median() / 1e3))
                .collect(),
        ));
        series.push(Series::reference(
            format!(
                "min(B x balancer cap, R x router cap), {b} balancer{}",
                if b == 1 { "" } else { "s" }
            ),
            (1..=3)
                .map(|r| (r as f64, expected(b, r, BALANCER_CAP, ROUTER_CAP) / 1e3))
                .collect(),
        ));
    }
    Chart {
        title: "Fig. 7: multistage throughput, boxes capped at the paper's rates / 100".into(),
        x_label: "L3 routers".into(),
        y_label: "throughput (kpps, 64-byte frames)".into(),
        log_x: false,
        series,
    }
    .write_svg(&s.out.join("fig7-scaling.svg"))?;

    let worst = points
        .iter()
        .map(|p| (p, (p.agg.median() / p.expected() - 1.0).abs()))
        .fold(
            (None, 0.0f64),
            |w, (p, d)| {
                if d >= w.1 {
                    (Some(p), d)
                } else {
                    w
                }
            },
        );
    let all_within = points
        .iter()
        .all(|p| within(p.agg.median(), p.expected(), TOLERANCE));
    let list = points
        .iter()
        .map(|p| format!("{}+{} {:.2}", p.b, p.r, p.agg.median() / 1e3))
        .collect::<Vec<_>>()
        .join(", ");
    let mut rows = vec![Row {
        experiment: exp.figure().into(),
        measure: "throughput against min(B x balancer cap, R x router cap)".into(),
        paper: "min(B x 1488, R x 640) kpps".into(),
        bricks: format!("{list} kpps"),
        verdict: Verdict::from_check(
            all_within,
            match worst.0 {
                Some(p) => format!(
                    "every configuration within {:.0} % of the expected (worst {}+{}: {:.3} of \
                     {:.2} kpps)",
                    TOLERANCE * 100.0,
                    p.b,
                    p.r,
                    p.agg.median() / p.expected(),
                    p.expected() / 1e3
                ),
                None => "no configuration".into(),
            },
        ),
    }];
    let x11 = points.iter().find(|p| (p.b, p.r) == (1, 1));
    let x22 = points.iter().find(|p| (p.b, p.r) == (2, 2));
    if let (Some(a), Some(b)) = (x11, x22) {
        let (a, b) = (a.agg.median(), b.agg.median());
        rows.push(Row {
            experiment: exp.figure().into(),
            measure: "2 balancers + 2 routers against twice 1 + 1".into(),
            paper: format!("{PAPER_2X2_KPPS:.0} kpps = 2 x 640"),
            bricks: format!(
                "{:.2} kpps against 2 x {:.2} = {:.2}: {:.3}",
                b / 1e3,
                a / 1e3,
                2.0 * a / 1e3,
                b / (2.0 * a)
            ),
            verdict: Verdict::from_check(
                doubles(a, b, TOLERANCE),
                format!(
                    "{:.1} % from twice 1+1 (tolerance {:.0} %)",
                    (b / (2.0 * a) - 1.0).abs() * 100.0,
                    TOLERANCE * 100.0
                ),
            ),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_throughput_is_the_smaller_stage() {
        // The paper's rates: 2+2 is 1280 kpps, twice one router.
        assert_eq!(expected(2, 2, 1488e3, 640e3), 1280e3);
        // One DTX-3 balancer and 3 routers: the balancer's 1488 limits.
        assert_eq!(expected(1, 3, 1488e3, 640e3), 1488e3);
        // 4 balancers, 10 routers: "4 Gigabit Ethernet at line rate, i.e.
        // 6 Mpps" (5952 kpps).
        assert_eq!(expected(4, 10, 1488e3, 640e3), 4.0 * 1488e3);
        // The caps here.
        assert_eq!(expected(1, 1, BALANCER_CAP, ROUTER_CAP), 6400.0);
        assert_eq!(expected(1, 3, BALANCER_CAP, ROUTER_CAP), 14_880.0);
        assert_eq!(expected(2, 3, BALANCER_CAP, ROUTER_CAP), 19_200.0);
        assert_eq!(expected(0, 3, BALANCER_CAP, ROUTER_CAP), 0.0);
    }

    #[test]
    fn doubling_has_a_tolerance() {
        assert!(doubles(6400.0, 12_800.0, 0.1));
        assert!(doubles(6400.0, 11_600.0, 0.1));
        assert!(!doubles(6400.0, 11_400.0, 0.1));
        assert!(!doubles(6400.0, 14_200.0, 0.1));
    }

    fn check(text: &str) {
        let mut map = bricks_config::SourceMap::default();
        let src = bricks_config::Source {
            name: "<capped>".into(),
            text: text.to_string(),
        };
        let r = bricks_config::parse_with(&mut map, src, &Default::default())
            .unwrap_or_else(|d| panic!("{}", d.iter().map(|d| map.render(d)).collect::<String>()));
        bricks_runtime::build(&r, &bricks_elements::registry())
            .unwrap_or_else(|d| panic!("{}", d.iter().map(|d| map.render(d)).collect::<String>()));
    }

    #[test]
    fn caps_go_into_the_data_path() {
        // A balancer with two front ports and a router, as bricks
        // multistage config writes them (their data-path lines).
        let lb = "lb :: L2Balancer(FRONT 0 1, ROUTERS 1);\n\
            in_f0 :: InfiniteSource(LIMIT 1) -> c_f0 :: Classifier(12/0806, -);\n\
            c_f0[0] -> Discard;\nc_f0[1] -> [0]lb;\nlb[0] -> Discard;\n\
            in_f1 :: InfiniteSource(LIMIT 1) -> c_f1 :: Classifier(12/0806, -);\n\
            c_f1[0] -> Discard;\nc_f1[1] -> [1]lb;\nlb[1] -> Discard;\n\
            Idle -> [2]lb;\nlb[2] -> Discard;\n";
        check(lb);
        let capped = cap_balancer(lb, 14_880).unwrap();
        assert!(capped.contains("c_f0[1] -> Paint(0) -> cap_q;"), "{capped}");
        assert!(capped.contains("c_f1[1] -> Paint(1) -> cap_q;"), "{capped}");
        assert!(capped.contains("RatedUnqueue(14880) -> cp0;"), "{capped}");
        assert!(
            capped.contains("cp0 :: CheckPaint(0) -> [0]lb;"),
            "{capped}"
        );
        assert!(capped.contains("cp0[1] -> [1]lb;"), "{capped}");
        assert!(!capped.contains("cp1"), "{capped}");
        check(&capped);
        assert!(cap_balancer("Idle -> Discard;", 1).is_err());

        let r = "in :: InfiniteSource(LIMIT 1) -> c :: Classifier(12/88b7, -);\nc[0] -> Discard;\n\
            c[1] -> demux :: VRDemux(BY mac, 02:4d:53:00:00:00 0);\ndemux[0] -> Discard;\n";
        check(r);
        let capped = cap_router(r, 6400).unwrap();
        assert!(capped.contains("c[1] -> cap_q :: Queue(64) -> cap :: RatedUnqueue(6400) -> demux"));
        check(&capped);
        assert!(cap_router("Idle -> Discard;", 1).is_err());
    }

    #[test]
    fn the_multistage_file_checks_and_its_configurations_cap() {
        use bricks_multistage::config::{node_config, ConfigOptions};
        use bricks_multistage::{Multistage, Node};
        let ms = Multistage::from_toml(&multistage_file("f7t", 2, 3)).unwrap();
        assert_eq!(ms.balancers.len(), 2);
        assert_eq!(ms.front_count(), 4);
        assert_eq!(ms.routers.len(), 3);
        assert_eq!(ms.balancers[1].fronts[0].address.to_string(), "10.2.0.1");
        // What bricks multistage up writes, capped, still builds.
        for node in [Node::Balancer(1), Node::Router(2)] {
            let text = node_config(&ms, node, &ConfigOptions::new(&ms, node, "f7t.toml"));
            let capped = match node {
                Node::Balancer(_) => cap_balancer(&text, 100).unwrap(),
                Node::Router(_) => cap_router(&text, 100).unwrap(),
            };
            assert!(capped.contains("RatedUnqueue(100)"));
            check(&capped);
        }
    }
}
