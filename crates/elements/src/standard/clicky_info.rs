//! `ClickyInfo`: styles for the Clicky GUI (Click's
//! `elements/standard/clickyinfo.cc`), kept so that configurations written
//! for Clicky load unchanged.

use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `ClickyInfo` class.
pub static CLICKY_INFO: ElementClass = ElementClass {
    name: "ClickyInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores styles for the Clicky GUI; routers ignore it",
    synopsis: "ClickyInfo(STYLE ...)",
    description: "Has no ports and does nothing with packets. Its arguments are style \
        sheets for the Clicky GUI, which reads them from the configuration; bricks keeps \
        them (the `config` handler shows them) and otherwise ignores them, as Click's \
        drivers do.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "ClickyInfo(STYLE \"* { decorations: activity }\"); \
        InfiniteSource(LIMIT 1) -> Discard;",
    see_also: &["AddressInfo", "ScheduleInfo"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // Every argument is Clicky's business, not the router's.
    let _ = args.rest();
    Ok(Box::new(ClickyInfo))
}

/// Holds nothing at run time.
#[derive(Debug)]
pub struct ClickyInfo;

impl Element for ClickyInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn any_styles_are_accepted() {
        for conf in [
            "",
            "STYLE \"* { decorations: activity }\"",
            "anything, at all",
        ] {
            assert!(
                make_element(&CLICKY_INFO, conf, &Default::default()).is_ok(),
                "{conf}"
            );
        }
    }
}
