//! `UpstreamNotifier`: a push Null with a full notifier of its own
//! (Click's `elements/test/upstreamnotifier.cc`), for testing how sources
//! react when the way downstream says it is full.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};

/// The `UpstreamNotifier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "UpstreamNotifier",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "null element with an upstream notifier",
    synopsis: "UpstreamNotifier(SIGNAL)",
    description: "Pushes every packet out unchanged, and tells the sources pushing into it \
        whether to go on (Click's full notifier): with SIGNAL true they send, with SIGNAL \
        false they hold back as before a full Queue. The `signal` handler reads the signal \
        and writes a new one. The sources that listen are those that wait for full queues \
        (InfiniteSource, RandomSource...); what lies downstream of it is not asked, as in \
        Click, where the search for a notifier stops at the first one.",
    ports: "one push input, one push output",
    keywords: &[Keyword {
        name: "SIGNAL",
        ty: "boolean",
        default: None,
        doc: "whether the signal is active (sources may send); positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 5) -> u :: UpstreamNotifier(true) -> Discard;",
    see_also: &["PushNull", "Script", "InfiniteSource"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let signal = args.read_mp("SIGNAL")?;
    Ok(Box::new(UpstreamNotifier { signal }))
}

/// Passes packets and holds sources back on command.
#[derive(Debug)]
pub struct UpstreamNotifier {
    signal: bool,
}

impl Element for UpstreamNotifier {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(0, batch);
    }

    fn push_room(&self, _port: usize) -> Option<usize> {
        Some(if self.signal { usize::MAX } else { 0 })
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "signal").then(|| self.signal.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "signal" => {
                self.signal =
                    bool::from_arg(value.trim()).map_err(|_| "signal parameter must be boolean")?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (UpstreamNotifier has `signal`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("signal")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn passes_packets_and_signals() {
        let mut h = Harness::push(&CLASS, "false", 1, 1);
        h.push_bytes(0, &[1, 2, 3]);
        assert_eq!(h.take_bytes(0), [vec![1, 2, 3]]);
        assert_eq!(h.read_handler("signal").unwrap(), "false");
        h.write_handler("signal", "true").unwrap();
        assert_eq!(h.read_handler("signal").unwrap(), "true");
        assert!(h.write_handler("signal", "maybe").is_err());
        let e = make_element(&CLASS, "true", &PortInfo::default()).unwrap();
        assert_eq!(e.push_room(0), Some(usize::MAX));
        let e = make_element(&CLASS, "false", &PortInfo::default()).unwrap();
        assert_eq!(e.push_room(0), Some(0));
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_err());
    }
}
