//! RFC 1071's sum for the fuzz targets' own checks, written
//! independently of bricks-wire.

/// RFC 1071, one 16-bit word at a time, not complemented.
pub fn sum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}
