//! `CheckPattern`: checks packets made by `SendPattern` (Click's
//! `elements/radio/checkpattern.cc`): each byte i should hold i modulo
//! 256, and the packet should have the length configured.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};

/// The `CheckPattern` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckPattern",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks packets made by SendPattern",
    synopsis: "CheckPattern(LENGTH)",
    description: "Checks each packet against SendPattern's pattern and passes it on \
        unchanged, whatever it finds. A packet whose length is not LENGTH is reported as \
        Click reports it, `CheckPattern: p->length() L _len LENGTH`; the first byte i (of \
        the first LENGTH) that does not hold i modulo 256 is reported as `CheckPattern: \
        i=I pkt XX wanted YY`. Reports go to standard error; the counters count them.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "LENGTH",
        ty: "unsigned",
        default: None,
        doc: "the length packets should have; positional",
    }],
    counters: &[
        ("bad_length", "packets whose length was not LENGTH"),
        ("bad_data", "packets with a byte off the pattern"),
    ],
    example: "SendPattern(64) -> CheckPattern(64) -> RatedUnqueue(10) -> Discard;",
    see_also: &["SendPattern"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let len: u32 = args.read_mp("LENGTH")?;
    Ok(Box::new(CheckPattern {
        len: len as usize,
        bad_length: 0,
        bad_data: 0,
    }))
}

/// Checks the pattern.
#[derive(Debug)]
pub struct CheckPattern {
    len: usize,
    bad_length: u64,
    bad_data: u64,
}

/// What is wrong with `data` against a pattern of `len` bytes, as Click's
/// report lines.
fn check(data: &[u8], len: usize) -> (Option<String>, Option<String>) {
    let length =
        (data.len() != len).then(|| format!("CheckPattern: p->length() {} _len {len}", data.len()));
    let byte = data
        .iter()
        .take(len)
        .enumerate()
        .find(|&(i, &b)| b != i as u8)
        .map(|(i, &b)| format!("CheckPattern: i={i} pkt {b:02x} wanted {:02x}", i as u8));
    (length, byte)
}

impl CheckPattern {
    fn apply(&mut self, b: &Batch) {
        let mut out = String::new();
        for p in b.iter() {
            let (length, byte) = check(p.data(), self.len);
            for line in [&length, &byte].into_iter().flatten() {
                out.push_str(line);
                out.push('\n');
            }
            self.bad_length += u64::from(length.is_some());
            self.bad_data += u64::from(byte.is_some());
        }
        if !out.is_empty() {
            eprint!("{out}");
        }
    }
}

impl Element for CheckPattern {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bad_length", self.bad_length);
        s.counter("bad_data", self.bad_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 256) as u8).collect()
    }

    #[test]
    fn reports_as_click() {
        assert_eq!(check(&pattern(300), 300), (None, None));
        let mut bad = pattern(300);
        bad[257] = 0x7f;
        assert_eq!(
            check(&bad, 300),
            (None, Some("CheckPattern: i=257 pkt 7f wanted 01".into()))
        );
        assert_eq!(
            check(&pattern(10), 12),
            (Some("CheckPattern: p->length() 10 _len 12".into()), None)
        );
        // Only the first LENGTH bytes are checked.
        let mut long = pattern(12);
        long[11] = 0;
        assert_eq!(
            check(&long, 10).1,
            None,
            "bytes past LENGTH are not checked"
        );
    }

    #[test]
    fn passes_everything_and_counts() {
        let mut h = Harness::push(&CLASS, "8", 1, 1);
        h.push_bytes(0, &pattern(8));
        let mut bad = pattern(8);
        bad[0] = 1;
        h.push_bytes(0, &bad);
        h.push_bytes(0, &pattern(4));
        h.push_bytes(0, &[]);
        assert_eq!(h.take(0).len(), 4);
        let s = h.stats();
        assert_eq!(s.get("bad_length"), Some(2));
        assert_eq!(s.get("bad_data"), Some(1));
    }
}
