//! `SetIPDSCP`: sets the Differentiated Services code point of IP packets
//! (RFC 2474 section 3), as Click's `elements/ip/setipdscp.cc`, with the
//! header checksum updated incrementally (RFC 1624).

use crate::ip::header::be16;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_wire::checksum;

/// The `SetIPDSCP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIPDSCP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets IP packets' DSCP fields",
    synopsis: "SetIPDSCP(DSCP)",
    description: "Sets the Differentiated Services code point, the upper 6 bits of the TOS \
        byte, of each IP packet to DSCP, keeping the ECN bits, and updates the header \
        checksum incrementally. The IP header is found at the network header annotation, \
        else at the start of the packet; a packet too short for an IP header is dropped \
        and counted. The `dscp` handler reads and sets DSCP while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "DSCP",
        ty: "unsigned, 0 to 63",
        default: None,
        doc: "the code point; positional",
    }],
    counters: &[("drops", "packets too short for an IP header")],
    example: "InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000002>, LIMIT 1) \
        -> MarkIPHeader(0) -> SetIPDSCP(46) \
        -> Print -> Discard;",
    see_also: &["MarkIPCE", "SetIPChecksum"],
};

fn parse_dscp(text: &str) -> Result<u8, String> {
    let v = u32::from_arg(text)?;
    u8::try_from(v)
        .ok()
        .filter(|&v| v <= 0x3f)
        .ok_or_else(|| format!("diffserv code point out of range: {v} (0 to 63)"))
}

/// The DSCP argument of SetIPDSCP and SetIP6DSCP.
pub(crate) fn read_dscp(args: &mut Args<'_>) -> Result<u8, ArgError> {
    let text: String = args.read_mp("DSCP")?;
    parse_dscp(&text).map_err(|e| ArgError::new(format!("bad argument DSCP: {e}")))
}

/// The `dscp` write handler of SetIPDSCP and SetIP6DSCP (`class`).
pub(crate) fn write_dscp(
    class: &str,
    dscp: &mut u8,
    handler: &str,
    value: &str,
) -> Result<(), String> {
    match handler {
        "dscp" => {
            *dscp = parse_dscp(value.trim())?;
            Ok(())
        }
        _ => Err(format!("no write handler `{handler}` ({class} has `dscp`)")),
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dscp = read_dscp(args)?;
    Ok(Box::new(SetIPDSCP { dscp, drops: 0 }))
}

/// Sets the DSCP.
#[derive(Debug)]
pub struct SetIPDSCP {
    dscp: u8,
    drops: u64,
}

/// Sets the TOS byte of the IP header `ip` to `tos`, updating the checksum
/// incrementally; false when `ip` is too short for a header.
pub(crate) fn set_tos(ip: &mut [u8], tos: u8) -> bool {
    if ip.len() < 20 {
        return false;
    }
    let old = be16(ip, 0);
    ip[1] = tos;
    let sum = checksum::update(be16(ip, 10), old, be16(ip, 0));
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    true
}

impl SetIPDSCP {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let dscp = self.dscp << 2;
        let mut drops = 0;
        b.retain(|p: &mut Packet| {
            let ip = p.l3_bytes_mut();
            let ok = ip.len() >= 20 && set_tos(ip, (ip[1] & 3) | dscp);
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for SetIPDSCP {
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
        (handler == "dscp").then(|| self.dscp.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        write_dscp("SetIPDSCP", &mut self.dscp, handler, value)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("dscp")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{ip_checksum_ok, udp};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn sets_dscp_keeps_ecn_and_checksum() {
        let mut frame = udp(8);
        frame[1] = 0x03;
        crate::ip::header::testing::fix_ip_checksum(&mut frame);
        let mut h = Harness::push(&CLASS, "DSCP 46", 1, 1);
        h.push_bytes(0, &frame);
        h.push_bytes(0, &frame[..19]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0][1], (46 << 2) | 3);
        assert!(ip_checksum_ok(&out[0]));
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    #[test]
    fn dscp_handler_and_range() {
        // Click's test/ip/SetIPDSCP-01.
        let mut e = make_element(&CLASS, "DSCP 10", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("dscp").as_deref(), Some("10"));
        e.write_handler("dscp", "2").unwrap();
        assert_eq!(e.read_handler("dscp").as_deref(), Some("2"));
        assert!(e.write_handler("dscp", "64").is_err());
        assert!(make_element(&CLASS, "64", &PortInfo::default()).is_err());
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_err());
    }
}
