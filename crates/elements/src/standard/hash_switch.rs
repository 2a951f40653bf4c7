//! `HashSwitch`: Click's content-hash splitter. The output is a function
//! of LENGTH bytes at OFFSET, so every packet with the same bytes there
//! (an IPv4 destination, a flow's addresses) takes the same output.
//!
//! The function is Click's, bit for bit, so that a configuration spreads
//! packets over outputs exactly as Click does: the bytes' sum `d`, then
//! `(d ^ (d >> 4)) & (N - 1)` for 2, 4 or 8 outputs and `d % N` otherwise.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `HashSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HashSwitch",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sends each packet to an output chosen by a hash of some of its bytes",
    synopsis: "HashSwitch(OFFSET, LENGTH)",
    description: "Chooses the output of each packet from the LENGTH bytes starting at byte \
        OFFSET of the packet (Click's function: the sum d of those bytes, then \
        (d xor (d >> 4)) and (N - 1) when there are 2, 4 or 8 outputs, d mod N otherwise), \
        so packets with the same bytes there always take the same output; it can keep the \
        packets of a flow together, or serve stochastic fair queueing. A packet shorter \
        than OFFSET + LENGTH goes to output 0 (and is counted). The sum is weak as a hash: \
        bytes that are permutations of each other collide.",
    ports: "one push input; one or more push outputs",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned integer",
            default: None,
            doc: "where the hashed bytes start",
        },
        Keyword {
            name: "LENGTH",
            ty: "unsigned integer (1 or more)",
            default: None,
            doc: "how many bytes are hashed",
        },
    ],
    counters: &[(
        "short",
        "packets too short for the hashed bytes, sent to output 0",
    )],
    example: "// IPv4 packets by destination address.\n\
        InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, \
        LIMIT 4) -> h :: HashSwitch(16, 4); h[0] -> Discard; h[1] -> Discard;",
    see_also: &["RoundRobinSwitch", "L2Balancer"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_mp("OFFSET")?;
    let length: usize = args.read_mp("LENGTH")?;
    if length == 0 {
        return Err(ArgError::new("LENGTH must be more than 0"));
    }
    if offset.saturating_add(length) > bricks_packet::MAX_FRAME {
        return Err(ArgError::new(format!(
            "OFFSET + LENGTH reach beyond the largest frame ({} bytes)",
            bricks_packet::MAX_FRAME
        )));
    }
    Ok(Box::new(HashSwitch {
        offset,
        length,
        n: ports.noutputs().max(1),
        short: 0,
    }))
}

/// Sends packets to outputs by a hash of their bytes.
#[derive(Debug)]
pub struct HashSwitch {
    offset: usize,
    length: usize,
    n: usize,
    short: u64,
}

impl HashSwitch {
    #[inline]
    fn output(&mut self, p: &Packet) -> usize {
        let Some(bytes) = p.data().get(self.offset..self.offset + self.length) else {
            self.short += 1;
            return 0;
        };
        let d: u32 = bytes.iter().map(|&b| u32::from(b)).sum();
        match self.n {
            2 | 4 | 8 => ((d ^ (d >> 4)) as usize) & (self.n - 1),
            n => d as usize % n,
        }
    }
}

impl Element for HashSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.n == 1 {
            for p in batch.iter() {
                if p.len() < self.offset + self.length {
                    self.short += 1;
                }
            }
            cx.push(0, batch);
            return;
        }
        cx.push_classified(batch, |p| Some(self.output(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("short", self.short);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// A 20-byte IPv4 header to `dst`.
    fn to(dst: [u8; 4]) -> Vec<u8> {
        let mut h = vec![
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 0, 0, 0, 0,
        ];
        h[16..20].copy_from_slice(&dst);
        h
    }

    fn output_of(h: &mut Harness, n: usize, frame: &[u8]) -> usize {
        h.push_bytes(0, frame);
        let hit: Vec<usize> = (0..n).filter(|&o| !h.take(o).is_empty()).collect();
        assert_eq!(hit.len(), 1);
        hit[0]
    }

    #[test]
    fn clicks_function_for_powers_of_two_and_others() {
        // 10.0.0.9: d = 19, d ^ (d >> 4) = 18.
        let mut h = Harness::push(&CLASS, "16, 4", 1, 4);
        assert_eq!(output_of(&mut h, 4, &to([10, 0, 0, 9])), 18 & 3);
        let mut h = Harness::push(&CLASS, "16, 4", 1, 8);
        assert_eq!(output_of(&mut h, 8, &to([10, 0, 0, 9])), 18 & 7);
        // Three outputs: d mod 3.
        let mut h = Harness::push(&CLASS, "OFFSET 16, LENGTH 4", 1, 3);
        assert_eq!(output_of(&mut h, 3, &to([10, 0, 0, 9])), 19 % 3);
        assert_eq!(output_of(&mut h, 3, &to([200, 200, 200, 200])), 800 % 3);
    }

    #[test]
    fn same_bytes_same_output_in_order() {
        let mut h = Harness::push(&CLASS, "16, 4", 1, 2);
        let frames: Vec<Packet> = (0..40u8)
            .map(|i| {
                let mut f = to([10, 0, i % 4, 1]);
                f[4] = i;
                Packet::from_slice(&f).unwrap()
            })
            .collect();
        h.push_packets(0, frames);
        for o in 0..2 {
            let got = h.take(o);
            let ids: Vec<u8> = got.iter().map(|p| p.data()[4]).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "order kept");
            for p in &got {
                let d: u32 = p.data()[16..20].iter().map(|&b| u32::from(b)).sum();
                assert_eq!(((d ^ (d >> 4)) & 1) as usize, o);
            }
        }
    }

    #[test]
    fn short_packets_go_to_output_zero() {
        let mut h = Harness::push(&CLASS, "16, 4", 1, 3);
        h.push_bytes(0, &to([10, 0, 0, 1])[..19]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("short"), Some(1));
    }

    #[test]
    fn arguments_are_checked() {
        let p = PortInfo::default();
        assert!(make_element(&CLASS, "16", &p)
            .unwrap_err()
            .contains("LENGTH"));
        assert!(make_element(&CLASS, "16, 0", &p)
            .unwrap_err()
            .contains("LENGTH"));
        assert!(make_element(&CLASS, "4000, 4", &p).is_err());
        assert!(make_element(&CLASS, "16, 4, 2", &p).is_err());
        assert!(make_element(&CLASS, "0, 1", &p).is_ok());
    }
}
