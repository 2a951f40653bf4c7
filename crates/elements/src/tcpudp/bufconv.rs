//! `BufferConverter`: the application end of a connection built of
//! elements, as Click's experimental `elements/local/bufconv.cc`: the
//! `data` handler's reads take the payload of the next in-order segment,
//! its writes become segments.

use super::segment::{self, TcpIp, PSH};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_packet::{MAX_BATCH, MAX_FRAME};

/// The `BufferConverter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "BufferConverter",
    ports: "2/1",
    processing: "lh/h",
    manual: &MANUAL,
    make,
};

/// The largest MTU: a segment's payload and its 40 bytes of headers fill
/// a packet buffer.
const MAX_MTU: usize = MAX_FRAME - 40;

/// The most segments one read looks through for data: a read handler
/// runs on a worker and must end.
const MAX_PULLS: usize = 4 * MAX_BATCH;

static MANUAL: Manual = Manual {
    summary: "converts TCP packets to and from buffers through handlers",
    synopsis: "BufferConverter(MTU)",
    description: "Reading the `data` handler pulls TCP segments from input 0 (IP header at \
        the network header annotation, else at the start) until one carries data, and \
        returns that data (bytes that are not UTF-8 are shown replaced); segments without \
        data are dropped on the way, and a read that finds none returns nothing. Writing \
        the `data` handler makes TCP/IP segments of the value, at most MTU bytes of \
        payload each, and pushes them out of output 0: 20-byte IP header with TOS 0x10, \
        Don't Fragment and TTL 255, TCP header with PSH, window 32120, both checksums, \
        addresses, ports and numbers zero (TCPConn, TCPAck, CopyFlowID downstream fill \
        them in). Packets on input 1 (Click means ICMP messages for path MTU discovery \
        there, and does nothing with them either) are dropped and counted.\n\n\
        Differences from Click: Click sends one packet per write and keeps the rest of \
        a longer value for later writes (its timer was to send it, but does nothing), \
        without bound; bricks sends the whole value at once, in MTU-sized segments. MTU \
        is at most 2008, what a packet buffer holds behind the headers.",
    ports: "input 0 (pull): in-order segments; input 1 (push): ICMP; output 0 (push): \
        segments made from writes",
    keywords: &[Keyword {
        name: "MTU",
        ty: "unsigned, 1 to 2008",
        default: None,
        doc: "the largest payload of a segment; positional",
    }],
    counters: &[
        ("segments", "segments made from writes"),
        ("empty", "segments pulled that carried no data"),
        ("icmp", "packets on input 1 (dropped)"),
        ("drops", "packets pulled that hold no TCP segment"),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["TCPBuffer", "TCPConn", "TCPAck"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mtu: usize = args.read_mp("MTU")?;
    if mtu == 0 || mtu > MAX_MTU {
        return Err(ArgError::new(format!(
            "MTU {mtu}: must be 1 to {MAX_MTU}, what a packet buffer holds"
        )));
    }
    Ok(Box::new(BufferConverter {
        mtu,
        segments: 0,
        empty: 0,
        icmp: 0,
        drops: 0,
    }))
}

/// Turns handler data into segments and segments into handler data.
#[derive(Debug)]
pub struct BufferConverter {
    mtu: usize,
    segments: u64,
    empty: u64,
    icmp: u64,
    drops: u64,
}

impl BufferConverter {
    /// The `data` write: the value as segments.
    fn oput(&mut self, value: &[u8], cx: &mut Context<'_>) {
        let mut b = Batch::new();
        for piece in value.chunks(self.mtu) {
            let t = TcpIp {
                flags: PSH,
                window: 32120,
                tos: 0x10,
                df: true,
                payload: piece,
                ..TcpIp::default()
            };
            let Some(p) = t.packet() else { continue };
            self.segments += 1;
            if let Err(p) = b.push(p) {
                cx.push(0, &mut b);
                let _ = b.push(p);
            }
        }
        cx.push(0, &mut b);
    }

    /// The `data` read: the payload of the next segment that has one.
    fn iput(&mut self, cx: &mut Context<'_>) -> String {
        for _ in 0..MAX_PULLS {
            let mut b = Batch::new();
            cx.pull(0, &mut b, 1);
            let Some(p) = b.pop() else { break };
            let Ok(s) = segment::locate_in(&p) else {
                self.drops += 1;
                continue;
            };
            if s.payload_len() == 0 {
                self.empty += 1;
                continue;
            }
            return String::from_utf8_lossy(&p.data()[s.payload()..s.end()]).into_owned();
        }
        String::new()
    }
}

impl Element for BufferConverter {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.icmp += batch.len() as u64;
        batch.clear();
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "data" {
            return None;
        }
        Some(Ok(if write {
            self.oput(value.as_bytes(), cx);
            String::new()
        } else if !value.is_empty() {
            return Some(Err("read handler `data` takes no parameters".into()));
        } else {
            self.iput(cx)
        }))
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "data"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("data")];
        H
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("segments", self.segments);
        s.counter("empty", self.empty);
        s.counter("icmp", self.icmp);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, tcp_ok, Rig};
    use super::super::segment::ACK;
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn rig(args: &str) -> Rig {
        Rig::alone(
            &CLASS,
            args,
            &[Processing::Pull, Processing::Push],
            &[Processing::Push],
        )
    }

    #[test]
    fn writes_become_segments_of_at_most_mtu() {
        let mut r = rig("4");
        r.write("data", "hello world").unwrap();
        let out = r.take(0);
        let payloads: Vec<&[u8]> = out.iter().map(|d| &d[40..]).collect();
        assert_eq!(payloads, [&b"hell"[..], b"o wo", b"rld"]);
        for d in &out {
            assert!(ip_ok(d) && tcp_ok(d));
            assert_eq!((d[1], d[6], d[8], d[33]), (0x10, 0x40, 255, PSH));
            assert_eq!(d[34..36], 32120u16.to_be_bytes());
        }
        assert_eq!(r.counter("segments"), 3);
    }

    #[test]
    fn reads_take_the_next_data() {
        let mut r = rig("1400");
        let seg = |data: &[u8]| datagram([1; 4], [2; 4], 1, 2, 3, 4, ACK, &[], data);
        r.feed(
            0,
            &[&seg(b""), &seg(b"first"), &seg(b"")[..30], &seg(b"second")],
        );
        assert_eq!(r.read("data").unwrap(), "first");
        assert_eq!(r.read("data").unwrap(), "second");
        assert_eq!(r.read("data").unwrap(), "");
        assert_eq!(r.counter("empty"), 1);
        assert_eq!(r.counter("drops"), 1);
        r.push(1, &[&seg(b"icmp")]);
        assert_eq!(r.counter("icmp"), 1);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("1400").is_ok());
        assert!(m("").is_err());
        assert!(m("0").is_err());
        assert!(m("2009").unwrap_err().contains("2008"));
    }
}
