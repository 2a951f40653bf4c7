//! Click's ESP authentication elements: `IPsecAuthHMACSHA1`
//! (`elements/ipsec/hmacsha1.cc`) and `IPsecAuthSHA1` (`sha1.cc`). The
//! format is described in [`super::click_sa`].

use super::click_sa::{icv_matches, sha1_96, ESP_HEADER, ICV_LEN};
use super::radix_ipsec_lookup::{tables_for, IpsecTable, Tables};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::sync::Arc;

/// The `IPsecAuthHMACSHA1` class.
pub static HMAC_CLASS: ElementClass = ElementClass {
    name: "IPsecAuthHMACSHA1",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &HMAC_MANUAL,
    make: make_hmac,
};

/// The `IPsecAuthSHA1` class.
pub static SHA1_CLASS: ElementClass = ElementClass {
    name: "IPsecAuthSHA1",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &SHA1_MANUAL,
    make: make_sha1,
};

const VERIFY: Keyword = Keyword {
    name: "VERIFY",
    ty: "integer",
    default: None,
    doc: "0 computes and appends the ICV, anything else checks and removes it; positional",
};

const COUNTERS: &[(&str, &str)] = &[
    ("computed", "ICVs appended (VERIFY 0)"),
    ("verified", "packets whose ICV matched, sent on without it"),
    (
        "drops",
        "packets whose ICV did not match (Click's `drops` handler): to output 1 if \
         connected, else dropped",
    ),
    (
        "truncated",
        "packets too short for what the element reads (an ESP header, an ICV), dropped",
    ),
    (
        "no_room",
        "packets without 12 bytes of tailroom for the ICV, dropped",
    ),
    ("no_sa", "packets whose SPI is no SA's (HMAC only), dropped"),
];

static HMAC_MANUAL: Manual = Manual {
    summary: "computes or checks Click's HMAC-SHA1-96 ICV of ESP packets",
    synopsis: "IPsecAuthHMACSHA1(VERIFY)",
    description: "Click's element (elements/ipsec/hmacsha1.cc). With VERIFY 0 (after \
        IPsecESPEncap()): appends HMAC-SHA1 with the SA's 16-byte AUTH_KEY over the whole \
        packet, Click's ESP header and the inner packet with its trailer, *before* \
        encryption, truncated to 12 bytes. With VERIFY 1 (after IPsecAES(0) or IPsecDES(0), \
        which have decrypted it): computes the same over all but the last 12 bytes and \
        compares; a match leaves without the 12 bytes, a mismatch is counted in `drops` \
        (Click's handler) and leaves on output 1 if it is connected, else is dropped. The \
        SA is the one of the RadixIPsecLookup upstream whose SPI the ESP header names. \
        Click authenticates the plaintext and then encrypts, where RFC 4303 encrypts and \
        then authenticates the ciphertext: this ICV is Click's only. Packets shorter than \
        the ESP header (and, to check, the ICV), or with an SPI of no SA, are dropped and \
        counted (Click would read past them).",
    ports: "one input, agnostic; output 0 agnostic; optional output 1 (push) for packets \
        whose ICV does not match",
    keywords: &[VERIFY],
    counters: COUNTERS,
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 12 1a \
        08 02 00 07 00 09 00 08 00 00>, LIMIT 1) -> SetIPChecksum -> CheckIPHeader \
        -> rt :: RadixIPsecLookup(18.26.8.0/24 18.26.4.1 1 234 \
        \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 300 64, \
        0/0 0); rt[0] -> Discard; \
        rt[1] -> IPsecESPEncap() -> IPsecAuthHMACSHA1(0) -> IPsecAuthHMACSHA1(1) -> Discard;",
    see_also: &[
        "IPsecESPEncap",
        "IPsecAES",
        "IPsecESPUnencap",
        "RadixIPsecLookup",
    ],
};

static SHA1_MANUAL: Manual = Manual {
    summary: "computes or checks a plain SHA-1 digest of ESP packets (no key)",
    synopsis: "IPsecAuthSHA1(VERIFY)",
    description: "Click's element (elements/ipsec/sha1.cc): as IPsecAuthHMACSHA1, but the \
        12 bytes are the start of plain SHA-1 over the packet, with no key: they catch \
        corruption, not forgery. With VERIFY 0 it appends them; otherwise it checks and \
        removes them, counting a mismatch in `drops` and sending it to output 1 if \
        connected, else dropping it. It needs no SA and works on any packet at least 12 \
        bytes long when checking.",
    ports: "one input, agnostic; output 0 agnostic; optional output 1 (push) for packets \
        whose digest does not match",
    keywords: &[VERIFY],
    counters: COUNTERS,
    example: "InfiniteSource(LENGTH 40, LIMIT 2) -> IPsecAuthSHA1(0) -> IPsecAuthSHA1(1) \
        -> Discard;",
    see_also: &["IPsecAuthHMACSHA1", "IPsecESPEncap"],
};

fn read_verify(args: &mut Args<'_>) -> Result<bool, ArgError> {
    Ok(args.read_mp::<i64>("VERIFY")? != 0)
}

fn make_hmac(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let verify = read_verify(args)?;
    Ok(Box::new(ClickAuth {
        verify,
        keyed: Some(tables_for(args, "IPsecAuthHMACSHA1")?),
        has_fail: ports.noutputs() > 1,
        c: Counts::default(),
    }))
}

fn make_sha1(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(ClickAuth {
        verify: read_verify(args)?,
        keyed: None,
        has_fail: ports.noutputs() > 1,
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    computed: u64,
    verified: u64,
    drops: u64,
    truncated: u64,
    no_room: u64,
    no_sa: u64,
}

/// Click's `IPsecAuthHMACSHA1` (with the SA tables) or `IPsecAuthSHA1`.
#[derive(Debug)]
pub struct ClickAuth {
    verify: bool,
    /// The tables of the HMAC; none for plain SHA-1.
    keyed: Option<Vec<Arc<IpsecTable>>>,
    has_fail: bool,
    c: Counts,
}

/// Computes or checks `p`'s ICV: the output, or `None` to drop.
fn auth(
    verify: bool,
    snaps: Option<&Tables>,
    fail: Option<usize>,
    c: &mut Counts,
    p: &mut Packet,
) -> Option<usize> {
    let d = p.data();
    let need = match (snaps.is_some(), verify) {
        (true, false) => ESP_HEADER,
        (true, true) => ESP_HEADER + ICV_LEN,
        (false, false) => 0,
        (false, true) => ICV_LEN,
    };
    if d.len() < need {
        c.truncated += 1;
        return None;
    }
    let end = if verify { d.len() - ICV_LEN } else { d.len() };
    let icv = match snaps {
        Some(s) => {
            let spi = u32::from_be_bytes(d[..4].try_into().expect("4 bytes"));
            let Some(sa) = s.sa(spi) else {
                c.no_sa += 1;
                return None;
            };
            sa.hmac_96(&d[..end])
        }
        None => sha1_96(&d[..end]),
    };
    if !verify {
        if p.put_back(ICV_LEN).is_err() {
            c.no_room += 1;
            return None;
        }
        let n = p.len();
        p.data_mut()[n - ICV_LEN..].copy_from_slice(&icv);
        c.computed += 1;
        return Some(0);
    }
    if !icv_matches(&icv, &d[end..]) {
        if c.drops == 0 {
            eprintln!("Invalid SHA1 authentication digest");
        }
        c.drops += 1;
        return fail;
    }
    p.take_back(ICV_LEN);
    c.verified += 1;
    Some(0)
}

impl Element for ClickAuth {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snaps = self.keyed.as_deref().map(Tables::load);
        let (verify, fail, c) = (self.verify, self.has_fail.then_some(1), &mut self.c);
        cx.push_classified(batch, |p| auth(verify, snaps.as_ref(), fail, c, p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let snaps = self.keyed.as_deref().map(Tables::load);
        let (verify, fail, c) = (self.verify, self.has_fail.then_some(1), &mut self.c);
        cx.pull_classified(out, max, |p| auth(verify, snaps.as_ref(), fail, c, p));
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("computed", c.computed);
        s.counter("verified", c.verified);
        s.counter("drops", c.drops);
        s.counter("truncated", c.truncated);
        s.counter("no_room", c.no_room);
        if self.keyed.is_some() {
            s.counter("no_sa", c.no_sa);
        }
    }
}
