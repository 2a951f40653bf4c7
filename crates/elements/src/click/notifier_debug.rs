//! `NotifierDebug`: a Null whose `signal` handler prints the notifier
//! signal Click would have at its place (Click's
//! `elements/test/notifierdebug.cc`), for tests of how queues, sources
//! and schedulers notify each other.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo,
};

/// The `NotifierDebug` class.
pub static CLASS: ElementClass = ElementClass {
    name: "NotifierDebug",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "null element that prints the notifier signal at its place",
    synopsis: "NotifierDebug",
    description: "Passes every packet from its input to its output unchanged, pushed or \
        pulled. Its `signal` handler prints, in Click's notation, the signal Click's \
        element would listen to: in a pull context the upstream empty signal (the \
        \"empty\" notifiers of the queues and sources it pulls from), in a push context \
        the downstream full signal (the \"full\" notifiers of the queues it pushes into). \
        Each signal is a bit of a word named by its kind and number, `empty.0/1:1*` being \
        bit 0 of the first \"empty\" word, active (`*`: the queue has packets, or has \
        room); several words are joined by `+`, `idle` is a signal that is never active \
        and `busy*` one that always may be (the search crossed between push and pull, or \
        ended at an element that could make packets itself). Bits are numbered as Click \
        numbers them, in the order the elements are declared: the queues and sources \
        first, PullSwitch and the pull-mode file readers after them. bricks' tasks do not \
        sleep on these signals; the handler works them out from the graph when read.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> d1 :: NotifierDebug -> q :: Queue -> d2 :: NotifierDebug \
        -> Unqueue -> Discard; Script(print d1.signal, print d2.signal, stop);",
    see_also: &["Queue", "NotifierQueue", "UpstreamNotifier"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(NotifierDebug))
}

/// Passes packets; prints its place's notifier signal.
#[derive(Debug)]
pub struct NotifierDebug;

impl Element for NotifierDebug {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull(0, out, max);
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "signal" {
            return None;
        }
        Some(if write {
            Err("NotifierDebug's `signal` is read-only".into())
        } else if !value.trim().is_empty() {
            Err("read handler `signal` takes no parameters".into())
        } else {
            Ok(cx.notifier_signal_text())
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("signal")];
        H
    }
}
