//! `SetPacketType`: sets the packet-type annotation (Click's
//! `elements/standard/setpackettype.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};
use bricks_packet::PacketType;

/// The `SetPacketType` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetPacketType",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the packet-type annotation",
    synopsis: "SetPacketType(TYPE)",
    description: "Sets each packet's packet-type annotation, which says how the frame was \
        addressed on its link: HOST (to this host), BROADCAST, MULTICAST, OTHERHOST (to \
        another host, seen in promiscuous mode) or OUTGOING (sent by this host). Elements \
        such as ICMPError refuse to answer broadcast and multicast packets. Click's \
        LOOPBACK and FASTROUTE types are refused: bricks has no such packets.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "TYPE",
        ty: "packet type",
        default: None,
        doc: "HOST, BROADCAST, MULTICAST, OTHERHOST or OUTGOING (any case); positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> SetPacketType(BROADCAST) -> Discard;",
    see_also: &["ICMPError", "HostEtherFilter"],
};

fn packet_type(name: &str) -> Result<PacketType, String> {
    Ok(match name.trim().to_ascii_uppercase().as_str() {
        "HOST" => PacketType::Host,
        "BROADCAST" => PacketType::Broadcast,
        "MULTICAST" => PacketType::Multicast,
        "OTHERHOST" => PacketType::OtherHost,
        "OUTGOING" => PacketType::Outgoing,
        "LOOPBACK" | "FASTROUTE" => {
            return Err(format!("packet type {name}: bricks has no such packets"))
        }
        _ => {
            return Err(format!(
                "unknown packet type `{name}` (HOST, BROADCAST, MULTICAST, OTHERHOST, OUTGOING)"
            ))
        }
    })
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // A bare type name (`BROADCAST`) reads like a keyword, so the
    // positional form is taken from the arguments left over.
    let name = match args.read::<String>("TYPE")? {
        Some(name) => name,
        None => {
            let rest = args.rest();
            match rest.as_slice() {
                [(name, _)] => name.to_string(),
                [] => return Err(ArgError::new("missing mandatory argument TYPE")),
                [_, (_, span), ..] => {
                    return Err(ArgError::at(*span, "SetPacketType takes one TYPE"))
                }
            }
        }
    };
    let ty = packet_type(&name).map_err(|why| ArgError::new(format!("bad TYPE: {why}")))?;
    Ok(Box::new(SetPacketType { ty }))
}

/// Sets the packet-type annotation.
#[derive(Debug)]
pub struct SetPacketType {
    ty: PacketType,
}

impl SetPacketType {
    #[inline]
    fn set(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.anno_mut().packet_type = self.ty;
        }
    }
}

impl Element for SetPacketType {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.set(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.set(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    const ARP: [u8; 14] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06,
    ];

    #[test]
    fn sets_each_type() {
        for (name, ty) in [
            ("HOST", PacketType::Host),
            ("broadcast", PacketType::Broadcast),
            ("MULTICAST", PacketType::Multicast),
            ("OTHERHOST", PacketType::OtherHost),
            ("OUTGOING", PacketType::Outgoing),
            ("TYPE OTHERHOST", PacketType::OtherHost),
        ] {
            let mut h = Harness::push(&CLASS, name, 1, 1);
            h.push_bytes(0, &ARP);
            let p = h.take(0);
            assert_eq!(p[0].anno().packet_type, ty, "{name}");
            assert_eq!(p[0].data(), &ARP);
        }
    }

    #[test]
    fn refuses_unknown_types() {
        for bad in ["", "LOOPBACK", "FASTROUTE", "TOASTER", "HOST, HOST"] {
            assert!(
                make_element(&CLASS, bad, &Default::default()).is_err(),
                "{bad}"
            );
        }
    }
}
