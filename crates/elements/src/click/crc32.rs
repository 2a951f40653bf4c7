//! `SetCRC32` and `CheckCRC32`: append and check a CRC-32 trailer, as
//! Click's `elements/standard/setcrc32.cc` and `checkcrc32.cc`.
//!
//! Click's CRC (`lib/crc32.c`) is the Ethernet polynomial 0x04C11DB7
//! computed high bit first from an initial 0xFFFFFFFF with no final
//! inversion (the CRC-32/MPEG-2 parameters), and SetCRC32 stores it in
//! host byte order; bricks stores it little-endian, which is what Click
//! writes on the x86 and ARM machines it runs on.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `SetCRC32` class.
pub static SET_CRC32: ElementClass = ElementClass {
    name: "SetCRC32",
    ports: "1/1",
    processing: "a/a",
    manual: &SET_MANUAL,
    make: make_set,
};

/// The `CheckCRC32` class.
pub static CHECK_CRC32: ElementClass = ElementClass {
    name: "CheckCRC32",
    ports: "1/1",
    processing: "a/a",
    manual: &CHECK_MANUAL,
    make: make_check,
};

static SET_MANUAL: Manual = Manual {
    summary: "calculates CRC32 and appends it to the packet",
    synopsis: "SetCRC32()",
    description: "Computes Click's CRC-32 over each packet (polynomial 0x04C11DB7, high \
        bit first, initial value 0xFFFFFFFF, no final inversion) and appends its 4 bytes, \
        least significant first. A packet without 4 bytes of tailroom is dropped and \
        counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets without room for the CRC")],
    example: "InfiniteSource(LIMIT 1) -> SetCRC32 -> CheckCRC32 -> Discard;",
    see_also: &["CheckCRC32"],
};

static CHECK_MANUAL: Manual = Manual {
    summary: "checks packet CRC32s",
    synopsis: "CheckCRC32()",
    description: "Checks the CRC-32 trailer SetCRC32 appended: a packet whose last 4 bytes \
        are the CRC of the rest loses them and passes; others (and packets shorter than 4 \
        bytes) are dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets whose CRC was wrong or missing")],
    example: "InfiniteSource(LIMIT 1) -> SetCRC32 -> CheckCRC32 -> Discard;",
    see_also: &["SetCRC32"],
};

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut j = 0;
        while j < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04c1_1db7
            } else {
                c << 1
            };
            j += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// Click's `update_crc(0xffffffff, data)`.
pub fn crc32(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |crc, &b| {
        (crc << 8) ^ TABLE[((crc >> 24) as u8 ^ b) as usize]
    })
}

fn make_set(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SetCRC32 { drops: 0 }))
}

fn make_check(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(CheckCRC32 { drops: 0 }))
}

/// Appends the CRC.
#[derive(Debug)]
pub struct SetCRC32 {
    drops: u64,
}

/// Checks and removes the CRC.
#[derive(Debug)]
pub struct CheckCRC32 {
    drops: u64,
}

impl SetCRC32 {
    fn apply(&mut self, b: &mut Batch) {
        let mut drops = 0;
        b.retain(|p| {
            let crc = crc32(p.data());
            let len = p.len();
            let ok = p.put_back(4).is_ok();
            if ok {
                p.data_mut()[len..].copy_from_slice(&crc.to_le_bytes());
            }
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl CheckCRC32 {
    fn apply(&mut self, b: &mut Batch) {
        let mut drops = 0;
        b.retain(|p| {
            let d = p.data();
            let ok = d.len() >= 4 && {
                let (body, tail) = d.split_at(d.len() - 4);
                crc32(body).to_le_bytes() == tail
            };
            if ok {
                p.take_back(4);
            }
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

macro_rules! agnostic {
    ($t:ty) => {
        impl Element for $t {
            fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
                self.apply(batch);
                cx.push(0, batch);
            }

            fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
                cx.pull_with(out, max, |b, _| self.apply(b));
            }

            fn stats(&self, s: &mut Stats) {
                s.counter("drops", self.drops);
            }
        }
    };
}

agnostic!(SetCRC32);
agnostic!(CheckCRC32);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn crc_matches_the_mpeg2_check_value() {
        // CRC-32/MPEG-2 of "123456789" is 0x0376E6E7.
        assert_eq!(crc32(b"123456789"), 0x0376_e6e7);
        assert_eq!(crc32(b""), 0xffff_ffff);
    }

    #[test]
    fn set_then_check_round_trips_and_catches_damage() {
        let frame = udp(20);
        let mut s = Harness::push(&SET_CRC32, "", 1, 1);
        s.push_bytes(0, &frame);
        let out = s.take_bytes(0).pop().unwrap();
        assert_eq!(out.len(), frame.len() + 4);
        assert_eq!(&out[..frame.len()], &frame[..]);
        let mut c = Harness::push(&CHECK_CRC32, "", 1, 1);
        c.push_bytes(0, &out);
        let mut bad = out.clone();
        bad[5] ^= 1;
        c.push_bytes(0, &bad);
        c.push_bytes(0, &out[..3]);
        assert_eq!(c.take_bytes(0), vec![frame]);
        assert_eq!(c.stats().get("drops"), Some(2));
    }
}
