//! Measuring a router from outside: a generator stamps probes into UDP
//! payloads, a sink reads them back and reports throughput, loss,
//! duplicates, reordering and one-way latency.
//!
//! `bricks gen` (`WorkloadSource -> GenStamp -> ToDevice`) and `bricks
//! sink` (`FromDevice -> TrafficSink`) are ordinary configurations of these
//! elements. Reordering is counted as in RouteBricks §6.2: within a flow, a
//! packet is reordered if a later one of the same flow arrived before it.
//! The probe layout is in [`probe`].

pub mod gen_stamp;
pub mod probe;
pub mod traffic_sink;

use bricks_element::ElementClass;
use std::hash::{BuildHasherDefault, Hasher};

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[&gen_stamp::CLASS, &traffic_sink::CLASS];

/// Nanoseconds of `CLOCK_MONOTONIC`: the clock every process on the
/// machine shares, so a stamp written by the generator can be compared
/// with the sink's clock in another process.
#[inline]
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

/// A multiplicative hash for small fixed keys (flow ids, 5-tuples), the
/// same idea as rustc's FxHash: the tables it serves are keyed by what our
/// own generator sends, so SipHash's protection against chosen keys would
/// cost time per packet for nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlowHasher(u64);

impl FlowHasher {
    #[inline(always)]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FlowHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `HashMap` with [`FlowHasher`].
pub type FlowMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FlowHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_moves_forward() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(a > 0 && b >= a);
    }

    #[test]
    fn flow_map_tells_keys_apart() {
        let mut m: FlowMap<[u8; 13], u32> = FlowMap::default();
        for i in 0..1000u32 {
            let mut k = [0u8; 13];
            k[9..13].copy_from_slice(&i.to_be_bytes());
            m.insert(k, i);
        }
        assert_eq!(m.len(), 1000);
        let mut k = [0u8; 13];
        k[9..13].copy_from_slice(&77u32.to_be_bytes());
        assert_eq!(m.get(&k), Some(&77));
    }
}
