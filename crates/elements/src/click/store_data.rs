//! `StoreData`: overwrites packet bytes at an offset, as Click's
//! `elements/standard/storedata.cc`.

use bricks_element::{
    args::Data, ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `StoreData` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StoreData",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "changes packet data",
    synopsis: "StoreData(OFFSET, DATA)",
    description: "Overwrites the packet's bytes from OFFSET on with DATA (a string or a \
        `\\<hex>` literal). Bytes of DATA beyond the end of the packet are not written: \
        the packet never grows.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: None,
            doc: "first byte overwritten; positional",
        },
        Keyword {
            name: "DATA",
            ty: "data",
            default: None,
            doc: "the bytes written; positional",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> StoreData(2, \\<ffff>) -> Print -> Discard;",
    see_also: &["StoreIPAddress", "StoreEtherAddress"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_mp("OFFSET")?;
    let data: Data = args.read_mp("DATA")?;
    Ok(Box::new(StoreData {
        offset,
        data: data.0,
    }))
}

/// Overwrites bytes.
#[derive(Debug)]
pub struct StoreData {
    offset: usize,
    data: Vec<u8>,
}

impl StoreData {
    fn apply(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            if let Some(dst) = p.data_mut().get_mut(self.offset..) {
                let n = dst.len().min(self.data.len());
                dst[..n].copy_from_slice(&self.data[..n]);
            }
        }
    }
}

impl Element for StoreData {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn overwrites_within_the_packet_only() {
        let frame = udp(2);
        let mut h = Harness::push(&CLASS, "28, \\<aabbccdd>", 1, 1);
        h.push_bytes(0, &frame);
        h.push_bytes(0, &frame[..20]);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][..28], &frame[..28]);
        assert_eq!(&out[0][28..], &[0xaa, 0xbb]);
        assert_eq!(out[1], frame[..20].to_vec());
    }
}
