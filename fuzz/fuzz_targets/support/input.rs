//! A fuzz target's input read a piece at a time, zeros past its end.
#![allow(dead_code)]

/// The input read a byte at a time, zeros past its end.
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A byte as a small signed step.
    pub fn delta(&mut self) -> u32 {
        i32::from(self.byte() as i8) as u32
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Up to `n` bytes: what is left of the input if less.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        b.to_vec()
    }

    /// `n` bytes, the input repeated when it is shorter (zeros when it is
    /// used up).
    pub fn cycled(&mut self, n: usize) -> Vec<u8> {
        if self.0.is_empty() {
            return vec![0; n];
        }
        let v: Vec<u8> = self.0.iter().copied().cycle().take(n).collect();
        self.0 = &self.0[n.min(self.0.len())..];
        v
    }

    /// A frame: a length byte, then that many bytes.
    pub fn frame(&mut self) -> Vec<u8> {
        let n = usize::from(self.byte());
        self.bytes(n)
    }

    /// Text for a handler: a length byte, then that many bytes.
    pub fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.frame()).into_owned()
    }
}
