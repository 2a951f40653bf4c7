//! Sources, sinks, queues, schedulers and plumbing.

pub mod counter;
pub mod discard;
pub mod idle;
pub mod paint;
pub mod print;
pub mod queue;
pub mod sched;
pub mod settings;
pub mod source;
pub mod strip;
pub mod tee;
pub mod unqueue;
pub mod workload;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &counter::CLASS,
    &discard::CLASS,
    &idle::CLASS,
    &paint::PAINT,
    &paint::PAINT_TEE,
    &paint::CHECK_PAINT,
    &print::CLASS,
    &queue::QUEUE,
    &queue::SIMPLE_QUEUE,
    &sched::ROUND_ROBIN,
    &sched::PRIO,
    &source::INFINITE_SOURCE,
    &source::RATED_SOURCE,
    &settings::CLASS,
    &strip::STRIP,
    &strip::UNSTRIP,
    &tee::CLASS,
    &unqueue::CLASS,
    &workload::CLASS,
];
