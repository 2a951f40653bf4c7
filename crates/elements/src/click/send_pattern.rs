//! `SendPattern`: a pull source of packets filled with a counting byte
//! pattern (Click's `elements/radio/sendpattern.cc`), for finding bit
//! errors on a link with `CheckPattern` at the other end.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::{Annotations, MAX_FRAME};

/// The `SendPattern` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SendPattern",
    ports: "0/1",
    processing: "/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "makes packets of a repeating pattern when pulled",
    synopsis: "SendPattern(LENGTH)",
    description: "Answers every pull with a packet of LENGTH bytes, byte i holding i modulo \
        256 (00 01 02 ... ff 00 01 ...). Meant to be checked by CheckPattern after a link, \
        to find bit errors. It never runs out: whatever pulls from it gets a packet each \
        time. LENGTH is at most 2048, bricks' largest frame.",
    ports: "no inputs; one pull output",
    keywords: &[Keyword {
        name: "LENGTH",
        ty: "unsigned, 0 to 2048",
        default: None,
        doc: "bytes in each packet; positional",
    }],
    counters: &[("count", "packets made")],
    example: "SendPattern(64) -> CheckPattern(64) -> RatedUnqueue(10) -> Discard;",
    see_also: &["CheckPattern", "RatedUnqueue"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let len: usize = args.read_mp("LENGTH")?;
    if len > MAX_FRAME {
        return Err(ArgError::new(format!(
            "LENGTH {len} is more than the largest frame, {MAX_FRAME}"
        )));
    }
    let pattern: Vec<u8> = (0..len).map(|i| i as u8).collect();
    Ok(Box::new(SendPattern { pattern, count: 0 }))
}

/// Makes pattern packets.
#[derive(Debug)]
pub struct SendPattern {
    pattern: Vec<u8>,
    count: u64,
}

impl Element for SendPattern {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let before = out.len();
        Packet::alloc_copies(out, max, Annotations::default(), &self.pattern);
        self.count += (out.len() - before) as u64;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    fn pull_ports() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![Processing::Pull],
        }
    }

    #[test]
    fn pattern_wraps_at_256() {
        let mut h = Harness::new(&CLASS, "300", pull_ports());
        let out = h.pull(0, 3);
        assert_eq!(out.len(), 3);
        for p in &out {
            let d = p.data();
            assert_eq!(d.len(), 300);
            assert_eq!(d[..4], [0, 1, 2, 3]);
            assert_eq!(d[255..258], [255, 0, 1]);
            assert_eq!(d[299], 43);
        }
        assert_eq!(h.stats().get("count"), Some(3));
    }

    #[test]
    fn lengths() {
        let mut h = Harness::new(&CLASS, "0", pull_ports());
        assert!(h.pull(0, 1)[0].is_empty());
        let m = |a: &str| make_element(&CLASS, a, &pull_ports());
        assert!(m("2048").is_ok());
        assert!(m("2049").is_err());
        assert!(m("").is_err());
        assert!(m("-1").is_err());
    }
}
