//! One SA's sequence counter shared by two workers, against one worker
//! and against an SA per worker.

use super::*;

/// One set-up of the cores section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sharing {
    /// One worker, one SA.
    Alone,
    /// Two workers, both on one SA.
    Shared,
    /// Two workers, an SA each.
    Own,
}

impl Sharing {
    pub(super) fn label(self) -> &'static str {
        match self {
            Sharing::Alone => "1 worker, 1 SA",
            Sharing::Shared => "2 workers, 1 shared SA",
            Sharing::Own => "2 workers, 1 SA each",
        }
    }

    pub(super) fn threads(self) -> usize {
        if self == Sharing::Alone {
            1
        } else {
            2
        }
    }
}

/// The configuration: two flows, one per worker (WorkloadSource hands
/// worker w of n the flows w, w + n, ...). With `split.sa`, sources in
/// 192.168.1.0/25 take SA 0x1001 and those in 192.168.1.128/25 SA 0x1002;
/// `seed` must then give the two flows sources in different halves.
pub(super) fn cores_config(dir: &Path, s: Sharing, per_worker: u64, seed: u64) -> String {
    let file = match s {
        Sharing::Own => dir.join("split.sa"),
        _ => dir.join("aes128gcm-out.sa"),
    };
    format!(
        "src :: WorkloadSource(SIZE 78, FLOWS 2, SRC 192.168.1.0/24, DST 192.168.2.0/24, \
         SEED {seed}, LIMIT {}, ALL_WORKERS true) \
         -> enc :: IPsecESPEncap(FILE {}) -> Discard;",
        per_worker * s.threads() as u64,
        file.display()
    )
}

/// Per worker: packets and seconds; and the packets of SA 0x1001.
pub(super) struct CoresRun {
    pub(super) workers: Vec<(u64, f64)>,
    pub(super) sa1: u64,
}

pub(super) fn run_cores(
    dir: &Path,
    s: Sharing,
    per_worker: u64,
    seed: u64,
) -> Result<CoresRun, Error> {
    let plan = crate::measure::plan(bricks_config::Source {
        name: format!("<bench ipsec {}>", s.label()),
        text: cores_config(dir, s, per_worker, seed),
    })
    .map_err(|message| Error::Config {
        workload: format!("bench ipsec {}", s.label()),
        message,
    })?;
    let opts = WorkerOptions {
        threads: s.threads(),
        pin: true,
        trace_clock: false,
        clock_start: Default::default(),
        publish_every: None,
        max_nap: Duration::ZERO,
        exit_reads: Vec::new(),
        hotswap_requests: false,
    };
    let w = Workers::start(Arc::new(plan), &opts).map_err(|d| Error::Run {
        workload: format!("bench ipsec {}", s.label()),
        message: d.message,
    })?;
    let summary = w.join();
    if !summary.total.errors.is_empty() {
        return Err(Error::Run {
            workload: format!("bench ipsec {}", s.label()),
            message: summary.total.errors.join("\n"),
        });
    }
    let get = |r: &bricks_runtime::RunSummary, el: &str, k: &str| {
        r.stats(el).and_then(|st| st.get(k)).unwrap_or(0)
    };
    let workers: Vec<(u64, f64)> = summary
        .per_worker
        .iter()
        .map(|r| (get(r, "src", "count"), r.elapsed.as_secs_f64()))
        .collect();
    let total: u64 = workers.iter().map(|w| w.0).sum();
    if get(&summary.total, "enc", "protected") != total || total == 0 {
        return Err(Error::Run {
            workload: format!("bench ipsec {}", s.label()),
            message: format!(
                "not every packet was encapsulated:\n{}",
                summary.total.render()
            ),
        });
    }
    Ok(CoresRun {
        workers,
        sa1: get(&summary.total, "enc", "sa 0x1001 packets"),
    })
}

/// A seed whose two flows take different SAs of `split.sa`.
pub(super) fn split_seed(dir: &Path) -> Result<u64, Error> {
    for seed in 1..=64 {
        let r = run_cores(dir, Sharing::Own, 1000, seed)?;
        let total: u64 = r.workers.iter().map(|w| w.0).sum();
        if r.sa1 > 0 && r.sa1 < total {
            return Ok(seed);
        }
    }
    Err(Error::Run {
        workload: "bench ipsec cores".into(),
        message: "no seed from 1 to 64 gives the two workers' flows different SAs".into(),
    })
}

pub(super) fn cores_section(
    dir: &Path,
    st: &Settings,
    cancel: &AtomicBool,
) -> Result<String, Error> {
    let cpus = core_affinity::get_core_ids().map_or(1, |c| c.len());
    let per_worker = st.packets;
    let seed = split_seed(dir)?;
    let all = [Sharing::Alone, Sharing::Shared, Sharing::Own];
    // Per set-up: Mpps per worker, total Mpps.
    let mut figures: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); all.len()];
    for &s in &all {
        run_cores(dir, s, per_worker.min(100_000), seed)?;
    }
    for _ in 0..st.runs {
        for (i, &s) in all.iter().enumerate() {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let r = run_cores(dir, s, per_worker, seed)?;
            let per: Vec<f64> = r
                .workers
                .iter()
                .map(|&(n, secs)| n as f64 / secs / 1e6)
                .collect();
            let total_packets: u64 = r.workers.iter().map(|w| w.0).sum();
            let longest = r.workers.iter().map(|w| w.1).fold(0.0, f64::max);
            figures[i]
                .0
                .push(per.iter().sum::<f64>() / per.len() as f64);
            figures[i].1.push(total_packets as f64 / longest / 1e6);
        }
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "sequence numbers across cores: AES-128-GCM encap of 64-byte inner packets, one flow \
         per worker, {per_worker} packets per worker, workers pinned (machine: {cpus} CPU{}), \
         median of {} run{}",
        if cpus == 1 { "" } else { "s" },
        st.runs,
        if st.runs == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "{:<24} {:>7} {:>12} {:>17} {:>11}",
        "set-up", "workers", "Mpps/worker", "ns/packet/worker", "total Mpps"
    );
    let mut per_worker_mpps = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let per = median(&mut figures[i].0);
        let total = median(&mut figures[i].1);
        per_worker_mpps.push(per);
        let _ = writeln!(
            o,
            "{:<24} {:>7} {:>12.2} {:>17.1} {:>11.2}",
            s.label(),
            s.threads(),
            per,
            1e3 / per,
            total
        );
    }
    let (shared, own) = (per_worker_mpps[1], per_worker_mpps[2]);
    let _ = writeln!(
        o,
        "shared / own SA, per worker: {:.2} (the contended counter costs {:.1} ns per packet)",
        shared / own,
        1e3 / shared - 1e3 / own
    );
    if cpus < 2 {
        let _ = writeln!(
            o,
            "(one CPU: the two workers take turns, so there is no contention to measure)"
        );
    }
    Ok(o)
}

// ---------------------------------------------------------------------
// Through veths: bricks against Linux XFRM
