//! `InputSwitch`: accepts packets from one settable input only, as Click's
//! `elements/standard/inputswitch.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};

/// The `InputSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "InputSwitch",
    ports: "-/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "accepts packet stream from settable input",
    synopsis: "InputSwitch([INPUT])",
    description: "Forwards packets arriving on input INPUT (0 by default) to its output and \
        drops, counting them, packets arriving on any other input. A negative INPUT drops \
        everything. The `switch` handler reads and sets INPUT while the router runs.",
    ports: "push inputs (any number); one push output",
    keywords: &[Keyword {
        name: "INPUT",
        ty: "integer",
        default: Some("0"),
        doc: "the input whose packets pass, negative for none; positional",
    }],
    counters: &[("drops", "packets that arrived on another input")],
    example: "InfiniteSource(LIMIT 2) -> [0]s :: InputSwitch(1) -> Print -> Discard; \
        InfiniteSource(LIMIT 1) -> [1]s;",
    see_also: &["Switch", "PullSwitch"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let input: i64 = args.read_p("INPUT")?.unwrap_or(0);
    Ok(Box::new(InputSwitch { input, drops: 0 }))
}

/// Passes one input's packets.
#[derive(Debug)]
pub struct InputSwitch {
    input: i64,
    drops: u64,
}

impl Element for InputSwitch {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if i64::try_from(port).is_ok_and(|p| p == self.input) {
            cx.push(0, batch);
        } else {
            self.drops += batch.len() as u64;
            batch.clear();
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "switch").then(|| self.input.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "switch" => {
                self.input = i64::from_arg(value.trim())
                    .map_err(|why| format!("switch takes an integer: {why}"))?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (InputSwitch has `switch`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("switch")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn only_the_chosen_input_passes() {
        let mut h = Harness::push(&CLASS, "", 3, 1);
        h.push_bytes(0, &udp(1));
        h.push_bytes(1, &udp(2));
        assert_eq!(h.take_bytes(0), vec![udp(1)]);
        h.write_handler("switch", "1").unwrap();
        h.push_bytes(0, &udp(1));
        h.push_bytes(1, &udp(2));
        assert_eq!(h.take_bytes(0), vec![udp(2)]);
        h.write_handler("switch", "-1").unwrap();
        h.push_bytes(1, &udp(2));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
        assert!(h.write_handler("switch", "one").is_err());
    }
}
