//! Which queues packets must cross workers through: a push-to-pull
//! element (a `Queue`) whose packets are pushed on a worker where nothing
//! pulls them.
//!
//! Each worker runs its own copy of the graph, so a packet pushed into a
//! queue on worker 0 can only be pulled by worker 0's copy. In Click the
//! graph is one: `StaticThreadSched(src 0, u 1)` around
//! `src -> Queue -> u :: Unqueue` makes thread 1 pull what thread 0
//! pushed. To keep such configurations working, the workers that may push
//! into every queue and the workers that pull from it are worked out from
//! the task placements, and a queue pushed on a worker none of whose
//! pullers runs there is told so (`Args::crosses_workers`): the queue
//! classes then keep one ring for all workers, as `ThreadSafeQueue` does.
//!
//! Workers are sets of at most 64 (bits of a word): the analysis is off
//! for more workers, and for every configuration that places no task
//! (sources on worker 0, every other task on every worker: every worker
//! that pushes also pulls).

use crate::build::Plan;
use crate::placement::Placement;
use bricks_element::{Processing, TaskKind};

/// The most workers the analysis tracks.
const MAX_WORKERS: usize = 64;

/// The workers that run element `e`'s task, as bits.
fn task_workers(plan: &Plan, e: usize, workers: usize) -> u64 {
    let pe = &plan.elements[e];
    (0..workers)
        .filter(|&w| {
            pe.placement
                .runs_on(w, workers, pe.task == TaskKind::Source, pe.every_worker)
        })
        .fold(0, |m, w| m | 1 << w)
}

/// For each element of `plan`, whether it has a push input and a pull
/// output and is pushed on a worker where nothing pulls it, when the plan
/// runs on `workers` workers.
pub(crate) fn crossing(plan: &Plan, workers: usize) -> Vec<bool> {
    let n = plan.elements.len();
    let none = vec![false; n];
    if workers <= 1
        || workers > MAX_WORKERS
        || plan
            .elements
            .iter()
            .all(|e| e.task == TaskKind::None || e.placement == Placement::Default)
    {
        return none;
    }
    // Pushers: from every task and every element with no inputs (which
    // makes packets on every worker), along push connections; an element
    // with a pull output (a queue) keeps what reaches it.
    let all = u64::MAX >> (64 - workers);
    let mut pushed = vec![0u64; n];
    let mut work = Vec::new();
    let relays = |e: usize| {
        let pe = &plan.elements[e];
        !pe.ports.outputs.contains(&Processing::Pull)
    };
    for (e, pe) in plan.elements.iter().enumerate() {
        let origin = if pe.task != TaskKind::None {
            task_workers(plan, e, workers)
        } else if pe.ports.inputs.is_empty() {
            all
        } else {
            0
        };
        if origin != 0 {
            work.push((e, origin));
        }
    }
    // Each element's set only grows, by at least one bit a visit: at most
    // 64 visits an element.
    while let Some((e, m)) = work.pop() {
        let pe = &plan.elements[e];
        for (p, conns) in pe.outputs.iter().enumerate() {
            if pe.ports.outputs.get(p) != Some(&Processing::Push) {
                continue;
            }
            for &(to, _) in conns {
                let new = m & !pushed[to];
                if new != 0 {
                    pushed[to] |= new;
                    if relays(to) && plan.elements[to].task == TaskKind::None {
                        work.push((to, pushed[to]));
                    }
                }
            }
        }
    }
    // Pullers: from every task, against pull connections; an element
    // with a push input (a queue) keeps what reaches it.
    let mut pulled = vec![0u64; n];
    for (e, pe) in plan.elements.iter().enumerate() {
        if pe.task != TaskKind::None {
            work.push((e, task_workers(plan, e, workers)));
        }
    }
    while let Some((e, m)) = work.pop() {
        let pe = &plan.elements[e];
        for (p, conns) in pe.inputs.iter().enumerate() {
            if pe.ports.inputs.get(p) != Some(&Processing::Pull) {
                continue;
            }
            for &(from, _) in conns {
                let new = m & !pulled[from];
                if new != 0 {
                    pulled[from] |= new;
                    let fe = &plan.elements[from];
                    if !fe.ports.inputs.contains(&Processing::Push) && fe.task == TaskKind::None {
                        work.push((from, pulled[from]));
                    }
                }
            }
        }
    }
    plan.elements
        .iter()
        .enumerate()
        .map(|(e, pe)| {
            pe.ports.inputs.contains(&Processing::Push)
                && pe.ports.outputs.contains(&Processing::Pull)
                && pulled[e] != 0
                && pushed[e] & !pulled[e] != 0
        })
        .collect()
}
