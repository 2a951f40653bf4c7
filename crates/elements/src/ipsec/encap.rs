//! `IPsecESPEncap`: ESP tunnel-mode encapsulation of the traffic the
//! outbound policies select (RFC 4301 section 5.1, RFC 4303 section 3.3).

use super::{announce, SaCounts, SaDrop, SaFileDb, Tally};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_ipsec::spd::Flow;
use bricks_ipsec::{encapsulate, EncapError, Side, Verdict};
use std::sync::Arc;

/// The `IPsecESPEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPsecESPEncap",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates IPv4 packets in ESP tunnel mode as the outbound policies say",
    synopsis: "IPsecESPEncap(FILE), IPsecESPEncap([IV])",
    description: "Expects IPv4 packets (from the network header annotation, or from the \
        start of the packet when there is none). The first `dir out` policy of FILE whose \
        selector (source and destination prefixes, protocol, ports) takes a packet decides: \
        with a template, the packet is encapsulated with the newest state serving it: an \
        outer IPv4 header from the state's src to its dst (TTL 64, DSCP and DF copied, ECN \
        as RFC 6040), the ESP header with the SA's next sequence number, the IV, the \
        encrypted packet with padding 1, 2, 3, ..., pad length and next header 4, and the \
        ICV. AES-GCM (RFC 4106, 8-byte IV = the 64-bit sequence number, 16-byte ICV) and \
        AES-CBC with HMAC-SHA1-96 (RFC 3602/2404, IV = the sequence number encrypted with \
        the SA's key). The packet leaves on output 0 with its network header annotation on \
        the outer header and its destination annotation left for the route lookup of the \
        outer destination (set it with GetIPAddress(16)). \
        \n\nA `block` policy drops the packet; packets no policy selects, and `allow` \
        policies without a template, leave in the clear on output 1, or on output 0 when \
        output 1 is not connected, as Linux sends them. \
        \n\nSequence numbers: one atomic counter per SA, shared by every worker, so no \
        number and no IV is ever used twice; without `flag esn` the counter stops at \
        2^32 - 1 and the SA expires (RFC 4303 section 3.3.3: it never wraps). Lifetimes \
        (`limit byte-soft`, `byte-hard`, `packet-*`, `time-*`) are checked once per \
        batch; passing a soft limit prints an event, passing a hard one stops the SA. \
        \n\nThe `reload` write handler reads FILE again while traffic flows; states whose \
        lines did not change keep their sequence counters and counters, so rekeying is: \
        add the new state, point the policy at it (`tmpl ... spi NEW`), reload; remove the \
        old state later.\n\n\
        With no FILE, `IPsecESPEncap()` is Click's element (elements/ipsec/esp.cc), for \
        Click's IPsec chains (conf/ipsec-router.click): it takes the SA that \
        RadixIPsecLookup chose for the packet (the SPI that lookup left in the `flow` \
        annotation, Click's IPSEC_SPI_ANNO; the annotation is cleared) and prepends Click's \
        16-byte ESP header: the SPI, the SA's next sequence number (from the route's REPLAY \
        on; after 2^32 - 1 comes 0, then REPLAY again, as in Click) and an 8-byte IV; it \
        appends padding 1, 2, 3, ... to a multiple of 8 bytes, the pad length and, as next \
        header, the IP protocol of the packet's network header (0 without one). \
        IPsecAuthHMACSHA1(0), IPsecAES(1) or IPsecDES(1), and IPsecEncap(50) follow. This is \
        Click's own ESP, not RFC 4303's (see IPsecAES). Keyword IV: `random` (the default) \
        makes IVs no one can predict (AES of a counter under a key read from /dev/urandom); \
        `click` draws them as Click does, from Click's random() stream (`click_random() >> \
        2`, twice, little-endian), so that with RandomSeed a run writes the very bytes Click \
        writes: predictable, for comparisons and tests only. Packets without an SA (the \
        annotation 0, or no SA's SPI) are dropped and counted as no_sa, packets without \
        room for the header and trailer as no_room. Click's form has one output and is \
        push only. A number in FILE's place is Click's SPI argument, which Click's code \
        ignores (the SA is RadixIPsecLookup's): it selects Click's form, with a note.",
    ports: "one push input (IPv4); output 0 ESP packets (push); optional output 1 \
        packets no policy protects (push)",
    keywords: &[
        Keyword {
            name: "FILE",
            ty: "path",
            default: None,
            doc: "the SA and policy file: `ip xfrm state add ...` and `ip xfrm policy add ...` \
            lines (the `ip xfrm` is optional), as a Linux peer is configured; errors name \
            the line; without it, Click's form",
        },
        super::click_esp::IV_KEYWORD,
    ],
    counters: &[
        ("protected", "packets encapsulated"),
        ("bypass", "packets no policy protects (output 1, or 0)"),
        ("blocked", "packets a block policy dropped"),
        (
            "expired",
            "packets dropped because their SA passed a hard limit or ran out of sequence \
             numbers",
        ),
        (
            "not_ipv4",
            "packets that are not whole IPv4 packets, dropped",
        ),
        (
            "no_room",
            "packets too big for the buffer once encapsulated, dropped",
        ),
        (
            "sa SPI packets, sa SPI bytes",
            "per SA: packets and inner bytes protected, and drops (expired)",
        ),
        (
            "encapsulated",
            "Click's form: packets encapsulated (also no_room)",
        ),
        (
            "no_sa",
            "Click's form: packets without an SA from RadixIPsecLookup, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 40 00 40 11 b6 9c c0 a8 01 02 c0 a8 \
        02 02 30 39 00 35 00 08 00 00>, LIMIT 3) -> esp :: IPsecESPEncap(FILE \
        conf/ipsec-gw.sa) -> Discard;",
    see_also: &["IPsecESPDecap", "GetIPAddress", "IPFragmenter"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let file: Option<String> = args.read_p("FILE")?;
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        return super::click_esp::make_encap(args, ports, None);
    };
    if let Ok(spi) = u32::from_arg(&file) {
        // Click's manual gives IPsecESPEncap an SPI argument, which its
        // code ignores: the SA comes from RadixIPsecLookup.
        return super::click_esp::make_encap(args, ports, Some(spi));
    }
    let db = SaFileDb::open_path(args, file.into(), Side::Encap)?;
    if !db.db.load().has_outbound() {
        return Err(ArgError::new(format!(
            "{}: no `dir out` policy: IPsecESPEncap would protect nothing",
            db.path.display()
        ))
        .with_help("add e.g. `ip xfrm policy add src NET dst NET dir out tmpl src A dst B proto esp reqid 1 mode tunnel`"));
    }
    Ok(Box::new(IPsecESPEncap {
        db,
        has_bypass: ports.noutputs() > 1,
        reports_sas: true,
        c: Counts::default(),
        sas: SaCounts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    protected: u64,
    bypass: u64,
    blocked: u64,
    expired: u64,
    not_ipv4: u64,
    no_room: u64,
}

/// Encapsulates.
#[derive(Debug)]
pub struct IPsecESPEncap {
    db: Arc<SaFileDb>,
    has_bypass: bool,
    /// The first worker's instance watches the time limits.
    reports_sas: bool,
    c: Counts,
    sas: SaCounts,
}

impl Element for IPsecESPEncap {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.reports_sas = cx.worker() == 0;
        if self.reports_sas {
            self.db.arm_lifetimes(cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.db.check_lifetimes(cx);
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snap = self.db.db.load();
        let bypass = usize::from(self.has_bypass);
        let c = &mut self.c;
        let mut tally = Tally::new(cx.now().0, &mut self.sas);
        cx.push_classified(batch, |p| {
            let Some(flow) = Flow::of_ipv4(p.l3_bytes()) else {
                c.not_ipv4 += 1;
                return None;
            };
            let sa = match snap.outbound(&flow) {
                Verdict::Protect(sa) => sa,
                Verdict::Bypass => {
                    c.bypass += 1;
                    return Some(bypass);
                }
                Verdict::Block => {
                    c.blocked += 1;
                    return None;
                }
            };
            if sa.is_dead() {
                c.expired += 1;
                tally.dropped(sa, SaDrop::Expired);
                return None;
            }
            let Some(seq) = sa.next_seq() else {
                if let Some(e) = sa.expire("sequence numbers exhausted (2^32 - 1 without esn)") {
                    announce(sa, e);
                }
                c.expired += 1;
                tally.dropped(sa, SaDrop::Expired);
                return None;
            };
            let inner = p.l3_bytes().len();
            match encapsulate(sa, seq, p) {
                Ok(()) => {
                    c.protected += 1;
                    tally.add(sa, inner);
                    Some(0)
                }
                Err(EncapError::NotIpv4) => {
                    c.not_ipv4 += 1;
                    None
                }
                Err(EncapError::NoRoom) => {
                    c.no_room += 1;
                    None
                }
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("protected", c.protected);
        s.counter("bypass", c.bypass);
        s.counter("blocked", c.blocked);
        s.counter("expired", c.expired);
        s.counter("not_ipv4", c.not_ipv4);
        s.counter("no_room", c.no_room);
        self.sas.report(&self.db, s);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reload"
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reload" => {
                let msg = self.db.reload()?;
                eprintln!("IPsecESPEncap: reloaded {msg}");
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}`; IPsecESPEncap has `reload`"
            )),
        }
    }
}
