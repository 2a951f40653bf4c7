//! `SetVLANAnno`: sets the VLAN TCI annotation (IEEE 802.1Q tag control
//! information), as Click's `elements/ethernet/setvlananno.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};

/// The `SetVLANAnno` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetVLANAnno",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets VLAN annotation",
    synopsis: "SetVLANAnno(VLAN_TCI [, VLAN_PCP]) or SetVLANAnno(VLAN_ID ID, VLAN_PCP PCP)",
    description: "Sets the VLAN_TCI annotation of each packet (read by `VLANEncap(ANNO)`): \
        the whole tag control information VLAN_TCI, or its VLAN ID and priority code point \
        from VLAN_ID and VLAN_PCP. The handlers `vlan_tci`, `vlan_id` and `vlan_pcp` read \
        and set the parts while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "VLAN_TCI",
            ty: "unsigned, 0 to 0xFFFF",
            default: Some("VLAN_ID"),
            doc: "the whole TCI; positional",
        },
        Keyword {
            name: "VLAN_PCP",
            ty: "unsigned, 0 to 7",
            default: Some("0"),
            doc: "priority code point, ORed into the top 3 bits; positional",
        },
        Keyword {
            name: "VLAN_ID",
            ty: "unsigned, 0 to 0xFFF",
            default: Some("0"),
            doc: "the VLAN ID, used when VLAN_TCI is not given",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LENGTH 60, LIMIT 1) -> SetVLANAnno(VLAN_ID 10, VLAN_PCP 5) \
        -> VLANEncap(ANNO) -> Print -> Discard;",
    see_also: &["VLANEncap", "VLANDecap"],
};

fn bounded(what: &str, text: &str, max: u16) -> Result<u16, String> {
    let v = u32::from_arg(text.trim())?;
    u16::try_from(v)
        .ok()
        .filter(|&v| v <= max)
        .ok_or_else(|| format!("{what} must be at most {max}, found {v}"))
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let tci: Option<String> = args.read_p("VLAN_TCI")?;
    let pcp: Option<String> = args.read_p("VLAN_PCP")?;
    let id: Option<String> = args.read("VLAN_ID")?;
    let bad = |e: String| ArgError::new(e);
    let pcp = pcp
        .map(|t| bounded("VLAN_PCP", &t, 7))
        .transpose()
        .map_err(bad)?
        .unwrap_or(0);
    let base = match tci {
        Some(t) => bounded("VLAN_TCI", &t, 0xffff).map_err(bad)?,
        None => id
            .map(|t| bounded("VLAN_ID", &t, 0xfff))
            .transpose()
            .map_err(bad)?
            .unwrap_or(0),
    };
    Ok(Box::new(SetVLANAnno {
        tci: base | (pcp << 13),
    }))
}

/// Sets the VLAN annotation.
#[derive(Debug)]
pub struct SetVLANAnno {
    tci: u16,
}

impl SetVLANAnno {
    #[inline]
    fn apply(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.anno_mut().vlan_tci = self.tci;
        }
    }
}

impl Element for SetVLANAnno {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "vlan_tci" => Some(self.tci.to_string()),
            "vlan_id" => Some((self.tci & 0xfff).to_string()),
            "vlan_pcp" => Some((self.tci >> 13).to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "vlan_tci" => self.tci = bounded("vlan_tci", value, 0xffff)?,
            "vlan_id" => self.tci = (self.tci & !0xfff) | bounded("vlan_id", value, 0xfff)?,
            "vlan_pcp" => self.tci = (self.tci & 0x1fff) | (bounded("vlan_pcp", value, 7)? << 13),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (vlan_tci, vlan_id, vlan_pcp)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("vlan_tci"),
            Handler::rw("vlan_id"),
            Handler::rw("vlan_pcp"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn sets_the_annotation() {
        let mut h = Harness::push(&CLASS, "VLAN_ID 10, VLAN_PCP 5", 1, 1);
        h.push_bytes(0, &udp(4));
        let p = h.take(0).pop().unwrap();
        assert_eq!(p.anno().vlan_tci, (5 << 13) | 10);
        assert_eq!(p.data(), &udp(4)[..]);
        h.write_handler("vlan_id", "4095").unwrap();
        h.write_handler("vlan_pcp", "0").unwrap();
        h.push_bytes(0, &udp(4));
        assert_eq!(h.take(0)[0].anno().vlan_tci, 4095);
        assert!(h.write_handler("vlan_id", "4096").is_err());
    }

    #[test]
    fn arguments_and_read_handlers() {
        let ports = PortInfo::default();
        let e = make_element(&CLASS, "0x2003", &ports).unwrap();
        assert_eq!(e.read_handler("vlan_tci").as_deref(), Some("8195"));
        assert_eq!(e.read_handler("vlan_id").as_deref(), Some("3"));
        assert_eq!(e.read_handler("vlan_pcp").as_deref(), Some("1"));
        assert!(make_element(&CLASS, "65536", &ports).is_err());
        assert!(make_element(&CLASS, "1, 8", &ports).is_err());
    }
}
