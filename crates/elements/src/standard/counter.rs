//! `Counter`: counts packets and bytes and passes them on unchanged.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `Counter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Counter",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "counts packets and bytes",
    synopsis: "Counter",
    description: "Passes packets through unchanged, counting them and their bytes. \
        The rate over the whole run is derived from the counts and the run time \
        when counters are printed.",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[],
    counters: &[("count", "packets seen"), ("byte_count", "bytes seen")],
    example: "InfiniteSource(LIMIT 10) -> c :: Counter -> Discard;",
    see_also: &["AverageCounter"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(Counter::default()))
}

/// Counts packets and bytes.
#[derive(Debug, Default)]
pub struct Counter {
    count: u64,
    bytes: u64,
}

impl Counter {
    #[inline]
    fn account(&mut self, batch: &Batch) {
        self.count += batch.len() as u64;
        self.bytes += batch.iter().map(|p| p.len() as u64).sum::<u64>();
    }
}

impl Element for Counter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.account(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.account(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("byte_count", self.bytes);
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                *self = Counter::default();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Counter has `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn counts_and_forwards() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &[0u8; 60]);
        h.push_bytes(0, &[0u8; 100]);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("count"), Some(2));
        assert_eq!(h.stats().get("byte_count"), Some(160));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));
    }

    #[test]
    fn refuses_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "5", &Default::default());
        assert!(e.is_err());
    }
}
