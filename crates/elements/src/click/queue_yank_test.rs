//! `QueueYankTest`: Click's `elements/test/queueyanktest.cc`, the
//! self-test of a queue's `enq`, `deq`, `yank1` and `yank` operations,
//! run on a Queue of the configuration when the router starts.

use crate::standard::queue::Queue;
use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};

/// The `QueueYankTest` class.
pub static CLASS: ElementClass = ElementClass {
    name: "QueueYankTest",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "runs regression tests for a queue's yank operations",
    synopsis: "QueueYankTest(QUEUE)",
    description: "When the router starts, works QUEUE directly, as Click's test does: adds \
        five one-byte packets and takes them out again, takes out the first packet that \
        matches a test (yank1) or every one (yank, newest first), and checks the order of \
        what is left. It prints `All tests pass!`, or the first check that does not hold, \
        under its name, and leaves the queue as it found it (empty). QUEUE must be a \
        Queue, SimpleQueue, NotifierQueue, FullNoteQueue or QuickNoteQueue, empty, with \
        room for five packets; any other element is an error when the router starts. The \
        test runs on the first worker.",
    ports: "none",
    keywords: &[Keyword {
        name: "QUEUE",
        ty: "element name",
        default: None,
        doc: "the queue to test; positional",
    }],
    counters: &[],
    example: "Idle -> q :: Queue(6) -> Idle; QueueYankTest(q); DriverManager(stop)",
    see_also: &["Queue", "NotifierDebug"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let queue: String = args.read_mp("QUEUE")?;
    Ok(Box::new(QueueYankTest { queue }))
}

/// Tests a queue's yank operations once.
#[derive(Debug)]
pub struct QueueYankTest {
    /// The QUEUE as written.
    queue: String,
}

/// A one-byte packet holding `c`.
fn packet(c: u8) -> Packet {
    Packet::from_slice(&[c]).expect("one byte fits a packet")
}

/// Whether `p` starts with one of `set`'s bytes (Click's test's `Foo`).
fn one_of(set: &'static [u8]) -> impl Fn(&Packet) -> bool {
    move |p| p.data().first().is_some_and(|b| set.contains(b))
}

/// Click's checks, in Click's order: the first that fails, if any.
fn run_checks(q: &mut Queue) -> Result<(), String> {
    use super::click_check as check;
    macro_rules! check_pkt {
        ($p:expr, $c:expr) => {
            match $p {
                Some(p) if p.data().first() == Some(&$c) => {}
                got => {
                    return Err(format!(
                        "{}:{}: test '{}' produced {} packet (expected '{}')",
                        file!(),
                        line!(),
                        stringify!($p),
                        if got.is_some() { "wrong" } else { "no" },
                        char::from($c)
                    ))
                }
            }
        };
    }
    macro_rules! check_nopkt {
        ($p:expr) => {
            if $p.is_some() {
                return Err(format!(
                    "{}:{}: test '{}' produced a packet (expected nothing)",
                    file!(),
                    line!(),
                    stringify!($p)
                ));
            }
        };
    }
    macro_rules! check_deq {
        ($s:expr) => {
            for &c in $s {
                check_pkt!(q.deq(), c);
            }
        };
    }
    macro_rules! prepare {
        () => {
            // What a full queue refuses is dropped, as Click's test
            // lets it be: the size check finds it.
            for &c in b"abcde" {
                let _ = q.enq(packet(c));
            }
            check!(q.size() == 5);
        };
    }

    check!(q.size() == 0);

    prepare!();
    check_deq!(b"abcde");

    prepare!();
    check_pkt!(q.yank1(one_of(b"c")), b'c');
    check!(q.size() == 4);
    check_deq!(b"abde");

    prepare!();
    check_nopkt!(q.yank1(one_of(b"f")));
    check_deq!(b"abcde");

    prepare!();
    check_deq!(b"abcd");
    check_pkt!(q.yank1(one_of(b"hgkje")), b'e');
    check!(q.size() == 0);

    let mut v = Vec::new();
    prepare!();
    q.yank(one_of(b"ade"), &mut v);
    check!(v.len() == 3);
    check!(q.size() == 2);
    let mut got = v.drain(..);
    check_pkt!(got.next(), b'e');
    check_pkt!(got.next(), b'd');
    check_pkt!(got.next(), b'a');
    drop(got);
    check_deq!(b"bc");

    prepare!();
    q.yank(one_of(b"fhq"), &mut v);
    check!(v.is_empty());
    check_deq!(b"abcde");

    prepare!();
    q.yank(one_of(b"edcba"), &mut v);
    check!(v.len() == 5);
    check!(q.size() == 0);
    let mut got = v.drain(..);
    for &c in b"edcba" {
        check_pkt!(got.next(), c);
    }
    drop(got);

    check!(q.size() == 0);
    Ok(())
}

impl Element for QueueYankTest {
    fn start(&mut self, cx: &mut Context<'_>) {
        if cx.worker() != 0 {
            return;
        }
        let Some(i) = cx.find_element(&self.queue) else {
            cx.report_error(format!("QUEUE: no element named `{}`", self.queue));
            cx.request_stop();
            return;
        };
        let Some(result) = cx.with_element_as::<Queue, _>(i, |q| {
            let r = run_checks(q);
            // A failed check leaves what it had added.
            while q.deq().is_some() {}
            r
        }) else {
            cx.report_error(format!(
                "QUEUE argument must be a Queue element (`{}` is not one)",
                self.queue
            ));
            cx.request_stop();
            return;
        };
        let said = result.err().unwrap_or_else(|| "All tests pass!".into());
        eprintln!("{} :: {}: {said}", cx.name(), cx.class());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn queue(capacity: usize) -> Box<dyn Element> {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        };
        make_element(
            &crate::standard::queue::QUEUE,
            &capacity.to_string(),
            &ports,
        )
        .unwrap()
    }

    #[test]
    fn the_checks_pass_on_a_queue_with_room_and_leave_it_empty() {
        let mut e = queue(6);
        let q = bricks_element::taken_from::<Queue>(&mut *e).expect("a Queue");
        assert_eq!(run_checks(q), Ok(()));
        assert_eq!(q.size(), 0);
    }

    #[test]
    fn a_queue_without_room_for_five_fails_a_check() {
        let mut e = queue(4);
        let q = bricks_element::taken_from::<Queue>(&mut *e).expect("a Queue");
        let err = run_checks(q).unwrap_err();
        assert!(err.contains("test `q.size() == 5' failed"), "{err}");
    }

    #[test]
    fn yank_takes_the_newest_first_and_keeps_the_order_of_the_rest() {
        let mut e = queue(10);
        let q = bricks_element::taken_from::<Queue>(&mut *e).expect("a Queue");
        for &c in b"xaybz" {
            q.enq(packet(c)).unwrap();
        }
        let mut v = Vec::new();
        q.yank(one_of(b"xyz"), &mut v);
        let taken: Vec<u8> = v.iter().map(|p| p.data()[0]).collect();
        assert_eq!(taken, b"zyx");
        assert_eq!(q.yank1(one_of(b"b")).map(|p| p.data()[0]), Some(b'b'));
        assert_eq!(q.deq().map(|p| p.data()[0]), Some(b'a'));
        assert!(q.deq().is_none());
    }
}
