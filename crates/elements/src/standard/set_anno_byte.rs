//! `SetAnnoByte`: sets one byte of Click's packet annotation area to a
//! value (Click's `elements/standard/setannobyte.cc`).
//!
//! Click's annotations are 48 bytes named by offset
//! (`include/click/packet_anno.hh`); bricks' are typed fields. The bytes
//! that have a field are mapped onto it as `Print(PRINTANNO true)` shows
//! them: 0-15 the destination address (IPv4 in 0-3, IPv6 in 0-15, the
//! same bytes as in Click), 16 the paint, 17 the ICMP parameter problem
//! pointer, 19 the fix-IP-source flag, 20-21 the VLAN TCI (host order,
//! little-endian). Other bytes have no field and are refused when the
//! element is configured.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};
use bricks_packet::Annotations;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The `SetAnnoByte` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetAnnoByte",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets packet user annotations",
    synopsis: "SetAnnoByte(ANNO, VALUE)",
    description: "Sets each packet's annotation byte at ANNO to VALUE, an integer 0..255. \
        ANNO is a byte offset in Click's 48-byte annotation area or the name of a one-byte \
        annotation: PAINT (16), ICMP_PARAMPROB (17), FIX_IP_SRC (19). Click warns that the \
        element is obsolete (use Paint); bricks repeats the warning.\n\n\
        bricks' annotations are named fields, not bytes: the offsets that have a field are \
        mapped onto it as Print's PRINTANNO shows them, and the others are refused with an \
        error. 0-15 are the destination address (Click's DST_IP in 0-3, DST_IP6 in 0-15: \
        setting a byte past 3, or any byte of an IPv6 destination, makes the whole 16 bytes \
        the IPv6 destination and their first four the IPv4 one); 16 is the paint; 17 the \
        ICMP parameter problem pointer; 19 the fix-IP-source flag (any VALUE but 0 sets it, \
        so PRINTANNO shows it as 01); 20 and 21 the low and high bytes of the VLAN TCI \
        (Click keeps it in host order). Bytes 18 and 22-47, and GRID_ROUTE_CB (27), have \
        no bricks annotation.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ANNO",
            ty: "annotation offset (0-21) or one-byte annotation name",
            default: None,
            doc: "which byte; positional",
        },
        Keyword {
            name: "VALUE",
            ty: "unsigned integer, 0-255",
            default: None,
            doc: "what to set it to; positional",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> SetAnnoByte(PAINT, 7) -> CheckPaint(7) \
        -> c :: Counter -> Discard;",
    see_also: &["Paint", "Print"],
};

/// Click's warning, which its `configure` gives every time.
const OBSOLETE: &str = "SetAnnoByte(ANNO, VALUE) is obsolete, use Paint(VALUE, ANNO) instead";

/// The annotation field a byte of Click's area lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Byte {
    /// Byte `n` of the destination address area (0-15).
    Dst(usize),
    Paint,
    ParamProb,
    FixIpSrc,
    /// Byte 20, the VLAN TCI's low byte.
    VlanLow,
    /// Byte 21, the VLAN TCI's high byte.
    VlanHigh,
}

/// Click's annotation area size (`Packet::anno_size`).
const ANNO_SIZE: u32 = 48;

/// What ANNO says: a Click offset, or a named annotation's.
#[derive(Debug, Clone, Copy)]
struct AnnoOffset(u32);

impl FromArg for AnnoOffset {
    const TYPE: &'static str = "annotation (0-47 or a one-byte annotation name)";
    fn from_arg(text: &str) -> Result<Self, String> {
        // Click's annotation names (lib/nameinfo.cc) with their offset and
        // size; a name is looked up as written.
        const NAMES: &[(&str, u32, u32)] = &[
            ("AGGREGATE", 20, 4),
            ("DST_IP", 0, 4),
            ("DST_IP6", 0, 16),
            ("EXTRA_LENGTH", 28, 4),
            ("EXTRA_PACKETS", 24, 4),
            ("FIRST_TIMESTAMP", 32, 8),
            ("FIX_IP_SRC", 19, 1),
            ("FWD_RATE", 20, 4),
            ("GRID_ROUTE_CB", 27, 1),
            ("ICMP_PARAMPROB", 17, 1),
            ("IPREASSEMBLER", 28, 4),
            ("IPSEC_SA_DATA_REFERENCE", 40, 8),
            ("IPSEC_SPI", 32, 4),
            ("MISC_IP", 20, 4),
            ("PACKET_NUMBER", 32, 4),
            ("PAINT", 16, 1),
            ("PERFCTR", 40, 8),
            ("REV_RATE", 24, 4),
            ("SEQUENCE_NUMBER", 36, 4),
            ("VLAN", 20, 2),
            ("VLAN_TCI", 20, 2),
            ("WIFI_EXTRA", 16, 24),
        ];
        if let Some(&(name, offset, size)) = NAMES.iter().find(|n| n.0 == text) {
            return if size == 1 {
                Ok(AnnoOffset(offset))
            } else {
                Err(format!(
                    "`{name}` is a {size}-byte annotation; SetAnnoByte sets one byte"
                ))
            };
        }
        match u32::from_arg(text) {
            Ok(n) if n < ANNO_SIZE => Ok(AnnoOffset(n)),
            Ok(n) => Err(format!(
                "offset {n} is past the {ANNO_SIZE}-byte annotation area"
            )),
            Err(_) => Err(format!("found `{text}`")),
        }
    }
}

impl Byte {
    /// The field of Click's annotation byte `offset`, if bricks has one.
    fn at(offset: u32) -> Option<Byte> {
        match offset {
            0..=15 => Some(Byte::Dst(offset as usize)),
            16 => Some(Byte::Paint),
            17 => Some(Byte::ParamProb),
            19 => Some(Byte::FixIpSrc),
            20 => Some(Byte::VlanLow),
            21 => Some(Byte::VlanHigh),
            _ => None,
        }
    }

    #[inline]
    fn set(self, a: &mut Annotations, v: u8) {
        match self {
            Byte::Dst(n) => set_dst_byte(a, n, v),
            Byte::Paint => a.paint = v,
            Byte::ParamProb => a.param_off = Some(v),
            Byte::FixIpSrc => a.fix_ip_src = v != 0,
            Byte::VlanLow => a.vlan_tci = (a.vlan_tci & 0xff00) | u16::from(v),
            Byte::VlanHigh => a.vlan_tci = (a.vlan_tci & 0x00ff) | (u16::from(v) << 8),
        }
    }
}

/// Sets byte `n` (below 16) of the destination address area as Click's
/// overlapping DST_IP (bytes 0-3) and DST_IP6 (0-15) annotations see it:
/// bricks' area is the IPv6 destination when one is set, else the IPv4
/// destination followed by zeros (as Print's PRINTANNO shows it).
fn set_dst_byte(a: &mut Annotations, n: usize, v: u8) {
    let v6 = !a.dst_ip6.is_unspecified();
    let mut area = if v6 {
        a.dst_ip6.octets()
    } else {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&a.dst_ip.octets());
        b
    };
    let Some(byte) = area.get_mut(n) else {
        return;
    };
    *byte = v;
    let [b0, b1, b2, b3, rest @ ..] = area;
    a.dst_ip = Ipv4Addr::new(b0, b1, b2, b3);
    if v6 || rest.iter().any(|&b| b != 0) {
        a.dst_ip6 = Ipv6Addr::from(area);
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let AnnoOffset(offset) = args.read_mp("ANNO")?;
    let value: u8 = args.read_mp("VALUE")?;
    let byte = Byte::at(offset).ok_or_else(|| {
        ArgError::new(format!(
            "ANNO {offset}: bricks has no annotation at byte {offset} of Click's annotation \
             area (SetAnnoByte sets bytes 0-15, the destination address; 16, PAINT; 17, \
             ICMP_PARAMPROB; 19, FIX_IP_SRC; 20-21, VLAN_TCI)"
        ))
    })?;
    Ok(Box::new(SetAnnoByte {
        offset,
        byte,
        value,
    }))
}

/// Sets one annotation byte.
#[derive(Debug)]
pub struct SetAnnoByte {
    /// ANNO as Click's offset, for the `anno` handler.
    offset: u32,
    byte: Byte,
    value: u8,
}

impl SetAnnoByte {
    #[inline]
    fn set(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            self.byte.set(p.anno_mut(), self.value);
        }
    }
}

impl Element for SetAnnoByte {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.set(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.set(b));
    }

    fn configure_message(&self) -> Option<String> {
        Some(format!("warning: {OBSOLETE}"))
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "anno" => Some(self.offset.to_string()),
            "value" => Some(self.value.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "value" => {
                // Click's uint8_t data handler.
                self.value = u8::from_arg(value.trim()).map_err(|_| "expected uint8_t")?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (SetAnnoByte has `value`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 2] = [Handler::r("anno"), Handler::rw("value")];
        &HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    fn set(args: &str, p: Packet) -> Packet {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, [p]);
        h.take(0).pop().unwrap()
    }

    fn fresh() -> Packet {
        Packet::from_slice(&[0; 4]).unwrap()
    }

    #[test]
    fn named_one_byte_annotations() {
        assert_eq!(set("PAINT, 7", fresh()).anno().paint, 7);
        assert_eq!(set("16, 255", fresh()).anno().paint, 255);
        assert_eq!(set("ICMP_PARAMPROB, 0", fresh()).anno().param_off, Some(0));
        assert_eq!(set("ANNO 17, VALUE 9", fresh()).anno().param_off, Some(9));
        assert!(set("FIX_IP_SRC, 5", fresh()).anno().fix_ip_src);
        let mut p = fresh();
        p.anno_mut().fix_ip_src = true;
        assert!(!set("19, 0", p).anno().fix_ip_src);
    }

    #[test]
    fn vlan_tci_bytes_in_host_order() {
        let mut p = fresh();
        p.anno_mut().vlan_tci = 0x1234;
        let p = set("20, 0xab", p);
        assert_eq!(p.anno().vlan_tci, 0x12ab);
        assert_eq!(set("21, 0xcd", p).anno().vlan_tci, 0xcdab);
    }

    #[test]
    fn destination_bytes_as_clicks_shared_area() {
        let mut p = fresh();
        p.anno_mut().dst_ip = Ipv4Addr::new(10, 0, 0, 1);
        let p = set("3, 9", p);
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 0, 0, 9));
        assert!(p.anno().dst_ip6.is_unspecified());
        // A byte past the IPv4 address: the area becomes an IPv6 address.
        let p = set("15, 1", p);
        assert_eq!(p.anno().dst_ip6, "a00:9::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 0, 0, 9));
        // With an IPv6 destination, bytes 0-3 change both.
        let p = set("0, 0x20", p);
        assert_eq!(p.anno().dst_ip6, "2000:9::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(0x20, 0, 0, 9));
    }

    #[test]
    fn handlers_read_and_write() {
        let mut h = Harness::push(&CLASS, "PAINT, 3", 1, 1);
        assert_eq!(h.read_handler("anno").as_deref(), Ok("16"));
        assert_eq!(h.read_handler("value").as_deref(), Ok("3"));
        h.write_handler("value", "200").unwrap();
        assert_eq!(h.read_handler("value").as_deref(), Ok("200"));
        assert_eq!(
            h.write_handler("value", "256").unwrap_err(),
            "expected uint8_t"
        );
        assert!(h.write_handler("anno", "17").is_err());
        h.push_bytes(0, &[1, 2]);
        assert_eq!(h.take(0)[0].anno().paint, 200);
    }

    #[test]
    fn pull_path_sets_too() {
        let mut h = Harness::new(
            &CLASS,
            "PAINT, 4",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.feed(0, [fresh(), fresh()]);
        let out = h.pull(0, 8);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| p.anno().paint == 4));
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("PAINT").unwrap_err().contains("VALUE"));
        assert!(m("").unwrap_err().contains("ANNO"));
        assert!(m("PAINT, 256").unwrap_err().contains("VALUE"));
        assert!(m("PAINT, -1").unwrap_err().contains("VALUE"));
        assert!(m("VLAN_TCI, 1").unwrap_err().contains("2-byte annotation"));
        assert!(m("48, 1").unwrap_err().contains("past the 48-byte"));
        assert!(m("paint, 1").unwrap_err().contains("ANNO"));
        for no_field in ["18", "22", "27", "GRID_ROUTE_CB", "47"] {
            let e = m(&format!("{no_field}, 1")).unwrap_err();
            assert!(e.contains("bricks has no annotation at byte"), "{e}");
        }
        assert!(m("PAINT, 1, 2").unwrap_err().contains("too many"));
        for ok in [
            "0, 1", "15, 1", "17, 1", "19, 1", "20, 1", "21, 1", "0x10, 1",
        ] {
            assert!(m(ok).is_ok(), "{ok}");
        }
        let e = m("PAINT, 1").unwrap();
        assert_eq!(
            e.configure_message().as_deref(),
            Some("warning: SetAnnoByte(ANNO, VALUE) is obsolete, use Paint(VALUE, ANNO) instead")
        );
    }

    #[test]
    fn the_example_runs() {
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "c", "count"), 2, "{}", s.render());
    }
}
