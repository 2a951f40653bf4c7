//! `RandomSeed`: Click's `elements/test/randomseed.cc`, which seeds the
//! random number generator shared by Click's elements.
//!
//! bricks' randomised elements (RandomSample, RandomSwitch, RED) each
//! own a generator with a fixed seed, so every run is already repeatable;
//! RandomSeed is accepted so that Click's configurations load, and keeps
//! the seed it was given for its `seed` handler.

use bricks_element::{ArgError, Args, Element, ElementClass, Handler, Keyword, Manual, PortInfo};

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
    description: "Accepted for Click's configurations. In Click it seeds the generator all \
        elements share; in bricks every randomised element (RandomSample, RandomSwitch, \
        RED) has its own generator with a fixed seed, so runs are repeatable without it, \
        and SEED changes nothing. The `seed` handler reads and writes the seed given.",
    ports: "none",
    keywords: &[Keyword {
        name: "SEED",
        ty: "unsigned",
        default: Some("none"),
        doc: "the seed; positional",
    }],
    counters: &[],
    example: "RandomSeed(1); InfiniteSource(LIMIT 4) -> RandomSample(0.5) -> Discard;",
    see_also: &["RandomSample", "RandomSwitch"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let seed: Option<u64> = args.read_p("SEED")?;
    Ok(Box::new(RandomSeed { seed }))
}

/// Holds a seed nobody uses.
#[derive(Debug)]
pub struct RandomSeed {
    seed: Option<u64>,
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
