//! `RandomBitErrors`: changes each bit of each packet with probability P,
//! as Click's `elements/standard/randomerror.cc` does, to model a noisy
//! link.
//!
//! The work per packet is one draw per byte, not one per bit: a byte gets
//! `k` errors with the binomial probability `C(8,k) P^k (1-P)^(8-k)`,
//! computed once in Click's 28-bit fixed point (its `set_bit_error`), and
//! one of the `C(8,k)` masks with `k` bits set is then drawn. The cost is
//! bounded by the largest frame.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo,
};

/// The `RandomBitErrors` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RandomBitErrors",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "changes packet data with some probability",
    synopsis: "RandomBitErrors(P [, KIND, ACTIVE, SEED])",
    description: "Changes each bit of each packet with probability P, independently. KIND \
        says how: `flip` (the default) inverts the bit, `set` sets it to 1, `clear` sets it \
        to 0 (a bit already so stays so). While inactive, packets pass unchanged. P is kept \
        as Click keeps it, a fraction of 2^28, and each byte draws its number of errors \
        from Click's per-byte table, then which bits, uniformly among the patterns with \
        that many bits (Click's pattern table repeats a few patterns of 4 and 5 bits and \
        lacks others). Draws come from a xorshift64* generator seeded from SEED and the \
        worker's index, so a run repeats (Click draws from `click_random`). Handlers: \
        `p_bit_error` and `error_kind` read and write P and KIND (the `config` handler \
        shows the new value), `active` reads and writes whether the element changes \
        anything. Checksums are not fixed: a changed packet looks damaged to a checker.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "P",
            ty: "real number, 0 to 1",
            default: None,
            doc: "probability that a bit is changed; positional",
        },
        Keyword {
            name: "KIND",
            ty: "flip, set or clear",
            default: Some("flip"),
            doc: "how a bit is changed; positional",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "whether bits are changed at all; positional",
        },
        Keyword {
            name: "SEED",
            ty: "unsigned integer",
            default: Some("1"),
            doc: "seed of the draws (bricks only)",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 4) -> RandomBitErrors(0.001) -> Discard;",
    see_also: &["RandomSample", "RandomSwitch"],
};

/// 1 in Click's 28-bit fixed point.
const ONE: u32 = 1 << 28;

/// How a bit is changed (Click's `_kind`: 0 clear, 1 set, 2 flip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Clear,
    Set,
    Flip,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Clear => "clear",
            Kind::Set => "set",
            Kind::Flip => "flip",
        }
    }
}

impl FromArg for Kind {
    const TYPE: &'static str = "flip, set or clear";
    fn from_arg(text: &str) -> Result<Self, String> {
        match String::from_arg(text.trim())?.as_str() {
            "flip" | "" => Ok(Kind::Flip),
            "set" => Ok(Kind::Set),
            "clear" => Ok(Kind::Clear),
            other => Err(format!(
                "bad action `{other}` (must be `set`, `clear`, or `flip`)"
            )),
        }
    }
}

/// P as Click's `FixedPointArg(28)` reads it, at most 1.
fn parse_p(text: &str) -> Result<u32, String> {
    let v = f64::from_arg(text.trim())?;
    let fixed = (v * f64::from(ONE)).round();
    if !(0.0..=f64::from(ONE)).contains(&fixed) {
        return Err(format!(
            "bit error probability must be between 0 and 1, found {}",
            text.trim()
        ));
    }
    Ok(fixed as u32)
}

/// Click's `cp_unparse_real2(p, 28)`: Knuth's `print_scaled`, the
/// shortest decimal that reads back as the same fixed-point value.
fn unparse_p(p: u32) -> String {
    super::counter::unparse_real2(i64::from(p), 28)
}

/// Click's `set_bit_error`: `table[k]` is the probability, out of 2^28,
/// that a byte has at most `k` errors; `table[8]` exceeds every draw.
fn error_table(p: u32) -> [u32; 9] {
    const CHOOSE: [u64; 8] = [1, 8, 28, 56, 70, 56, 28, 8];
    let p = u64::from(p);
    let q = u64::from(ONE) - p;
    let mut table = [0u32; 9];
    let mut accum: u64 = 0;
    for (k, slot) in table.iter_mut().take(8).enumerate() {
        // P^k (1-P)^(8-k) C(8,k) with 35 bits of fraction, as Click.
        let mut x: u64 = 1 << 35;
        for _ in 0..k {
            x = (x * p) >> 28;
        }
        for _ in k..8 {
            x = (x * q) >> 28;
        }
        accum += x * CHOOSE[k];
        *slot = ((accum >> 7) & 0x1fff_ffff) as u32 + u32::from(accum & 0x7f >= 0x40);
    }
    table[8] = ONE;
    table
}

/// Every byte, ordered by how many bits it has set: the patterns with
/// `k` bits are `PATTERNS[START[k]..START[k + 1]]`.
const PATTERNS: [u8; 256] = {
    let mut out = [0u8; 256];
    let mut n = 0;
    let mut k = 0;
    while k <= 8 {
        let mut b = 0;
        while b < 256 {
            if (b as u8).count_ones() == k {
                out[n] = b as u8;
                n += 1;
            }
            b += 1;
        }
        k += 1;
    }
    out
};
const START: [usize; 10] = [0, 1, 9, 37, 93, 163, 219, 247, 255, 256];

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let p: String = args.read_mp("P")?;
    let kind: Kind = args.read_p("KIND")?.unwrap_or(Kind::Flip);
    let active = args.read_p("ACTIVE")?.unwrap_or(true);
    let seed: u64 = args.read("SEED")?.unwrap_or(1);
    let p = parse_p(&p).map_err(|e| ArgError::new(format!("P: {e}")))?;
    Ok(Box::new(RandomBitErrors {
        p,
        table: error_table(p),
        kind,
        active,
        seed,
        rng: rng_state(seed, 0),
    }))
}

/// A nonzero xorshift state for `seed` on `worker` (SplitMix64's mix).
fn rng_state(seed: u64, worker: usize) -> u64 {
    let mut z = seed
        .wrapping_add((worker as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// Changes bits at random.
#[derive(Debug)]
pub struct RandomBitErrors {
    /// P out of 2^28.
    p: u32,
    table: [u32; 9],
    kind: Kind,
    active: bool,
    seed: u64,
    rng: u64,
}

impl RandomBitErrors {
    /// xorshift64* (Vigna): 32 good high bits.
    #[inline]
    fn next(&mut self) -> u32 {
        (crate::rng::xorshift64star(&mut self.rng) >> 32) as u32
    }

    #[inline]
    fn damage(&mut self, p: &mut Packet) {
        let (table, kind) = (self.table, self.kind);
        for byte in p.data_mut() {
            // 28 bits, as Click's `(click_random() >> 3) & 0xFFFFFFF`.
            let v = self.next() >> 4;
            if v <= table[0] {
                continue;
            }
            // table[8] is above every draw: at most 8 steps.
            let mut k = 1;
            while v > table[k] {
                k += 1;
            }
            let n = (START[k + 1] - START[k]) as u64;
            let pick = ((u64::from(self.next()) * n) >> 32) as usize;
            let mask = PATTERNS[START[k] + pick];
            match kind {
                Kind::Clear => *byte &= !mask,
                Kind::Set => *byte |= mask,
                Kind::Flip => *byte ^= mask,
            }
        }
    }

    /// Whether any bit may change (Click's early return).
    #[inline]
    fn changes(&self) -> bool {
        self.active && self.table[0] < ONE
    }
}

impl Element for RandomBitErrors {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.rng = rng_state(self.seed, cx.worker());
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.changes() {
            for p in batch.iter_mut() {
                self.damage(p);
            }
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let before = out.len();
        cx.pull(0, out, max);
        if self.changes() {
            for p in out.iter_mut().skip(before) {
                self.damage(p);
            }
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "p_bit_error" => Some(unparse_p(self.p)),
            "error_kind" => Some(self.kind.name().into()),
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "p_bit_error" => {
                self.p = parse_p(value)?;
                self.table = error_table(self.p);
            }
            "error_kind" => self.kind = Kind::from_arg(value)?,
            "active" => {
                self.active = bool::from_arg(value.trim())
                    .map_err(|e| format!("active: expected true or false, {e}"))?
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (p_bit_error, error_kind, active)"
                ))
            }
        }
        Ok(())
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        match handler {
            "p_bit_error" => Some("0 P"),
            "error_kind" => Some("1 KIND"),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("p_bit_error"),
            Handler::rw("error_kind"),
            Handler::rw("active"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    /// A UDP/IPv4 datagram of 64 bytes: 36 bytes of 0x5a payload.
    fn datagram() -> Vec<u8> {
        let mut d = vec![
            0x45, 0x00, 0x00, 0x40, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xaa, 10, 0, 0, 1,
            10, 0, 0, 2, // IPv4
            0x30, 0x39, 0x00, 0x35, 0x00, 0x2c, 0x00, 0x00, // UDP
        ];
        d.resize(64, 0x5a);
        d
    }

    fn changed_bits(a: &[u8], b: &[u8]) -> u32 {
        a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
    }

    #[test]
    fn the_pattern_table_has_each_byte_once_by_bit_count() {
        let mut seen = [false; 256];
        for k in 0..=8 {
            for &b in &PATTERNS[START[k]..START[k + 1]] {
                assert_eq!(b.count_ones() as usize, k);
                assert!(!seen[b as usize]);
                seen[b as usize] = true;
            }
        }
    }

    #[test]
    fn error_table_is_clicks() {
        // Click's set_bit_error, computed by hand from its code.
        let t = error_table(parse_p("0.001").unwrap());
        assert_eq!(&t[..3], &[266_295_477, 268_427_970, 268_435_440]);
        let t = error_table(parse_p("0.1").unwrap());
        assert_eq!(&t[..3], &[115_552_660, 218_266_138, 258_210_268]);
        assert_eq!(error_table(parse_p("0.5").unwrap())[0], 1 << 20);
        assert_eq!(error_table(0)[0], ONE);
        assert_eq!(error_table(ONE)[..8], [0; 8]);
    }

    #[test]
    fn certain_errors_flip_set_or_clear_every_bit() {
        let d = datagram();
        let mut h = Harness::push(&CLASS, "1", 1, 1);
        h.push_bytes(0, &d);
        let inverted: Vec<u8> = d.iter().map(|b| !b).collect();
        assert_eq!(h.take_bytes(0), vec![inverted]);
        let mut h = Harness::push(&CLASS, "1, set", 1, 1);
        h.push_bytes(0, &d);
        assert_eq!(h.take_bytes(0), vec![vec![0xff; 64]]);
        let mut h = Harness::push(&CLASS, "P 1, KIND clear", 1, 1);
        h.push_bytes(0, &d);
        assert_eq!(h.take_bytes(0), vec![vec![0; 64]]);
    }

    #[test]
    fn no_errors_when_p_is_zero_or_inactive() {
        let d = datagram();
        for args in ["0", "1, flip, false", "0.5, ACTIVE false"] {
            let mut h = Harness::push(&CLASS, args, 1, 1);
            h.push_bytes(0, &d);
            assert_eq!(h.take_bytes(0), vec![d.clone()], "{args}");
        }
    }

    #[test]
    fn bits_change_at_about_p_and_runs_repeat() {
        let d = datagram();
        let run = |args: &str| {
            let mut h = Harness::push(&CLASS, args, 1, 1);
            h.push_packets(0, (0..200).map(|_| Packet::from_slice(&d).unwrap()));
            h.take_bytes(0)
        };
        let bits = 200.0 * 64.0 * 8.0;
        for (p, lo, hi) in [("0.5", 0.48, 0.52), ("0.01", 0.008, 0.012)] {
            let got = run(p);
            let n: u32 = got.iter().map(|f| changed_bits(f, &d)).sum();
            let share = f64::from(n) / bits;
            assert!((lo..hi).contains(&share), "P {p}: {share}");
            assert_eq!(got, run(p), "same seed, same errors");
            assert_ne!(got, run(&format!("{p}, SEED 2")));
        }
        // `set` only ever sets bits.
        for f in run("0.2, set") {
            assert!(f.iter().zip(&d).all(|(x, y)| x & y == *y));
        }
    }

    #[test]
    fn pulled_packets_are_changed_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "1", ports);
        h.feed(0, [Packet::from_slice(&[0x0f, 0xf0]).unwrap()]);
        assert_eq!(h.pull(0, 4)[0].data(), &[0xf0, 0x0f]);
    }

    #[test]
    fn short_and_empty_packets() {
        let mut h = Harness::push(&CLASS, "1", 1, 1);
        h.push_bytes(0, &[]);
        h.push_bytes(0, &[0x00]);
        assert_eq!(h.take_bytes(0), vec![vec![], vec![0xff]]);
    }

    #[test]
    fn handlers_read_and_write_as_click() {
        let mut h = Harness::push(&CLASS, "0.001", 1, 1);
        assert_eq!(h.read_handler("p_bit_error").as_deref(), Ok("0.001"));
        assert_eq!(h.read_handler("error_kind").as_deref(), Ok("flip"));
        assert_eq!(h.read_handler("active").as_deref(), Ok("true"));
        h.write_handler("p_bit_error", "0.25").unwrap();
        assert_eq!(h.read_handler("p_bit_error").as_deref(), Ok("0.25"));
        h.write_handler("p_bit_error", "1").unwrap();
        assert_eq!(h.read_handler("p_bit_error").as_deref(), Ok("1"));
        h.write_handler("error_kind", "clear").unwrap();
        assert_eq!(h.read_handler("error_kind").as_deref(), Ok("clear"));
        h.push_bytes(0, &[0xab]);
        assert_eq!(h.take_bytes(0), vec![vec![0]]);
        h.write_handler("active", "false").unwrap();
        assert_eq!(h.read_handler("active").as_deref(), Ok("false"));
        h.push_bytes(0, &[0xab]);
        assert_eq!(h.take_bytes(0), vec![vec![0xab]]);
        // Refused values change nothing.
        assert!(h.write_handler("p_bit_error", "1.5").is_err());
        assert!(h.write_handler("p_bit_error", "-0.1").is_err());
        assert!(h.write_handler("p_bit_error", "often").is_err());
        let e = h.write_handler("error_kind", "toggle").unwrap_err();
        assert!(e.contains("bad action `toggle`"), "{e}");
        assert!(h.write_handler("active", "maybe").is_err());
        assert!(h.write_handler("seed", "3").is_err());
        assert_eq!(h.read_handler("p_bit_error").as_deref(), Ok("1"));
        assert_eq!(h.read_handler("error_kind").as_deref(), Ok("clear"));
    }

    #[test]
    fn p_is_read_as_clicks_fixed_point() {
        assert_eq!(unparse_p(parse_p("0.1").unwrap()), "0.1");
        assert_eq!(unparse_p(parse_p("0.0001").unwrap()), "0.0001");
        assert_eq!(unparse_p(parse_p("0.3").unwrap()), "0.3");
        assert_eq!(unparse_p(0), "0");
        assert_eq!(parse_p("1").unwrap(), ONE);
    }

    #[test]
    fn arguments_are_checked() {
        let d = PortInfo::default();
        assert!(make_element(&CLASS, "", &d).is_err());
        assert!(make_element(&CLASS, "2", &d).is_err());
        assert!(make_element(&CLASS, "-0.5", &d).is_err());
        let e = make_element(&CLASS, "0.1, toggle", &d).unwrap_err();
        assert!(e.contains("bad action"), "{e}");
        assert!(make_element(&CLASS, "0.1, flip, perhaps", &d).is_err());
        assert!(make_element(&CLASS, "0.1, set, true, 4", &d).is_err());
        assert!(make_element(&CLASS, "0.1, KIND \"\"", &d).is_ok());
    }

    #[test]
    fn runs_in_a_configuration() {
        use crate::standard::testrun::{count, run};
        run(MANUAL.example);
        let s = run("InfiniteSource(LIMIT 5) -> RandomBitErrors(0.5) -> c :: Counter -> Discard;");
        assert_eq!(count(&s, "c", "count"), 5);
    }
}
