//! The elements' small random numbers: xorshift64* (Vigna, "An
//! experimental exploration of Marsaglia's xorshift generators,
//! scrambled", 2016). Three shifts and a multiply a draw, a state of one
//! word that an element seeds (from a SEED keyword, for runs that repeat),
//! and high bits good enough for sampling, drop decisions and addresses;
//! not for anything an attacker must not predict.

/// The next draw from `state` (which must not be 0: a zero state stays
/// zero); the high bits are the best.
#[inline(always)]
pub(crate) fn xorshift64star(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws from state 1, as the reference generator gives
    /// them (its shifts 12, 25, 27 and its multiplier).
    #[test]
    fn draws_are_vignas() {
        let mut s = 1u64;
        assert_eq!(xorshift64star(&mut s), 0x47e4_ce4b_896c_dd1d);
        assert_eq!(s, 0x200_0001);
        assert_eq!(xorshift64star(&mut s), 0xabcf_a6a8_e079_651d);
    }
}
