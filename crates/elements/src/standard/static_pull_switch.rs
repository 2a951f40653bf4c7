//! `StaticPullSwitch`: pulls from one input fixed by the configuration,
//! as Click's `elements/standard/staticpullswitch.cc`; PullSwitch without
//! its `switch` handler.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `StaticPullSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StaticPullSwitch",
    ports: "-/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "forwards pull requests to a fixed input",
    synopsis: "StaticPullSwitch(INPUT)",
    description: "On every pull, returns the packets pulled from input INPUT. A negative \
        INPUT, or one that is not an input of the element, returns nothing. Unlike \
        PullSwitch it has no `switch` handler: INPUT cannot change while the router \
        runs (so `bricks click-undead` replaces it by a plain connection).\n\n\
        Where INPUT is none, the task pulling from it reads `scheduled` false (bricks \
        answers Click's empty notification question for it: nothing will come; Click \
        passes the question on to every input).",
    ports: "pull inputs (any number); one pull output",
    keywords: &[Keyword {
        name: "INPUT",
        ty: "integer",
        default: None,
        doc: "the input pulled from, negative for none; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> q0 :: Queue; Idle -> q1 :: Queue; \
        ps :: StaticPullSwitch(0); q0 -> [0]ps; q1 -> [1]ps; ps -> Unqueue -> Discard;",
    see_also: &["PullSwitch", "StaticSwitch", "PrioSched", "RoundRobinSched"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let k: i64 = args.read_mp("INPUT")?;
    // As in Click, an input beyond the last one means none.
    let input = usize::try_from(k).ok().filter(|&k| k < ports.ninputs());
    Ok(Box::new(StaticPullSwitch { input }))
}

/// Pulls from the one input.
#[derive(Debug)]
pub struct StaticPullSwitch {
    input: Option<usize>,
}

impl Element for StaticPullSwitch {
    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if let Some(i) = self.input {
            cx.pull(i, out, max);
        }
    }

    fn pull_passes_to(&self, _port: usize) -> Option<usize> {
        self.input
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        match self.input {
            None => Some(false),
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    fn tagged(tag: u8) -> Packet {
        Packet::from_slice(&[tag; 4]).unwrap()
    }

    fn fed(args: &str) -> Harness {
        let mut h = Harness::new(&CLASS, args, ports(3));
        h.feed(0, [tagged(0x11), tagged(0x11)]);
        h.feed(1, [tagged(0x22), tagged(0x22), tagged(0x22)]);
        h.feed(2, [tagged(0x33)]);
        h
    }

    #[test]
    fn pulls_only_the_chosen_input() {
        let mut h = fed("1");
        let got = h.pull(0, 2);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|p| p.data() == [0x22; 4]));
        let got = h.pull(0, 8);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), &[0x22; 4]);
        assert!(h.pull(0, 8).is_empty());
        let mut h = fed("INPUT 2");
        assert_eq!(h.pull(0, 8)[0].data(), &[0x33; 4]);
    }

    #[test]
    fn none_or_out_of_range_pulls_nothing() {
        for args in ["-1", "-7", "3", "1000"] {
            let mut h = fed(args);
            assert!(h.pull(0, 8).is_empty(), "{args}");
        }
    }

    #[test]
    fn has_no_switch_handler() {
        let h = fed("0");
        assert!(h.write_handler("switch", "1").is_err());
        assert!(h.read_handler("switch").is_err());
    }

    #[test]
    fn input_is_mandatory_and_an_integer() {
        let m = |a: &str| make_element(&CLASS, a, &ports(2));
        assert!(m("").unwrap_err().contains("INPUT"));
        assert!(m("x").unwrap_err().contains("INPUT"));
        assert!(m("1.5").is_err());
        assert!(m("0, 1").unwrap_err().contains("too many"));
        assert!(m("INPUT 1").is_ok());
    }

    #[test]
    fn in_a_router_and_its_example() {
        let s = run("InfiniteSource(LIMIT 5) -> q0 :: Queue; \
             InfiniteSource(LIMIT 7) -> q1 :: Queue; \
             ps :: StaticPullSwitch(1); q0 -> [0]ps; q1 -> [1]ps; \
             ps -> Unqueue -> c :: Counter -> Discard;");
        assert_eq!(count(&s, "c", "count"), 7);
        assert_eq!(count(&s, "q0", "length"), 5);
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "Unqueue@6", "count"), 2, "{}", s.render());
    }
}
