//! `StrideSched`: a pull scheduler that shares its output between its
//! inputs in proportion to their tickets (Click's stride scheduling of
//! packets, Waldspurger and Weihl 1995).
//!
//! Each input has a stride, 2^16 / tickets, and a pass. A packet pulled
//! from the output comes from the input with the smallest pass; every input
//! tried on the way advances its pass by its stride, whether it had a
//! packet or not, and one that had none is not tried again for that packet
//! (Click's rule: it costs an empty input one turn, not the output a
//! wait). Passes are 32-bit and compared by their wrapping difference, as
//! Click's are, so they never overflow.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Manual, PortInfo, Stats,
};

/// The `StrideSched` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StrideSched",
    ports: "1-/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

/// Click's `StrideSched::STRIDE1`.
const STRIDE1: u32 = 1 << 16;
/// Click's `StrideSched::MAX_TICKETS`.
const MAX_TICKETS: u32 = 1 << 15;

static MANUAL: Manual = Manual {
    summary: "pulls from its inputs in proportion to their tickets",
    synopsis: "StrideSched(TICKETS0, ..., TICKETSn-1)",
    description: "Packet-based stride scheduling: input i has TICKETSi tickets, and when every \
        input has packets, input i supplies TICKETSi / (sum of tickets) of the packets pulled \
        from the output. Each packet comes from the input with the smallest pass; each input \
        tried advances by its stride (65536 / tickets), and an input that had nothing is not \
        tried again for that packet, so an empty input loses its turn rather than delaying \
        the output. An input with 0 tickets is never pulled. There must be one argument per \
        input; tickets above 32768 are reduced to 32768 (Click warns). A batch pull of N \
        packets is N such choices.",
    ports: "one or more pull inputs; one pull output",
    keywords: &[],
    counters: &[(
        "ticketsN",
        "tickets of input N, per worker (write `ticketsN` to change them)",
    )],
    example: "q1 :: Queue; q2 :: Queue; s :: StrideSched(2, 1); \
        InfiniteSource(LIMIT 40) -> q1 -> [0]s; InfiniteSource(LIMIT 20) -> q2 -> [1]s; \
        s -> Unqueue -> Discard;",
    see_also: &["DRRSched", "RoundRobinSched", "PrioSched", "ScheduleInfo"],
};

fn parse_tickets(text: &str) -> Result<u32, String> {
    let v = i64::from_arg(text.trim())?;
    if v < 0 {
        return Err(format!("tickets must be 0 or more, found {v}"));
    }
    Ok(v.min(MAX_TICKETS as i64) as u32)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rest = args.rest();
    let n = ports.ninputs();
    if rest.len() != n {
        return Err(ArgError::new(format!(
            "need {n} arguments, one per input, found {}",
            rest.len()
        )));
    }
    let mut clients = Vec::with_capacity(n);
    for (i, (text, span)) in rest.into_iter().enumerate() {
        let tickets = parse_tickets(text)
            .map_err(|e| ArgError::at(span, format!("argument {i} (tickets): {e}")))?;
        clients.push(Client::new(tickets));
    }
    let mut s = StrideSched {
        clients,
        order: Vec::with_capacity(n),
        tried: Vec::with_capacity(n),
    };
    s.rebuild_order();
    Ok(Box::new(s))
}

#[derive(Debug, Clone, Copy)]
struct Client {
    tickets: u32,
    stride: u32,
    pass: u32,
}

impl Client {
    fn new(tickets: u32) -> Client {
        let stride = STRIDE1 / tickets.max(1);
        // Click starts each pass one stride in.
        Client {
            tickets,
            stride,
            pass: stride,
        }
    }
}

/// `a` comes after `b` (Click's `PASS_GT`).
#[inline]
fn pass_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Pulls by stride scheduling.
#[derive(Debug)]
pub struct StrideSched {
    clients: Vec<Client>,
    /// Inputs with tickets, smallest pass first (ties: lower port first).
    order: Vec<usize>,
    /// Scratch: inputs tried for the current packet.
    tried: Vec<usize>,
}

impl StrideSched {
    fn rebuild_order(&mut self) {
        self.order.clear();
        // In reverse, as Click's, so that ties go to the lower port.
        for i in (0..self.clients.len()).rev() {
            if self.clients[i].tickets > 0 {
                self.insert(i);
            }
        }
    }

    /// Puts input `i` in `order` before the first input whose pass is not
    /// earlier than its own: on a tie the input inserted last goes first
    /// (Click's `Client::insert`).
    #[inline]
    fn insert(&mut self, i: usize) {
        let pass = self.clients[i].pass;
        let at = self
            .order
            .iter()
            .position(|&j| !pass_gt(pass, self.clients[j].pass))
            .unwrap_or(self.order.len());
        self.order.insert(at, i);
    }

    /// One packet: inputs in pass order until one has a packet.
    #[inline]
    fn pull_one(&mut self, out: &mut Batch, cx: &mut Context<'_>) -> bool {
        let before = out.len();
        let mut k = 0;
        while k < self.order.len() && out.len() == before {
            let i = self.order[k];
            cx.pull(i, out, 1);
            self.clients[i].pass = self.clients[i].pass.wrapping_add(self.clients[i].stride);
            k += 1;
        }
        // Move the tried inputs to their new places in the order they were
        // tried, as Click does.
        self.tried.clear();
        self.tried.extend(self.order.drain(..k));
        for t in 0..self.tried.len() {
            let i = self.tried[t];
            self.insert(i);
        }
        out.len() > before
    }

    fn set_tickets(&mut self, port: usize, tickets: u32) -> Result<(), String> {
        let Some(c) = self.clients.get(port) else {
            return Err(format!("port {port} out of range"));
        };
        let old = c.tickets;
        let head_pass = self.order.first().map(|&j| self.clients[j].pass);
        let c = &mut self.clients[port];
        c.tickets = tickets;
        c.stride = STRIDE1 / tickets.max(1);
        if old == 0 && tickets > 0 {
            // Joins just behind the current head, as in Click.
            c.pass = head_pass.map_or(0, |p| p.wrapping_add(c.stride));
        }
        self.order.retain(|&j| j != port);
        if tickets > 0 {
            self.insert(port);
        }
        Ok(())
    }
}

impl Element for StrideSched {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let want = max.min(out.remaining());
        for _ in 0..want {
            if !self.pull_one(out, cx) {
                break;
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        for (i, c) in self.clients.iter().enumerate() {
            s.counter(format!("tickets{i}"), u64::from(c.tickets));
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let port = handler
            .strip_prefix("tickets")
            .and_then(|p| p.parse::<usize>().ok())
            .ok_or_else(|| {
                format!("no write handler `{handler}` (StrideSched has tickets0 to ticketsN)")
            })?;
        let tickets = parse_tickets(value)?;
        self.set_tickets(port, tickets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    fn tagged(tag: u8, n: usize) -> Vec<Packet> {
        (0..n)
            .map(|_| Packet::from_slice(&[tag, 0, 0, 0]).unwrap())
            .collect()
    }

    fn shares(h: &mut Harness, inputs: usize, pulls: usize) -> Vec<usize> {
        let mut got = vec![0; inputs];
        for _ in 0..pulls / 32 {
            for p in h.pull(0, 32) {
                got[p.data()[0] as usize] += 1;
            }
        }
        got
    }

    #[test]
    fn saturated_inputs_share_by_tickets() {
        let mut h = Harness::new(&CLASS, "2, 1", ports(2));
        h.feed(0, tagged(0, 20_000));
        h.feed(1, tagged(1, 20_000));
        let got = shares(&mut h, 2, 15_000);
        let ratio = got[0] as f64 / got[1] as f64;
        assert!((ratio - 2.0).abs() / 2.0 < 0.05, "{got:?}");
        assert_eq!(got[0] + got[1], 15_000 / 32 * 32);

        let mut h = Harness::new(&CLASS, "3, 1, 0, 4", ports(4));
        for i in 0..4 {
            h.feed(i, tagged(i as u8, 20_000));
        }
        let got = shares(&mut h, 4, 16_000);
        assert_eq!(got[2], 0, "no tickets, never pulled");
        for (i, t) in [(0, 3.0), (1, 1.0), (3, 4.0)] {
            let share = got[i] as f64 / (16_000 / 32 * 32) as f64;
            assert!((share - t / 8.0).abs() / (t / 8.0) < 0.05, "{got:?}");
        }
    }

    #[test]
    fn ties_go_as_in_click() {
        // Click's StrideSched(4, 2, 1): a client that strides onto
        // another's pass goes before it.
        let mut h = Harness::new(&CLASS, "4, 2, 1", ports(3));
        for i in 0..3 {
            h.feed(i, tagged(i as u8, 10));
        }
        let got: Vec<u8> = h.pull(0, 14).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, [0, 0, 1, 0, 0, 1, 2, 0, 0, 1, 0, 0, 1, 2]);
    }

    #[test]
    fn an_empty_input_gives_its_turn_away() {
        let mut h = Harness::new(&CLASS, "1, 1", ports(2));
        h.feed(1, tagged(1, 10));
        let got: Vec<u8> = h.pull(0, 32).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, vec![1; 10]);
        assert!(h.pull(0, 32).is_empty());
    }

    #[test]
    fn tickets_handlers() {
        let mut h = Harness::new(&CLASS, "1, 1", ports(2));
        assert_eq!(h.stats().get("tickets1"), Some(1));
        h.write_handler("tickets1", "0").unwrap();
        h.feed(0, tagged(0, 100));
        h.feed(1, tagged(1, 100));
        let got = shares(&mut h, 2, 64);
        assert_eq!(got, vec![64, 0]);
        h.write_handler("tickets1", "3").unwrap();
        let got = shares(&mut h, 2, 64);
        assert_eq!(got, vec![16, 48]);
        assert!(h.write_handler("tickets2", "1").is_err());
        assert!(h.write_handler("tickets0", "-1").is_err());
        assert!(h.write_handler("bogus", "1").is_err());
    }

    #[test]
    fn arguments_are_checked() {
        let e = bricks_runtime::testing::make_element(&CLASS, "1", &ports(2)).unwrap_err();
        assert!(e.contains("need 2 arguments"), "{e}");
        let e = bricks_runtime::testing::make_element(&CLASS, "1, x", &ports(2)).unwrap_err();
        assert!(e.contains("argument 1"), "{e}");
        let e = bricks_runtime::testing::make_element(&CLASS, "1, -3", &ports(2)).unwrap_err();
        assert!(e.contains("0 or more"), "{e}");
        // Reduced, as in Click.
        let h = Harness::new(&CLASS, "100000, 1", ports(2));
        assert_eq!(h.stats().get("tickets0"), Some(32768));
    }
}
