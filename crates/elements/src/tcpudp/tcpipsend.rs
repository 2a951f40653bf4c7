//! `TCPIPSend`: makes the TCP/IP packets its `send` handler describes, as
//! Click's `elements/tcpudp/tcpipsend.cc`: a test tool that puts any
//! header (flags, numbers, addresses) on the wire on demand.

use super::segment::{port_word, TcpIp};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Manual, PortInfo,
    Stats,
};
use bricks_packet::MAX_BATCH;
use std::net::Ipv4Addr;

/// The `TCPIPSend` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPIPSend",
    ports: "0/1",
    processing: "h",
    manual: &MANUAL,
    make,
};

/// The most packets one write sends: a write runs on a worker, and a
/// count of billions would hold it for minutes.
const MAX_COUNT: u32 = 65_536;

static MANUAL: Manual = Manual {
    summary: "generates TCP/IP packets when asked to",
    synopsis: "TCPIPSend()",
    description: "Sends a TCP/IP packet out of its output whenever its `send` handler is \
        written. The value is `SRC SPORT DST DPORT SEQNO ACKNO FLAGS [COUNT [STOP]]`, \
        words separated by spaces: addresses, ports (numbers or well-known names), the \
        sequence and acknowledgment numbers, FLAGS the TCP control bits as a number (2 \
        SYN, 16 ACK, 18 SYN-ACK; 0x12 works too), COUNT how many copies to send (1 by \
        default, 0 sends none) and STOP a boolean: true stops the router once they are \
        sent.\n\n\
        Each packet is 40 bytes: an IP header with TOS 0, identification 0, Don't \
        Fragment, TTL 255 and its checksum; a TCP header with window 32120, no options \
        and its checksum (over the pseudo-header). The network header and destination \
        address annotations are set.\n\n\
        bricks differs from Click in refusing a COUNT above 65536 in one write (the \
        worker would be held for as long as it takes).",
    ports: "no inputs; one push output",
    keywords: &[],
    counters: &[("count", "packets sent (a bricks addition)")],
    example: "t :: TCPIPSend -> IPPrint -> Discard;\n\
        Script(write t.send 10.0.0.1 1234 10.0.0.2 80 1 0 2 1 true);",
    see_also: &["TCPConn", "CheckTCPHeader", "IPPrint"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(TCPIPSend { count: 0 }))
}

/// Sends TCP/IP packets on request.
#[derive(Debug)]
pub struct TCPIPSend {
    count: u64,
}

/// One `send` request.
#[derive(Debug, PartialEq)]
struct Request {
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    count: u32,
    stop: bool,
}

fn word<T: FromArg>(words: &[&str], i: usize, name: &str) -> Result<T, String> {
    let w = words.get(i).ok_or_else(|| {
        format!("missing {name} (send takes SRC SPORT DST DPORT SEQNO ACKNO FLAGS [COUNT [STOP]])")
    })?;
    T::from_arg(w).map_err(|why| format!("bad {name}: expected {}, {why}", T::TYPE))
}

fn parse(value: &str) -> Result<Request, String> {
    let w: Vec<&str> = value.split_whitespace().collect();
    if w.len() > 9 {
        return Err(format!(
            "too many arguments: {} words (send takes at most 9)",
            w.len()
        ));
    }
    let port = |i: usize, name: &str| {
        let t = w.get(i).ok_or_else(|| format!("missing {name}"))?;
        port_word(t).map_err(|why| format!("bad {name}: {why}"))
    };
    let count = if w.len() > 7 {
        word(&w, 7, "COUNT")?
    } else {
        1
    };
    if count > MAX_COUNT {
        return Err(format!(
            "COUNT {count}: at most {MAX_COUNT} packets a write"
        ));
    }
    Ok(Request {
        src: word(&w, 0, "SRC")?,
        sport: port(1, "SPORT")?,
        dst: word(&w, 2, "DST")?,
        dport: port(3, "DPORT")?,
        seq: word(&w, 4, "SEQNO")?,
        ack: word(&w, 5, "ACKNO")?,
        flags: word(&w, 6, "FLAGS")?,
        count,
        stop: if w.len() > 8 {
            word(&w, 8, "STOP")?
        } else {
            false
        },
    })
}

impl TCPIPSend {
    fn send(&mut self, r: &Request, cx: &mut Context<'_>) {
        let t = TcpIp {
            src: r.src,
            dst: r.dst,
            sport: r.sport,
            dport: r.dport,
            seq: r.seq,
            ack: r.ack,
            flags: r.flags,
            window: 32120,
            df: true,
            ..TcpIp::default()
        };
        let mut left = r.count;
        while left > 0 {
            let mut b = Batch::new();
            let n = (left as usize).min(MAX_BATCH);
            for _ in 0..n {
                if let Some(p) = t.packet() {
                    let _ = b.push(p);
                }
            }
            left -= n as u32;
            self.count += b.len() as u64;
            cx.push(0, &mut b);
        }
        if r.stop {
            cx.request_stop();
        }
    }
}

impl Element for TCPIPSend {
    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "send" || !write {
            return None;
        }
        Some(parse(value).map(|r| {
            self.send(&r, cx);
            String::new()
        }))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            // Reached only without a worker's context (never when the
            // router runs): the request is checked, nothing is sent.
            "send" => parse(value).map(drop),
            _ => Err(format!(
                "no write handler `{handler}` (TCPIPSend has `send`)"
            )),
        }
    }

    /// One packet per write, not one per worker.
    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "send"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("send")];
        H
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{ip_ok, tcp_ok};
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    fn harness() -> Harness {
        Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![],
                outputs: vec![Processing::Push],
            },
        )
    }

    #[test]
    fn sends_what_it_is_told() {
        let mut h = harness();
        h.call_write_handler("send", "10.0.0.1 www 10.0.0.2 0x1f90 7 9 0x12 2")
            .unwrap();
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 2);
        let want: [u8; 40] = [
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 255, 6, out[0][10], out[0][11], 10, 0, 0, 1, 10, 0, 0,
            2, 0, 80, 0x1f, 0x90, 0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x12, 0x7d, 0x78, out[0][36],
            out[0][37], 0, 0,
        ];
        assert_eq!(out[0], want);
        assert_eq!(out[1], want);
        assert!(ip_ok(&out[0]) && tcp_ok(&out[0]));
        assert!(!h.stop_requested());
        assert_eq!(h.stats().get("count"), Some(2));
    }

    #[test]
    fn count_zero_and_stop() {
        let mut h = harness();
        h.call_write_handler("send", "1.1.1.1 1 2.2.2.2 2 0 0 2 0 true")
            .unwrap();
        assert!(h.take(0).is_empty());
        assert!(h.stop_requested());
        // Many copies leave in batches, all of them.
        h.call_write_handler("send", "1.1.1.1 1 2.2.2.2 2 0 0 2 600")
            .unwrap();
        assert_eq!(h.take(0).len(), 600);
    }

    #[test]
    fn bad_requests_send_nothing() {
        let mut h = harness();
        for bad in [
            "",
            "1.1.1.1 1 2.2.2.2 2 0 0",
            "1.1.1.1 70000 2.2.2.2 2 0 0 2",
            "1.1.1.1 1 2.2.2 2 0 0 2",
            "1.1.1.1 1 2.2.2.2 2 0 0 256",
            "1.1.1.1 1 2.2.2.2 2 0 0 2 1 maybe",
            "1.1.1.1 1 2.2.2.2 2 0 0 2 70000",
            "1.1.1.1 1 2.2.2.2 2 0 0 2 1 true extra",
            "1.1.1.1 nosuchport 2.2.2.2 2 0 0 2",
        ] {
            assert!(h.call_write_handler("send", bad).is_err(), "{bad}");
        }
        assert!(h.take(0).is_empty());
        assert!(h.write_handler("bogus", "").is_err());
    }
}
