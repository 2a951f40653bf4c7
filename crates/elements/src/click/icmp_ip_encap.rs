//! `ICMPIPEncap` and `ICMPPingEncap`: wrap packets in an ICMP header and an
//! IPv4 header (RFC 792, RFC 791), as Click's `elements/icmp/icmpipencap.cc`
//! and `icmppingencap.cc`.

use crate::ip::icmperror::{code_names, TYPES};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `ICMPIPEncap` class.
pub static ICMP_IP_ENCAP: ElementClass = ElementClass {
    name: "ICMPIPEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &IP_MANUAL,
    make: make_ip,
};

/// The `ICMPPingEncap` class.
pub static ICMP_PING_ENCAP: ElementClass = ElementClass {
    name: "ICMPPingEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &PING_MANUAL,
    make: make_ping,
};

static ADDRS: [Keyword; 3] = [
    Keyword {
        name: "SRC",
        ty: "IPv4 address",
        default: None,
        doc: "source address; positional",
    },
    Keyword {
        name: "DST",
        ty: "IPv4 address",
        default: None,
        doc: "destination address; positional",
    },
    Keyword {
        name: "IDENTIFIER",
        ty: "unsigned 16-bit",
        default: Some("0"),
        doc: "ICMP identifier of echo, timestamp and information messages",
    },
];

static IP_MANUAL: Manual = Manual {
    summary: "encapsulates packets in ICMP/IP headers",
    synopsis: "ICMPIPEncap(SRC, DST, TYPE [, CODE, IDENTIFIER])",
    description: "Puts an ICMP header of type TYPE and code CODE (numbers or Click's names: \
        `echo`, `unreachable` and `host`, ...) and an IPv4 header from SRC to DST (TTL \
        255, protocol ICMP) in front of each packet, with both checksums, and sets the \
        destination address and network header annotations. Echo, timestamp and \
        information messages get IDENTIFIER and a sequence number that counts packets \
        from 1, which is also the IP ID. The header is 8 bytes, 20 for timestamps. The \
        `src` and `dst` handlers read and set the addresses. A packet without the \
        headroom is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[
        ADDRS[0],
        ADDRS[1],
        Keyword {
            name: "TYPE",
            ty: "ICMP type, 0 to 255 or a name",
            default: None,
            doc: "ICMP type; positional",
        },
        Keyword {
            name: "CODE",
            ty: "ICMP code, 0 to 255 or a name",
            default: Some("0"),
            doc: "ICMP code; positional",
        },
        ADDRS[2],
    ],
    counters: &[("drops", "packets without headroom for the headers")],
    example: "InfiniteSource(LIMIT 1, LENGTH 8) -> ICMPIPEncap(10.0.0.1, 10.0.0.2, \
        unreachable, host) -> CheckIPHeader -> Print -> Discard;",
    see_also: &["ICMPPingEncap", "ICMPError", "IPEncap"],
};

static PING_MANUAL: Manual = Manual {
    summary: "encapsulates packets in ICMP ping headers",
    synopsis: "ICMPPingEncap(SRC, DST [, IDENTIFIER])",
    description: "ICMPIPEncap with TYPE echo: makes each packet the payload of an ICMP echo \
        request from SRC to DST with identifier IDENTIFIER and a sequence number that \
        counts packets from 1. The `src` and `dst` handlers read and set the addresses.",
    keywords: &ADDRS,
    example: "InfiniteSource(LIMIT 2, LENGTH 56) -> ICMPPingEncap(1.0.0.1, 2.0.0.2, \
        IDENTIFIER 3) -> CheckICMPHeader -> CheckIPHeader -> ICMPPingResponder -> Discard;",
    see_also: &["ICMPIPEncap", "ICMPPingSource", "ICMPPingResponder"],
    ..IP_MANUAL
};

fn named(what: &str, text: &str, names: &[(&str, u8)]) -> Result<u8, String> {
    let t = text.trim();
    if let Some(&(_, v)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
        return Ok(v);
    }
    u32::from_arg(t)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| format!("invalid {what} `{t}`"))
}

fn make_ip(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let dst: Ipv4Addr = args.read_mp("DST")?;
    let ty: String = args.read_mp("TYPE")?;
    let code: Option<String> = args.read_p("CODE")?;
    let id: u16 = args.read("IDENTIFIER")?.unwrap_or(0);
    let icmp_type = named("TYPE", &ty, TYPES).map_err(ArgError::new)?;
    let icmp_code = match code {
        Some(c) => named("CODE", &c, code_names(icmp_type)).map_err(ArgError::new)?,
        None => 0,
    };
    Ok(Box::new(ICMPIPEncap::new(
        src, dst, icmp_type, icmp_code, id,
    )))
}

fn make_ping(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let dst: Ipv4Addr = args.read_mp("DST")?;
    let id: u16 = args.read("IDENTIFIER")?.unwrap_or(0);
    Ok(Box::new(ICMPIPEncap::new(src, dst, 8, 0, id)))
}

/// Adds ICMP and IP headers.
#[derive(Debug)]
pub struct ICMPIPEncap {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    icmp_type: u8,
    code: u8,
    identifier: u16,
    /// The next IP ID and ICMP sequence number; never 0, as in Click.
    ip_id: u16,
    drops: u64,
}

impl ICMPIPEncap {
    fn new(src: Ipv4Addr, dst: Ipv4Addr, icmp_type: u8, code: u8, identifier: u16) -> Self {
        ICMPIPEncap {
            src,
            dst,
            icmp_type,
            code,
            identifier,
            ip_id: 1,
            drops: 0,
        }
    }

    /// Length of the ICMP header (Click's `click_icmp_hl`).
    fn icmp_len(&self) -> usize {
        match self.icmp_type {
            13 | 14 => 20,
            _ => 8,
        }
    }

    fn encap(&mut self, p: &mut Packet) -> bool {
        let hl = self.icmp_len();
        if p.push_front(20 + hl).is_err() || p.len() > usize::from(u16::MAX) {
            return false;
        }
        let len = p.len() as u16;
        let id = self.ip_id;
        self.ip_id = id.wrapping_add(if id == u16::MAX { 2 } else { 1 });
        let d = p.data_mut();
        let ip = &mut d[..20];
        ip.copy_from_slice(&[
            0x45, 0, 0, 0, 0, 0, 0, 0, 255, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        ip[2..4].copy_from_slice(&len.to_be_bytes());
        ip[4..6].copy_from_slice(&id.to_be_bytes());
        ip[12..16].copy_from_slice(&self.src.octets());
        ip[16..20].copy_from_slice(&self.dst.octets());
        let sum = !checksum::data(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let icmp = &mut d[20..];
        icmp[..hl].fill(0);
        icmp[0] = self.icmp_type;
        icmp[1] = self.code;
        if matches!(self.icmp_type, 0 | 8 | 13 | 14 | 15 | 16) {
            icmp[4..6].copy_from_slice(&self.identifier.to_be_bytes());
            icmp[6..8].copy_from_slice(&id.to_be_bytes());
        }
        let sum = !checksum::data(icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        p.anno_mut().dst_ip = self.dst;
        p.set_network_header(0);
        true
    }

    fn apply(&mut self, b: &mut Batch) {
        let mut drops = 0;
        b.retain(|p| {
            let ok = self.encap(p);
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for ICMPIPEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "src" => Some(self.src.to_string()),
            "dst" => Some(self.dst.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let a = || Ipv4Addr::from_arg(value.trim());
        match handler {
            "src" => self.src = a()?,
            "dst" => self.dst = a()?,
            _ => return Err(format!("no write handler `{handler}` (src, dst)")),
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("src"), Handler::rw("dst")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::ip_checksum_ok;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn ping_encap_builds_echo_requests() {
        // Click's test/icmp/ICMPPingEncap-01 pings 2.0.0.2 from 1.0.0.1.
        let mut h = Harness::push(&ICMP_PING_ENCAP, "1.0.0.1, 2.0.0.2, IDENTIFIER 3", 1, 1);
        h.push_bytes(0, b"payload!");
        h.push_bytes(0, b"");
        let out = h.take(0);
        let f = out[0].data();
        assert_eq!(f.len(), 36);
        assert_eq!(
            &f[..12],
            &[0x45, 0, 0, 36, 0, 1, 0, 0, 255, 1, f[10], f[11]]
        );
        assert_eq!(&f[12..20], &[1, 0, 0, 1, 2, 0, 0, 2]);
        assert!(ip_checksum_ok(f));
        assert_eq!(&f[20..28], &[8, 0, f[22], f[23], 0, 3, 0, 1]);
        assert_eq!(checksum::data(&f[20..]), 0xffff);
        assert_eq!(&f[28..], b"payload!");
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(2, 0, 0, 2));
        assert_eq!(out[0].network_header_offset(), Some(0));
        // The second packet is sequence 2.
        assert_eq!(&out[1].data()[26..28], &[0, 2]);
        assert_eq!(&out[1].data()[4..6], &[0, 2]);
    }

    #[test]
    fn ip_encap_types_and_codes() {
        // Click's test/icmp/ICMPIPEncap-01.
        for (args, ty, code) in [
            ("1.0.0.1, 1.0.0.1, TYPE 8, CODE 0", 8, 0),
            ("1.0.0.2, 1.0.0.2, TYPE 3, CODE 1", 3, 1),
            ("1.0.0.3, 1.0.0.3, TYPE 5, CODE 3", 5, 3),
            ("1.0.0.3, 1.0.0.3, unreachable, port", 3, 3),
            ("1.0.0.3, 1.0.0.3, timestamp", 13, 0),
        ] {
            let mut h = Harness::push(&ICMP_IP_ENCAP, args, 1, 1);
            h.push_bytes(0, &[0xaa; 4]);
            let f = h.take_bytes(0).pop().unwrap();
            assert_eq!((f[20], f[21]), (ty, code), "{args}");
            assert!(ip_checksum_ok(&f));
            assert_eq!(checksum::data(&f[20..]), 0xffff);
            assert_eq!(f.len(), 20 + if ty == 13 { 20 } else { 8 } + 4);
        }
    }

    #[test]
    fn handlers_and_bad_arguments() {
        let ports = PortInfo::default();
        let mut e = make_element(&ICMP_PING_ENCAP, "1.0.0.1, 2.0.0.2", &ports).unwrap();
        assert_eq!(e.read_handler("dst").as_deref(), Some("2.0.0.2"));
        e.write_handler("src", "10.0.0.9").unwrap();
        assert_eq!(e.read_handler("src").as_deref(), Some("10.0.0.9"));
        assert!(e.write_handler("dst", "nowhere").is_err());
        assert!(make_element(&ICMP_IP_ENCAP, "1.0.0.1, 2.0.0.2", &ports).is_err());
        assert!(make_element(&ICMP_IP_ENCAP, "1.0.0.1, 2.0.0.2, 256", &ports).is_err());
        assert!(make_element(&ICMP_IP_ENCAP, "1.0.0.1, 2.0.0.2, 3, nonsense", &ports).is_err());
    }
}
