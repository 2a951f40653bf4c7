//! `StrideSched` and `StrideSwitch`: stride scheduling of packets
//! (Waldspurger and Weihl 1995) as Click does it, over a pull scheduler's
//! inputs or a push switch's outputs.
//!
//! Each port has a stride, 2^16 / tickets, and a pass. StrideSched pulls
//! from the input with the smallest pass; every input tried on the way
//! advances its pass by its stride, whether it had a packet or not, and
//! one that had none is not tried again for that packet (Click's rule: it
//! costs an empty input one turn, not the output a wait). StrideSwitch
//! sends each packet to the output with the smallest pass, which then
//! advances. Passes are 32-bit and compared by their wrapping difference,
//! as Click's are, so they never overflow. Both classes share [`Stride`],
//! as Click's `StrideSwitch` inherits from `StrideSched`.

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

/// The `StrideSwitch` class.
pub static STRIDE_SWITCH: ElementClass = ElementClass {
    name: "StrideSwitch",
    ports: "1/1-",
    processing: "h/h",
    manual: &SWITCH_MANUAL,
    make: make_switch,
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
        packets is N such choices. Handlers `ticketsN` read and write input N's tickets; \
        `config` reads every input's, as `2, 1`.",
    ports: "one or more pull inputs; one pull output",
    keywords: &[],
    counters: &[(
        "ticketsN",
        "tickets of input N, per worker (write `ticketsN` to change them)",
    )],
    example: "q1 :: Queue; q2 :: Queue; s :: StrideSched(2, 1); \
        InfiniteSource(LIMIT 40) -> q1 -> [0]s; InfiniteSource(LIMIT 20) -> q2 -> [1]s; \
        s -> Unqueue -> Discard;",
    see_also: &[
        "DRRSched",
        "RoundRobinSched",
        "PrioSched",
        "ScheduleInfo",
        "StrideSwitch",
    ],
};

static SWITCH_MANUAL: Manual = Manual {
    summary: "sends packets to stride-scheduled outputs",
    synopsis: "StrideSwitch(TICKETS0, ..., TICKETSn-1)",
    description: "Packet-based stride switching: output i has TICKETSi tickets and receives \
        TICKETSi / (sum of tickets) of the packets, spread evenly. Each packet goes to the \
        output with the smallest pass, whose pass then advances by its stride (65536 / \
        tickets); on a tie the lower output goes first. An output with 0 tickets receives \
        nothing; when every output has 0 tickets, packets are dropped (counted as `drops`; \
        Click drops them silently). There must be one argument per output; tickets above \
        32768 are reduced to 32768 (Click warns). Each worker keeps its own passes. Handlers \
        `ticketsN` read and write output N's tickets; `config` reads every output's, as \
        `2, 1`.",
    ports: "one push input; one or more push outputs",
    keywords: &[],
    counters: &[
        (
            "ticketsN",
            "tickets of output N, per worker (write `ticketsN` to change them)",
        ),
        ("drops", "packets dropped because no output had tickets"),
    ],
    example: "InfiniteSource(LIMIT 30) -> s :: StrideSwitch(2, 1); \
        s[0] -> Discard; s[1] -> Discard;",
    see_also: &[
        "StrideSched",
        "RoundRobinSwitch",
        "Switch",
        "HashSwitch",
        "RandomSwitch",
    ],
};

fn parse_tickets(text: &str) -> Result<u32, String> {
    let v = i64::from_arg(text.trim())?;
    if v < 0 {
        return Err(format!("tickets must be 0 or more, found {v}"));
    }
    Ok(v.min(MAX_TICKETS as i64) as u32)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(StrideSched {
        stride: Stride::from_args(args, ports.ninputs(), "input")?,
    }))
}

fn make_switch(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(StrideSwitch {
        stride: Stride::from_args(args, ports.noutputs(), "output")?,
        drops: 0,
    }))
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

/// The stride scheduler proper: one client per port, in pass order.
/// Each operation costs at most the number of ports, which the
/// configuration fixes.
#[derive(Debug)]
struct Stride {
    clients: Vec<Client>,
    /// Ports with tickets, smallest pass first (ties: lower port first).
    order: Vec<usize>,
    /// Scratch: ports tried for the current packet.
    tried: Vec<usize>,
    /// "input" or "output", for messages.
    what: &'static str,
}

impl Stride {
    /// One argument of tickets per port, `n` ports.
    fn from_args(args: &mut Args<'_>, n: usize, what: &'static str) -> Result<Stride, ArgError> {
        let rest = args.rest();
        if rest.len() != n {
            return Err(ArgError::new(format!(
                "need {n} arguments, one per {what}, found {}",
                rest.len()
            )));
        }
        let mut clients = Vec::with_capacity(n);
        for (i, (text, span)) in rest.into_iter().enumerate() {
            let tickets = parse_tickets(text)
                .map_err(|e| ArgError::at(span, format!("argument {i} (tickets): {e}")))?;
            clients.push(Client::new(tickets));
        }
        let mut s = Stride {
            clients,
            order: Vec::with_capacity(n),
            tried: Vec::with_capacity(n),
            what,
        };
        // In reverse, as Click's, so that ties go to the lower port.
        for i in (0..n).rev() {
            if s.clients[i].tickets > 0 {
                s.insert(i);
            }
        }
        Ok(s)
    }

    /// Puts port `i` in `order` before the first port whose pass is not
    /// earlier than its own: on a tie the port inserted last goes first
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

    /// Advances port `i`'s pass by its stride.
    #[inline]
    fn stride(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.pass = c.pass.wrapping_add(c.stride);
    }

    /// The first `k` ports of the order strode: puts them back at their
    /// new places, in the order they were tried, as Click does.
    #[inline]
    fn reinsert_first(&mut self, k: usize) {
        self.tried.clear();
        self.tried.extend(self.order.drain(..k));
        for t in 0..self.tried.len() {
            let i = self.tried[t];
            self.insert(i);
        }
    }

    /// StrideSwitch's choice: the port with the smallest pass, which
    /// strides; `None` when no port has tickets.
    #[inline]
    fn next(&mut self) -> Option<usize> {
        let &i = self.order.first()?;
        self.stride(i);
        self.reinsert_first(1);
        Some(i)
    }

    /// Click's `StrideSched::set_tickets`: a port keeps its place unless
    /// it gains or loses every ticket.
    fn set_tickets(&mut self, port: usize, tickets: u32) -> Result<(), String> {
        let Some(c) = self.clients.get(port) else {
            return Err(format!("port {port} out of range"));
        };
        let old = c.tickets;
        let head_pass = self.order.first().map(|&j| self.clients[j].pass);
        let c = &mut self.clients[port];
        c.tickets = tickets;
        c.stride = STRIDE1 / tickets.max(1);
        if old != 0 && tickets == 0 {
            self.order.retain(|&j| j != port);
        } else if old == 0 && tickets != 0 {
            // Joins just behind the current head, as in Click.
            c.pass = head_pass.map_or(0, |p| p.wrapping_add(c.stride));
            self.insert(port);
        }
        Ok(())
    }

    /// The port a `ticketsN` handler names.
    fn port_of(&self, handler: &str) -> Option<usize> {
        handler
            .strip_prefix("tickets")
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<usize>().ok())
            .filter(|&p| p < self.clients.len())
    }

    /// `ticketsN` (Click prints the number) and `config` (Click prints
    /// every port's tickets, `2, 1`, current ones after writes).
    fn read_handler(&self, handler: &str) -> Option<String> {
        if handler == "config" {
            let all: Vec<String> = self.clients.iter().map(|c| c.tickets.to_string()).collect();
            return Some(all.join(", "));
        }
        self.port_of(handler)
            .map(|p| self.clients[p].tickets.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str, class: &str) -> Result<(), String> {
        let port = self.port_of(handler).ok_or_else(|| {
            format!(
                "no write handler `{handler}` ({class} has tickets0 to tickets{})",
                self.clients.len().saturating_sub(1)
            )
        })?;
        let tickets =
            parse_tickets(value).map_err(|e| format!("{} {port} tickets: {e}", self.what))?;
        self.set_tickets(port, tickets)
    }

    fn stats(&self, s: &mut Stats) {
        for (i, c) in self.clients.iter().enumerate() {
            s.counter(format!("tickets{i}"), u64::from(c.tickets));
        }
    }
}

/// Pulls by stride scheduling.
#[derive(Debug)]
pub struct StrideSched {
    stride: Stride,
}

impl StrideSched {
    /// One packet: inputs in pass order until one has a packet.
    #[inline]
    fn pull_one(&mut self, out: &mut Batch, cx: &mut Context<'_>) -> bool {
        let before = out.len();
        let s = &mut self.stride;
        let mut k = 0;
        while k < s.order.len() && out.len() == before {
            let i = s.order[k];
            cx.pull(i, out, 1);
            s.stride(i);
            k += 1;
        }
        s.reinsert_first(k);
        out.len() > before
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
        self.stride.stats(s);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.stride.read_handler(handler)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.stride.write_handler(handler, value, "StrideSched")
    }
}

/// Pushes to outputs by stride scheduling.
#[derive(Debug)]
pub struct StrideSwitch {
    stride: Stride,
    drops: u64,
}

impl Element for StrideSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let (stride, drops) = (&mut self.stride, &mut self.drops);
        cx.push_classified(batch, |_| {
            let o = stride.next();
            *drops += u64::from(o.is_none());
            o
        });
    }

    fn stats(&self, s: &mut Stats) {
        self.stride.stats(s);
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.stride.read_handler(handler)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.stride.write_handler(handler, value, "StrideSwitch")
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

    #[test]
    fn sched_reads_tickets_and_config_as_click() {
        let h = Harness::new(&CLASS, "2, 1", ports(2));
        assert_eq!(h.read_handler("tickets0").as_deref(), Ok("2"));
        assert_eq!(h.read_handler("config").as_deref(), Ok("2, 1"));
        h.write_handler("tickets1", "5").unwrap();
        assert_eq!(h.read_handler("config").as_deref(), Ok("2, 5"));
        assert!(h.read_handler("tickets2").is_err());
    }

    /// A UDP/IPv4 packet whose last byte is `tag`.
    fn udp(tag: u8) -> Packet {
        let mut p = vec![
            0x45, 0x00, 0x00, 0x1d, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xcd, 10, 0, 0, 1,
            10, 0, 0, 2, 0x04, 0x00, 0x00, 0x35, 0x00, 0x09, 0x00, 0x00,
        ];
        p.push(tag);
        Packet::from_slice(&p).unwrap()
    }

    fn tags(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take(port).iter().map(|p| p.data()[28]).collect()
    }

    #[test]
    fn switch_sends_in_clicks_order() {
        // Click's StrideSwitch(4, 2, 1) sends 0 0 1 0 0 1 2, over and over.
        let mut h = Harness::push(&STRIDE_SWITCH, "4, 2, 1", 1, 3);
        h.push_packets(0, (0..14).map(udp));
        assert_eq!(tags(&mut h, 0), [0, 1, 3, 4, 7, 8, 10, 11]);
        assert_eq!(tags(&mut h, 1), [2, 5, 9, 12]);
        assert_eq!(tags(&mut h, 2), [6, 13]);
        // One packet at a time carries on the same rotation.
        for t in 0..7 {
            h.push_packets(0, [udp(t)]);
        }
        assert_eq!(tags(&mut h, 0), [0, 1, 3, 4]);
        assert_eq!(tags(&mut h, 1), [2, 5]);
        assert_eq!(tags(&mut h, 2), [6]);
    }

    #[test]
    fn switch_shares_by_tickets() {
        let mut h = Harness::push(&STRIDE_SWITCH, "3, 0, 1", 1, 3);
        for _ in 0..100 {
            h.push_packets(0, (0..40).map(udp));
        }
        let got: Vec<usize> = (0..3).map(|o| h.take(o).len()).collect();
        assert_eq!(got, [3000, 0, 1000]);
        assert_eq!(h.stats().get("drops"), Some(0));
    }

    #[test]
    fn switch_handlers_and_no_tickets() {
        let mut h = Harness::push(&STRIDE_SWITCH, "1, 1", 1, 2);
        assert_eq!(h.read_handler("tickets1").as_deref(), Ok("1"));
        assert_eq!(h.read_handler("config").as_deref(), Ok("1, 1"));
        h.write_handler("tickets0", "0").unwrap();
        h.push_packets(0, (0..4).map(udp));
        assert_eq!(tags(&mut h, 1), [0, 1, 2, 3]);
        h.write_handler("tickets1", "0").unwrap();
        assert_eq!(h.read_handler("config").as_deref(), Ok("0, 0"));
        h.push_packets(0, (0..3).map(udp));
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
        // Back in: the rotation starts again from the ports' new passes.
        h.write_handler("tickets0", "1").unwrap();
        h.write_handler("tickets1", "1").unwrap();
        h.push_packets(0, (0..4).map(udp));
        assert_eq!(h.take(0).len() + h.take(1).len(), 4);
        h.write_handler("tickets0", "99999").unwrap();
        assert_eq!(h.read_handler("tickets0").as_deref(), Ok("32768"));
        let e = h.write_handler("tickets1", "-1").unwrap_err();
        assert!(e.contains("output 1 tickets"), "{e}");
        assert!(h.write_handler("tickets1", "many").is_err());
        let e = h.write_handler("tickets2", "1").unwrap_err();
        assert!(e.contains("tickets0 to tickets1"), "{e}");
        assert!(h.write_handler("tickets+1", "1").is_err());
        assert!(h.read_handler("tickets2").is_err());
        assert_eq!(h.read_handler("tickets1").as_deref(), Ok("1"));
    }

    #[test]
    fn switch_arguments_are_checked() {
        let two = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        let e = bricks_runtime::testing::make_element(&STRIDE_SWITCH, "1", &two).unwrap_err();
        assert!(e.contains("need 2 arguments, one per output"), "{e}");
        let e = bricks_runtime::testing::make_element(&STRIDE_SWITCH, "1, x", &two).unwrap_err();
        assert!(e.contains("argument 1"), "{e}");
        let e = bricks_runtime::testing::make_element(&STRIDE_SWITCH, "-1, 1", &two).unwrap_err();
        assert!(e.contains("0 or more"), "{e}");
    }

    #[test]
    fn switch_runs_in_a_configuration() {
        use crate::standard::testrun::{count, run};
        run(STRIDE_SWITCH.manual.example);
        let s = run("InfiniteSource(LIMIT 30) -> s :: StrideSwitch(2, 1); \
            s[0] -> a :: Discard; s[1] -> b :: Discard;");
        assert_eq!((count(&s, "a", "count"), count(&s, "b", "count")), (20, 10));
    }
}
