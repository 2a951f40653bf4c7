//! `QuickNoteQueue`: Click's Queue whose empty notification takes effect
//! at once (`elements/standard/quicknotequeue.cc`). bricks' Queue already
//! tells its pullers it is empty the moment it is, and its pushers when
//! it is full, so this is bricks' Queue under Click's name.

use crate::standard::queue;
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `QuickNoteQueue` class: bricks' Queue.
pub static CLASS: ElementClass = ElementClass {
    name: "QuickNoteQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO queue (Click's Queue with immediate empty notification)",
    synopsis: "QuickNoteQueue([CAPACITY])",
    description: "bricks' Queue under Click's name. Click's QuickNoteQueue differs from its \
        Queue in telling the tasks pulling from it that it is empty immediately after it \
        goes empty; bricks' Queue does so already, and like Click's it tells the sources \
        pushing into it when it is full. A packet arriving at a full queue is dropped and \
        counted. `bricks elements Queue` describes its handlers (`length`, \
        `highwater_length`, `capacity`, `drops`, `reset_counts`, `reset`).",
    ports: "one push input; one pull output",
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
    (queue::QUEUE.make)(args, ports)
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
        // Empty and full notification, fresh.
        let e = bricks_runtime::testing::make_element(&CLASS, "5", &PortInfo::default()).unwrap();
        assert_eq!(e.empty_signal(0), Some(false));
        assert_eq!(e.push_room(0), Some(5));
    }
}
