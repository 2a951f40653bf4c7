//! `Reframe`: rebuilds frames from a stream cut into arbitrary pieces
//! (Click's `elements/local/reframe.cc`), such as the packets a TCP
//! `Socket` hands out: each frame's length is read from a field in its
//! first bytes (an IP header's total length, RFC 791 section 3.1), or is
//! fixed.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
    Processing, Stats,
};
use bricks_packet::MAX_FRAME;

/// The `Reframe` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Reframe",
    ports: "1/1",
    processing: "h/a",
    manual: &MANUAL,
    make,
};

/// Most stream bytes held for a pull output nobody pulls: 64 frames of
/// the largest size. A pushed piece that would pass it is dropped.
pub const MAX_HELD: usize = 64 * MAX_FRAME;

static MANUAL: Manual = Manual {
    summary: "reframes a fragmented stream of packets",
    synopsis: "Reframe([FOFF, FLEN, NTOH, MUL, ALIGN, ADD])",
    description: "Takes pushed pieces of a byte stream (their boundaries anywhere) and \
        emits the frames the stream holds, each as one packet, as soon as it is whole. A \
        frame's length is read from the FLEN-byte field (1, 2 or 4 bytes) FOFF bytes into \
        it, in network byte order with NTOH (else little-endian, the host's), and counts \
        the bytes from the frame's start, the field included: the frame is MUL times the \
        field, rounded up to a multiple of ALIGN, plus ADD bytes. With FLEN 0 every frame \
        is ADD bytes. The defaults read an IP packet's total length; `Reframe(FOFF 16, \
        ADD 14)` reads IP in Ethernet, `Reframe(FLEN 0, ADD 100)` cuts 100-byte frames. \
        New packets carry no annotations.\n\n\
        A length that makes a frame shorter than FOFF + FLEN (the frame would not hold its \
        own length: an IP total length of 0) or longer than 2048 bytes (bricks' largest \
        frame) means the stream is out of step: the bytes held are discarded, counted in \
        `errors`, and framing starts again with the next piece. Click would wait for ever \
        on a long length, and loop without end on a zero one. Its output may be pulled: \
        then frames wait until pulled, and a piece that would make more than 131072 bytes \
        wait is dropped and counted. Unknown arguments are refused (Click ignores them).",
    ports: "one push input; one output, push or pull",
    keywords: &[
        Keyword {
            name: "FOFF",
            ty: "unsigned",
            default: Some("2"),
            doc: "where the length field is in a frame",
        },
        Keyword {
            name: "FLEN",
            ty: "0, 1, 2 or 4",
            default: Some("2"),
            doc: "the length field's size; 0: frames are ADD bytes",
        },
        Keyword {
            name: "NTOH",
            ty: "boolean",
            default: Some("true"),
            doc: "the field is in network byte order",
        },
        Keyword {
            name: "MUL",
            ty: "unsigned, at least 1",
            default: Some("1"),
            doc: "bytes per unit of the field",
        },
        Keyword {
            name: "ALIGN",
            ty: "unsigned, at least 1",
            default: Some("1"),
            doc: "frames start and end at multiples of this in the stream",
        },
        Keyword {
            name: "ADD",
            ty: "unsigned",
            default: Some("0"),
            doc: "bytes added to each frame's length",
        },
    ],
    counters: &[
        ("frames", "frames emitted"),
        (
            "errors",
            "times the stream was out of step and its held bytes discarded",
        ),
        (
            "drops",
            "pieces dropped because too much waited to be pulled",
        ),
    ],
    example: "InfiniteSource(DATA \\<45000018 00000000 40110000 0a000001 0a000002 \
        0102>, LIMIT 3) -> Reframe -> Print -> Discard;",
    see_also: &["Socket", "Strip"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let foff: u32 = args.read("FOFF")?.unwrap_or(2);
    let flen: u32 = args.read("FLEN")?.unwrap_or(2);
    let ntoh = args.read("NTOH")?.unwrap_or(true);
    let mul: u32 = args.read("MUL")?.unwrap_or(1);
    let align: u32 = args.read("ALIGN")?.unwrap_or(1);
    let add: u32 = args.read("ADD")?.unwrap_or(0);
    if !matches!(flen, 0 | 1 | 2 | 4) {
        return Err(ArgError::new(format!(
            "invalid field length {flen} (valid field lengths are 0, 1, 2, and 4 bytes)"
        )));
    }
    if flen == 0 && !(1..=MAX_FRAME as u32).contains(&add) {
        return Err(ArgError::new(format!(
            "with FLEN 0, ADD is the frame length: 1 to {MAX_FRAME}, not {add}"
        )));
    }
    if flen > 0 && foff as usize + flen as usize > MAX_FRAME {
        return Err(ArgError::new(format!(
            "FOFF {foff}: the length field must be within the first {MAX_FRAME} bytes"
        )));
    }
    if mul == 0 || align == 0 {
        return Err(ArgError::new("MUL and ALIGN must be at least 1"));
    }
    Ok(Box::new(Reframe {
        foff: foff as usize,
        flen: flen as usize,
        ntoh,
        mul: u64::from(mul),
        align: u64::from(align),
        add: u64::from(add),
        push_out: ports.outputs.first() != Some(&Processing::Pull),
        buf: Vec::new(),
        start: 0,
        frames: 0,
        errors: 0,
        drops: 0,
    }))
}

/// Reframes a stream.
#[derive(Debug)]
pub struct Reframe {
    foff: usize,
    flen: usize,
    ntoh: bool,
    mul: u64,
    align: u64,
    add: u64,
    /// The output is push: frames leave as soon as they are whole.
    push_out: bool,
    /// Stream bytes held; those before `start` are already emitted.
    buf: Vec<u8>,
    start: usize,
    frames: u64,
    errors: u64,
    drops: u64,
}

/// What the held bytes allow.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Not enough bytes yet.
    Wait,
    /// A frame of this many bytes is whole.
    Frame(usize),
    /// The length read cannot be a frame's.
    OutOfStep,
}

impl Reframe {
    /// The next frame's length as the held bytes `held` say, if they say.
    fn need(&self, held: &[u8]) -> Option<u64> {
        if self.flen == 0 {
            return Some(self.add);
        }
        let field = held.get(self.foff..self.foff + self.flen)?;
        let v = match (self.flen, self.ntoh) {
            (1, _) => u64::from(field[0]),
            (2, true) => u64::from(u16::from_be_bytes([field[0], field[1]])),
            (2, false) => u64::from(u16::from_le_bytes([field[0], field[1]])),
            (_, true) => u64::from(u32::from_be_bytes([field[0], field[1], field[2], field[3]])),
            (_, false) => u64::from(u32::from_le_bytes([field[0], field[1], field[2], field[3]])),
        };
        // At most 2^32 * 2^32: no overflow before the rounding.
        let n = v.saturating_mul(self.mul);
        Some(
            n.div_ceil(self.align)
                .saturating_mul(self.align)
                .saturating_add(self.add),
        )
    }

    fn next(&self) -> Next {
        let held = &self.buf[self.start..];
        let Some(need) = self.need(held) else {
            return Next::Wait;
        };
        if need < (self.foff + self.flen) as u64 || need > MAX_FRAME as u64 {
            return Next::OutOfStep;
        }
        let need = need as usize;
        if held.len() >= need {
            Next::Frame(need)
        } else {
            Next::Wait
        }
    }

    /// Takes up to `max` whole frames into `out`.
    fn take_frames(&mut self, out: &mut Batch, max: usize) {
        for _ in 0..max {
            if out.is_full() {
                break;
            }
            match self.next() {
                Next::Wait => break,
                Next::Frame(n) => {
                    let frame = &self.buf[self.start..self.start + n];
                    if let Ok(p) = Packet::from_slice(frame) {
                        let _ = out.push(p);
                        self.frames += 1;
                    }
                    self.start += n;
                }
                Next::OutOfStep => {
                    self.errors += 1;
                    self.start = self.buf.len();
                }
            }
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Appends a piece of the stream, dropping it when too much waits.
    fn append(&mut self, piece: &[u8]) -> bool {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.len() - self.start + piece.len() > MAX_HELD {
            return false;
        }
        self.buf.extend_from_slice(piece);
        true
    }
}

impl Element for Reframe {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut out = Batch::new();
        for p in batch.drain() {
            if !self.append(p.data()) {
                self.drops += 1;
                continue;
            }
            if self.push_out {
                // Frames leave as they are found; a full batch goes on
                // before more are taken.
                loop {
                    self.take_frames(&mut out, usize::MAX);
                    if !out.is_full() {
                        break;
                    }
                    cx.push(0, &mut out);
                }
            }
        }
        cx.push(0, &mut out);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        self.take_frames(out, max);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        Some(matches!(self.next(), Next::Frame(_) | Next::OutOfStep))
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("frames", self.frames);
        s.counter("errors", self.errors);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// An IPv4 header of total length `len`, then `len - 20` bytes of `fill`.
    fn ip(len: u16, fill: u8) -> Vec<u8> {
        let mut v = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        v[2..4].copy_from_slice(&len.to_be_bytes());
        v.resize(usize::from(len), fill);
        v
    }

    /// Pushes `stream` cut at `cuts`, returns the frames emitted.
    fn feed(args: &str, stream: &[u8], cuts: &[usize]) -> (Vec<Vec<u8>>, Harness) {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        let mut at = 0;
        for &c in cuts.iter().chain([stream.len()].iter()) {
            h.push_bytes(0, &stream[at..c]);
            at = c;
        }
        (h.take_bytes(0), h)
    }

    #[test]
    fn ip_packets_from_any_cuts() {
        let (a, b, c) = (ip(28, 0xaa), ip(20, 0xbb), ip(1500, 0xcc));
        let stream = [a.clone(), b.clone(), c.clone()].concat();
        for cuts in [
            vec![],
            vec![1],
            vec![3, 4, 27, 28, 29, 48, 49],
            (1..stream.len()).collect::<Vec<_>>(),
        ] {
            let (out, _) = feed("", &stream, &cuts);
            assert_eq!(out, [a.clone(), b.clone(), c.clone()], "{cuts:?}");
        }
    }

    #[test]
    fn ip_in_ethernet() {
        let mut frame = vec![0x11; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(&ip(40, 0x22));
        let stream = [frame.clone(), frame.clone()].concat();
        let (out, _) = feed("FOFF 16, ADD 14", &stream, &[15, 70]);
        assert_eq!(out, [frame.clone(), frame]);
    }

    #[test]
    fn fixed_size_frames() {
        let stream: Vec<u8> = (0..250u8).collect();
        let (out, _) = feed("FLEN 0, ADD 100", &stream, &[30, 150]);
        assert_eq!(out, [stream[..100].to_vec(), stream[100..200].to_vec()]);
    }

    #[test]
    fn little_endian_units_and_alignment() {
        // A one-byte length in 4-byte units at offset 0, frames aligned to
        // 8: a length of 3 units (12 bytes) makes a 16-byte frame.
        let mut f1 = vec![3u8];
        f1.resize(16, 0xee);
        let mut f2 = vec![2u8];
        f2.resize(8, 0xdd);
        let stream = [f1.clone(), f2.clone()].concat();
        let (out, _) = feed("FOFF 0, FLEN 1, MUL 4, ALIGN 8", &stream, &[5]);
        assert_eq!(out, [f1, f2]);
        // Two bytes, little-endian.
        let mut f = vec![0, 10, 0];
        f.resize(10, 1);
        let (out, _) = feed("FOFF 1, FLEN 2, NTOH false", &f, &[]);
        assert_eq!(out, [f]);
        // Four bytes, network order.
        let mut f = vec![0, 0, 0, 9];
        f.resize(9, 1);
        let (out, _) = feed("FOFF 0, FLEN 4", &f, &[2]);
        assert_eq!(out, [f]);
    }

    #[test]
    fn out_of_step_streams_are_discarded_not_looped_on() {
        // A zero length, then a length past the largest frame: each time
        // the held bytes go, and the next piece starts afresh.
        let mut zero = ip(20, 0);
        zero[2..4].copy_from_slice(&[0, 0]);
        let mut huge = ip(20, 0);
        huge[2..4].copy_from_slice(&3000u16.to_be_bytes());
        let good = ip(24, 0x77);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &[zero.clone(), good.clone()].concat());
        h.push_bytes(0, &huge);
        h.push_bytes(0, &good);
        assert_eq!(h.take_bytes(0), [good]);
        let s = h.stats();
        assert_eq!(s.get("errors"), Some(2));
        assert_eq!(s.get("frames"), Some(1));
    }

    #[test]
    fn pulled_frames_wait_within_a_bound() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "FLEN 0, ADD 2048", ports);
        let piece = vec![5u8; 2048];
        for _ in 0..70 {
            h.push_bytes(0, &piece);
        }
        assert_eq!(h.stats().get("drops"), Some(6));
        assert_eq!(h.pull(0, 3).len(), 3);
        assert_eq!(h.pull(0, 100).len(), 61);
        assert!(h.pull(0, 100).is_empty());
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("FLEN 3").is_err());
        assert!(m("FLEN 0").is_err());
        assert!(m("FLEN 0, ADD 2049").is_err());
        assert!(m("ALIGN 0").is_err());
        assert!(m("MUL 0").is_err());
        assert!(m("FOFF 2047").is_err());
        assert!(m("FOFF 16, FLEN 2, NTOH true, MUL 1, ALIGN 1, ADD 14").is_ok());
        assert!(m("2").is_err());
    }

    /// Random streams cut at random, under several framings: no panic,
    /// every frame within bounds, never more bytes out than in, and the
    /// bytes held stay bounded.
    #[test]
    fn random_streams() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || crate::rng::xorshift64star(&mut state);
        for args in [
            "",
            "FOFF 16, ADD 14",
            "FOFF 0, FLEN 4, NTOH false, MUL 3, ALIGN 7",
            "FOFF 1, FLEN 1",
        ] {
            let mut h = Harness::push(&CLASS, args, 1, 1);
            let mut sent = 0usize;
            for _ in 0..2000 {
                let n = (next() % 200) as usize;
                let piece: Vec<u8> = (0..n).map(|_| (next() >> 56) as u8).collect();
                sent += n;
                h.push_bytes(0, &piece);
            }
            let out = h.take_bytes(0);
            let got: usize = out.iter().map(Vec::len).sum();
            assert!(got <= sent, "{args}");
            assert!(
                out.iter().all(|f| f.len() <= MAX_FRAME && !f.is_empty()),
                "{args}"
            );
        }
    }
}
