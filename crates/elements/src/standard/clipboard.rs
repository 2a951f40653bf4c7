//! `Clipboard`: copies byte ranges out of the packets of one path into the
//! packets of another (Click's `elements/standard/clipboard.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `Clipboard` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Clipboard",
    ports: "2/2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "copies data from one packet to another",
    synopsis: "Clipboard(RANGE_1, ..., RANGE_N)",
    description: "Each RANGE is `OFFSET/LENGTH`, a byte range of the packet data. A packet \
        arriving on input 0 has its ranges copied into the clipboard and leaves by output 0 \
        unchanged; a packet arriving on input 1 gets the clipboard's bytes written over the \
        same ranges and leaves by output 1, so the data of one packet can be pasted into \
        any number of others. Each input/output pair works in push or pull. A packet on \
        input 1 shorter than the end of the furthest range passes unchanged (Click's rule). \
        Where Click reads past the end of a short packet on input 0, bricks leaves the \
        clipboard as it was and counts the packet in `short_copies`; before any copy the \
        clipboard holds zeros (Click's holds undefined bytes).",
    ports: "two inputs, two outputs, input i to output i, push or pull",
    keywords: &[],
    counters: &[
        ("copies", "packets whose bytes went into the clipboard"),
        (
            "short_copies",
            "packets on input 0 too short for the ranges, clipboard unchanged",
        ),
        ("pastes", "packets the clipboard was written into"),
    ],
    example: "c :: Clipboard(0/2); InfiniteSource(DATA \"ab\", LIMIT 1) -> [0]c[0] -> Discard; \
        InfiniteSource(DATA \"xyz\", LIMIT 1) -> [1]c[1] -> Print(CONTENTS ASCII) -> Discard;",
    see_also: &["Strip", "Unstrip"],
};

/// The most bytes the ranges may reach into a packet: no frame is longer.
const MAX_END: usize = 65535;

/// One `OFFSET/LENGTH` range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    offset: usize,
    length: usize,
}

fn parse_range(i: usize, text: &str) -> Result<Range, String> {
    let text = text.trim();
    let Some((o, l)) = text
        .split_once('/')
        .filter(|(o, l)| !o.is_empty() && !l.is_empty())
    else {
        return Err(format!("range {i}: expected '/' between offset and length"));
    };
    let (Ok(offset), Ok(length)) = (o.trim().parse::<usize>(), l.trim().parse::<usize>()) else {
        return Err(format!("range {i}: invalid offset or length"));
    };
    if offset + length > MAX_END {
        return Err(format!(
            "range {i}: {offset}/{length} ends past byte {MAX_END}"
        ));
    }
    Ok(Range { offset, length })
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut ranges = Vec::new();
    for (i, (text, span)) in args.rest().into_iter().enumerate() {
        ranges.push(parse_range(i, text).map_err(|e| ArgError::at(span, e))?);
    }
    let size: usize = ranges.iter().map(|r| r.length).sum();
    if size > MAX_END {
        return Err(ArgError::new(format!(
            "the ranges hold {size} bytes; at most {MAX_END}"
        )));
    }
    let min_len = ranges
        .iter()
        .map(|r| r.offset + r.length)
        .max()
        .unwrap_or(0);
    Ok(Box::new(Clipboard {
        ranges,
        clipboard: vec![0; size],
        min_len,
        copies: 0,
        short_copies: 0,
        pastes: 0,
    }))
}

/// Copies byte ranges from packets on input 0 to packets on input 1.
#[derive(Debug)]
pub struct Clipboard {
    ranges: Vec<Range>,
    clipboard: Vec<u8>,
    /// The end of the furthest range.
    min_len: usize,
    copies: u64,
    short_copies: u64,
    pastes: u64,
}

impl Clipboard {
    fn copy(&mut self, p: &Packet) {
        let data = p.data();
        if data.len() < self.min_len {
            self.short_copies += 1;
            return;
        }
        let mut at = 0;
        for r in &self.ranges {
            self.clipboard[at..at + r.length].copy_from_slice(&data[r.offset..r.offset + r.length]);
            at += r.length;
        }
        self.copies += 1;
    }

    fn paste(&mut self, p: &mut Packet) {
        if p.len() < self.min_len {
            return;
        }
        let data = p.data_mut();
        let mut at = 0;
        for r in &self.ranges {
            data[r.offset..r.offset + r.length].copy_from_slice(&self.clipboard[at..at + r.length]);
            at += r.length;
        }
        self.pastes += 1;
    }

    fn handle<'a>(&mut self, port: usize, packets: impl Iterator<Item = &'a mut Packet>) {
        for p in packets {
            if port == 0 {
                self.copy(p);
            } else {
                self.paste(p);
            }
        }
    }
}

impl Element for Clipboard {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.handle(port, batch.iter_mut());
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let before = out.len();
        cx.pull(port, out, max);
        self.handle(port, out.iter_mut().skip(before));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("copies", self.copies);
        s.counter("short_copies", self.short_copies);
        s.counter("pastes", self.pastes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn pastes_the_ranges_of_the_last_copied_packet() {
        let mut h = Harness::push(&CLASS, "0/1, 2/1", 2, 2);
        h.push_bytes(0, b"Sxmple");
        assert_eq!(h.take_bytes(0), vec![b"Sxmple".to_vec()]);
        h.push_bytes(1, b".a. is a cat");
        assert_eq!(h.take_bytes(1), vec![b"Sam is a cat".to_vec()]);
        // Too short for the ranges: unchanged both ways.
        h.push_bytes(0, b"D");
        h.push_bytes(1, b"..");
        assert_eq!(h.take_bytes(1), vec![b"..".to_vec()]);
        let s = h.stats();
        assert_eq!(s.get("copies"), Some(1));
        assert_eq!(s.get("short_copies"), Some(1));
        assert_eq!(s.get("pastes"), Some(1));
    }

    #[test]
    fn bad_ranges_are_refused() {
        for (args, want) in [
            ("3", "expected '/'"),
            ("/3", "expected '/'"),
            ("a/3", "invalid offset"),
            ("65535/1", "ends past"),
        ] {
            let e = bricks_runtime::testing::make_element(&CLASS, args, &Default::default());
            assert!(e.unwrap_err().contains(want), "{args}");
        }
    }
}
