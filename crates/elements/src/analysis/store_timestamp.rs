//! `StoreTimestamp`: writes each packet's timestamp annotation into its
//! data (Click's `elements/analysis/storetimestamp.cc`).
//!
//! Click copies its `Timestamp` object, whose bytes depend on how Click
//! was built; on a 64-bit little-endian userlevel build (the usual one:
//! `TIMESTAMP_REP_FLAT64`, microsecond precision) they are the signed
//! count of microseconds since the epoch, little-endian. This element
//! writes those eight bytes.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `StoreTimestamp` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StoreTimestamp",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "store packet timestamps in packet data",
    synopsis: "StoreTimestamp([OFFSET, KEYWORDS])",
    description: "Stores each packet's timestamp annotation in its data, as the eight bytes \
        of Click's timestamp on a 64-bit little-endian Linux build: the microseconds since \
        the epoch as a signed 64-bit little-endian integer (bricks' nanoseconds are cut to \
        microseconds, as Click's default build keeps them). Give exactly one of OFFSET and \
        TAIL. With OFFSET the bytes start OFFSET bytes into the packet, which is first made \
        OFFSET+8 bytes long if it is shorter; with TAIL they are appended. Bytes added are \
        zero (Click leaves what the buffer held). A packet that cannot grow that far (past \
        bricks' 2048-byte frames) is dropped and counted in `too_long`, where Click drops \
        it when memory runs out.",
    ports: "one input, one output; push or pull",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "integer (positional)",
            default: Some("none"),
            doc: "where the timestamp starts, in bytes from the packet's start; negative \
                  means not given",
        },
        Keyword {
            name: "TAIL",
            ty: "boolean",
            default: Some("false"),
            doc: "append the timestamp to the packet",
        },
    ],
    counters: &[(
        "too_long",
        "packets dropped because they could not grow to hold the timestamp",
    )],
    example: "InfiniteSource(LIMIT 2, STOP true) -> SetTimestamp -> StoreTimestamp(TAIL true) \
        -> Print(MAXLENGTH 80) -> Discard;",
    see_also: &["SetTimestamp", "Print"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: Option<i64> = args.read_p("OFFSET")?;
    let tail = args.read::<bool>("TAIL")?.unwrap_or(false);
    // Click's default OFFSET is -1: a negative one is "not given".
    let offset = offset.filter(|&o| o >= 0);
    let at = match (offset, tail) {
        (Some(o), false) => Place::Offset(usize::try_from(o).unwrap_or(usize::MAX)),
        (None, true) => Place::Tail,
        _ => return Err(ArgError::new("supply exactly one of 'OFFSET' and 'TAIL'")),
    };
    Ok(Box::new(StoreTimestamp { at, too_long: 0 }))
}

/// Where the timestamp goes.
#[derive(Debug, Clone, Copy)]
enum Place {
    Offset(usize),
    Tail,
}

/// One worker's StoreTimestamp.
#[derive(Debug)]
pub struct StoreTimestamp {
    at: Place,
    too_long: u64,
}

/// Click's `Timestamp` bytes on a 64-bit little-endian userlevel build:
/// signed microseconds since the epoch.
pub fn click_timestamp_bytes(ts: bricks_packet::Timestamp) -> [u8; 8] {
    ts.signed_nanos().div_euclid(1000).to_le_bytes()
}

impl StoreTimestamp {
    /// Click's `simple_action`; `None` drops the packet.
    fn classify(&mut self, p: &mut Packet) -> Option<usize> {
        let offset = match self.at {
            Place::Offset(o) => o,
            Place::Tail => p.len(),
        };
        let need = offset.saturating_add(8);
        if need > p.len() && p.put_back(need - p.len()).is_err() {
            self.too_long += 1;
            return None;
        }
        let bytes = click_timestamp_bytes(p.anno().timestamp);
        p.data_mut()[offset..need].copy_from_slice(&bytes);
        Some(0)
    }
}

impl Element for StoreTimestamp {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("too_long", self.too_long);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    /// 1.5 s after the epoch: 1500000 us = 0x16e360.
    const TS: Timestamp = Timestamp(1_500_000_123);
    const TS_BYTES: [u8; 8] = [0x60, 0xe3, 0x16, 0, 0, 0, 0, 0];

    fn packet(data: &[u8]) -> Packet {
        let mut p = Packet::from_slice(data).unwrap();
        p.anno_mut().timestamp = TS;
        p
    }

    fn run(args: &str, p: Packet) -> (Vec<Vec<u8>>, Option<u64>) {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, [p]);
        (h.take_bytes(0), h.stats().get("too_long"))
    }

    #[test]
    fn tail_appends_clicks_bytes() {
        let (got, _) = run("TAIL true", packet(&[0xaa, 0xbb]));
        let mut want = vec![0xaa, 0xbb];
        want.extend_from_slice(&TS_BYTES);
        assert_eq!(got, vec![want]);
    }

    #[test]
    fn offset_overwrites_or_extends() {
        let (got, _) = run("2", packet(&[9; 12]));
        let mut want = vec![9, 9];
        want.extend_from_slice(&TS_BYTES);
        want.extend_from_slice(&[9, 9]);
        assert_eq!(got, vec![want]);
        let (got, _) = run("OFFSET 4", packet(&[7, 7]));
        let mut want = vec![7, 7, 0, 0];
        want.extend_from_slice(&TS_BYTES);
        assert_eq!(got, vec![want]);
    }

    #[test]
    fn negative_times_are_floored_microseconds() {
        let mut p = packet(&[]);
        p.anno_mut().timestamp = Timestamp::from_signed_nanos(-1);
        let (got, _) = run("TAIL true", p);
        assert_eq!(got, vec![(-1i64).to_le_bytes().to_vec()]);
    }

    #[test]
    fn too_far_is_dropped_and_counted() {
        let (got, n) = run("OFFSET 5000", packet(&[1]));
        assert!(got.is_empty());
        assert_eq!(n, Some(1));
    }

    #[test]
    fn exactly_one_of_offset_and_tail() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        for bad in ["", "OFFSET 1, TAIL true", "OFFSET -1", "TAIL false"] {
            let e = Harness::try_new(&CLASS, bad, ports.clone()).err().unwrap();
            assert!(
                e.contains("supply exactly one of 'OFFSET' and 'TAIL'"),
                "{bad}: {e}"
            );
        }
        assert!(Harness::try_new(&CLASS, "OFFSET -1, TAIL true", ports).is_ok());
    }
}
