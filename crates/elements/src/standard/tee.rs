//! `Tee`: copies each packet to every output.

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `Tee` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Tee",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "copies packets to every output",
    synopsis: "Tee([N])",
    description: "Sends a copy of each packet to outputs 0 to N-2, in that order, then the \
        packet itself to the last output, as Click's. N, if given, must equal the number of \
        connected outputs (Click's check).",
    ports: "one push input; one or more push outputs",
    keywords: &[],
    counters: &[],
    example: "t :: Tee(2); InfiniteSource(LIMIT 1) -> t; t[0] -> Discard; t[1] -> Discard;",
    see_also: &["PaintTee"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let n: Option<usize> = args.read_p("N")?;
    if let Some(n) = n {
        if n != ports.noutputs() {
            return Err(ArgError::new(format!(
                "Tee({n}) has {} connected output{}",
                ports.noutputs(),
                if ports.noutputs() == 1 { "" } else { "s" }
            ))
            .with_help("connect outputs 0 to N-1, or drop the argument"));
        }
    }
    Ok(Box::new(Tee {
        outputs: ports.noutputs(),
    }))
}

/// Copies packets to every output.
#[derive(Debug)]
pub struct Tee {
    outputs: usize,
}

impl Element for Tee {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // Click's order: copies to outputs 0 to N-2, then the originals to
        // the last output, so downstream sees output 0's packets first.
        let last = self.outputs.saturating_sub(1);
        for port in 0..last {
            let mut copies = Batch::new();
            for p in batch.iter() {
                let _ = copies.push(p.duplicate());
            }
            cx.push(port, &mut copies);
        }
        cx.push(last, batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn copies_to_all() {
        let mut h = Harness::push(&CLASS, "3", 1, 3);
        h.push_bytes(0, &[1, 2]);
        for port in 0..3 {
            assert_eq!(h.take_bytes(port), vec![vec![1, 2]]);
        }
    }

    #[test]
    fn n_must_match_outputs() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; 2],
        };
        let e = bricks_runtime::testing::make_element(&CLASS, "3", &ports);
        assert!(e.unwrap_err().contains("Tee(3) has 2 connected outputs"));
    }
}
