//! `Print`: writes a line per packet to standard error, in Click's format
//! (`elements/standard/print.cc`): `LABEL: TIMESTAMP:  LEN | 00112233 4455`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo,
};
use std::fmt::Write;

/// The `Print` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Print",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints packet contents",
    synopsis: "Print([LABEL, MAXLENGTH, KEYWORDS])",
    description: "Prints up to MAXLENGTH bytes of each packet, in hex, preceded by LABEL, and \
        passes the packet on unchanged. A line is `LABEL: LENGTH | 00112233 44556677 ...`: \
        hex in groups of four bytes (eight characters per group with CONTENTS ASCII, \
        non-printable bytes shown as `.`). Without LABEL the line starts with the length; \
        with CONTENTS NONE (or an empty packet) there is no `|` part. For debugging: \
        printing is slow.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LABEL",
            ty: "string",
            default: Some("empty"),
            doc: "text at the start of each line, followed by `: `",
        },
        Keyword {
            name: "MAXLENGTH",
            ty: "integer",
            default: Some("24"),
            doc: "content bytes shown; negative for the whole packet (LENGTH, NBYTES: \
                  deprecated names)",
        },
        Keyword {
            name: "CONTENTS",
            ty: "NONE, HEX, ASCII or a boolean",
            default: Some("HEX"),
            doc: "how the content is printed (true: HEX, false: NONE)",
        },
        Keyword {
            name: "TIMESTAMP",
            ty: "boolean",
            default: Some("false"),
            doc: "print the packet's timestamp in seconds since 1970 (`SEC.USEC: `)",
        },
        Keyword {
            name: "PRINTANNO",
            ty: "boolean",
            default: Some("false"),
            doc: "print the 48 bytes of Click's annotation area, as bricks' annotations map \
                  onto it (destination address at 0, paint at 16, VLAN TCI at 20)",
        },
        Keyword {
            name: "HEADROOM",
            ty: "boolean",
            default: Some("false"),
            doc: "print the packet's headroom and tailroom, ` (h128 t1980)`",
        },
        Keyword {
            name: "CPU",
            ty: "boolean",
            default: Some("false"),
            doc: "print the worker's number after the label, `(0)` (Click's kernel module only)",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "print at all (the `active` handler)",
        },
    ],
    counters: &[],
    example: "InfiniteSource(\\<11 22 33 44 55>, LIMIT 1) -> Print(ok) -> Discard;  \
              // ok:    5 | 11223344 55",
    see_also: &["IPPrint", "ToDump"],
};

/// How the content is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contents {
    None,
    Hex,
    Ascii,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args)?))
}

fn configure(args: &mut Args<'_>) -> Result<Print, ArgError> {
    let label: String = args.read_p("LABEL")?.unwrap_or_default();
    let mut max: i64 = args.read_p("MAXLENGTH")?.unwrap_or(24);
    for old in ["LENGTH", "NBYTES"] {
        if let Some(m) = args.read(old)? {
            max = m;
        }
    }
    let contents: Option<String> = args.read("CONTENTS")?;
    let timestamp = args.read("TIMESTAMP")?.unwrap_or(false);
    let anno = args.read("PRINTANNO")?.unwrap_or(false);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let headroom = args.read("HEADROOM")?.unwrap_or(false);
    let cpu = args.read("CPU")?.unwrap_or(false);
    let contents = match contents {
        None => Contents::Hex,
        Some(c) => match (
            bricks_element::FromArg::from_arg(&c),
            c.to_ascii_uppercase(),
        ) {
            (Ok(true), _) => Contents::Hex,
            (Ok(false), _) => Contents::None,
            (_, u) if u == "NONE" => Contents::None,
            (_, u) if u == "HEX" => Contents::Hex,
            (_, u) if u == "ASCII" => Contents::Ascii,
            _ => {
                return Err(ArgError::new(format!(
                    "bad contents value '{c}'; should be 'NONE', 'HEX', or 'ASCII'"
                )))
            }
        },
    };
    Ok(Print {
        label,
        max: usize::try_from(max).unwrap_or(usize::MAX),
        contents,
        timestamp,
        anno,
        headroom,
        cpu,
        active,
    })
}

/// Prints packets.
#[derive(Debug)]
pub struct Print {
    label: String,
    max: usize,
    contents: Contents,
    timestamp: bool,
    anno: bool,
    headroom: bool,
    cpu: bool,
    active: bool,
}

/// Click's annotation area as bricks' annotations fill it
/// (`include/click/packet_anno.hh` offsets).
fn anno_bytes(p: &Packet) -> [u8; 48] {
    let a = p.anno();
    let mut b = [0u8; 48];
    if a.dst_ip6.is_unspecified() {
        b[..4].copy_from_slice(&a.dst_ip.octets());
    } else {
        b[..16].copy_from_slice(&a.dst_ip6.octets());
    }
    b[16] = a.paint;
    b[17] = a.param_off.unwrap_or(0);
    b[19] = u8::from(a.fix_ip_src);
    // Click keeps 16-bit annotations in host order (little-endian here).
    b[20..22].copy_from_slice(&a.vlan_tci.to_le_bytes());
    b
}

impl Print {
    /// The line printed for `p` on worker `worker`, as Click's
    /// `Print::simple_action` builds it.
    pub fn line(&self, p: &Packet, worker: usize) -> String {
        let mut s = String::with_capacity(self.label.len() + 48 + 3 * self.max.min(256));
        let mut sep = "";
        if !self.label.is_empty() {
            s.push_str(&self.label);
            sep = ": ";
        }
        if self.cpu {
            let _ = write!(s, "({worker})");
            sep = ": ";
        }
        if self.timestamp {
            let t = p.anno().timestamp;
            let _ = write!(s, "{sep}{}.{:06}", t.secs(), t.subsec_nanos() / 1000);
            sep = ": ";
        }
        let _ = write!(s, "{sep}{:4}", p.len());
        if self.headroom {
            let _ = write!(s, " (h{} t{})", p.headroom(), p.tailroom());
        }
        if self.anno {
            s.push_str(" | ");
            for b in anno_bytes(p) {
                let _ = write!(s, "{b:02x}");
            }
        }
        let n = match self.contents {
            Contents::None => 0,
            _ => self.max.min(p.len()),
        };
        if n > 0 {
            s.push_str(" |");
            let data = &p.data()[..n];
            if self.contents == Contents::Hex {
                for (i, b) in data.iter().enumerate() {
                    if i % 4 == 0 {
                        s.push(' ');
                    }
                    let _ = write!(s, "{b:02x}");
                }
            } else {
                // Click writes " | " before the data and a space before
                // every group of 8 characters, the first one included.
                s.push(' ');
                for (i, &b) in data.iter().enumerate() {
                    if i % 8 == 0 {
                        s.push(' ');
                    }
                    s.push(if (32..=126).contains(&b) {
                        char::from(b)
                    } else {
                        '.'
                    });
                }
            }
        }
        s
    }

    fn print(&self, b: &Batch, worker: usize) {
        if !self.active {
            return;
        }
        let mut out = String::new();
        for p in b.iter() {
            out.push_str(&self.line(p, worker));
            out.push('\n');
        }
        eprint!("{out}");
    }
}

impl Element for Print {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.print(batch, cx.worker());
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.print(b, cx.worker()));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("active")];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => return Err(format!("no write handler `{handler}` (Print has `active`)")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;

    fn printer(config: &str) -> Print {
        let parsed = bricks_runtime::testing::parse_args(config).unwrap();
        let mut a = Args::new(&parsed, None);
        let p = configure(&mut a).unwrap();
        a.complete().unwrap();
        p
    }

    #[test]
    fn line_format_matches_click() {
        let p = printer("eth0 non-IP, 6");
        let pkt = Packet::from_slice(&[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert_eq!(p.line(&pkt, 0), "eth0 non-IP:    8 | 00010203 0405");
    }

    #[test]
    fn no_label_no_bar_for_empty_content() {
        let p = printer("");
        let pkt = Packet::from_slice(&[0x11]).unwrap();
        assert_eq!(p.line(&pkt, 0), "   1 | 11");
        let none = printer("CONTENTS NONE");
        assert_eq!(none.line(&pkt, 0), "   1");
        let zero = printer("MAXLENGTH 0");
        assert_eq!(zero.line(&pkt, 0), "   1");
    }

    #[test]
    fn ascii_groups_of_eight() {
        let p = printer("x, CONTENTS ASCII");
        let pkt = Packet::from_slice(b"hello, world\n\x00!").unwrap();
        assert_eq!(p.line(&pkt, 0), "x:   15 |  hello, w orld..!");
    }

    #[test]
    fn timestamp_headroom_cpu_and_annotations() {
        let p = printer("t, 2, TIMESTAMP true, HEADROOM true, CPU true");
        let mut pkt = Packet::from_slice(&[0xaa, 0xbb, 0xcc]).unwrap();
        pkt.anno_mut().timestamp = Timestamp::from_parts(1_000_000_000, 250_000_000);
        let h = pkt.headroom();
        let t = pkt.tailroom();
        assert_eq!(
            p.line(&pkt, 1),
            format!("t(1): 1000000000.250000:    3 (h{h} t{t}) | aabb")
        );
        let a = printer("PRINTANNO true, CONTENTS false");
        pkt.anno_mut().dst_ip = std::net::Ipv4Addr::new(10, 0, 0, 1);
        pkt.anno_mut().paint = 7;
        let line = a.line(&pkt, 0);
        assert_eq!(
            line,
            format!("   3 | 0a000001{}07{}", "00".repeat(12), "00".repeat(31))
        );
    }

    #[test]
    fn any_packet_prints_without_panicking() {
        let all = printer("l, -1, CONTENTS ascii, TIMESTAMP true, PRINTANNO true, HEADROOM true");
        for len in [0usize, 1, 3, 4, 7, 8, 9, 64, 2048] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let p = Packet::from_slice(&data).unwrap();
            let line = all.line(&p, 0);
            assert!(line.starts_with("l: 0.000000: "), "{line}");
            assert_eq!(line.matches(" | ").count(), if len == 0 { 1 } else { 2 });
            assert_eq!(
                printer("MAXLENGTH -1").line(&p, 0).len(),
                if len == 0 {
                    4
                } else {
                    7 + 2 * len + (len - 1) / 4
                }
            );
        }
    }

    #[test]
    fn bad_contents_refused() {
        let e =
            bricks_runtime::testing::make_element(&CLASS, "CONTENTS purple", &Default::default());
        assert!(e.unwrap_err().contains("bad contents value"));
        for ok in [
            "CONTENTS true",
            "CONTENTS false",
            "CONTENTS ascii",
            "CONTENTS hex",
        ] {
            assert!(bricks_runtime::testing::make_element(&CLASS, ok, &Default::default()).is_ok());
        }
    }
}
