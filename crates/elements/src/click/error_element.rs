//! `Error`: an element that always fails (Click's
//! `elements/standard/errorelement.cc`): it takes any arguments and any
//! connections, and keeps the router from starting.

use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `Error` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Error",
    ports: "-/-",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "always fails",
    synopsis: "Error(...)",
    description: "Keeps the router from starting. It has any number of inputs and outputs \
        and accepts any arguments without complaint, so a configuration can be stopped \
        from running without spurious errors about arguments or connections. Click's \
        Error fails when the router initializes, after every element is configured; \
        bricks checks a configuration and builds its elements in one step, so the \
        configuration fails that step (`bricks check` and `bricks run` both refuse it), \
        with the message `Error element: always fails to initialize`.",
    ports: "any number of inputs and outputs, push or pull",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource -> Error(anything, goes) -> Discard;",
    see_also: &["Message"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // Any arguments are accepted: none is read, none is refused.
    args.skip_rest();
    Err(ArgError::new("Error element: always fails to initialize"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn always_fails_whatever_the_arguments() {
        for args in ["", "1, 2, 3", "FOO bar", "\"quoted\", \\<00>"] {
            let err = make_element(&CLASS, args, &PortInfo::default()).unwrap_err();
            assert_eq!(err, "Error element: always fails to initialize", "{args}");
        }
    }
}
