//! RouteBricks Fig. 3 (§3.3): how many servers an N-port cluster router
//! needs, for the paper's server configurations, by bricks' sizing
//! (`bricks cluster plan`, `bricks_cluster::plan::figure3`). A
//! computation, not a measurement: it checks that the planner bricks uses
//! to build clusters reproduces the paper's limits.

use crate::plot::{Chart, Series};
use crate::report::{Row, Verdict};
use crate::Error;
use bricks_cluster::model::Topology;
use bricks_cluster::plan::figure3;
use std::path::Path;

/// The paper's full-mesh limits (§3.3): "with the current server
/// configuration, a full mesh is feasible for a maximum of N = 32
/// external ports; the more NICs configuration extends this to N = 128
/// ports, and the faster servers configuration to N = 2048 ports".
pub const PAPER_MESH_LIMITS: [(&str, u64); 3] = [
    ("current servers", 32),
    ("more NICs", 128),
    ("faster servers", 2048),
];

/// The summary rows of Fig. 3, and its plot (`fig3-servers.svg` in
/// `out`).
pub fn run(out: &Path) -> Result<Vec<Row>, Error> {
    let series = figure3();
    let mut rows = Vec::new();
    let mut chart = Chart {
        title: "RouteBricks Fig. 3: servers for an N-port router, R = 10 Gbit/s".into(),
        x_label: "external ports N".into(),
        y_label: "servers".into(),
        log_x: true,
        series: Vec::new(),
    };
    println!(
        "{:>6} {:>18} {:>18} {:>18}",
        "N", "current servers", "more NICs", "faster servers"
    );
    for (i, p) in series[0].points.iter().enumerate() {
        let cell = |s: &bricks_cluster::plan::Series| {
            let q = &s.points[i];
            format!(
                "{} ({})",
                q.plan.servers(),
                if q.plan.topology == Topology::FullMesh {
                    "mesh"
                } else {
                    "n-fly"
                }
            )
        };
        println!(
            "{:>6} {:>18} {:>18} {:>18}",
            p.ports,
            cell(&series[0]),
            cell(&series[1]),
            cell(&series[2])
        );
    }
    for s in &series {
        chart.series.push(Series::measured(
            format!("{} (bricks' planner)", s.config.name),
            s.points
                .iter()
                .map(|p| (p.ports as f64, p.plan.servers() as f64))
                .collect(),
        ));
        let limit = s.full_mesh_limit();
        let paper = PAPER_MESH_LIMITS
            .iter()
            .find(|(n, _)| *n == s.config.name)
            .map(|(_, l)| *l);
        let holds = limit.is_some() && limit == paper;
        rows.push(Row {
            experiment: "Fig. 3".into(),
            measure: format!("largest N built as a full mesh, {}", s.config.name),
            paper: paper.map_or("-".into(), |l| format!("N = {l}")),
            bricks: limit.map_or("-".into(), |l| format!("N = {l}")),
            verdict: if holds {
                Verdict::Holds("the same limit from the same NIC model".into())
            } else {
                Verdict::Differs(
                    "a full mesh of 1,024 servers needs 1,023 links each, more ports than 20 \
                     NICs of 8 ports have: the paper's own NIC model gives 256, and bricks \
                     plans 38-ary 2-flies beyond"
                        .into(),
                )
            },
        });
    }
    // "Even with current servers, we need 2 intermediate servers per port
    // to provide N = 1024 external ports."
    let at_1024 = series[0]
        .points
        .iter()
        .find(|p| p.ports == 1024)
        .map(|p| p.plan.intermediate_servers as f64 / 1024.0);
    rows.push(Row {
        experiment: "Fig. 3".into(),
        measure: "intermediate servers per port at N = 1,024, current servers".into(),
        paper: "2".into(),
        bricks: at_1024.map_or("-".into(), |v| format!("{v:.2}")),
        verdict: Verdict::from_check(
            at_1024.is_some_and(|v| (v - 2.0).abs() < 0.01),
            "an 8-ary 4-fly of 2,048 intermediate servers",
        ),
    });
    std::fs::create_dir_all(out)?;
    chart.write_svg(&out.join("fig3-servers.svg"))?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planner_meets_two_of_the_papers_limits() {
        let dir = std::env::temp_dir().join(format!("bricks-plan-{}", std::process::id()));
        let rows = run(&dir).unwrap();
        assert_eq!(rows.len(), 4);
        let verdicts: Vec<bool> = rows.iter().map(|r| r.verdict.holds()).collect();
        assert_eq!(verdicts, [true, true, false, true], "{rows:?}");
        assert_eq!(rows[2].bricks, "N = 256");
        let svg = std::fs::read_to_string(dir.join("fig3-servers.svg")).unwrap();
        assert!(
            svg.contains("faster servers (bricks&apos; planner)")
                || svg.contains("faster servers (bricks' planner)")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
