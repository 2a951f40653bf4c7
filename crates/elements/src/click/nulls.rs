//! `Null2` to `Null8`: Null under seven more class names (Click's
//! `elements/standard/nulls.hh`; `Null1` is with Null in
//! `standard/null.rs`).

use crate::standard::null::Null;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(Null))
}

macro_rules! nulls {
    ($($class:ident $manual:ident $name:literal;)*) => {$(
        #[doc = concat!("The `", $name, "` class: Null under another name.")]
        pub static $class: ElementClass = ElementClass {
            name: $name,
            ports: "1/1",
            processing: "a/a",
            manual: &$manual,
            make,
        };

        static $manual: Manual = Manual {
            summary: "copy of Null",
            synopsis: $name,
            description: concat!(
                "Passes every packet from its input to its output unchanged, pushed or \
                 pulled, exactly as Null does. Click has Null1 to Null8 as separate copies \
                 of Null's code, to measure the instruction-cache cost of distinct elements; \
                 in bricks ", $name, " is a distinct class name with Null's code, so it \
                 keeps Click configurations working but adds no instruction-cache cost of \
                 its own."
            ),
            ports: "one input, one output; agnostic",
            keywords: &[],
            counters: &[],
            example: concat!(
                "InfiniteSource(LIMIT 2) -> ", $name, " -> Queue -> ", $name,
                " -> Unqueue -> Discard;"
            ),
            see_also: &["Null", "Null1"],
        };
    )*};
}

nulls! {
    NULL2 NULL2_MANUAL "Null2";
    NULL3 NULL3_MANUAL "Null3";
    NULL4 NULL4_MANUAL "Null4";
    NULL5 NULL5_MANUAL "Null5";
    NULL6 NULL6_MANUAL "Null6";
    NULL7 NULL7_MANUAL "Null7";
    NULL8 NULL8_MANUAL "Null8";
}

/// Every class of this file.
pub static CLASSES: [&ElementClass; 7] = [&NULL2, &NULL3, &NULL4, &NULL5, &NULL6, &NULL7, &NULL8];

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn each_passes_pushed_and_pulled_packets() {
        let frame = [0x45u8, 0, 0, 20, 1, 2, 3, 4];
        for class in CLASSES {
            let mut h = Harness::push(class, "", 1, 1);
            h.push_bytes(0, &frame);
            assert_eq!(h.take_bytes(0), vec![frame.to_vec()], "{}", class.name);
            let mut h = Harness::new(
                class,
                "",
                PortInfo {
                    inputs: vec![Processing::Pull],
                    outputs: vec![Processing::Pull],
                },
            );
            h.feed(0, [Packet::from_slice(&frame).unwrap()]);
            assert_eq!(h.pull(0, 4)[0].data(), frame, "{}", class.name);
            assert!(make_element(class, "1", &PortInfo::default()).is_err());
        }
    }
}
