//! `Truncate`: shortens packets to at most a length, as Click's
//! `elements/standard/truncate.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};

/// The `Truncate` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Truncate",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "limits packet length",
    synopsis: "Truncate(LENGTH [, EXTRA_LENGTH])",
    description: "Shortens packets to at most LENGTH bytes by removing bytes at the end; \
        shorter packets pass unchanged. The `nbytes` handler reads and sets LENGTH while \
        the router runs. bricks has no extra length annotation: EXTRA_LENGTH is accepted \
        for Click's configurations and has no effect.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LENGTH",
            ty: "unsigned",
            default: None,
            doc: "most bytes kept; positional",
        },
        Keyword {
            name: "EXTRA_LENGTH",
            ty: "boolean",
            default: Some("true"),
            doc: "Click updates the extra length annotation; accepted, no effect",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LENGTH 100, LIMIT 1) -> Truncate(60) -> Print -> Discard;",
    see_also: &["Pad", "Resize", "Strip"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let nbytes: u32 = args.read_mp("LENGTH")?;
    let _: Option<bool> = args.read("EXTRA_LENGTH")?;
    Ok(Box::new(Truncate { nbytes }))
}

/// Shortens packets.
#[derive(Debug)]
pub struct Truncate {
    nbytes: u32,
}

impl Truncate {
    #[inline]
    fn apply(&self, b: &mut Batch) {
        let n = self.nbytes as usize;
        for p in b.iter_mut() {
            if p.len() > n {
                p.take_back(p.len() - n);
            }
        }
    }
}

impl Element for Truncate {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "nbytes").then(|| self.nbytes.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "nbytes" => {
                self.nbytes = u32::from_arg(value.trim())
                    .map_err(|why| format!("nbytes takes an unsigned integer: {why}"))?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Truncate has `nbytes`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("nbytes")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn shortens_long_packets_only() {
        let frame = udp(30);
        let mut h = Harness::push(&CLASS, "44", 1, 1);
        h.push_bytes(0, &frame);
        h.push_bytes(0, &frame[..30]);
        assert_eq!(
            h.take_bytes(0),
            vec![frame[..44].to_vec(), frame[..30].to_vec()]
        );
    }

    #[test]
    fn nbytes_handler_reads_and_sets() {
        let mut h = Harness::push(&CLASS, "LENGTH 10, EXTRA_LENGTH false", 1, 1);
        h.write_handler("nbytes", "4").unwrap();
        h.push_bytes(0, &udp(30));
        assert_eq!(h.take(0)[0].len(), 4);
        assert!(h.write_handler("nbytes", "-1").is_err());
        let e = make_element(&CLASS, "60", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("nbytes").as_deref(), Some("60"));
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_err());
    }
}
