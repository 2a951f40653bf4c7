//! `ARPPrint`: prints ARP packets as tcpdump does, as Click's
//! `elements/ethernet/arpprint.cc` (RFC 826 packet layout, RFC 903 RARP
//! and RFC 2390 inverse ARP operations).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// The `ARPPrint` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ARPPrint",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pretty-prints ARP packets a la tcpdump",
    synopsis: "ARPPrint([TAG, TIMESTAMP, ETHER, OUTFILE, ACTIVE])",
    description: "Prints one line per ARP packet on standard error (or OUTFILE), preceded \
        by TAG and a colon: `arp who-has 10.0.0.2 tell 10.0.0.1`, `arp reply 10.0.0.2 \
        is-at 52-54-00-BB-00-02`, and the RARP and inverse ARP operations, in Click's \
        words. The ARP header is found at the network header annotation; without one, \
        after an Ethernet header whose type is ARP, else at the start of the packet. \
        Packets pass on unchanged. The `active` handler reads and sets ACTIVE.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "TAG",
            ty: "string",
            default: Some("empty"),
            doc: "text printed before each line; positional",
        },
        Keyword {
            name: "TIMESTAMP",
            ty: "boolean",
            default: Some("true"),
            doc: "print the packet's timestamp in seconds since 1970",
        },
        Keyword {
            name: "ETHER",
            ty: "boolean",
            default: Some("false"),
            doc: "print the Ethernet source and destination addresses",
        },
        Keyword {
            name: "OUTFILE",
            ty: "file name",
            default: Some("standard error"),
            doc: "write the lines to this file instead",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "whether anything is printed",
        },
    ],
    counters: &[],
    example: "InfiniteSource(DATA \\<ffffffffffff 525400aa0001 0806 0001 0800 06 04 0001 \
        525400aa0001 0a000001 000000000000 0a000002>, LIMIT 1) \
        -> ARPPrint(arp, TIMESTAMP false) -> Discard;",
    see_also: &["Print", "IPPrint", "ARPQuerier"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: String = args.read_p("TAG")?.unwrap_or_default();
    let timestamp = args.read("TIMESTAMP")?.unwrap_or(true);
    let ether = args.read("ETHER")?.unwrap_or(false);
    let outfile: Option<PathBuf> = args.read("OUTFILE")?;
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let outfile = match outfile {
        Some(path) => Some(
            std::fs::File::create(&path)
                .map_err(|e| ArgError::new(format!("OUTFILE {}: {e}", path.display())))?,
        ),
        None => None,
    };
    Ok(Box::new(ARPPrint {
        label,
        timestamp,
        ether,
        active,
        outfile,
    }))
}

/// Prints ARP packets.
#[derive(Debug)]
pub struct ARPPrint {
    label: String,
    timestamp: bool,
    ether: bool,
    active: bool,
    outfile: Option<std::fs::File>,
}

/// Ethernet address in Click's form, `52-54-00-AA-00-01`.
fn ether(b: &[u8]) -> String {
    let mut s = String::with_capacity(17);
    for (i, x) in b.iter().take(6).enumerate() {
        if i > 0 {
            s.push('-');
        }
        let _ = write!(s, "{x:02X}");
    }
    s
}

fn ip(b: &[u8]) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// Where the ARP header starts, as an offset into the frame.
fn arp_offset(p: &Packet) -> usize {
    match p.network_header_offset() {
        Some(off) => off.min(p.len()),
        _ if p.len() >= 14 && p.data()[12..14] == [0x08, 0x06] => 14,
        _ => 0,
    }
}

impl ARPPrint {
    /// The line printed for `p`, without its newline.
    pub fn line(&self, p: &Packet) -> String {
        let mut s = String::new();
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        if self.timestamp {
            let t = p.anno().timestamp;
            let _ = write!(s, "{}.{:06}: ", t.secs(), t.subsec_nanos() / 1000);
        }
        let off = arp_offset(p);
        let frame = p.data();
        if self.ether && off >= 14 {
            let _ = write!(s, "{} > {}: ", ether(&frame[6..12]), ether(&frame[..6]));
        }
        let a = &frame[off..];
        // struct click_ether_arp: 8-byte header, then two 10-byte
        // hardware/protocol address pairs for Ethernet and IPv4.
        if a.len() < 28 {
            let _ = write!(s, "truncated-arp ({})", a.len());
            return s;
        }
        let hrd = u16::from_be_bytes([a[0], a[1]]);
        let pro = u16::from_be_bytes([a[2], a[3]]);
        let (hln, pln) = (a[4], a[5]);
        let op = u16::from_be_bytes([a[6], a[7]]);
        const ETHERTYPE_IP: u16 = 0x0800;
        const ETHERTYPE_TRAIL: u16 = 0x1000;
        if (pro != ETHERTYPE_IP && pro != ETHERTYPE_TRAIL) || pln != 4 || hln == 0 {
            let _ = write!(
                s,
                "arp-#{op} for proto #{pro} ({pln}) hardware #{hrd} ({hln})"
            );
            return s;
        }
        // Click reads the addresses at the fixed Ethernet/IPv4 offsets
        // whatever the lengths say; so does this.
        let (sha, spa, tha, tpa) = (&a[8..14], &a[14..18], &a[18..24], &a[24..28]);
        if pro == ETHERTYPE_TRAIL {
            s.push_str("trailer-");
        }
        let _ = match op {
            1 => {
                let _ = write!(s, "arp who-has {}", ip(tpa));
                let n = usize::from(hln).min(6);
                if tha[..n].iter().any(|&b| b != 0) {
                    let _ = write!(s, " ({})", ether(tha));
                }
                write!(s, " tell {}", ip(spa))
            }
            2 => write!(s, "arp reply {} is-at {}", ip(spa), ether(sha)),
            3 => write!(s, "rarp who-is {} tell {}", ether(tha), ether(sha)),
            4 => write!(s, "rarp reply {} at {}", ether(tha), ip(tpa)),
            8 => write!(s, "invarp who-is {} tell {}", ether(tha), ether(sha)),
            9 => write!(s, "invarp reply {} at {}", ether(tha), ip(tpa)),
            _ => write!(s, "arp-#{op}"),
        };
        if hrd != 1 {
            let _ = write!(s, "hardware #{hrd}");
        }
        s
    }

    fn print(&mut self, b: &Batch) {
        if !self.active || b.is_empty() {
            return;
        }
        let mut out = String::new();
        for p in b.iter() {
            out.push_str(&self.line(p));
            out.push('\n');
        }
        match &mut self.outfile {
            Some(f) => {
                let _ = f.write_all(out.as_bytes());
            }
            None => eprint!("{out}"),
        }
    }
}

impl Element for ARPPrint {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.print(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.print(b));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "active").then(|| self.active.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (ARPPrint has `active`)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("active")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;

    /// 10.0.0.1 (52:54:00:aa:00:01) asks who has 10.0.0.2, as captured on
    /// a veth pair.
    pub(crate) static REQUEST: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
    ];

    /// 10.0.0.2's answer: it is at 52:54:00:bb:00:02.
    static REPLY: [u8; 42] = [
        0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x0a, 0x00,
        0x00, 0x02, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01,
    ];

    fn printer(tag: &str, timestamp: bool, ether: bool) -> ARPPrint {
        ARPPrint {
            label: tag.into(),
            timestamp,
            ether,
            active: true,
            outfile: None,
        }
    }

    #[test]
    fn request_and_reply_lines_match_click() {
        let a = printer("arpr", false, false);
        let p = Packet::from_slice(&REQUEST).unwrap();
        assert_eq!(a.line(&p), "arpr: arp who-has 10.0.0.2 tell 10.0.0.1");
        let p = Packet::from_slice(&REPLY).unwrap();
        assert_eq!(
            a.line(&p),
            "arpr: arp reply 10.0.0.2 is-at 52-54-00-BB-00-02"
        );
    }

    #[test]
    fn timestamp_ether_and_stripped_header() {
        let a = printer("", true, true);
        let mut p = Packet::from_slice(&REQUEST).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(0, 120_000_000);
        assert_eq!(
            a.line(&p),
            "0.120000: 52-54-00-AA-00-01 > FF-FF-FF-FF-FF-FF: arp who-has 10.0.0.2 tell 10.0.0.1"
        );
        let mut p = Packet::from_slice(&REQUEST[14..]).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(0, 120_000_000);
        assert_eq!(a.line(&p), "0.120000: arp who-has 10.0.0.2 tell 10.0.0.1");
    }

    #[test]
    fn odd_packets_print_without_panicking() {
        let a = printer("", false, false);
        let p = Packet::from_slice(&REQUEST[..30]).unwrap();
        assert_eq!(a.line(&p), "truncated-arp (16)");
        let mut f = REQUEST;
        f[16] = 0x86; // protocol 0x86dd
        f[17] = 0xdd;
        let p = Packet::from_slice(&f).unwrap();
        assert_eq!(a.line(&p), "arp-#1 for proto #34525 (4) hardware #1 (6)");
        let mut f = REQUEST;
        f[21] = 3; // RARP request
        let p = Packet::from_slice(&f).unwrap();
        assert_eq!(
            a.line(&p),
            "rarp who-is 00-00-00-00-00-00 tell 52-54-00-AA-00-01"
        );
        let mut f = REQUEST;
        f[38..42].copy_from_slice(&[10, 0, 0, 9]);
        f[32..38].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        let p = Packet::from_slice(&f).unwrap();
        assert_eq!(
            a.line(&p),
            "arp who-has 10.0.0.9 (02-00-00-00-00-09) tell 10.0.0.1"
        );
        for n in 0..REQUEST.len() {
            let _ = a.line(&Packet::from_slice(&REQUEST[..n]).unwrap());
        }
    }

    #[test]
    fn active_handler() {
        let mut a = printer("", false, false);
        assert_eq!(a.read_handler("active").as_deref(), Some("true"));
        a.write_handler("active", "false").unwrap();
        assert_eq!(a.read_handler("active").as_deref(), Some("false"));
        assert!(a.write_handler("active", "maybe").is_err());
    }
}
