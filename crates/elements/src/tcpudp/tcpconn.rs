//! `TCPConn`: opens a TCP connection (or waits for one) for a connection
//! built of elements, as Click's experimental `elements/local/tcpconn.cc`:
//! it registers the flow in the TCPDemux upstream, sends the SYN, learns
//! from the SYN-ACK that the connection is established (RFC 9293 section
//! 3.5), and only then lets outgoing segments through, giving them the
//! connection's addresses, ports and sequence numbers.

use super::segment::{self, port_word, TcpIp, ACK, SYN};
use super::tcpdemux::{self, Flow, FlowTable};
use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Manual,
    Packet, PortInfo, Stats,
};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `TCPConn` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPConn",
    ports: "2/3",
    processing: "hl/hlh",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "manages TCP connections",
    synopsis: "TCPConn()",
    description: "One end of a TCP connection built of elements. Writing `connect SRC \
        SPORT DST DPORT` to its `ctrl` handler registers the flow in the TCPDemux \
        upstream of input 0 (found by flow, Click's flow-based router context: the \
        configuration must have one) and sends a SYN from SRC:SPORT to DST:DPORT out of \
        output 2 (40 bytes: TOS 0x10, Don't Fragment, TTL 255, window 32120, a random \
        initial sequence number, both checksums). `listen SRC SPORT` registers SRC:SPORT \
        for any peer and takes nothing further, as in Click. A `ctrl` write to an \
        active TCPConn, or one whose flow the demultiplexer refuses (known already, or \
        its table full), fails. `reset` forgets the connection and its flow.\n\n\
        Incoming segments (input 0, push, TCP/IP with the IP header at the network \
        header annotation, else at the start) go on out of output 0 while a connection is \
        active and not listening; the first SYN-ACK establishes it. Outgoing segments are \
        pulled from input 1 through output 1 only once it is established; each gets the \
        connection's addresses and ports and the next sequence number (which then \
        advances by its length), both checksums updated.\n\n\
        Differences from Click: Click advances its sequence number for every SYN-ACK, \
        retransmissions included (bricks for the first only), and reads any packet as \
        TCP (bricks drops and counts what is not). The connection is one for all \
        workers, so a `ctrl` write goes to one of them.",
    ports: "input 0 (push), output 0 (push): incoming; input 1 (pull), output 1 (pull): \
        outgoing; output 2 (push): SYNs",
    keywords: &[],
    counters: &[
        ("syns", "SYNs sent"),
        (
            "inactive",
            "incoming segments with no connection to go to (dropped)",
        ),
        ("drops", "packets that hold no TCP segment (dropped)"),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["TCPDemux", "TCPAck", "TCPBuffer", "BufferConverter"],
};

/// The connection, one for all workers.
#[derive(Debug, Default)]
struct Conn {
    active: bool,
    listen: bool,
    established: bool,
    seq_nxt: u32,
    flow: Option<Flow>,
}

#[derive(Debug, Default)]
struct Shared(Mutex<Conn>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Conn> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let demux = tcpdemux::upstream_table(args, 0)?;
    let conn = args.shared(|_| Ok(Shared::default()))?;
    Ok(Box::new(TCPConn {
        conn,
        demux,
        syns: 0,
        inactive: 0,
        drops: 0,
    }))
}

/// One end of an element-built TCP connection.
#[derive(Debug)]
pub struct TCPConn {
    conn: Arc<Shared>,
    demux: Arc<FlowTable>,
    syns: u64,
    inactive: u64,
    drops: u64,
}

/// A `ctrl` request.
#[derive(Debug, PartialEq)]
enum Ctrl {
    Connect(Flow),
    Listen(Flow),
}

fn parse_ctrl(value: &str) -> Result<Ctrl, String> {
    let w: Vec<&str> = value.split_whitespace().collect();
    if w.len() < 3 || w.len() > 5 {
        return Err("expected ACTION SRC SPORT [DST DPORT]".into());
    }
    let addr = |i: usize, name: &str| match w.get(i) {
        Some(t) => Ipv4Addr::from_arg(t).map_err(|why| format!("bad {name}: {why}")),
        None => Ok(Ipv4Addr::UNSPECIFIED),
    };
    let port = |i: usize, name: &str| match w.get(i) {
        Some(t) => port_word(t).map_err(|why| format!("bad {name}: {why}")),
        None => Ok(0),
    };
    let flow = Flow {
        local: addr(1, "SRC")?,
        lport: port(2, "SPORT")?,
        remote: addr(3, "DST")?,
        rport: port(4, "DPORT")?,
    };
    match w[0] {
        "connect" => Ok(Ctrl::Connect(flow)),
        "listen" => Ok(Ctrl::Listen(Flow {
            remote: Ipv4Addr::UNSPECIFIED,
            rport: 0,
            ..flow
        })),
        _ => Err("action must be connect or listen".into()),
    }
}

impl TCPConn {
    fn ctrl(&mut self, value: &str, cx: Option<&mut Context<'_>>) -> Result<(), String> {
        let req = parse_ctrl(value)?;
        let mut c = self.conn.lock();
        if c.active {
            return Err("TCPConn already active".into());
        }
        let (flow, listen) = match req {
            Ctrl::Connect(f) => (f, false),
            Ctrl::Listen(f) => (f, true),
        };
        if !self.demux.add(flow, 0) {
            return Err(if listen {
                "cannot listen".into()
            } else {
                "cannot connect".into()
            });
        }
        *c = Conn {
            active: true,
            listen,
            established: false,
            seq_nxt: click_random::random(),
            flow: Some(flow),
        };
        if listen {
            return Ok(());
        }
        let syn = TcpIp {
            src: flow.local,
            dst: flow.remote,
            sport: flow.lport,
            dport: flow.rport,
            seq: c.seq_nxt,
            flags: SYN,
            window: 32120,
            tos: 0x10,
            df: true,
            ..TcpIp::default()
        };
        drop(c);
        if let (Some(cx), Some(p)) = (cx, syn.packet()) {
            self.syns += 1;
            cx.push_one(2, p);
        }
        Ok(())
    }

    fn reset(&mut self) {
        let mut c = self.conn.lock();
        if c.active {
            if let Some(f) = c.flow.take() {
                self.demux.remove(&f);
            }
            *c = Conn::default();
        }
    }

    /// An incoming segment: whether it goes on (Click's `iput`).
    fn iput(&mut self, p: &Packet) -> bool {
        let Ok(s) = segment::locate_in(p) else {
            self.drops += 1;
            return false;
        };
        let mut c = self.conn.lock();
        if !c.active || c.listen {
            self.inactive += 1;
            return false;
        }
        if s.flags(p.data()) & (SYN | ACK) == SYN | ACK && !c.established {
            c.established = true;
            c.seq_nxt = c.seq_nxt.wrapping_add(1);
        }
        true
    }

    /// An outgoing segment, given the connection's identity (Click's
    /// `oput`); false when it is dropped.
    fn oput(&mut self, p: &mut Packet, c: &mut Conn) -> bool {
        let (Ok(s), Some(f)) = (segment::locate_in(p), c.flow) else {
            self.drops += 1;
            return false;
        };
        let d = p.data_mut();
        s.set_addr(d, 12, f.local);
        s.set_addr(d, 16, f.remote);
        s.set_tcp16(d, 0, f.lport);
        s.set_tcp16(d, 2, f.rport);
        s.set_tcp32(d, 4, c.seq_nxt);
        c.seq_nxt = c.seq_nxt.wrapping_add(s.seq_len(d));
        p.anno_mut().dst_ip = f.remote;
        true
    }
}

impl Element for TCPConn {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        batch.retain(|p| self.iput(p));
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        {
            let c = self.conn.lock();
            if !c.active || c.listen || !c.established {
                return;
            }
        }
        let mut b = Batch::new();
        cx.pull(1, &mut b, max);
        let conn = Arc::clone(&self.conn);
        let mut c = conn.lock();
        b.retain(|p| self.oput(p, &mut c));
        out.append(&mut b);
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "ctrl" || !write {
            return None;
        }
        Some(self.ctrl(value, Some(cx)).map(|()| String::new()))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            // Reached only without a worker (no SYN can be sent then).
            "ctrl" => self.ctrl(value, None),
            "reset" => {
                self.reset();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (TCPConn has ctrl, reset)"
            )),
        }
    }

    /// The connection is shared: a write goes to one worker.
    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "ctrl" | "reset")
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("ctrl"), Handler::w("reset")];
        H
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("syns", self.syns);
        s.counter("inactive", self.inactive);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, port_info, tcp_ok, FlowRefs, Rig};
    use super::super::segment::PSH;
    use super::super::tcpdemux;
    use super::*;
    use crate::ip::header::{be16, be32};
    use bricks_element::Processing;

    fn rigs() -> (Rig, Rig) {
        let dmx = Rig::alone(
            &tcpdemux::CLASS,
            "CAPACITY 1",
            &[Processing::Push],
            &[Processing::Push],
        );
        let refs = FlowRefs(vec![("TCPDemux", dmx.state())]);
        let con = Rig::new(
            &CLASS,
            "",
            port_info(
                &[Processing::Push, Processing::Pull],
                &[Processing::Push, Processing::Pull, Processing::Push],
            ),
            &refs,
        );
        (con, dmx)
    }

    /// A segment from the peer 10.0.0.2:80 to 10.0.0.1:4000.
    fn from_peer(seq: u32, ack: u32, flags: u8, len: usize) -> Vec<u8> {
        datagram(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            80,
            4000,
            seq,
            ack,
            flags,
            &[],
            &vec![b'y'; len],
        )
    }

    #[test]
    fn connects_and_then_lets_data_out() {
        let (mut con, mut dmx) = rigs();
        // Outgoing data waits for the connection.
        let data = datagram([0; 4], [0; 4], 0, 0, 0, 0, PSH, &[], b"hello");
        con.feed(1, &[&data, &data]);
        assert!(con.pull(1, 8).is_empty());
        con.write("ctrl", "connect 10.0.0.1 4000 10.0.0.2 80")
            .unwrap();
        let syn = con.take(2);
        assert_eq!(syn.len(), 1);
        let s = &syn[0];
        assert!(ip_ok(s) && tcp_ok(s));
        assert_eq!(s[12..20], [10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!((be16(s, 20), be16(s, 22)), (4000, 80));
        assert_eq!(s[33], SYN);
        assert_eq!((s[1], s[6], s[8]), (0x10, 0x40, 255));
        let iss = be32(s, 24);
        // The demultiplexer knows the flow now.
        let reply = from_peer(7000, iss + 1, SYN | ACK, 0);
        dmx.push(0, &[&reply]);
        assert_eq!(dmx.take(0).len(), 1);
        // A second connect fails while this one is active.
        assert!(con
            .write("ctrl", "connect 10.0.0.1 4001 10.0.0.2 80")
            .is_err());
        assert!(con.pull(1, 8).is_empty(), "not established yet");
        con.push(0, &[&reply, &reply]);
        assert_eq!(con.take(0).len(), 2);
        let out = con.pull(1, 8);
        assert_eq!(out.len(), 2);
        for (k, o) in out.iter().enumerate() {
            assert!(ip_ok(o) && tcp_ok(o));
            assert_eq!(o[12..20], [10, 0, 0, 1, 10, 0, 0, 2]);
            assert_eq!((be16(o, 20), be16(o, 22)), (4000, 80));
            // The SYN-ACK, even twice, advanced the number once.
            assert_eq!(be32(o, 24), iss + 1 + 5 * k as u32);
        }
        // Reset: the flow is gone from the demultiplexer.
        con.write("reset", "").unwrap();
        dmx.push(0, &[&reply]);
        assert!(dmx.take(0).is_empty());
        con.push(0, &[&reply]);
        assert_eq!(con.counter("inactive"), 1);
    }

    #[test]
    fn listen_registers_and_takes_nothing() {
        let (mut con, mut dmx) = rigs();
        con.write("ctrl", "listen 10.0.0.1 4000").unwrap();
        assert!(con.take(2).is_empty());
        dmx.push(0, &[&from_peer(1, 0, SYN, 0)]);
        assert_eq!(dmx.take(0).len(), 1);
        con.push(0, &[&from_peer(1, 0, SYN, 0)]);
        assert!(con.take(0).is_empty());
        con.write("reset", "").unwrap();
        dmx.push(0, &[&from_peer(1, 0, SYN, 0)]);
        assert!(dmx.take(0).is_empty());
        // Free again: it may listen again.
        assert!(con.write("ctrl", "listen 10.0.0.1 4000").is_ok());
    }

    #[test]
    fn a_full_demultiplexer_refuses() {
        let (mut con, dmx) = rigs();
        let t = dmx.shared::<FlowTable>();
        assert!(t.add(
            Flow {
                local: Ipv4Addr::new(1, 1, 1, 1),
                lport: 1,
                remote: Ipv4Addr::UNSPECIFIED,
                rport: 0
            },
            0
        ));
        let err = con
            .write("ctrl", "connect 10.0.0.1 4000 10.0.0.2 80")
            .unwrap_err();
        assert!(err.contains("cannot connect"), "{err}");
        assert!(con.take(2).is_empty());
    }

    #[test]
    fn bad_ctrl_values() {
        for bad in [
            "",
            "connect",
            "connect 10.0.0.1",
            "dance 10.0.0.1 1",
            "connect 10.0.0.300 1 10.0.0.2 80",
            "connect 10.0.0.1 70000 10.0.0.2 80",
            "connect 10.0.0.1 1 10.0.0.2 80 extra",
        ] {
            assert!(parse_ctrl(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_ctrl("listen 10.0.0.1 www 10.0.0.9 9").unwrap(),
            Ctrl::Listen(Flow {
                local: Ipv4Addr::new(10, 0, 0, 1),
                lport: 80,
                remote: Ipv4Addr::UNSPECIFIED,
                rport: 0
            })
        );
    }

    #[test]
    fn needs_a_tcpdemux_upstream() {
        let err = Rig::try_new(
            &CLASS,
            "",
            port_info(
                &[Processing::Push, Processing::Pull],
                &[Processing::Push, Processing::Pull, Processing::Push],
            ),
            &FlowRefs::default(),
        )
        .err()
        .unwrap();
        assert!(err.contains("need at least 1 upstream TCPDemux"), "{err}");
    }
}
