//! `SimplePrioSched` and `SimpleRoundRobinSched`: Click's notifier-less
//! pull schedulers (`elements/simple/simplepriosched.cc`,
//! `simplerrsched.cc`).
//!
//! Click's `PrioSched` and `RoundRobinSched` skip an input whose upstream
//! empty notifier says it is empty; the simple variants pull every input
//! they come to. bricks' `PrioSched` and `RoundRobinSched` already pull
//! every input (no notifier is read per pull), so the simple classes are
//! the same schedulers ([`PrioSched`], [`RoundRobinSched`]) under Click's
//! names, with Click's port count: any number of inputs, none included.

use super::sched::{PrioSched, RoundRobinSched};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `SimplePrioSched` class.
pub static SIMPLE_PRIO: ElementClass = ElementClass {
    name: "SimplePrioSched",
    ports: "-/1",
    processing: "l/l",
    manual: &PRIO_MANUAL,
    make: make_prio,
};

/// The `SimpleRoundRobinSched` class.
pub static SIMPLE_ROUND_ROBIN: ElementClass = ElementClass {
    name: "SimpleRoundRobinSched",
    ports: "-/1",
    processing: "l/l",
    manual: &RR_MANUAL,
    make: make_rr,
};

static PRIO_MANUAL: Manual = Manual {
    summary: "pulls from priority-scheduled inputs",
    synopsis: "SimplePrioSched",
    description: "Each time a pull comes in the output, pulls from each of the inputs \
        starting from input 0; the packet from the first successful pull is returned. This \
        amounts to a strict priority scheduler. The inputs usually come from Queues or other \
        pull schedulers. As in Click, SimplePrioSched does not use notification: it pulls \
        every input it comes to, empty or not. A batch pull of N packets is N such pulls.\n\n\
        bricks' PrioSched also pulls every input (it reads no notifier per pull), so the two \
        classes schedule alike; SimplePrioSched, like Click's, may also have no inputs, \
        when every pull finds nothing and the element counts as empty for the tasks that \
        pull from it.",
    ports: "zero or more pull inputs; one pull output",
    keywords: &[],
    counters: &[],
    example: "hi :: Queue; lo :: Queue; p :: SimplePrioSched; \
        InfiniteSource(LIMIT 4) -> hi -> [0]p; InfiniteSource(LIMIT 4) -> lo -> [1]p; \
        p -> Unqueue -> c :: Counter -> Discard;",
    see_also: &[
        "PrioSched",
        "Queue",
        "RoundRobinSched",
        "StrideSched",
        "DRRSched",
    ],
};

static RR_MANUAL: Manual = Manual {
    summary: "pulls from round-robin inputs",
    synopsis: "SimpleRoundRobinSched",
    description: "Each time a pull comes in the output, pulls from its inputs in turn until \
        one produces a packet. When the next pull comes in, it starts from the input after \
        the one that last produced a packet. This amounts to a round robin scheduler. The \
        inputs usually come from Queues or other pull schedulers. As in Click, \
        SimpleRoundRobinSched does not use notification: it pulls every input it comes \
        to, empty or not. A batch pull of N packets is N such pulls, so inputs share the \
        output packet by packet whatever the batch size.\n\n\
        bricks' RoundRobinSched also pulls every input (it reads no notifier per pull), so \
        the two classes schedule alike; SimpleRoundRobinSched, like Click's, may also have \
        no inputs, when every pull finds nothing and the element counts as empty for the \
        tasks that pull from it.",
    ports: "zero or more pull inputs; one pull output",
    keywords: &[],
    counters: &[],
    example: "q1 :: Queue; q2 :: Queue; rr :: SimpleRoundRobinSched; \
        InfiniteSource(LIMIT 4) -> q1 -> [0]rr; InfiniteSource(LIMIT 4) -> q2 -> [1]rr; \
        rr -> Unqueue -> c :: Counter -> Discard;",
    see_also: &[
        "RoundRobinSched",
        "PrioSched",
        "StrideSched",
        "DRRSched",
        "RoundRobinSwitch",
    ],
};

fn make_prio(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(PrioSched::new(ports.ninputs())))
}

fn make_rr(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(RoundRobinSched::new(ports.ninputs())))
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, plan, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    /// `n` one-byte packets `tag*16 + i`: input and place in it.
    fn tagged(tag: u8, n: u8) -> Vec<Packet> {
        (0..n)
            .map(|i| Packet::from_slice(&[tag * 16 + i]).unwrap())
            .collect()
    }

    fn bytes(ps: &[Packet]) -> Vec<u8> {
        ps.iter().map(|p| p.data()[0]).collect()
    }

    #[test]
    fn prio_drains_input_0_before_input_1_and_so_on() {
        let mut h = Harness::new(&SIMPLE_PRIO, "", ports(3));
        h.feed(0, tagged(0, 2));
        h.feed(1, tagged(1, 3));
        h.feed(2, tagged(2, 2));
        // One pull at a time, as Click's pulls come.
        let mut got = Vec::new();
        for _ in 0..4 {
            got.extend(bytes(&h.pull(0, 1)));
        }
        assert_eq!(got, vec![0x00, 0x01, 0x10, 0x11]);
        // A packet arriving at input 0 goes first again.
        h.feed(0, tagged(0, 1));
        assert_eq!(bytes(&h.pull(0, 10)), vec![0x00, 0x12, 0x20, 0x21]);
        assert!(h.pull(0, 10).is_empty());
    }

    #[test]
    fn round_robin_takes_turns_packet_by_packet() {
        let mut h = Harness::new(&SIMPLE_ROUND_ROBIN, "", ports(3));
        h.feed(0, tagged(0, 3));
        h.feed(1, tagged(1, 1));
        h.feed(2, tagged(2, 2));
        // One batch: turns 0, 1, 2, 0, (1 empty) 2, 0.
        assert_eq!(
            bytes(&h.pull(0, 32)),
            vec![0x00, 0x10, 0x20, 0x01, 0x21, 0x02]
        );
        // The next pull starts after input 0, the last to give one.
        h.feed(0, tagged(0, 1));
        h.feed(2, tagged(2, 1));
        assert_eq!(bytes(&h.pull(0, 1)), vec![0x20]);
        assert_eq!(bytes(&h.pull(0, 1)), vec![0x00]);
        assert!(h.pull(0, 1).is_empty());
    }

    #[test]
    fn batch_pulls_equal_single_pulls() {
        for class in [&SIMPLE_PRIO, &SIMPLE_ROUND_ROBIN] {
            let mut one = Harness::new(class, "", ports(2));
            let mut many = Harness::new(class, "", ports(2));
            for h in [&mut one, &mut many] {
                h.feed(0, tagged(0, 5));
                h.feed(1, tagged(1, 3));
            }
            let singles: Vec<u8> = (0..8).flat_map(|_| bytes(&one.pull(0, 1))).collect();
            assert_eq!(bytes(&many.pull(0, 8)), singles, "{}", class.name);
        }
    }

    #[test]
    fn no_inputs_pull_nothing() {
        for class in [&SIMPLE_PRIO, &SIMPLE_ROUND_ROBIN] {
            let mut h = Harness::new(class, "", ports(0));
            assert!(h.pull(0, 8).is_empty());
            // No inputs: a task pulling from it may sleep (Click's `S0`).
            let s = run(&format!(
                "s :: {}; s -> u :: Unqueue -> Discard;",
                class.name
            ));
            assert_eq!(count(&s, "u", "count"), 0);
        }
    }

    #[test]
    fn arguments_are_refused() {
        for class in [&SIMPLE_PRIO, &SIMPLE_ROUND_ROBIN] {
            let e = make_element(class, "3", &ports(2)).unwrap_err();
            assert!(e.contains("too many arguments"), "{e}");
            assert!(make_element(class, "", &ports(2)).is_ok());
            // One output only, pull.
            let e = plan(&format!(
                "s :: {}; Idle -> Queue -> s; s[1] -> Discard; s -> Discard;",
                class.name
            ))
            .unwrap_err();
            assert!(e.contains("output"), "{e}");
        }
    }

    #[test]
    fn the_examples_run() {
        for class in [&SIMPLE_PRIO, &SIMPLE_ROUND_ROBIN] {
            let s = run(class.manual.example);
            assert_eq!(count(&s, "c", "count"), 8, "{}: {}", class.name, s.render());
        }
    }
}
