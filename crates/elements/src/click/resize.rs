//! `Resize`: adds or removes bytes at both ends of packets, as Click's
//! `elements/standard/resize.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};

/// The `Resize` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Resize",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "adjusts packet length",
    synopsis: "Resize(HEAD, TAIL)",
    description: "Adds HEAD bytes in front of each packet and TAIL bytes at its end; a \
        negative number removes bytes instead (at most the whole packet). Bytes added in \
        front are whatever the headroom held (Click leaves them uninitialised too); bytes \
        added at the end are zero. A packet without the room is dropped and counted. The \
        `head` and `tail` handlers read and set both numbers while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "HEAD",
            ty: "integer",
            default: Some("0"),
            doc: "bytes added (removed if negative) in front; positional",
        },
        Keyword {
            name: "TAIL",
            ty: "integer",
            default: Some("0"),
            doc: "bytes added (removed if negative) at the end; positional",
        },
    ],
    counters: &[(
        "drops",
        "packets without the headroom or tailroom asked for",
    )],
    example: "InfiniteSource(LENGTH 20, LIMIT 1) -> Resize(HEAD -4, TAIL 8) -> Print -> Discard;",
    see_also: &["Strip", "Unstrip", "Truncate", "Pad"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let head: i64 = args.read_p("HEAD")?.unwrap_or(0);
    let tail: i64 = args.read_p("TAIL")?.unwrap_or(0);
    Ok(Box::new(Resize {
        head,
        tail,
        drops: 0,
    }))
}

/// Adds or removes bytes at both ends.
#[derive(Debug)]
pub struct Resize {
    head: i64,
    tail: i64,
    drops: u64,
}

fn clamp(n: i64) -> usize {
    usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX)
}

impl Resize {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let (head, tail) = (self.head, self.tail);
        let mut drops = 0;
        b.retain(|p| {
            let ok = (if head > 0 {
                p.push_front(clamp(head)).is_ok()
            } else {
                p.pull_front(clamp(head));
                true
            }) && (if tail > 0 {
                p.put_back(clamp(tail)).is_ok()
            } else {
                p.take_back(clamp(tail));
                true
            });
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for Resize {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "head" => Some(self.head.to_string()),
            "tail" => Some(self.tail.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let v = || i64::from_arg(value.trim()).map_err(|why| format!("{handler}: {why}"));
        match handler {
            "head" => self.head = v()?,
            "tail" => self.tail = v()?,
            _ => return Err(format!("no write handler `{handler}` (head, tail)")),
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("head"), Handler::rw("tail")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn click_resize_test_sequence() {
        // Click's test/standard/Resize-01: ABCD, HEAD -2, then +4/-2, then
        // HEAD -8 empties the packet.
        let mut h = Harness::push(&CLASS, "HEAD -2", 1, 1);
        h.push_bytes(0, b"ABCD");
        let p = h.take(0);
        assert_eq!(p[0].data(), b"CD");
        let mut h2 = Harness::push(&CLASS, "+4, -2", 1, 1);
        h2.push_packets(0, p);
        let p = h2.take(0);
        assert_eq!(p[0].len(), 4);
        assert_eq!(&p[0].data()[2..], b"AB");
        let mut h3 = Harness::push(&CLASS, "HEAD -8", 1, 1);
        h3.push_packets(0, p);
        assert!(h3.take(0)[0].is_empty());
    }

    #[test]
    fn no_room_drops_and_handlers_change_sizes() {
        let mut h = Harness::push(&CLASS, "HEAD 100000", 1, 1);
        h.push_bytes(0, b"ABCD");
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        h.write_handler("head", "0").unwrap();
        h.write_handler("tail", "2").unwrap();
        h.push_bytes(0, b"ABCD");
        assert_eq!(h.take_bytes(0), vec![b"ABCD\0\0".to_vec()]);
        assert!(h.write_handler("tail", "x").is_err());
        let e = make_element(&CLASS, "1, -3", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("tail").as_deref(), Some("-3"));
        assert_eq!(e.read_handler("head").as_deref(), Some("1"));
    }
}
