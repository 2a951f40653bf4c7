//! `BlockThread`: Click's test element that blocks the thread calling its
//! handler (Click's `elements/test/blockthread.cc`), to test what a worker
//! does while one of its handlers does not return: signals arriving
//! meanwhile, other workers going on.

use bricks_element::{ArgError, Args, Element, ElementClass, FromArg, Handler, Manual, PortInfo};
use std::time::Duration;

/// The `BlockThread` class.
pub static CLASS: ElementClass = ElementClass {
    name: "BlockThread",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "a `block` handler that stalls the thread calling it (for tests)",
    synopsis: "BlockThread",
    description: "Writing a time to its `block` handler (`0.01s`, `5ms`; at most 10 s) \
        blocks the thread that writes it, a worker when a Script in the router writes it, \
        for that long. Only useful to test how the rest of the router copes. `block` is a \
        private handler, as in Click: control sockets and `bricks ctl` cannot reach it.",
    ports: "none",
    keywords: &[],
    counters: &[("blocks", "writes to `block`")],
    example: "bt :: BlockThread; Script(write bt.block 0.01s, stop);",
    see_also: &["Script"],
};

/// The longest a `block` write stalls its thread: a test's mistake
/// (`block 1h`) must not hang the run.
const MAX_BLOCK: Duration = Duration::from_secs(10);

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(BlockThread { blocks: 0 }))
}

/// Blocks its caller on request.
#[derive(Debug)]
pub struct BlockThread {
    blocks: u64,
}

impl Element for BlockThread {
    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 1] = [Handler::w("block")];
        &HANDLERS
    }

    fn handler_is_private(&self, handler: &str) -> bool {
        handler == "block"
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        if handler != "block" {
            return Err(format!("no write handler `{handler}`"));
        }
        let d = Duration::from_arg(value.trim()).map_err(|_| "bad TIME".to_string())?;
        if d > MAX_BLOCK {
            return Err(format!("TIME: at most {} s", MAX_BLOCK.as_secs()));
        }
        self.blocks += 1;
        std::thread::sleep(d);
        Ok(())
    }

    fn stats(&self, s: &mut bricks_element::Stats) {
        s.counter("blocks", self.blocks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;
    use std::time::Instant;

    #[test]
    fn block_stalls_the_caller_for_the_time_given() {
        let mut e = make_element(&CLASS, "", &Default::default()).unwrap();
        let t = Instant::now();
        e.write_handler("block", "20ms").unwrap();
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert_eq!(e.write_handler("block", "soon").unwrap_err(), "bad TIME");
        assert!(e.write_handler("block", "1h").is_err());
        assert!(e.handler_is_private("block"));
    }
}
