//! The runs behind the catalogue: each measures one or more figures of a
//! paper with one of the benches, in a process of its own.

use crate::report::Row;
use crate::{multistage, qos, vr, Error};
use std::path::Path;

/// What a unit runs.
#[derive(Debug, Clone, Copy)]
pub enum Bench {
    /// `bricks bench vr --only ...`.
    Vr(&'static [vr::Experiment]),
    /// `bricks bench multistage --only ...`.
    Multistage(&'static [multistage::Experiment]),
    /// `bricks bench qos --only ...`.
    Qos(&'static [qos::Experiment]),
    /// `bricks bench io` on the subjects the papers' ratios compare.
    Io,
    /// The NIC paper's wishlist (§4.3): bricks' steering changed while it
    /// forwards, on the `bench io` testbed.
    Wishlist,
    /// The NIC paper's Figs. 4 and 5 as far as two cores allow: at Q = 2,
    /// one port with two queues against two ports with one, a worker per
    /// queue, beside one port with one queue.
    Queues,
    /// RouteBricks Fig. 3 from the cluster planner (`bricks cluster plan`).
    Plan,
    /// RouteBricks §5 in memory: Table 3, §5.3 and Figs. 8 and 9.
    Routebricks,
    /// RouteBricks §6.2: RB4 in network namespaces (`bricks bench
    /// cluster`).
    Cluster,
    /// Measured by this `bricks bench` command, whose results the report
    /// does not collect yet.
    Separate(&'static str),
}

/// One run of the suite.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    /// Its name: `PAPER:WHAT`.
    pub key: &'static str,
    /// The bench and its experiments.
    pub bench: Bench,
    /// About how long it takes on two cores, in seconds: (--quick, full),
    /// from runs of `bricks reproduce` (results.json has each unit's).
    pub estimate: (u64, u64),
    /// Whether it builds network namespaces (and so needs root).
    pub needs_root: bool,
}

impl Unit {
    /// The estimate for this kind of run.
    pub fn estimate(&self, quick: bool) -> u64 {
        if quick {
            self.estimate.0
        } else {
            self.estimate.1
        }
    }

    /// The equivalent command line, for the report.
    pub fn command(&self, quick: bool) -> String {
        let q = if quick { " --quick" } else { "" };
        let only = |names: Vec<String>| {
            names
                .iter()
                .map(|n| format!(" --only {n}"))
                .collect::<String>()
        };
        match self.bench {
            Bench::Vr(e) => format!("bricks bench vr{q}{}", only(e.iter().map(name).collect())),
            Bench::Multistage(e) => format!(
                "{}bricks bench multistage{q}{}",
                if self.needs_root { "sudo " } else { "" },
                only(e.iter().map(name).collect())
            ),
            Bench::Qos(e) => format!("bricks bench qos{q}{}", only(e.iter().map(name).collect())),
            Bench::Plan => "bricks cluster plan --figure3".into(),
            Bench::Routebricks => {
                format!("bricks reproduce routebricks --only routebricks:core{q}")
            }
            Bench::Io => format!(
                "sudo bricks bench io --only {} {}--search-steps 0",
                crate::io::paper_subjects().join(","),
                if quick { "--seconds 1 --runs 1 " } else { "" }
            ),
            Bench::Cluster => format!("sudo bricks bench cluster{q}"),
            Bench::Queues => format!("sudo bricks reproduce nic --only nic:queues{q}"),
            Bench::Wishlist => format!("sudo bricks reproduce nic --only nic:wishlist{q}"),
            Bench::Separate(cmd) => cmd.to_string(),
        }
    }

    /// File-name form of the key.
    pub fn file_name(&self) -> String {
        self.key.replace(':', "-")
    }
}

fn name<E: clap::ValueEnum>(e: &E) -> String {
    e.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// Every unit, in the catalogue's order.
pub const UNITS: &[Unit] = &[
    Unit {
        key: "routebricks:plan",
        bench: Bench::Plan,
        estimate: (1, 1),
        needs_root: false,
    },
    Unit {
        key: "routebricks:core",
        bench: Bench::Routebricks,
        estimate: (65, 220),
        needs_root: false,
    },
    Unit {
        key: "routebricks:io",
        bench: Bench::Io,
        estimate: (20, 200),
        needs_root: true,
    },
    Unit {
        key: "nic:queues",
        bench: Bench::Queues,
        estimate: (15, 60),
        needs_root: true,
    },
    Unit {
        key: "nic:wishlist",
        bench: Bench::Wishlist,
        estimate: (25, 60),
        needs_root: true,
    },
    Unit {
        key: "routebricks:cluster",
        bench: Bench::Cluster,
        estimate: (45, 300),
        needs_root: true,
    },
    Unit {
        key: "vr:flows",
        bench: Bench::Vr(&[vr::Experiment::Flows]),
        estimate: (40, 200),
        needs_root: false,
    },
    Unit {
        key: "vr:mapping",
        bench: Bench::Vr(&[vr::Experiment::Mapping]),
        estimate: (5, 30),
        needs_root: false,
    },
    Unit {
        key: "vr:shared-queue",
        bench: Bench::Vr(&[vr::Experiment::SharedQueue]),
        estimate: (5, 30),
        needs_root: false,
    },
    Unit {
        key: "vr:scaling",
        bench: Bench::Vr(&[vr::Experiment::Scaling]),
        estimate: (45, 250),
        needs_root: false,
    },
    Unit {
        key: "vr:fairness",
        bench: Bench::Vr(&[vr::Experiment::Fairness]),
        estimate: (10, 60),
        needs_root: false,
    },
    Unit {
        key: "multistage:router",
        bench: Bench::Multistage(&[multistage::Experiment::Fig1, multistage::Experiment::Fig5]),
        estimate: (15, 90),
        needs_root: true,
    },
    Unit {
        key: "multistage:balancer",
        bench: Bench::Multistage(&[multistage::Experiment::Fig6]),
        estimate: (12, 60),
        needs_root: false,
    },
    Unit {
        key: "multistage:scaling",
        bench: Bench::Multistage(&[multistage::Experiment::Fig7]),
        estimate: (25, 150),
        needs_root: true,
    },
    Unit {
        key: "qos:memory",
        bench: Bench::Qos(&[qos::Experiment::Fig2]),
        estimate: (2, 10),
        needs_root: false,
    },
    Unit {
        key: "qos:classify",
        bench: Bench::Qos(&[qos::Experiment::Fig3]),
        estimate: (20, 100),
        needs_root: false,
    },
    Unit {
        key: "qos:trie",
        bench: Bench::Qos(&[qos::Experiment::Fig4]),
        estimate: (15, 80),
        needs_root: false,
    },
    Unit {
        key: "qos:architectures",
        bench: Bench::Qos(&[qos::Experiment::Fig5, qos::Experiment::Fig7]),
        estimate: (55, 300),
        needs_root: false,
    },
];

/// The unit named `key`.
pub fn unit(key: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.key == key)
}

/// How a unit runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Brief runs.
    pub quick: bool,
    /// Timed runs per point (`None`: the bench's default).
    pub runs: Option<usize>,
    /// Skip callgrind.
    pub no_callgrind: bool,
    /// The binary's signal handling, for the benches that stop cleanly
    /// on SIGINT and SIGTERM (deleting their namespaces).
    pub stop_on_signals: crate::StopOnSignals,
    /// The run's `raw/` directory, where a unit leaves what it learnt of
    /// the machine ([`super::store::AF_XDP_FILE`]).
    pub raw: std::path::PathBuf,
}

/// Runs `u` in this process, its plots into `plots`; returns its summary
/// rows.
pub fn execute(u: &Unit, o: &Options, plots: &Path) -> Result<Vec<Row>, Error> {
    let out = plots.to_path_buf();
    let rows = match u.bench {
        Bench::Vr(e) => {
            vr::collect(&vr::VrArgs {
                quick: o.quick,
                only: e.to_vec(),
                out,
                runs: o.runs,
                no_callgrind: o.no_callgrind,
                one: None,
                packets: 100_000,
            })?
            .0
        }
        Bench::Multistage(e) => {
            multistage::collect(&multistage::MultistageArgs {
                quick: o.quick,
                only: e.to_vec(),
                out,
                runs: o.runs,
                no_callgrind: o.no_callgrind,
                one: None,
                packets: 100_000,
                time: false,
            })?
            .0
        }
        Bench::Qos(e) => {
            qos::collect(&qos::QosArgs {
                quick: o.quick,
                only: e.to_vec(),
                out,
                runs: o.runs,
                no_callgrind: o.no_callgrind,
                one: None,
                packets: 100_000,
            })?
            .0
        }
        Bench::Plan => crate::plan::run(plots)?,
        Bench::Routebricks => {
            let callgrind = if o.no_callgrind || !crate::measure::valgrind_available() {
                None
            } else {
                std::env::current_exe().ok()
            };
            crate::routebricks::run(&crate::routebricks::Settings {
                quick: o.quick,
                runs: o.runs.unwrap_or(if o.quick { 1 } else { 5 }).max(1),
                callgrind,
                out,
            })?
        }
        Bench::Io => {
            let (rows, mode) = crate::io::paper_rows(
                &crate::io::IoArgs {
                    seconds: if o.quick { 1.0 } else { 5.0 },
                    runs: o.runs.unwrap_or(if o.quick { 1 } else { 3 }),
                    warm_up: if o.quick { 0.0 } else { 1.0 },
                    only: Vec::new(),
                    json: false,
                    flows: 256,
                    latency_rate: 10_000,
                    search_steps: 0,
                    probe_trials: 2,
                    max_loss: 1.0,
                    generator: crate::io::Generator::Xdp,
                    xdp_hold: None,
                },
                o.stop_on_signals,
            )?;
            if let Some(mode) = mode {
                std::fs::write(o.raw.join(super::store::AF_XDP_FILE), mode)?;
            }
            rows
        }
        Bench::Queues => crate::io::queues::paper_rows(
            o.quick,
            o.runs.unwrap_or(if o.quick { 1 } else { 3 }),
            o.stop_on_signals,
        )?,
        Bench::Wishlist => crate::io::wishlist::paper_rows(o.quick, o.stop_on_signals)?,
        Bench::Cluster => {
            crate::cluster::bench::paper_rows(o.quick, o.runs, plots, o.stop_on_signals)?
        }
        Bench::Separate(cmd) => {
            return Err(Error::Run {
                workload: u.key.into(),
                message: format!(
                    "measured by `{cmd}`, whose results the report does not collect yet"
                ),
            })
        }
    };
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::super::catalogue::CATALOGUE;
    use super::*;

    #[test]
    fn every_measured_item_names_a_unit_of_its_paper() {
        for i in CATALOGUE {
            if let Some(k) = i.unit {
                assert!(unit(k).is_some(), "{} {}: no unit {k}", i.paper, i.id);
            }
        }
        for u in UNITS {
            assert!(
                CATALOGUE.iter().any(|i| i.unit == Some(u.key)),
                "{} measures nothing",
                u.key
            );
        }
    }

    #[test]
    fn commands_name_the_experiments() {
        let u = unit("qos:architectures").unwrap();
        assert_eq!(
            u.command(true),
            "bricks bench qos --quick --only fig5 --only fig7"
        );
        let u = unit("vr:shared-queue").unwrap();
        assert_eq!(u.command(false), "bricks bench vr --only shared-queue");
        assert_eq!(u.file_name(), "vr-shared-queue");
    }
}
