//! `DRRSched`: deficit round robin over pull inputs (Shreedhar and
//! Varghese, SIGCOMM 1995), sharing the output's bytes, not its packets.
//!
//! Inputs are visited in turn; arriving at an input adds its quantum to its
//! deficit, and the input sends its head packet if the packet fits in the
//! deficit (which then shrinks by the packet's length). A head packet too
//! large for the deficit is kept for a later turn; an input found empty
//! loses its deficit. Over time each busy input sends bytes in proportion
//! to its quantum, whatever its packet sizes: one quantum for all (Click's
//! QUANTUM) shares bytes equally, per-input quanta (QUANTA, a bricks
//! extension) share them by weight.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::MAX_FRAME;

/// The `DRRSched` class.
pub static CLASS: ElementClass = ElementClass {
    name: "DRRSched",
    ports: "-/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pulls from its inputs by deficit round robin (shares bytes)",
    synopsis: "DRRSched([QUANTUM, QUANTA q0 q1 ...])",
    description: "Deficit round robin (Shreedhar and Varghese): inputs are visited in turn, \
        each visit adds the input's quantum to its deficit, and the input's head packet \
        leaves when its length fits in the deficit, which then shrinks by that length. A \
        packet too long for the deficit waits in the scheduler for a later turn (it is \
        counted in `held`); an input found empty loses its deficit. Busy inputs thus send \
        bytes in proportion to their quanta, whatever their packet sizes. A pull finds the \
        next packet however many turns that takes (turns that can send nothing are skipped \
        at once), so a large packet and a small quantum never make a pull come back empty \
        while packets wait. \
        \n\nQUANTUM (Click's keyword) is every input's quantum in bytes. QUANTA is a bricks \
        extension: one quantum per input, separated by spaces (`QUANTA 3000 1500` gives \
        input 0 twice the bytes of input 1), the way weighted fair shares between virtual \
        routers are written.",
    ports: "any number of pull inputs; one pull output",
    keywords: &[
        Keyword {
            name: "QUANTUM",
            ty: "unsigned (bytes)",
            default: Some("500"),
            doc: "bytes added to an input's deficit per turn (1 to 1000000)",
        },
        Keyword {
            name: "QUANTA",
            ty: "unsigned list (bytes)",
            default: Some("QUANTUM for every input"),
            doc: "bricks extension: one quantum per input, overriding QUANTUM",
        },
    ],
    counters: &[
        (
            "held",
            "head packets waiting in the scheduler for enough deficit",
        ),
        ("bytesN", "bytes sent from input N"),
    ],
    example: "q1 :: Queue; q2 :: Queue; d :: DRRSched(QUANTA 3000 1500); \
        InfiniteSource(LIMIT 40, LENGTH 1000) -> q1 -> [0]d; \
        InfiniteSource(LIMIT 40, LENGTH 100) -> q2 -> [1]d; d -> Unqueue -> Discard;",
    see_also: &["StrideSched", "RoundRobinSched", "PrioSched"],
};

const MAX_QUANTUM: u32 = 1_000_000;

fn quantum(text: &str) -> Result<u32, String> {
    let q = u32::from_arg(text.trim())?;
    if q == 0 || q > MAX_QUANTUM {
        return Err(format!("quantum {q} out of range (1 to {MAX_QUANTUM})"));
    }
    Ok(q)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let one: Option<String> = args.read_p("QUANTUM")?;
    let list: Option<String> = args.read("QUANTA")?;
    let n = ports.ninputs();
    let bad = |e: String| ArgError::new(format!("bad argument: {e}"));
    let quanta = match (list, one) {
        (Some(l), _) => {
            let q: Vec<u32> = l
                .split_whitespace()
                .map(quantum)
                .collect::<Result<_, _>>()
                .map_err(bad)?;
            if q.len() != n {
                return Err(ArgError::new(format!(
                    "QUANTA has {} quanta for {n} input{}",
                    q.len(),
                    if n == 1 { "" } else { "s" }
                )));
            }
            q
        }
        (None, Some(q)) => vec![quantum(&q).map_err(bad)?; n],
        (None, None) => vec![500; n],
    };
    Ok(Box::new(DrrSched {
        head: (0..n).map(|_| None).collect(),
        deficit: vec![0; n],
        bytes: vec![0; n],
        quanta,
        next: 0,
    }))
}

/// Deficit round robin.
#[derive(Debug)]
pub struct DrrSched {
    /// A packet pulled from each input that did not fit its deficit yet.
    head: Vec<Option<Packet>>,
    deficit: Vec<u32>,
    quanta: Vec<u32>,
    bytes: Vec<u64>,
    /// The input being served.
    next: usize,
}

impl DrrSched {
    /// One packet, Click's `DRRSched::pull`: each input looked at once,
    /// starting where the last pull left off. `None` with `any` false:
    /// every input is empty.
    fn pull_turns(&mut self, cx: &mut Context<'_>) -> (Option<Packet>, bool) {
        let n = self.head.len();
        let mut any = false;
        for _ in 0..n {
            let i = self.next;
            let p = match self.head[i].take() {
                Some(p) => Some(p),
                None => {
                    let mut b = Batch::new();
                    cx.pull(i, &mut b, 1);
                    let p = b.drain().next();
                    p
                }
            };
            match p {
                None => self.deficit[i] = 0,
                Some(p) => {
                    any = true;
                    let len = p.len() as u32;
                    if len <= self.deficit[i] {
                        self.deficit[i] -= len;
                        self.bytes[i] += u64::from(len);
                        return (Some(p), true);
                    }
                    self.head[i] = Some(p);
                }
            }
            self.next = if i + 1 == n { 0 } else { i + 1 };
            let q = self.quanta[self.next];
            self.deficit[self.next] = self.deficit[self.next].saturating_add(q);
        }
        (None, any)
    }

    /// After a whole cycle in which every waiting head was too long for
    /// its deficit: the turns that would send nothing, done at once. Each
    /// waiting input gets the quanta of every skipped cycle (one cycle
    /// short of the first input that can send), as if visited.
    fn skip_idle_cycles(&mut self) {
        let cycles = self
            .head
            .iter()
            .zip(&self.deficit)
            .zip(&self.quanta)
            .filter_map(|((h, &d), &q)| {
                let need = h.as_ref()?.len() as u32;
                Some(need.saturating_sub(d).div_ceil(q))
            })
            .min()
            .unwrap_or(0)
            .saturating_sub(1);
        if cycles == 0 {
            return;
        }
        for ((h, d), &q) in self
            .head
            .iter()
            .zip(self.deficit.iter_mut())
            .zip(&self.quanta)
        {
            if h.is_some() {
                *d = d.saturating_add(cycles.saturating_mul(q));
            }
        }
    }
}

impl Element for DrrSched {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if self.head.is_empty() {
            return;
        }
        let want = max.min(out.remaining());
        let mut got = 0;
        // A packet is at most MAX_FRAME bytes and a quantum at least 1, so
        // after skipping idle cycles a cycle sends or proves every input
        // empty: bounded, not a loop on hope.
        let mut barren = 0usize;
        while got < want {
            match self.pull_turns(cx) {
                (Some(p), _) => {
                    let _ = out.push(p);
                    got += 1;
                    barren = 0;
                }
                (None, false) => break,
                (None, true) => {
                    barren += 1;
                    if barren > MAX_FRAME + 2 {
                        break;
                    }
                    self.skip_idle_cycles();
                }
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter(
            "held",
            self.head.iter().filter(|h| h.is_some()).count() as u64,
        );
        for (i, b) in self.bytes.iter().enumerate() {
            s.counter(format!("bytes{i}"), *b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    /// `n` packets of input `tag` with lengths cycling through `sizes`.
    fn packets(tag: u8, n: usize, sizes: &[usize]) -> Vec<Packet> {
        (0..n)
            .map(|i| {
                let mut f = vec![0u8; sizes[i % sizes.len()]];
                f[0] = tag;
                Packet::from_slice(&f).unwrap()
            })
            .collect()
    }

    fn byte_shares(h: &mut Harness, inputs: usize, pulls: usize) -> Vec<u64> {
        let mut bytes = vec![0u64; inputs];
        for _ in 0..pulls {
            for p in h.pull(0, 32) {
                bytes[p.data()[0] as usize] += p.len() as u64;
            }
        }
        bytes
    }

    fn assert_share(bytes: &[u64], weights: &[f64]) {
        let total: u64 = bytes.iter().sum();
        let wsum: f64 = weights.iter().sum();
        for (b, w) in bytes.iter().zip(weights) {
            let share = *b as f64 / total as f64;
            let want = w / wsum;
            assert!(
                (share - want).abs() / want < 0.05,
                "{bytes:?} vs {weights:?}"
            );
        }
    }

    #[test]
    fn equal_quanta_share_bytes_not_packets() {
        let mut h = Harness::new(&CLASS, "", ports(2));
        h.feed(0, packets(0, 20_000, &[1500]));
        h.feed(1, packets(1, 20_000, &[64, 300, 576, 1000]));
        let b = byte_shares(&mut h, 2, 400);
        assert_share(&b, &[1.0, 1.0]);
    }

    #[test]
    fn quanta_share_bytes_by_weight_with_mixed_sizes() {
        let mut h = Harness::new(&CLASS, "QUANTA 3000 1500", ports(2));
        h.feed(0, packets(0, 30_000, &[64, 1500, 700]));
        h.feed(1, packets(1, 30_000, &[1200, 90, 400, 1500]));
        let b = byte_shares(&mut h, 2, 300);
        assert_share(&b, &[2.0, 1.0]);
        let s = h.stats();
        assert_eq!(
            s.get("bytes0").unwrap() + s.get("bytes1").unwrap(),
            b[0] + b[1]
        );

        let mut h = Harness::new(&CLASS, "QUANTA 100 300 600", ports(3));
        h.feed(0, packets(0, 30_000, &[1500]));
        h.feed(1, packets(1, 30_000, &[64]));
        h.feed(2, packets(2, 30_000, &[512, 128]));
        let b = byte_shares(&mut h, 3, 300);
        assert_share(&b, &[1.0, 3.0, 6.0]);
    }

    #[test]
    fn a_small_quantum_still_delivers_large_packets() {
        // 1500-byte packets, 1-byte quantum: each packet needs 1500 turns,
        // skipped at once; a pull never comes back empty while one waits.
        let mut h = Harness::new(&CLASS, "QUANTUM 1", ports(2));
        h.feed(0, packets(0, 5, &[1500]));
        h.feed(1, packets(1, 5, &[1500]));
        let got = h.pull(0, 32);
        assert_eq!(got.len(), 10);
        assert!(h.pull(0, 32).is_empty());
        assert_eq!(h.stats().get("held"), Some(0));
    }

    #[test]
    fn empty_inputs_lose_their_deficit_and_nothing_is_lost() {
        let mut h = Harness::new(&CLASS, "QUANTUM 500", ports(3));
        h.feed(2, packets(2, 7, &[400, 1400]));
        let got = h.pull(0, 32);
        assert_eq!(got.len(), 7);
        assert!(got.iter().all(|p| p.data()[0] == 2));
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str, n: usize| bricks_runtime::testing::make_element(&CLASS, a, &ports(n));
        assert!(m("QUANTA 1 2 3", 2)
            .unwrap_err()
            .contains("3 quanta for 2 inputs"));
        assert!(m("QUANTUM 0", 2).unwrap_err().contains("out of range"));
        assert!(m("QUANTA 10 x", 2).is_err());
        assert!(m("BOGUS 1", 2).is_err());
        m("700", 2).unwrap();
    }
}
