//! `QuickNoteQueue`: Click's Queue whose empty notification takes effect
//! at once (`elements/standard/quicknotequeue.cc`): bricks' Queue with
//! its empty notifier put to sleep by the pull that leaves it empty.

use crate::standard::queue;
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `QuickNoteQueue` class: bricks' Queue.
pub static CLASS: ElementClass = ElementClass {
    name: "QuickNoteQueue",
    ports: "1/1-2",
    processing: "h/lh",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO queue (Click's Queue with immediate empty notification)",
    synopsis: "QuickNoteQueue([CAPACITY])",
    description: "Queue, telling the tasks pulling from it that it is empty as soon as a \
        pull leaves it empty (Queue says so after ten pulls in a row have found it empty, \
        as Click's does); like Queue it tells the sources pushing into it when it is \
        full. A packet arriving at a full queue is dropped and counted. `bricks elements Queue` describes its handlers (`length`, \
        `highwater_length`, `capacity`, `drops`, `reset_counts`, `reset`).",
    ports: "one push input; a pull output and an optional push output for dropped packets",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held; positional",
    }],
    counters: &[
        ("length", "packets held now"),
        ("highwater_length", "most packets ever held"),
        ("drops", "packets dropped because the queue was full"),
        ("enqueued", "packets accepted"),
    ],
    example: "InfiniteSource(LIMIT 10) -> QuickNoteQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue", "NotifierQueue", "FullNoteQueue"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    queue::make_quick_note(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    #[test]
    fn is_a_bounded_fifo_with_notification() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "2", ports);
        for i in 0..3u8 {
            h.push_bytes(0, &[i]);
        }
        let out = h.pull(0, 10);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), [0]);
        assert_eq!(h.stats().get("drops"), Some(1));
        // Empty and full notification, fresh: awake until a pull finds it
        // empty, as a Click notifier starts.
        let e = bricks_runtime::testing::make_element(&CLASS, "5", &PortInfo::default()).unwrap();
        assert_eq!(e.empty_signal(0), Some(true));
        assert_eq!(e.push_room(0), Some(5));
    }
}
