//! Big-endian ("network byte order", RFC 1700) reads and writes of fields.
//!
//! Each function takes the field's slice, cut with a constant range from a
//! `mod field`; after inlining the compiler knows its length, so the only
//! bounds check left is the one on the range itself.

#[inline(always)]
pub(crate) fn read_u16(field: &[u8]) -> u16 {
    u16::from_be_bytes([field[0], field[1]])
}

#[inline(always)]
pub(crate) fn read_u32(field: &[u8]) -> u32 {
    u32::from_be_bytes([field[0], field[1], field[2], field[3]])
}

#[inline(always)]
pub(crate) fn write_u16(field: &mut [u8], value: u16) {
    field[..2].copy_from_slice(&value.to_be_bytes());
}

#[inline(always)]
pub(crate) fn write_u32(field: &mut [u8], value: u32) {
    field[..4].copy_from_slice(&value.to_be_bytes());
}
