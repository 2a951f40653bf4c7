//! `CheckIPHeader2`: CheckIPHeader without the checksum check, as Click's
//! `elements/ip/checkipheader2.cc`.

use crate::ip::checkipheader;
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `CheckIPHeader2` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckIPHeader2",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks IP header, no checksum",
    synopsis: "CheckIPHeader2([OFFSET, KEYWORDS])",
    description: "CheckIPHeader, except that the header checksum is not checked unless \
        CHECKSUM true is given. Every other argument, output and counter is \
        CheckIPHeader's: `bricks elements CheckIPHeader` describes them.",
    ports: "one input, one or two outputs; agnostic (output 1 push)",
    keywords: &[Keyword {
        name: "CHECKSUM",
        ty: "boolean",
        default: Some("false"),
        doc: "check the header checksum",
    }],
    counters: &[("drops", "packets that failed a check")],
    example: "InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000002>, LIMIT 1) \
        -> CheckIPHeader2 -> Print -> Discard;",
    see_also: &["CheckIPHeader", "MarkIPHeader"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let checksum: Option<bool> = args.read("CHECKSUM")?;
    let mut c = checkipheader::configure(args, ports.noutputs() > 1)?;
    c.set_checksum(checksum.unwrap_or(false));
    Ok(Box::new(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn bad_checksums_pass_unless_asked() {
        let mut bad = udp(8);
        bad[10] ^= 0xff;
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &bad);
        assert_eq!(h.take_bytes(0), vec![bad.clone()]);
        let mut h = Harness::push(&CLASS, "CHECKSUM true", 1, 2);
        h.push_bytes(0, &bad);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 1);
        // Other checks still apply: version 6 is refused.
        let mut v6 = udp(8);
        v6[0] = 0x65;
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &v6);
        assert_eq!(h.take(1).len(), 1);
    }
}
