//! `Burster`: TimedUnqueue with a default BURST of 8, as Click's
//! `elements/standard/burster.cc`.

use super::timed_unqueue::{configure, DESCRIPTION};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `Burster` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Burster",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pulls BURST packets every INTERVAL and pushes them (BURST 8 by default)",
    synopsis: "Burster(INTERVAL [, BURST])",
    description: DESCRIPTION,
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "INTERVAL",
            ty: "time (seconds, or with a unit: 10ms)",
            default: None,
            doc: "time between pulls; positional",
        },
        Keyword {
            name: "BURST",
            ty: "integer, at least 1",
            default: Some("8"),
            doc: "packets pulled at most each INTERVAL; positional (TimedUnqueue's \
                default is 1)",
        },
    ],
    counters: &[("count", "packets moved (a bricks addition)")],
    example: "InfiniteSource(LIMIT 20) -> Queue -> Burster(0.01) -> Discard;",
    see_also: &["TimedUnqueue", "RatedUnqueue", "Unqueue"],
};

/// Burster is Click's TimedUnqueue subclass with another default burst.
const DEFAULT_BURST: u64 = 8;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args, DEFAULT_BURST)?))
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_element::{Packet, Processing, TaskResult};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        }
    }

    #[test]
    fn eight_per_interval_by_default() {
        let mut h = Harness::new(&CLASS, "0.2", ports());
        h.feed(0, (0..20).map(|_| Packet::from_slice(&[0; 60]).unwrap()));
        h.advance_to(Timestamp(0));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 8);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(200_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 8);
        h.advance_to(Timestamp(400_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 4);
        assert_eq!(h.stats().get("count"), Some(20));
    }

    #[test]
    fn burst_given() {
        let mut h = Harness::new(&CLASS, "INTERVAL 1, BURST 3", ports());
        h.feed(0, (0..5).map(|_| Packet::from_slice(&[0; 60]).unwrap()));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 3);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &ports());
        assert!(m("").unwrap_err().contains("INTERVAL"));
        assert!(m("1, 0").unwrap_err().contains("bad BURST"));
        assert!(m("1, 8, 2").unwrap_err().contains("too many"));
    }

    #[test]
    fn the_example_runs_in_three_bursts() {
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "Burster@3", "count"), 20, "{}", s.render());
        let s =
            run("InfiniteSource(LIMIT 20) -> Queue -> Burster(0.5) -> c :: Counter -> Discard;");
        // Pulls at 0, 0.5 and 1 s: 20 packets over 1 s.
        assert_eq!(count(&s, "c", "rate_pps"), 20, "{}", s.render());
    }
}
