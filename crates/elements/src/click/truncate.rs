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
        the router runs. With EXTRA_LENGTH true, the bytes removed are added to the \
        packet's extra length annotation, so the packet still stands for its whole length \
        (`Pad` without a length puts them back as zeros).",
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
            doc: "add the bytes removed to the extra length annotation",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LENGTH 100, LIMIT 1) -> Truncate(60) -> Print -> Discard;",
    see_also: &["Pad", "Resize", "Strip"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let nbytes: u32 = args.read_mp("LENGTH")?;
    let extra_length = args.read("EXTRA_LENGTH")?.unwrap_or(true);
    Ok(Box::new(Truncate {
        nbytes,
        extra_length,
    }))
}

/// Shortens packets.
#[derive(Debug)]
pub struct Truncate {
    nbytes: u32,
    extra_length: bool,
}

impl Truncate {
    #[inline]
    fn apply(&self, b: &mut Batch) {
        let n = self.nbytes as usize;
        for p in b.iter_mut() {
            if p.len() > n {
                let cut = p.len() - n;
                if self.extra_length {
                    let a = p.anno_mut();
                    a.extra_length = a.extra_length.saturating_add(cut as u32);
                }
                p.take_back(cut);
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
        let out = h.take(0);
        assert_eq!(out[0].data(), &frame[..44]);
        assert_eq!(out[1].data(), &frame[..30]);
        // The bytes removed stay counted.
        assert_eq!(out[0].anno().extra_length, frame.len() as u32 - 44);
        assert_eq!(out[1].anno().extra_length, 0);
    }

    #[test]
    fn nbytes_handler_reads_and_sets() {
        let mut h = Harness::push(&CLASS, "LENGTH 10, EXTRA_LENGTH false", 1, 1);
        h.write_handler("nbytes", "4").unwrap();
        h.push_bytes(0, &udp(30));
        let out = h.take(0);
        assert_eq!(out[0].len(), 4);
        assert_eq!(out[0].anno().extra_length, 0);
        assert!(h.write_handler("nbytes", "-1").is_err());
        let e = make_element(&CLASS, "60", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("nbytes").as_deref(), Some("60"));
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_err());
    }
}
