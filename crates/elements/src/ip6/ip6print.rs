//! `IP6Print`: prints a line for each IPv6 packet, as Click's
//! `elements/ip6/ip6print.cc` (RFC 8200 header fields, RFC 5952 address
//! text).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use std::fmt::Write as _;
use std::net::Ipv6Addr;

/// The `IP6Print` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6Print",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pretty-prints IPv6 packets",
    synopsis: "IP6Print([LABEL, NBYTES, CONTENTS])",
    description: "Prints one line per packet on standard error, in Click's format: \
        `LABEL: SRC -> DST plen PAYLOAD_LENGTH, next NEXT_HEADER, hlim HOP_LIMIT`. The \
        IPv6 header is found at the network header annotation, else at the start of \
        the packet. With CONTENTS, the first NBYTES bytes of the packet's data follow \
        in hex on the next lines, a space every 4 bytes and a new line every 24, as \
        Click prints them. Packets pass on unchanged. Difference from Click: a packet \
        too short for an IPv6 header is printed as `LABEL: truncated IPv6 packet \
        (N bytes)` instead of whatever memory follows it.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LABEL",
            ty: "string",
            default: Some("empty"),
            doc: "text printed before each line, then a colon; positional",
        },
        Keyword {
            name: "NBYTES",
            ty: "unsigned",
            default: Some("1500"),
            doc: "with CONTENTS, how many bytes of data to print",
        },
        Keyword {
            name: "CONTENTS",
            ty: "boolean",
            default: Some("false"),
            doc: "print the packet's data in hex",
        },
    ],
    counters: &[],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 08 11 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02 \
        9c 40 00 35 00 08 00 00>, LIMIT 1) -> IP6Print(v6) -> Discard;",
    see_also: &["IPPrint", "Print", "CheckIP6Header"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: String = args.read_p("LABEL")?.unwrap_or_default();
    let contents: bool = args.read("CONTENTS")?.unwrap_or(false);
    let nbytes: usize = args.read("NBYTES")?.unwrap_or(1500);
    Ok(Box::new(IP6Print {
        label,
        contents,
        nbytes,
    }))
}

/// Prints IPv6 packets.
#[derive(Debug)]
pub struct IP6Print {
    label: String,
    contents: bool,
    nbytes: usize,
}

impl IP6Print {
    /// The text printed for `p` (without the final newline).
    fn text(&self, p: &Packet) -> String {
        let mut s = String::new();
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        let ip = p.l3_bytes();
        if ip.len() < 40 {
            let _ = write!(s, "truncated IPv6 packet ({} bytes)", ip.len());
            return s;
        }
        let addr = |at: usize| {
            let mut a = [0u8; 16];
            a.copy_from_slice(&ip[at..at + 16]);
            Ipv6Addr::from(a)
        };
        let _ = write!(
            s,
            "{} -> {} plen {}, next {}, hlim {}",
            addr(8),
            addr(24),
            u16::from_be_bytes([ip[4], ip[5]]),
            ip[6],
            ip[7]
        );
        if self.contents {
            s.push_str("\n  ");
            for (i, b) in p.data().iter().take(self.nbytes).enumerate() {
                let _ = write!(s, "{b:02x}");
                if i % 24 == 23 {
                    s.push_str("\n  ");
                } else if i % 4 == 3 {
                    s.push(' ');
                }
            }
        }
        s
    }

    fn print(&self, b: &Batch) {
        let mut out = String::new();
        for p in b.iter() {
            out.push_str(&self.text(p));
            out.push('\n');
        }
        eprint!("{out}");
    }
}

impl Element for IP6Print {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.print(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.print(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::udp;
    use bricks_runtime::testing::Harness;

    fn printer(args: &str) -> IP6Print {
        let parsed = bricks_runtime::testing::parse_args(args).unwrap();
        let mut a = Args::new(&parsed, None);
        let label: String = a.read_p("LABEL").unwrap().unwrap_or_default();
        let contents: bool = a.read("CONTENTS").unwrap().unwrap_or(false);
        let nbytes: usize = a.read("NBYTES").unwrap().unwrap_or(1500);
        a.complete().unwrap();
        IP6Print {
            label,
            contents,
            nbytes,
        }
    }

    #[test]
    fn prints_clicks_line() {
        let u = udp(4);
        let p = Packet::from_slice(&u).unwrap();
        assert_eq!(
            printer("v6").text(&p),
            "v6: 2001:db8::1 -> 2001:db8:1::2 plen 12, next 17, hlim 64"
        );
        assert_eq!(
            printer("").text(&p),
            "2001:db8::1 -> 2001:db8:1::2 plen 12, next 17, hlim 64"
        );
    }

    #[test]
    fn prints_contents_in_clicks_layout() {
        let u = udp(4);
        let p = Packet::from_slice(&u).unwrap();
        let t = printer("x, CONTENTS true, NBYTES 28").text(&p);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert_eq!(
            lines[1],
            "  60000000 000c1140 20010db8 00000000 00000000 00000001"
        );
        // Click leaves the space after every fourth byte, the last too.
        assert_eq!(lines[2], "  20010db8 ");
    }

    #[test]
    fn short_packets_say_so_and_pass() {
        let p = Packet::from_slice(&udp(0)[..20]).unwrap();
        assert_eq!(printer("s").text(&p), "s: truncated IPv6 packet (20 bytes)");
        let mut h = Harness::push(&CLASS, "s", 1, 1);
        h.push_bytes(0, &udp(0)[..20]);
        assert_eq!(h.take(0).len(), 1);
    }
}
