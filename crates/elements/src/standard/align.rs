//! `Align` and `AlignmentInfo`: Click's packet-data alignment, accepted and
//! checked but with nothing to do in bricks (Click's
//! `elements/standard/align.cc` and `alignmentinfo.cc`).
//!
//! Click's IP elements cast packet bytes to C structs and need the IP header
//! 4-byte aligned on some machines. bricks reads every header from byte
//! slices with explicit byte order, so no element depends on where in a
//! buffer the data starts: the elements pass packets unchanged.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `Align` class.
pub static ALIGN: ElementClass = ElementClass {
    name: "Align",
    ports: "1/1",
    processing: "a/a",
    manual: &ALIGN_MANUAL,
    make: make_align,
};

/// The `AlignmentInfo` class.
pub static ALIGNMENT_INFO: ElementClass = ElementClass {
    name: "AlignmentInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &ALIGNMENT_INFO_MANUAL,
    make: make_alignment_info,
};

static ALIGN_MANUAL: Manual = Manual {
    summary: "passes packets on (Click aligns their data; bricks needs no alignment)",
    synopsis: "Align(MODULUS, OFFSET)",
    description: "In Click, moves each packet's data so that it starts OFFSET bytes past a \
        multiple of MODULUS, for machines that cannot read unaligned words. bricks reads \
        headers from byte slices, whatever their alignment, so the element checks its \
        arguments as Click does (MODULUS a power of two from 2 to 256, OFFSET below it) \
        and passes packets on unchanged, without copying them.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "MODULUS",
            ty: "unsigned",
            default: None,
            doc: "a power of two, 2 to 256; positional",
        },
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: None,
            doc: "below MODULUS; positional",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> Align(4, 0) -> Discard;",
    see_also: &["AlignmentInfo", "Strip"],
};

static ALIGNMENT_INFO_MANUAL: Manual = Manual {
    summary: "accepted for Click configurations; bricks needs no alignment information",
    synopsis: "AlignmentInfo(ELEMENT [MODULUS OFFSET ...], ...)",
    description: "Click's `click-align` tool writes this element to tell elements how \
        their input data will be aligned. bricks elements do not depend on alignment (they \
        read headers from byte slices), so the element takes any arguments and does \
        nothing. It has no ports.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "AlignmentInfo(c 4 2); InfiniteSource(LIMIT 1) -> c :: Counter -> Discard;",
    see_also: &["Align"],
};

fn make_align(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let modulus: u32 = args.read_mp("MODULUS")?;
    let offset: u32 = args.read_mp("OFFSET")?;
    if !(2..=256).contains(&modulus) || !modulus.is_power_of_two() {
        return Err(ArgError::new(format!(
            "MODULUS {modulus} must be a power of two from 2 to 256"
        )));
    }
    if offset >= modulus {
        return Err(ArgError::new(format!(
            "OFFSET {offset} must be below MODULUS {modulus}"
        )));
    }
    Ok(Box::new(Align))
}

fn make_alignment_info(
    args: &mut Args<'_>,
    _ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    // Every argument is taken and ignored.
    let _ = args.rest();
    Ok(Box::new(AlignmentInfo))
}

/// Passes packets unchanged.
#[derive(Debug)]
pub struct Align;

impl Element for Align {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(0, batch);
    }

    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull(0, out, max);
    }
}

/// Holds nothing.
#[derive(Debug)]
pub struct AlignmentInfo;

impl Element for AlignmentInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn align_passes_packets_unchanged() {
        let ip = [
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let mut h = Harness::push(&ALIGN, "4, 2", 1, 1);
        h.push_bytes(0, &ip);
        assert_eq!(h.take_bytes(0), vec![ip.to_vec()]);
    }

    #[test]
    fn align_checks_arguments_as_click() {
        for bad in ["", "4", "3, 0", "4, 4", "512, 0", "1, 0"] {
            assert!(
                make_element(&ALIGN, bad, &Default::default()).is_err(),
                "{bad}"
            );
        }
        assert!(make_element(&ALIGNMENT_INFO, "c 4 2, d 8 0", &Default::default()).is_ok());
    }
}
