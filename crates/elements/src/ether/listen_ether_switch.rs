//! `ListenEtherSwitch`: Click's `EtherSwitch` with one more output, the
//! listening port, that gets a copy of every frame the switch receives
//! (Click's `elements/etherswitch/listenetherswitch.cc`): a monitor or a
//! capture sees the bridged traffic without a Tee on each LAN.
//!
//! Learning, the bounded shared station table and the counters are
//! EtherSwitch's ([`super::ether_switch`]); only where frames go differs.

use super::ether_switch::{self, EtherSwitch, DROP, FLOOD};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `ListenEtherSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ListenEtherSwitch",
    ports: "1-/2-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "learning, forwarding Ethernet switch with a listening port",
    synopsis: "ListenEtherSwitch(KEYWORDS TIMEOUT, CAPACITY)",
    description: "EtherSwitch with a listening port: with N inputs it has N+1 outputs, \
        and the last one gets a copy of every frame received. Inputs and outputs 0 to N-1 \
        are the LANs, switched as by EtherSwitch (TIMEOUT, CAPACITY, the bounded shared \
        table, the counters and the `timeout` handler are EtherSwitch's). As in Click, a \
        frame for a station on its own input's LAN goes to the listening port only, a \
        forwarded frame to its destination's port and the listening port, and a flooded \
        frame to every port (the listening one included) but its input's. Frames shorter \
        than an Ethernet header are dropped and counted as `runt`, and the listener does \
        not see them (Click reads past their end). Unlike EtherSwitch, one LAN is allowed, \
        as in Click.",
    ports: "N push inputs (one or more); N+1 push outputs, the last the listening port",
    keywords: ether_switch::MANUAL_KEYWORDS,
    counters: ether_switch::MANUAL_COUNTERS,
    example: "InfiniteSource(DATA \\<ff ff ff ff ff ff 52 54 00 00 00 01 08 06 \
        00 01 08 00 06 04 00 01 52 54 00 00 00 01 0a 00 00 01>, LIMIT 1) \
        -> [0]sw :: ListenEtherSwitch;\n\
        Idle -> [1]sw;\n\
        sw[0] -> Discard; sw[1] -> Discard; sw[2] -> Discard;",
    see_also: &["EtherSwitch", "Tee"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    if ports.noutputs() != ports.ninputs() + 1 {
        return Err(ArgError::new(format!(
            "ListenEtherSwitch needs one output more than inputs (the last is the listening \
             port), not {} for {}",
            ports.noutputs(),
            ports.ninputs()
        )));
    }
    Ok(Box::new(ListenEtherSwitch {
        switch: ether_switch::build(args, ports.ninputs())?,
        listen: ports.ninputs(),
    }))
}

/// One worker's instance: an EtherSwitch among the first N ports.
#[derive(Debug)]
pub struct ListenEtherSwitch {
    switch: EtherSwitch,
    /// The listening output (N).
    listen: usize,
}

impl ListenEtherSwitch {
    /// Click's `broadcast`: every output but `source`, the listening one
    /// included.
    fn flood(&mut self, source: usize, p: Packet, cx: &mut Context<'_>) {
        self.switch.count_flood();
        for o in 0..self.listen {
            if o != source {
                cx.push_one(o, p.duplicate());
            }
        }
        cx.push_one(self.listen, p);
    }
}

impl Element for ListenEtherSwitch {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.switch.start(cx);
    }

    fn push(&mut self, source: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now_ms = cx.now().0 / 1_000_000;
        let timeout_ms = self.switch.timeout_ms();
        // One frame at a time, so that every output sees its frames in
        // arrival order.
        for p in batch.drain() {
            match self.switch.verdict(source, &p, now_ms, timeout_ms) {
                DROP if p.len() < 14 => drop(p),
                // For its own LAN: the listener only.
                DROP => cx.push_one(self.listen, p),
                FLOOD => self.flood(source, p, cx),
                port => {
                    cx.push_one(self.listen, p.duplicate());
                    cx.push_one(usize::from(port), p);
                }
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        self.switch.stats(s);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        self.switch.handler_is_shared(handler)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.switch.write_handler(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
    const B: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0b];
    const C: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0c];

    /// An Ethernet frame carrying a 20-byte IPv4 header (10.0.0.1 to
    /// 10.0.0.2), `tag` in its identification field.
    fn frame(dst: [u8; 6], src: [u8; 6], tag: u8) -> Vec<u8> {
        let mut f = Vec::with_capacity(60);
        f.extend(dst);
        f.extend(src);
        f.extend([0x08, 0x00]);
        f.extend([
            0x45, 0, 0, 46, 0, tag, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.resize(60, 0);
        f
    }

    fn switch(args: &str, lans: usize) -> Harness {
        let mut h = Harness::push(&CLASS, args, lans, lans + 1);
        h.advance_to(Timestamp(1_000_000_000));
        h
    }

    fn tags(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take(port).iter().map(|p| p.data()[19]).collect()
    }

    #[test]
    fn the_listener_sees_every_frame() {
        let mut h = switch("", 2);
        // A (LAN 0) to B, unknown: flooded to LAN 1 and the listener.
        h.push_bytes(0, &frame(B, A, 1));
        assert_eq!(tags(&mut h, 0), []);
        assert_eq!(tags(&mut h, 1), [1]);
        assert_eq!(tags(&mut h, 2), [1]);
        // B (LAN 1) to A, learnt: forwarded to LAN 0, copied to listener.
        h.push_bytes(1, &frame(A, B, 2));
        assert_eq!(tags(&mut h, 0), [2]);
        assert_eq!(tags(&mut h, 1), []);
        assert_eq!(tags(&mut h, 2), [2]);
        // C on LAN 0 to A, also on LAN 0: only the listener gets it.
        h.push_bytes(0, &frame(A, C, 3));
        assert_eq!(tags(&mut h, 0), []);
        assert_eq!(tags(&mut h, 1), []);
        assert_eq!(tags(&mut h, 2), [3]);
        let s = h.stats();
        assert_eq!(s.get("flooded"), Some(1));
        assert_eq!(s.get("forwarded"), Some(1));
        assert_eq!(s.get("filtered"), Some(1));
        assert_eq!(s.get("table 52:54:00:00:00:0a"), Some(0));
        assert_eq!(s.get("table 52:54:00:00:00:0c"), Some(0));
    }

    #[test]
    fn one_lan_and_hub_mode() {
        let mut h = switch("TIMEOUT 0", 1);
        h.push_bytes(0, &frame(B, A, 1));
        assert_eq!(tags(&mut h, 0), []);
        assert_eq!(tags(&mut h, 1), [1]);
        let mut h = switch("TIMEOUT 0", 3);
        h.push_bytes(1, &frame([0xff; 6], A, 4));
        assert_eq!(tags(&mut h, 0), [4]);
        assert_eq!(tags(&mut h, 1), []);
        assert_eq!(tags(&mut h, 2), [4]);
        assert_eq!(tags(&mut h, 3), [4]);
        h.write_handler("timeout", "60").unwrap();
        assert_eq!(h.stats().get("timeout"), Some(60));
    }

    #[test]
    fn runts_are_dropped_and_the_table_is_bounded() {
        let mut h = switch("CAPACITY 4", 2);
        h.push_bytes(0, &[0xff; 13]);
        assert!((0..3).all(|o| h.take(o).is_empty()));
        assert_eq!(h.stats().get("runt"), Some(1));
        for i in 0..50u8 {
            h.push_bytes(0, &frame(A, [0x52, 0x54, 0, 0, 1, i], i));
        }
        assert_eq!(tags(&mut h, 2).len(), 50);
        assert_eq!(h.stats().get("table_size"), Some(4));
    }

    #[test]
    fn ports_and_arguments_are_checked() {
        let ports = |n: usize, m: usize| PortInfo {
            inputs: vec![bricks_element::Processing::Push; n],
            outputs: vec![bricks_element::Processing::Push; m],
        };
        assert!(make_element(&CLASS, "", &ports(2, 2)).is_err());
        assert!(make_element(&CLASS, "", &ports(2, 4)).is_err());
        assert!(make_element(&CLASS, "CAPACITY 0", &ports(2, 3)).is_err());
        assert!(make_element(&CLASS, "TIMEOUT 5, CAPACITY 10", &ports(2, 3)).is_ok());
        assert!(make_element(&CLASS, "", &ports(1, 2)).is_ok());
    }
}
