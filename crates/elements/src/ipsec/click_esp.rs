//! Click's ESP header elements: `IPsecESPEncap()` (Click's zero-argument
//! form, `elements/ipsec/esp.cc`; the `IPsecESPEncap(FILE)` form is
//! [`super::encap`]) and `IPsecESPUnencap` (`desp.cc`). The format is
//! described in [`super::click_sa`].

use super::click_sa::{check_trailer, trailer_len, write_trailer, ReplayError, ESP_HEADER};
use super::radix_ipsec_lookup::{tables_for, IpsecTable, Tables};
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use std::io::Read as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where the Click form's IVs come from.
enum IvSource {
    /// AES-128 of a counter, under a key from the kernel's random source,
    /// shared by every worker's instance.
    Random(Arc<IvGen>),
    /// Click's `click_random() >> 2`, twice.
    Click,
}

struct IvGen {
    aes: Aes128,
    next: AtomicU64,
}

impl IvGen {
    fn new() -> Result<IvGen, String> {
        let mut key = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .map_err(|e| format!("cannot read /dev/urandom for IVs: {e}"))?;
        Ok(IvGen {
            aes: Aes128::new(GenericArray::from_slice(&key)),
            next: AtomicU64::new(0),
        })
    }

    fn iv(&self) -> [u8; 8] {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&n.to_le_bytes());
        let block = GenericArray::from_mut_slice(&mut b);
        self.aes.encrypt_block(block);
        b[..8].try_into().expect("8 bytes")
    }
}

impl IvSource {
    fn iv(&self) -> [u8; 8] {
        match self {
            IvSource::Random(g) => g.iv(),
            IvSource::Click => {
                let mut iv = [0u8; 8];
                // esp.cc: `i = click_random() >> 2; memmove(&iv[0], &i, 4)`:
                // an int in the machine's order, little-endian on x86.
                iv[..4].copy_from_slice(&(click_random::random() >> 2).to_le_bytes());
                iv[4..].copy_from_slice(&(click_random::random() >> 2).to_le_bytes());
                iv
            }
        }
    }
}

/// The IV keyword's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IvKind {
    Random,
    Click,
}

impl FromArg for IvKind {
    const TYPE: &'static str = "`random` or `click`";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text {
            "random" => Ok(IvKind::Random),
            "click" => Ok(IvKind::Click),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// The keyword of the Click form, for [`super::encap`]'s manual.
pub const IV_KEYWORD: Keyword = Keyword {
    name: "IV",
    ty: "`random` or `click`",
    default: Some("random"),
    doc: "Click's form only: where its IVs come from (`click`: Click's random() stream, \
          predictable)",
};

/// Makes `IPsecESPEncap()`.
/// `spi` is the SPI argument Click's manual mentions and its code ignores.
pub(crate) fn make_encap(
    args: &mut Args<'_>,
    ports: &PortInfo,
    spi: Option<u32>,
) -> Result<Box<dyn Element>, ArgError> {
    if ports.noutputs() > 1 {
        return Err(ArgError::new(
            "Click's IPsecESPEncap() has one output (output 1 is IPsecESPEncap(FILE)'s, for \
             traffic no policy protects)",
        ));
    }
    let kind: IvKind = args.read("IV")?.unwrap_or(IvKind::Random);
    let tables = tables_for(args, "IPsecESPEncap()")?;
    let iv = match kind {
        IvKind::Click => IvSource::Click,
        IvKind::Random => IvSource::Random(args.shared(|_| IvGen::new().map_err(ArgError::new))?),
    };
    Ok(Box::new(ClickEspEncap {
        tables,
        iv,
        c: EncapCounts::default(),
        note: spi.map(|spi| {
            format!(
                "IPsecESPEncap: SPI {spi} ignored, as Click ignores it: each packet's SA is the \
                 one RadixIPsecLookup chose"
            )
        }),
    }))
}

/// Click's `IPsecESPEncap()`.
pub struct ClickEspEncap {
    tables: Vec<Arc<IpsecTable>>,
    iv: IvSource,
    c: EncapCounts,
    /// Said once, at configuration.
    note: Option<String>,
}

impl core::fmt::Debug for ClickEspEncap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClickEspEncap").finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct EncapCounts {
    encapsulated: u64,
    no_sa: u64,
    no_room: u64,
}

/// Puts Click's ESP header and trailer on `p`, or says why not.
fn encap(iv: &IvSource, snaps: &Tables, c: &mut EncapCounts, p: &mut Packet) -> bool {
    let spi = p.anno().flow;
    let Some(sa) = snaps.sa(spi) else {
        c.no_sa += 1;
        return false;
    };
    // esp.cc: the next header is the IP protocol of the packet's network
    // header, when it has one.
    let next_header = p
        .network_header()
        .and_then(|h| h.get(9))
        .copied()
        .unwrap_or(0);
    let pad = trailer_len(p.len());
    if p.headroom() < ESP_HEADER || p.tailroom() < pad {
        c.no_room += 1;
        return false;
    }
    let seq = sa.next_seq();
    let mut h = [0u8; ESP_HEADER];
    h[..4].copy_from_slice(&spi.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..].copy_from_slice(&iv.iv());
    if p.push_front_bytes(&h).is_err() || p.put_back(pad).is_err() {
        c.no_room += 1;
        return false;
    }
    let n = p.len();
    write_trailer(&mut p.data_mut()[n - pad..], next_header);
    p.anno_mut().flow = 0;
    c.encapsulated += 1;
    true
}

impl Element for ClickEspEncap {
    fn configure_message(&self) -> Option<String> {
        self.note.clone()
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snaps = Tables::load(&self.tables);
        let (iv, c) = (&self.iv, &mut self.c);
        batch.retain(|p| encap(iv, &snaps, c, p));
        cx.push(0, batch);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("encapsulated", self.c.encapsulated);
        s.counter("no_sa", self.c.no_sa);
        s.counter("no_room", self.c.no_room);
    }
}

/// The `IPsecESPUnencap` class.
pub static UNENCAP_CLASS: ElementClass = ElementClass {
    name: "IPsecESPUnencap",
    ports: "1/1",
    processing: "a/a",
    manual: &UNENCAP_MANUAL,
    make: make_unencap,
};

static UNENCAP_MANUAL: Manual = Manual {
    summary: "removes Click's ESP header and trailer, checking replay and padding",
    synopsis: "IPsecESPUnencap()",
    description: "Click's element (elements/ipsec/desp.cc), the end of Click's decapsulating \
        chain: StripIPHeader -> IPsecAES(0) (or IPsecDES(0)) -> IPsecAuthHMACSHA1(1) -> \
        IPsecESPUnencap -> CheckIPHeader. The packet starts with Click's 16-byte ESP header \
        (SPI, sequence number, IV; see IPsecAES) and ends with the padding, the pad length \
        and the next header, the ICV already checked and removed. The SA is the one of the \
        RadixIPsecLookup upstream whose SPI the header names. The sequence number must pass \
        the SA's replay window (OOSIZE packets; 0 is never accepted); then the header comes \
        off, and the trailer once its pad length is 0 or equal to the last padding byte and \
        the padding reads 1, 2, 3, .... The inner packet leaves on the output.\n\n\
        Differences from Click, none on the wire: Click's window is a 32-bit bitmap whatever \
        OOSIZE says, bricks' holds OOSIZE packets (up to 255); Click takes a packet whose \
        number is the SA's first (REPLAY) as the sender's wrap and starts the window again \
        whenever it comes, which lets a replayed first packet reopen the window, bricks only \
        once the window has reached the top of the 32-bit space. Packets Click would read \
        past (shorter than the header and trailer, a pad length past the start, an SPI of no \
        SA) are dropped and counted instead.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("decapsulated", "inner packets sent on"),
        (
            "replay",
            "packets refused by the replay window (sequence number 0, too old, seen)",
        ),
        (
            "bad_padding",
            "packets whose trailer is not Click's, dropped",
        ),
        (
            "truncated",
            "packets shorter than the ESP header and trailer, dropped",
        ),
        ("no_sa", "packets whose SPI is no SA's, dropped"),
    ],
    example: "InfiniteSource(DATA \\<4500005000000000fa32942f121a0418121a0401000000ea0000012c\
        fdb7940f9078c61b85a02107072a0568737040abe90c147ae91bf5b84aea24f1d54deb49c00dbe13fea3\
        6ed62f695fc188edb223>, LIMIT 1) -> CheckIPHeader -> rt :: RadixIPsecLookup(\
        18.26.4.1/32 0, 18.26.7.0/24 18.26.4.24 1 234 \\<ABCDEFFF001DEFD2354550FE40CD708E> \
        \\<112233EE556677888877665544332211> 300 64, 0/0 2); \
        rt[0] -> StripIPHeader -> IPsecAES(0) -> IPsecAuthHMACSHA1(1) -> IPsecESPUnencap \
        -> CheckIPHeader -> Discard; rt[1] -> Discard; rt[2] -> Discard;",
    see_also: &[
        "IPsecESPEncap",
        "IPsecAuthHMACSHA1",
        "IPsecAES",
        "RadixIPsecLookup",
    ],
};

fn make_unencap(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(ClickEspUnencap {
        tables: tables_for(args, "IPsecESPUnencap")?,
        c: UnencapCounts::default(),
    }))
}

#[derive(Debug, Default)]
struct UnencapCounts {
    decapsulated: u64,
    replay: u64,
    bad_padding: u64,
    truncated: u64,
    no_sa: u64,
}

/// Click's `IPsecESPUnencap`.
#[derive(Debug)]
pub struct ClickEspUnencap {
    tables: Vec<Arc<IpsecTable>>,
    c: UnencapCounts,
}

/// Removes the header and trailer of `p`, or says why not.
fn unencap(snaps: &Tables, c: &mut UnencapCounts, p: &mut Packet) -> bool {
    let d = p.data();
    if d.len() < ESP_HEADER + 2 {
        c.truncated += 1;
        return false;
    }
    let spi = u32::from_be_bytes(d[..4].try_into().expect("4 bytes"));
    let seq = u32::from_be_bytes(d[4..8].try_into().expect("4 bytes"));
    let Some(sa) = snaps.sa(spi) else {
        c.no_sa += 1;
        return false;
    };
    match sa.check_replay(seq) {
        Ok(()) => {}
        Err(ReplayError::Zero | ReplayError::TooOld | ReplayError::Seen) => {
            c.replay += 1;
            return false;
        }
    }
    let Some(trailer) = check_trailer(&d[ESP_HEADER..]) else {
        c.bad_padding += 1;
        return false;
    };
    p.pull_front(ESP_HEADER);
    p.take_back(trailer);
    c.decapsulated += 1;
    true
}

impl Element for ClickEspUnencap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snaps = Tables::load(&self.tables);
        let c = &mut self.c;
        batch.retain(|p| unencap(&snaps, c, p));
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let snaps = Tables::load(&self.tables);
        let c = &mut self.c;
        cx.pull_with(out, max, |b, _| b.retain(|p| unencap(&snaps, c, p)));
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("decapsulated", c.decapsulated);
        s.counter("replay", c.replay);
        s.counter("bad_padding", c.bad_padding);
        s.counter("truncated", c.truncated);
        s.counter("no_sa", c.no_sa);
    }
}
