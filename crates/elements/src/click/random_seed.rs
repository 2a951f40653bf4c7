//! `RandomSeed`: Click's `elements/test/randomseed.cc`, which seeds the
//! random stream Click's elements share.
//!
//! In bricks that stream ([`bricks_element::click_random`], glibc's
//! `random()` as Click's user-level driver uses) picks a rewriter's
//! random ports, so that a seeded configuration picks Click's. bricks'
//! other randomised elements (RandomSample, RandomSwitch, RED) each own
//! a generator with a fixed seed, so their runs repeat without it.

use bricks_element::{
    click_random, ArgError, Args, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
};

/// The `RandomSeed` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RandomSeed",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets random seed",
    synopsis: "RandomSeed([SEED])",
    description: "Seeds the random stream Click's elements share, when the router is \
        configured and when the `seed` handler is written; without SEED, from the system's \
        randomness. In bricks that stream is glibc's `random()`, as in Click's user-level \
        driver, and picks the rewriters' random ports (IPRewriter's `L-H` ranges), so a \
        seeded configuration picks the ports Click picks; unseeded it starts as glibc's does \
        (seed 1), so runs repeat. RandomSample, RandomSwitch and RED have generators of \
        their own with fixed seeds, which SEED does not change. The `seed` handler reads \
        the seed given and writes a new one.",
    ports: "none",
    keywords: &[Keyword {
        name: "SEED",
        ty: "unsigned 32-bit",
        default: Some("from the system's randomness"),
        doc: "the seed; positional",
    }],
    counters: &[],
    example: "RandomSeed(1); InfiniteSource(LIMIT 4) -> RandomSample(0.5) -> Discard;",
    see_also: &["IPRewriter", "RandomSample", "RandomSwitch"],
};

/// Seeds the shared stream with `seed`, or from the system's randomness.
fn apply(seed: Option<u32>) {
    click_random::srandom(seed.unwrap_or_else(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now()) as u32
    }));
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let seed: Option<u32> = args.read_p("SEED")?;
    apply(seed);
    Ok(Box::new(RandomSeed { seed }))
}

/// Holds the seed it was given.
#[derive(Debug)]
pub struct RandomSeed {
    seed: Option<u32>,
}

impl Element for RandomSeed {
    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "seed").then(|| self.seed.map(|s| s.to_string()).unwrap_or_default())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "seed" if value.trim().is_empty() => self.seed = None,
            "seed" => self.seed = Some(bricks_element::FromArg::from_arg(value.trim())?),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (RandomSeed has `seed`)"
                ))
            }
        }
        apply(self.seed);
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("seed")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn seed_handler() {
        let mut e = make_element(&CLASS, "7", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("seed").as_deref(), Some("7"));
        e.write_handler("seed", "").unwrap();
        assert_eq!(e.read_handler("seed").as_deref(), Some(""));
        assert!(e.write_handler("seed", "x").is_err());
        assert!(make_element(&CLASS, "-1", &PortInfo::default()).is_err());
    }
}
