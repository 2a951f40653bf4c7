//! `SetRandIPAddress`: sets the destination IP address annotation to a
//! random address within a prefix (Click's `elements/ip/setrandipaddress.cc`),
//! to spread generated traffic over many next hops or routes.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use bricks_wire::Ipv4Cidr;
use std::net::Ipv4Addr;

/// The `SetRandIPAddress` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetRandIPAddress",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// The largest LIMIT: the table of addresses costs 4 bytes each.
const MAX_LIMIT: i64 = 1 << 24;

static MANUAL: Manual = Manual {
    summary: "sets destination IP address annotations randomly",
    synopsis: "SetRandIPAddress(PREFIX [, LIMIT, SEED])",
    description: "Sets the destination IP address annotation of every packet to a random \
        address within PREFIX (the prefix's bits, random host bits) and passes it on; the \
        packet's bytes are not touched. A bare address is a /32. With LIMIT N above 0, N \
        addresses are drawn when the element is configured and each packet gets one of \
        them at random, so at most N distinct addresses are used; LIMIT 0 or less is no \
        limit, as in Click. Draws come from a xorshift64* generator seeded from SEED (Click \
        draws from `click_random`): the table of LIMIT addresses is the same on every \
        worker, so the whole router uses at most N addresses, and each worker then draws \
        packets' addresses with its own stream. Host bits are 32 random bits; Click's \
        random numbers have 31, so its addresses under 0.0.0.0/0 never have the top bit \
        set, bricks' do. LIMIT is at most 16777216.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "PREFIX",
            ty: "IPv4 prefix (ADDR/LEN, ADDR/MASK or ADDR)",
            default: None,
            doc: "where the addresses are drawn; positional",
        },
        Keyword {
            name: "LIMIT",
            ty: "integer",
            default: Some("-1 (no limit)"),
            doc: "most distinct addresses used; positional",
        },
        Keyword {
            name: "SEED",
            ty: "unsigned integer",
            default: Some("1"),
            doc: "seed of the draws (bricks only)",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 4, LENGTH 20) -> SetRandIPAddress(10.0.0.0/8, 16) -> Discard;",
    see_also: &["SetIPAddress", "GetIPAddress", "StoreIPAddress"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let prefix: Ipv4Cidr = args.read_mp("PREFIX")?;
    let limit: i64 = args.read_p("LIMIT")?.unwrap_or(-1);
    let seed: u64 = args.read("SEED")?.unwrap_or(1);
    if limit > MAX_LIMIT {
        return Err(ArgError::new(format!(
            "LIMIT {limit} is above the largest, {MAX_LIMIT}"
        )));
    }
    let mask = u32::from(prefix.netmask());
    let mut e = SetRandIPAddress {
        net: u32::from(prefix.address()) & mask,
        mask,
        addrs: Vec::new(),
        seed,
        rng: rng_state(seed, 0),
    };
    // Click fills its table at configuration; LIMIT 0 leaves it empty
    // and draws every address afresh.
    let n = usize::try_from(limit).unwrap_or(0);
    e.addrs = (0..n).map(|_| e.pick()).collect();
    Ok(Box::new(e))
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

/// Sets the destination address annotation at random.
#[derive(Debug)]
pub struct SetRandIPAddress {
    /// The prefix's bits.
    net: u32,
    mask: u32,
    /// The LIMIT addresses; empty without a limit.
    addrs: Vec<Ipv4Addr>,
    seed: u64,
    rng: u64,
}

impl SetRandIPAddress {
    /// xorshift64* (Vigna): 32 good high bits.
    #[inline]
    fn next(&mut self) -> u32 {
        (crate::rng::xorshift64star(&mut self.rng) >> 32) as u32
    }

    /// Click's `pick`: random host bits under the prefix.
    #[inline]
    fn pick(&mut self) -> Ipv4Addr {
        Ipv4Addr::from((self.next() & !self.mask) | self.net)
    }

    #[inline]
    fn set(&mut self, p: &mut Packet) {
        let a = if self.addrs.is_empty() {
            self.pick()
        } else {
            // Multiply-shift: an index below the table's length.
            let i = (u64::from(self.next()) * self.addrs.len() as u64) >> 32;
            self.addrs[i as usize]
        };
        p.anno_mut().dst_ip = a;
    }
}

impl Element for SetRandIPAddress {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.rng = rng_state(self.seed, cx.worker());
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        for p in batch.iter_mut() {
            self.set(p);
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                self.set(p);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};
    use std::collections::BTreeSet;

    fn addresses(args: &str, n: usize) -> Vec<Ipv4Addr> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        let frame = udp(4);
        h.push_packets(0, (0..n).map(|_| Packet::from_slice(&frame).unwrap()));
        let out = h.take(0);
        assert!(
            out.iter().all(|p| p.data() == &frame[..]),
            "bytes untouched"
        );
        out.iter().map(|p| p.anno().dst_ip).collect()
    }

    #[test]
    fn addresses_stay_in_the_prefix_and_vary() {
        let got = addresses("10.1.0.0/16", 500);
        assert!(got.iter().all(|a| a.octets()[..2] == [10, 1]), "{got:?}");
        let distinct: BTreeSet<_> = got.iter().collect();
        assert!(distinct.len() > 490, "{}", distinct.len());
        // Host bits of the given address are ignored, as Click's mask does.
        let got = addresses("192.0.2.77/255.255.255.0", 100);
        assert!(got.iter().all(|a| a.octets()[..3] == [192, 0, 2]));
        let distinct: BTreeSet<_> = got.iter().collect();
        assert!(distinct.len() > 50);
    }

    #[test]
    fn a_bare_address_or_slash_32_is_fixed() {
        assert!(addresses("192.0.2.1", 10)
            .iter()
            .all(|a| *a == Ipv4Addr::new(192, 0, 2, 1)));
        assert!(addresses("192.0.2.1/32", 10)
            .iter()
            .all(|a| *a == Ipv4Addr::new(192, 0, 2, 1)));
    }

    #[test]
    fn everything_under_slash_0_top_bit_included() {
        let got = addresses("0.0.0.0/0", 200);
        assert!(got.iter().any(|a| a.octets()[0] >= 128));
        assert!(got.iter().any(|a| a.octets()[0] < 128));
    }

    #[test]
    fn limit_bounds_the_distinct_addresses() {
        let got = addresses("10.0.0.0/8, 4", 400);
        let distinct: BTreeSet<_> = got.iter().collect();
        assert!(distinct.len() <= 4 && distinct.len() >= 3, "{distinct:?}");
        assert!(got.iter().all(|a| a.octets()[0] == 10));
        // The same table on every worker: a second instance agrees.
        let again: BTreeSet<_> = addresses("10.0.0.0/8, LIMIT 4", 400).into_iter().collect();
        assert_eq!(distinct, again.iter().collect());
        // LIMIT 1: one address. LIMIT 0 or below: no limit, as Click.
        let one: BTreeSet<_> = addresses("10.0.0.0/8, 1", 50).into_iter().collect();
        assert_eq!(one.len(), 1);
        for args in ["10.0.0.0/8, 0", "10.0.0.0/8, -3"] {
            let many: BTreeSet<_> = addresses(args, 50).into_iter().collect();
            assert!(many.len() > 40, "{args}");
        }
    }

    #[test]
    fn runs_repeat_and_seeds_differ() {
        assert_eq!(addresses("10.0.0.0/8", 20), addresses("10.0.0.0/8", 20));
        assert_ne!(
            addresses("10.0.0.0/8", 20),
            addresses("10.0.0.0/8, SEED 9", 20)
        );
    }

    #[test]
    fn pulled_packets_get_addresses_even_empty_ones() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "172.16.0.0/12", ports);
        h.feed(0, [Packet::from_slice(&[]).unwrap()]);
        let got = h.pull(0, 4);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].anno().dst_ip.octets()[0], 172);
        assert_eq!(got[0].anno().dst_ip.octets()[1] & 0xf0, 16);
    }

    #[test]
    fn arguments_are_checked() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(ok("").is_err());
        assert!(ok("10.0.0").is_err());
        assert!(ok("10.0.0.0/33").is_err());
        assert!(ok("10.0.0.0/8, many").is_err());
        assert!(ok("10.0.0.0/8, 99999999").unwrap_err().contains("LIMIT"));
        assert!(ok("PREFIX 10.0.0.0/8, LIMIT 2, SEED 3").is_ok());
        assert!(ok("10.0.0.0/8, 2, 3").is_err());
    }
}
