//! Poptrie6 under arbitrary route changes: bytes are read as inserts,
//! removals and lookups on nested prefixes (lengths biased to the trie's
//! level boundaries: /20, where the direct pointing array ends, and the
//! 6-bit strides after it; ::/0 and /128), against `Naive6`, a scan.
//! After every change, single and batched lookups of the changed
//! prefix's edges and of one address inside it agree with the scan; a
//! change refused for the memory bound leaves the table answering as
//! before. The bound is picked from the first byte: one that refuses
//! most tables, one that refuses large ones, one that takes any table of the
//! at most 100 operations read.
#![no_main]

use bricks_lpm::{Lpm6, Lpm6Update, Naive6, NextHop, Poptrie6, Prefix6};
use libfuzzer_sys::fuzz_target;

const DIR: usize = 4 << 20;
/// Small enough that each run's arenas (reserved for the whole bound)
/// stay cheap under the sanitizer; the largest holds any table of
/// [`MAX_OPS`] prefixes.
const BOUNDS: [usize; 3] = [DIR + 256, DIR + (64 << 10), DIR + (4 << 20)];
/// Operations read from one input, so that a run stays quick.
const MAX_OPS: usize = 100;
/// Changes of `::/0` in one input: each rewrites the whole direct
/// pointing array (2^20 entries), some 25 ms under the sanitizer, and
/// more of them make a run slow without reaching other code; later ones
/// become /19 (two entries).
const MAX_DEFAULT_ROUTE_CHANGES: usize = 2;
/// Where prefixes start before a byte of them is flipped: far apart, and
/// at both ends of the address space.
const BASES: [u128; 4] = [0x2001_0db8 << 96, 0x2a00_1450_4001 << 80, 0, u128::MAX];
const LENS: [u8; 16] = [
    0, 19, 20, 21, 25, 26, 27, 32, 38, 44, 48, 50, 56, 64, 127, 128,
];

fn check(t: &Poptrie6, want: &Naive6, addrs: &[u128]) {
    let mut out = vec![None; addrs.len()];
    t.lookup_batch(addrs, &mut out);
    for (&a, &b) in addrs.iter().zip(&out) {
        let w = want.lookup(a);
        assert_eq!(t.lookup(a), w, "single lookup of {a:#034x}");
        assert_eq!(b, w, "batched lookup of {a:#034x}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, ops)) = data.split_first() else {
        return;
    };
    let t = Poptrie6::with_memory_bound(BOUNDS[first as usize % BOUNDS.len()])
        .expect("bounds above the direct pointing array");
    let want = Naive6::new();
    let mut defaults = 0;
    for op in ops.chunks_exact(6).take(MAX_OPS) {
        // Prefixes of /11 or shorter come only from `LENS` (::/0): each
        // rewrites 512 to a million direct-pointing entries, which under
        // the sanitizer takes milliseconds.
        let mut len = if op[1] & 0x80 != 0 {
            LENS[op[1] as usize % LENS.len()]
        } else {
            12 + op[1] % 117
        };
        if len == 0 && op[0] % 4 < 3 {
            if defaults == MAX_DEFAULT_ROUTE_CHANGES {
                len = 19;
            } else {
                defaults += 1;
            }
        }
        let at = (op[2] >> 2) % 16;
        let addr = BASES[op[2] as usize & 3] ^ (op[3] as u128) << (8 * at);
        let p = Prefix6::new(addr, len);
        let nh = NextHop(op[4] as u32 % 8);
        match op[0] % 4 {
            0 | 1 => match t.insert(p, nh) {
                Ok(prev) => assert_eq!(prev, want.insert(p, nh).unwrap()),
                Err(e) => assert!(e.to_string().contains("poptrie6"), "{e}"),
            },
            2 => match t.remove(p) {
                Ok(prev) => assert_eq!(prev, want.remove(p).unwrap()),
                Err(e) => assert!(e.to_string().contains("poptrie6"), "{e}"),
            },
            _ => {}
        }
        let last = p.addr | !Prefix6::mask(p.len);
        let inside = p.addr
            | (((op[5] as u128) * 0x0101_0101_0101_0101_0101_0101_0101_0101)
                & !Prefix6::mask(p.len));
        check(
            &t,
            &want,
            &[
                p.addr,
                last,
                p.addr.wrapping_sub(1),
                last.wrapping_add(1),
                inside,
            ],
        );
    }
    assert_eq!(t.route_count(), want.route_count());
});
