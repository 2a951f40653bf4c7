//! `IPsecESPDecap`: ESP tunnel-mode decapsulation with anti-replay and the
//! inbound policy check (RFC 4301 section 5.2, RFC 4303 section 3.4).

use super::{SaCounts, SaDrop, SaFileDb, Tally};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use bricks_ipsec::spd::Flow;
use bricks_ipsec::{decapsulate, DecapError, Side};
use std::sync::Arc;

/// The `IPsecESPDecap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPsecESPDecap",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "decapsulates ESP tunnel-mode packets, checking integrity, replay and policy",
    synopsis: "IPsecESPDecap(FILE)",
    description: "Expects IPv4 packets (from the network header annotation, or from the \
        start of the packet). An ESP packet (protocol 50) is matched to its SA by SPI and \
        destination address, then: the sequence number (all 64 bits inferred with ESN, \
        RFC 4303 appendix A) is checked against the SA's anti-replay window before any \
        decryption; the ICV is verified and the payload decrypted in place; only then does \
        the window move, so a forged packet cannot move it; the padding must be 1, 2, 3, \
        ... and the next header 4 (IPv4; 59, a dummy packet, is dropped as RFC 4303 \
        section 2.6 says); the inner packet must be selected by a `dir in` or `dir fwd` \
        policy of FILE whose template names this SA (and by the state's own `sel`, if \
        any), else it is dropped: traffic may only arrive through the tunnel its policy \
        names. The inner packet leaves on output 0, its network header annotation on its \
        IP header. \
        \n\nPackets that are not ESP leave on output 1 if it is connected (so that the \
        element can sit in front of a router's ordinary IP input), else they are dropped \
        and counted. Every drop has a counter; nothing malformed panics. \
        \n\nThe replay window is per SA and shared by every worker without a lock (each \
        32-packet block of the window is one atomic word); `replay-window N` in the state \
        sets it, 64 by default, up to 65536, so that the reordering several sending cores \
        cause does not look like replay. `reload` reads FILE again, keeping unchanged SAs \
        with their windows.",
    ports: "one push input (IPv4); output 0 inner IPv4 packets (push); optional output \
        1 packets that are not ESP (push)",
    keywords: &[Keyword {
        name: "FILE",
        ty: "path",
        default: None,
        doc: "the SA and policy file, as for IPsecESPEncap (usually the same file)",
    }],
    counters: &[
        ("decapsulated", "packets accepted"),
        ("not_esp", "packets that are not ESP (output 1, or dropped)"),
        ("unknown_spi", "no SA has the packet's SPI and destination"),
        ("replay", "sequence number already seen"),
        ("too_old", "sequence number left of the window"),
        (
            "auth_failed",
            "ICV did not verify: forged, corrupted or wrong key",
        ),
        ("truncated", "shorter than the headers and ICV say"),
        (
            "bad_length",
            "ciphertext not a whole number of cipher blocks",
        ),
        (
            "bad_padding",
            "padding not 1, 2, 3, ... or longer than the payload",
        ),
        ("next_header", "next header is not IPv4 (4)"),
        ("dummy", "dummy packets (next header 59)"),
        ("bad_inner", "the inner packet is not a whole IPv4 packet"),
        (
            "fragment",
            "outer fragments (reassemble before decapsulating)",
        ),
        ("expired", "the SA passed a hard limit"),
        (
            "policy",
            "no inbound policy allows the inner packet through this SA",
        ),
        (
            "sa SPI packets, sa SPI bytes, sa SPI replay, sa SPI auth_failed",
            "per SA",
        ),
    ],
    example: "FromDevice(eth1) -> Strip(14) -> CheckIPHeader -> esp :: \
        IPsecESPDecap(FILE conf/ipsec-gw.sa) -> CheckIPHeader -> Queue -> ToDevice(eth0); \
        esp[1] -> Discard;",
    see_also: &["IPsecESPEncap", "CheckIPHeader"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let db = SaFileDb::open(args, Side::Decap)?;
    Ok(Box::new(IPsecESPDecap {
        db,
        has_other: ports.noutputs() > 1,
        reports_sas: true,
        sas: SaCounts::default(),
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    decapsulated: u64,
    not_esp: u64,
    unknown_spi: u64,
    replay: u64,
    too_old: u64,
    auth_failed: u64,
    truncated: u64,
    bad_length: u64,
    bad_padding: u64,
    next_header: u64,
    dummy: u64,
    bad_inner: u64,
    fragment: u64,
    expired: u64,
    policy: u64,
}

impl Counts {
    fn count(&mut self, e: DecapError) {
        *match e {
            DecapError::Truncated => &mut self.truncated,
            DecapError::NotEsp => &mut self.not_esp,
            DecapError::Fragment => &mut self.fragment,
            DecapError::UnknownSpi => &mut self.unknown_spi,
            DecapError::Replayed => &mut self.replay,
            DecapError::TooOld => &mut self.too_old,
            DecapError::AuthFailed => &mut self.auth_failed,
            DecapError::BadLength => &mut self.bad_length,
            DecapError::BadPadding => &mut self.bad_padding,
            DecapError::NextHeader => &mut self.next_header,
            DecapError::Dummy => &mut self.dummy,
            DecapError::Expired => &mut self.expired,
            DecapError::BadInner => &mut self.bad_inner,
        } += 1;
    }
}

/// Decapsulates.
#[derive(Debug)]
pub struct IPsecESPDecap {
    db: Arc<SaFileDb>,
    has_other: bool,
    /// The first worker's instance watches the time limits.
    reports_sas: bool,
    c: Counts,
    sas: SaCounts,
}

impl Element for IPsecESPDecap {
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
        let has_other = self.has_other;
        let c = &mut self.c;
        let mut tally = Tally::new(cx.now().0, &mut self.sas);
        cx.push_classified(batch, |p| {
            match decapsulate(p, |spi, dst| snap.find(spi, dst)) {
                Ok((sa, _seq)) => {
                    let allowed =
                        Flow::of_ipv4(p.data()).is_some_and(|f| snap.inbound_allows(sa, &f));
                    if !allowed {
                        c.policy += 1;
                        return None;
                    }
                    c.decapsulated += 1;
                    tally.add(sa, p.len());
                    Some(0)
                }
                Err((DecapError::NotEsp, _)) if has_other => {
                    c.not_esp += 1;
                    Some(1)
                }
                Err((e, sa)) => {
                    c.count(e);
                    let why = match e {
                        DecapError::Replayed | DecapError::TooOld => Some(SaDrop::Replay),
                        DecapError::AuthFailed => Some(SaDrop::AuthFailed),
                        DecapError::Expired => Some(SaDrop::Expired),
                        _ => None,
                    };
                    if let (Some(sa), Some(why)) = (sa, why) {
                        tally.dropped(sa, why);
                    }
                    None
                }
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("decapsulated", c.decapsulated);
        s.counter("not_esp", c.not_esp);
        s.counter("unknown_spi", c.unknown_spi);
        s.counter("replay", c.replay);
        s.counter("too_old", c.too_old);
        s.counter("auth_failed", c.auth_failed);
        s.counter("truncated", c.truncated);
        s.counter("bad_length", c.bad_length);
        s.counter("bad_padding", c.bad_padding);
        s.counter("next_header", c.next_header);
        s.counter("dummy", c.dummy);
        s.counter("bad_inner", c.bad_inner);
        s.counter("fragment", c.fragment);
        s.counter("expired", c.expired);
        s.counter("policy", c.policy);
        self.sas.report(&self.db, s);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reload"
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reload" => {
                let msg = self.db.reload()?;
                eprintln!("IPsecESPDecap: reloaded {msg}");
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}`; IPsecESPDecap has `reload`"
            )),
        }
    }
}
