//! How much other work shared the machine with a run: the CPU time of
//! every process that is not the bench's, and the time the hypervisor
//! gave this machine's CPUs to other guests (steal), in CPUs.
//!
//! Two subjects' rates are compared only if the machine was about as busy
//! with other work for both. The 1-minute load average cannot say so: the
//! bench's own processes are in it, and they differ by subject (a router
//! that busy-polls a CPU adds about 1 to it, Linux forwarding in softirq
//! adds nothing), so on an idle machine bricks and Linux were measured at
//! loads 1 apart and never compared. What is counted here leaves out the
//! bench, its generators, routers and sinks (its descendants) and the
//! kernel's threads (the NAPI threads that carry the frames are among
//! them), and keeps everything else: another build, another VM on the
//! same host.

use procfs::process::all_processes;
use procfs::{CurrentSI, KernelStats};
use std::collections::HashMap;

/// `PF_KTHREAD` in a process's flags: a kernel thread.
const PF_KTHREAD: u32 = 0x0020_0000;

/// A reading to take before and after a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Snapshot {
    /// Clock ticks of every CPU, all states (guest time is in user).
    all: u64,
    /// Of which the hypervisor ran other guests (steal).
    steal: u64,
    /// CPU ticks of the processes that are neither the bench's nor the
    /// kernel's, with those of their children they waited for.
    others: u64,
    /// The CPUs `all` counts (every online one, whatever CPUs the bench
    /// itself may run on).
    cpus: usize,
}

/// One process as [`others_ticks`] needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) kernel: bool,
    /// utime + stime + cutime + cstime.
    pub(super) ticks: u64,
}

/// Reads the machine's counters; `None` without a readable `/proc`.
pub(super) fn snapshot() -> Option<Snapshot> {
    let k = KernelStats::current().ok()?;
    let t = &k.total;
    let steal = t.steal.unwrap_or(0);
    let all = t.user
        + t.nice
        + t.system
        + t.idle
        + t.iowait.unwrap_or(0)
        + t.irq.unwrap_or(0)
        + t.softirq.unwrap_or(0)
        + steal;
    let procs = read_procs()?;
    Some(Snapshot {
        all,
        steal,
        others: others_ticks(&procs, std::process::id() as i32),
        cpus: k.cpu_time.len().max(1),
    })
}

/// Every process's parent, kind and CPU ticks.
fn read_procs() -> Option<Vec<Proc>> {
    let procs = all_processes()
        .ok()?
        .filter_map(|p| p.ok()?.stat().ok())
        .map(|s| Proc {
            pid: s.pid,
            ppid: s.ppid,
            kernel: s.flags & PF_KTHREAD != 0 || s.pid == 2,
            ticks: s.utime
                + s.stime
                + u64::try_from(s.cutime).unwrap_or(0)
                + u64::try_from(s.cstime).unwrap_or(0),
        })
        .collect();
    Some(procs)
}

/// Whether `pid` is `bench` or one of its descendants, by the parents
/// in `parent`.
fn is_ours(parent: &HashMap<i32, i32>, mut pid: i32, bench: i32) -> bool {
    // Bounded by the number of processes, so that a parent loop in a
    // torn read cannot hang.
    for _ in 0..=parent.len() {
        if pid == bench {
            return true;
        }
        match parent.get(&pid) {
            Some(&pp) if pp > 0 && pp != pid => pid = pp,
            _ => return false,
        }
    }
    false
}

/// The ticks of `procs` that are neither kernel threads nor `bench` and
/// its descendants. A process that exits is counted in its parent's
/// children's time once it is waited for, so the difference of two sums
/// holds every other process that ran between them, however short.
pub(super) fn others_ticks(procs: &[Proc], bench: i32) -> u64 {
    let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    procs
        .iter()
        .filter(|p| !p.kernel && !is_ours(&parent, p.pid, bench))
        .map(|p| p.ticks)
        .sum()
}

/// CPUs' worth of other work between two snapshots (0 when there was
/// none; 1.0 is a whole CPU busy with it throughout); `None` when either
/// is missing or no time passed.
pub(super) fn other_cpus(before: Option<Snapshot>, after: Option<Snapshot>) -> Option<f64> {
    let (b, a) = (before?, after?);
    let all = a.all.checked_sub(b.all).filter(|&t| t > 0)?;
    let work = a.others.saturating_sub(b.others) + a.steal.saturating_sub(b.steal);
    // `all` counts every CPU: per CPU, it is the time that passed.
    Some(work as f64 * a.cpus as f64 / all as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, ticks: u64) -> Proc {
        Proc {
            pid,
            ppid,
            kernel: false,
            ticks,
        }
    }

    /// The bench's descendants at any depth and kernel threads are left
    /// out; everyone else counts.
    #[test]
    fn the_bench_and_the_kernel_are_not_other_work() {
        let procs = [
            p(1, 0, 5),
            Proc {
                kernel: true,
                ..p(2, 0, 1000)
            },
            Proc {
                kernel: true,
                ..p(40, 2, 700)
            },
            p(100, 1, 10),   // a shell
            p(200, 100, 50), // the bench
            p(201, 200, 70), // its router
            p(202, 201, 30), // a process its router started
            p(300, 100, 9),  // another job
            p(301, 300, 4),  // its child
        ];
        assert_eq!(others_ticks(&procs, 200), 5 + 10 + 9 + 4);
        // A parent loop (a torn read) ends.
        let looped = [p(7, 8, 1), p(8, 7, 2)];
        assert_eq!(others_ticks(&looped, 200), 3);
    }

    /// Other processes' time and steal, over the time that passed on
    /// every CPU.
    #[test]
    fn other_work_is_in_cpus() {
        let b = Snapshot {
            all: 1000,
            steal: 10,
            others: 500,
            cpus: 2,
        };
        // 2 CPUs, 100 ticks each: 50 ticks of other processes and 50 of
        // steal are a whole CPU.
        let a = Snapshot {
            all: 1200,
            steal: 60,
            others: 550,
            cpus: 2,
        };
        assert_eq!(other_cpus(Some(b), Some(a)), Some(1.0));
        assert_eq!(other_cpus(Some(b), Some(b)), None);
        assert_eq!(other_cpus(None, Some(a)), None);
        // A process that exited and was not waited for drops out of the
        // sum: the processes count as nothing, not less; the steal stays.
        let gone = Snapshot { others: 400, ..a };
        assert_eq!(other_cpus(Some(b), Some(gone)), Some(0.5));
    }

    /// On a real machine: the bench and a process it started are its
    /// own, init and a process that left it are not; another process's
    /// busy loop shows in the sum.
    #[test]
    fn processes_are_told_apart_on_this_machine() {
        let Some(before) = snapshot() else {
            eprintln!("skipped: no readable /proc");
            return;
        };
        let me = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        // A busy loop that is not ours: its parent shell exits at once,
        // so it is reparented away from the bench.
        let detached = std::process::Command::new("sh")
            .args([
                "-c",
                "(sh -c 'end=$(($(date +%s) + 1)); while [ $(date +%s) -le $end ]; do :; done' &); exit 0",
            ])
            .status();
        assert!(detached.is_ok_and(|s| s.success()));
        let procs = read_procs().unwrap();
        let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
        assert!(is_ours(&parent, me, me));
        assert!(is_ours(&parent, child.id() as i32, me));
        assert!(!is_ours(&parent, 1, me));
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let after = snapshot().unwrap();
        let theirs = after.others.saturating_sub(before.others);
        // At least a second of the loop (it runs one to two), less what
        // the machine's clock ticks may round away.
        let tick = procfs::ticks_per_second();
        assert!(theirs >= tick / 2, "{theirs} ticks of a busy second");
        assert!(other_cpus(Some(before), Some(after)).is_some_and(|c| c > 0.2));
    }
}
