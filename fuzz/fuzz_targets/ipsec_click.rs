//! Click's IPsec elements on hostile input: RadixIPsecLookup,
//! IPsecESPEncap() (Click's form), IPsecAuthHMACSHA1 and IPsecAuthSHA1 in
//! both directions, IPsecAES and IPsecDES both ways, IPsecEncap,
//! IPsecESPUnencap (and StripIPHeader, which Click's decapsulating chain
//! starts with), each alone, in push and in pull, and chained as Click's
//! conf/ipsec-router.click chains them:
//!
//! ```text
//! rt[1] -> IPsecESPEncap() -> IPsecAuthHMACSHA1(0) -> IPsecAES(1) -> IPsecEncap(50) -> rt
//! rt[0] -> StripIPHeader -> IPsecAES(0) -> IPsecAuthHMACSHA1(1) -> IPsecESPUnencap
//! ```
//!
//! (or IPsecDES, IPsecAuthSHA1). The tunnel's gateway is this router's own
//! address, so what the encapsulating chain makes comes back to the
//! decapsulating one through the same table and SAs.
//!
//! The first byte picks a mode:
//! - raw: the rest is a packet, with a destination annotation, an SPI
//!   annotation (Click's IPSEC_SPI_ANNO, `flow` in bricks) and a network
//!   header annotation picked by the input, through every element alone
//!   and through the lookup and whatever chain it picks;
//! - round trip: the rest is up to eight inner packets (IPv4 to a tunnel,
//!   or any bytes), each through the encapsulating chain and back through
//!   the decapsulating one: it must come out byte for byte, unless the
//!   receiver's replay window refuses its sequence number as Click's does
//!   (0, reached when the sender's counter wraps, and, with a window of 0
//!   packets, the SA's first number);
//! - tamper: as round trip, with one bit of the ESP packet flipped where
//!   the input says: the decapsulating chain must drop it unless the byte
//!   is in the outer IPv4 header, which nothing authenticates (IPsecEncap
//!   writes it, StripIPHeader removes it; Click's ICV covers the ESP
//!   header, IV, payload and trailer, and the cipher the payload, trailer
//!   and, with AES, part of the ICV), and whatever it lets through must be
//!   the inner packet byte for byte;
//! - handlers: RadixIPsecLookup's `add`, `set`, `remove`, `ctrl`,
//!   `lookup` and `table` with text from the input, then a packet.
//!
//! For every packet any element is given: nothing panics; it leaves by
//! exactly one output or one of the element's drop counters counts it;
//! what leaves has the length the element's format gives (so a frame of
//! at most MAX_FRAME - 57 bytes, the most the encapsulating chain adds,
//! never leaves longer than MAX_FRAME) and keeps the bytes the element
//! does not own. Every run starts from fresh elements and a seeded random
//! stream (Click's IVs), so a crash reproduces.
#![no_main]

use bricks_element::{click_random, Packet, Processing};
use bricks_elements::{ip, ipsec};
use bricks_packet::MAX_FRAME;
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

#[path = "support/header.rs"]
mod header;
#[path = "support/input.rs"]
mod input;
#[path = "support/rig.rs"]
mod rig;
#[path = "support/sum.rs"]
mod sum;

use input::Input;
use rig::{Refs, Rig};
use sum::sum;

const PUSH: Processing = Processing::Push;
const PULL: Processing = Processing::Pull;

/// This router, and the gateway of every tunnel route.
const ME: Ipv4Addr = Ipv4Addr::new(18, 26, 4, 24);

/// The tunnel routes' SAs: SPI, first sequence number, window. The second
/// wraps after two packets; the third has a window of 0 packets.
const SAS: [(u32, u32, u8); 3] = [(234, 300, 64), (235, u32::MAX - 1, 255), (236, 1, 0)];

/// The keys are Click's (conf/ipsec-router.click), then others, written
/// in the three ways RadixIPsecLookup reads them.
const ROUTES: &str = "18.26.4.24/32 0, 18.26.7.0/24 3, 18.26.12.0/24 2, \
    18.26.8.0/24 18.26.4.24 1 234 ABCDEFFF001DEFD2354550FE40CD708E \
    112233EE556677888877665544332211 300 64, \
    18.26.9.0/24 18.26.4.24 1 235 000102030405060708090A0B0C0D0E0F \
    0F0E0D0C0B0A09080706050403020100 4294967294 255, \
    18.26.10.0/24 18.26.4.24 1 236 \\<00112233445566778899AABBCCDDEEFF> \
    sixteen-char-key 1 0, \
    18.26.11.0/24 18.26.4.24 1";

/// The most the encapsulating chain adds: ESP header 16, trailer 9, ICV
/// 12, outer IPv4 header 20.
const GROWTH: usize = 16 + 9 + 12 + 20;

/// What an element is, for what its outputs must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lookup,
    Esp,
    Auth0,
    Auth1,
    Cipher,
    IpEncap,
    Strip,
    Unencap,
}

impl Kind {
    /// The counters of the packets the element drops.
    fn drops(self) -> &'static [&'static str] {
        match self {
            Kind::Lookup => &["no_route", "no_sa", "unknown_spi", "truncated", "no_output"],
            Kind::Esp => &["no_sa", "no_room"],
            Kind::Auth0 | Kind::Auth1 => &["truncated", "no_room", "no_sa"],
            Kind::Cipher => &["truncated", "bad_length", "no_sa"],
            Kind::IpEncap => &["no_headroom"],
            Kind::Strip => &["bad_header"],
            Kind::Unencap => &["replay", "bad_padding", "truncated", "no_sa"],
        }
    }
}

/// One element under test.
struct Dut {
    rig: Rig,
    kind: Kind,
    /// Built with the optional output 1 (ICV mismatches).
    fail_out: bool,
    /// Built with a pull input and output.
    pull: bool,
}

/// What is kept of a packet before an element gets it.
struct Before {
    data: Vec<u8>,
    flow: u32,
    dst: Ipv4Addr,
    /// The network header annotation's offset in the frame.
    nh: Option<usize>,
}

/// Click's trailer for `n` bytes: padding to a multiple of 8 with the
/// pad length and next header bytes.
fn trailer_len(n: usize) -> usize {
    2 + (8 - (n + 2) % 8) % 8
}

impl Dut {
    fn new(class: &bricks_element::ElementClass, args: &str, kind: Kind, refs: &Refs) -> Dut {
        let fail_out = kind == Kind::Auth1;
        let outs: &[Processing] = if kind == Kind::Lookup {
            &[PUSH; 4]
        } else if fail_out {
            &[PUSH; 2]
        } else {
            &[PUSH]
        };
        Dut {
            rig: rig::new(class, args, &[PUSH], outs, refs),
            kind,
            fail_out,
            pull: false,
        }
    }

    /// The same element in pull (output 1, when there is one, is push).
    fn pulled(class: &bricks_element::ElementClass, args: &str, kind: Kind, refs: &Refs) -> Dut {
        let fail_out = kind == Kind::Auth1;
        let outs: &[Processing] = if fail_out { &[PULL, PUSH] } else { &[PULL] };
        Dut {
            rig: rig::new(class, args, &[PULL], outs, refs),
            kind,
            fail_out,
            pull: true,
        }
    }

    /// An IPsecAuthHMACSHA1(1) or IPsecAuthSHA1(1) without output 1.
    fn lone_verifier(class: &bricks_element::ElementClass, refs: &Refs) -> Dut {
        Dut {
            rig: rig::new(class, "1", &[PUSH], &[PUSH], refs),
            kind: Kind::Auth1,
            fail_out: false,
            pull: false,
        }
    }

    fn dropped(&self) -> u64 {
        let s = self.rig.stats();
        // Every output is connected: nothing may go to one that is not.
        assert_eq!(s.get("unconnected_drops"), None, "{:?}", self.kind);
        let mut n: u64 = self
            .kind
            .drops()
            .iter()
            .map(|c| s.get(c).unwrap_or(0))
            .sum();
        if self.kind == Kind::Auth1 && !self.fail_out {
            n += s.get("drops").unwrap_or(0);
        }
        n
    }

    /// Gives the element `p` and returns what came out, by output, having
    /// checked that the packet is accounted for once and what came out.
    fn run(&mut self, p: Packet) -> Vec<Vec<Packet>> {
        let before = Before {
            data: p.data().to_vec(),
            flow: p.anno().flow,
            dst: p.anno().dst_ip,
            nh: p.network_header_offset(),
        };
        let dropped = self.dropped();
        let mismatches = self.rig.counter("drops");
        let out = if self.pull {
            self.rig.feed(0, [p]);
            let pulled = self.rig.pull(0, 8);
            assert_eq!(
                self.rig.fed(0),
                0,
                "{:?}: a pull left the packet",
                self.kind
            );
            let mut out = self.rig.take_all();
            out[0] = pulled;
            out
        } else {
            self.rig.run(0, [p])
        };
        let counted = self.dropped() - dropped;
        let n: u64 = out.iter().map(|o| o.len() as u64).sum();
        assert_eq!(
            n + counted,
            1,
            "{:?}: one packet in, {n} out and {counted} counted as dropped",
            self.kind
        );
        if self.fail_out {
            assert_eq!(
                out[1].len() as u64,
                self.rig.counter("drops") - mismatches,
                "{:?}: output 1 is the ICV mismatches",
                self.kind
            );
        }
        for (port, q) in out
            .iter()
            .enumerate()
            .flat_map(|(o, v)| v.iter().map(move |q| (o, q)))
        {
            check_out(self.kind, &before, port, q);
        }
        out
    }
}

/// What element `k` may emit on `port` for the packet `b` it was given.
fn check_out(k: Kind, b: &Before, port: usize, q: &Packet) {
    let (d, n) = (q.data(), b.data.len());
    match k {
        Kind::Lookup => {
            assert_eq!(d, b.data, "the lookup changes no byte");
            match port {
                0 => assert_eq!(q.l3_bytes().get(9), Some(&50), "output 0 is ESP"),
                1 => {
                    assert!(
                        SAS.iter().any(|s| s.0 == q.anno().flow),
                        "output 1 has an SA"
                    );
                    assert_eq!(q.anno().dst_ip, ME, "the tunnel's gateway");
                }
                _ => {}
            }
        }
        Kind::Esp => {
            let t = trailer_len(n);
            assert_eq!(d.len(), n + 16 + t);
            assert_eq!(d[..4], b.flow.to_be_bytes(), "the SPI of the annotation");
            assert_eq!(d[16..16 + n], b.data[..], "the payload untouched");
            let pad = &d[16 + n..16 + n + t - 2];
            assert!(pad.iter().enumerate().all(|(i, &x)| x == i as u8 + 1));
            assert_eq!(usize::from(d[d.len() - 2]), t - 2);
            assert_eq!(q.anno().flow, 0, "the SPI annotation is cleared");
        }
        Kind::Auth0 => {
            assert_eq!(d.len(), n + 12);
            assert_eq!(d[..n], b.data[..]);
        }
        Kind::Auth1 => match port {
            0 => assert_eq!(d, &b.data[..n - 12], "a match loses its ICV"),
            _ => assert_eq!(d, b.data, "a mismatch leaves whole"),
        },
        Kind::Cipher => {
            assert_eq!(d.len(), n);
            assert_eq!(d[..16], b.data[..16], "the ESP header is not encrypted");
        }
        Kind::IpEncap => {
            assert_eq!(d.len(), n + 20);
            assert_eq!(d[20..], b.data[..]);
            assert_eq!((d[0], d[8], d[9]), (0x45, 250, 50));
            assert_eq!(
                usize::from(u16::from_be_bytes([d[2], d[3]])),
                d.len().min(65535)
            );
            assert_eq!(d[16..20], b.dst.octets(), "to the destination annotation");
            assert_eq!(sum(&d[..20]), 0xffff, "the header checksum");
            assert_eq!(q.network_header_offset(), Some(0));
            assert!(q.anno().fix_ip_src);
        }
        Kind::Strip => {
            // The header at the annotation (else the start) and what
            // comes before it.
            let cut = n - d.len();
            let hlen = cut - b.nh.filter(|&o| o < n).unwrap_or(0);
            assert!(
                (20..=60).contains(&hlen) && hlen.is_multiple_of(4),
                "{cut} {hlen}"
            );
            assert_eq!(d, &b.data[cut..]);
        }
        Kind::Unencap => {
            assert!(n >= d.len() + 18 && n - d.len() - 16 <= 257);
            assert_eq!(d, &b.data[16..16 + d.len()]);
        }
    }
}

/// Every element of one configuration, fresh.
struct Stack {
    rt: Dut,
    esp: Dut,
    /// [HMAC, SHA-1] computing; [HMAC, SHA-1] checking.
    auth0: [Dut; 2],
    auth1: [Dut; 2],
    /// [AES, DES] encrypting; [AES, DES] decrypting.
    enc: [Dut; 2],
    dec: [Dut; 2],
    ipencap: Dut,
    strip: Dut,
    unencap: Dut,
    /// Only run alone: without output 1, and in pull.
    lone: Vec<Dut>,
}

impl Stack {
    fn new() -> Stack {
        use ipsec::{click_auth, click_cipher, click_esp, click_ipencap, encap};
        let rt = Dut::new(
            &ipsec::radix_ipsec_lookup::CLASS,
            ROUTES,
            Kind::Lookup,
            &Refs::default(),
        );
        let refs = Refs(vec![(
            "RadixIPsecLookup",
            rt.rig.shared().expect("shared state"),
        )]);
        let hmac = &click_auth::HMAC_CLASS;
        let sha1 = &click_auth::SHA1_CLASS;
        let aes = &click_cipher::AES_CLASS;
        let des = &click_cipher::DES_CLASS;
        let d = |class: &bricks_element::ElementClass, args: &str, kind: Kind| {
            Dut::new(class, args, kind, &refs)
        };
        let l = |class: &bricks_element::ElementClass, args: &str, kind: Kind| {
            Dut::pulled(class, args, kind, &refs)
        };
        Stack {
            esp: d(&encap::CLASS, "IV click", Kind::Esp),
            auth0: [d(hmac, "0", Kind::Auth0), d(sha1, "0", Kind::Auth0)],
            auth1: [d(hmac, "1", Kind::Auth1), d(sha1, "1", Kind::Auth1)],
            enc: [d(aes, "1", Kind::Cipher), d(des, "1", Kind::Cipher)],
            dec: [d(aes, "0", Kind::Cipher), d(des, "0", Kind::Cipher)],
            ipencap: d(&click_ipencap::CLASS, "50", Kind::IpEncap),
            strip: d(&ip::stripipheader::CLASS, "", Kind::Strip),
            unencap: d(&click_esp::UNENCAP_CLASS, "", Kind::Unencap),
            lone: vec![
                Dut::lone_verifier(hmac, &refs),
                Dut::lone_verifier(sha1, &refs),
                l(hmac, "0", Kind::Auth0),
                l(hmac, "1", Kind::Auth1),
                l(sha1, "1", Kind::Auth1),
                l(aes, "1", Kind::Cipher),
                l(aes, "0", Kind::Cipher),
                l(des, "0", Kind::Cipher),
                l(&click_ipencap::CLASS, "esp", Kind::IpEncap),
                l(&click_esp::UNENCAP_CLASS, "", Kind::Unencap),
            ],
            rt,
        }
    }

    /// The encapsulating chain after rt[1]: the ESP packet in its outer
    /// header, or `None` where an element dropped it.
    fn encap(&mut self, cfg: Cfg, p: Packet) -> Option<Packet> {
        let p = only(self.esp.run(p), 0)?;
        let p = only(self.auth0[cfg.auth].run(p), 0)?;
        let p = only(self.enc[cfg.cipher].run(p), 0)?;
        only(self.ipencap.run(p), 0)
    }

    /// The decapsulating chain after rt[0]: the inner packet, or `None`.
    fn decap(&mut self, cfg: Cfg, p: Packet) -> Option<Packet> {
        let p = only(self.strip.run(p), 0)?;
        let p = only(self.dec[cfg.cipher].run(p), 0)?;
        let p = only(self.auth1[cfg.auth].run(p), 0)?;
        only(self.unencap.run(p), 0)
    }

    /// Routes `p`, following rt[1] through the encapsulating chain and
    /// back into rt (once), and rt[0] through the decapsulating one.
    fn route(&mut self, cfg: Cfg, p: Packet, again: bool) {
        let mut out = self.rt.run(p);
        for q in std::mem::take(&mut out[1]) {
            let n = q.len();
            if let Some(e) = self.encap(cfg, q) {
                assert!(e.len() <= n + GROWTH);
                if again {
                    self.route(cfg, e, false);
                }
            }
        }
        for q in std::mem::take(&mut out[0]) {
            let _ = self.decap(cfg, q);
        }
    }
}

/// The one packet of output `port`, if it holds one (every element here
/// sends at most one packet for one).
fn only(mut out: Vec<Vec<Packet>>, port: usize) -> Option<Packet> {
    let v = &mut out[port];
    assert!(v.len() <= 1);
    v.pop()
}

/// The cipher and authenticator the chains use.
#[derive(Debug, Clone, Copy)]
struct Cfg {
    /// 0 AES, 1 DES.
    cipher: usize,
    /// 0 HMAC-SHA1, 1 plain SHA-1.
    auth: usize,
}

/// An inner packet to tunnel through SA `sa`: an IPv4 packet to the
/// tunnel's prefix with `body` as payload, or `body` alone, with the
/// destination annotation of the tunnel's prefix and, if `nh`, a network
/// header annotation.
fn inner(sa: usize, ipv4: bool, nh: bool, body: &[u8]) -> Packet {
    let dst = Ipv4Addr::new(18, 26, 8 + sa as u8, body.first().copied().unwrap_or(1));
    let mut d = Vec::with_capacity(20 + body.len());
    if ipv4 {
        let len = (20 + body.len()) as u16;
        d.extend([0x45, 0, 0, 0, 0, 1, 0, 0, 64]);
        d.push(body.get(1).copied().unwrap_or(17));
        d.extend([0, 0, 18, 26, 7, 5]);
        d.extend(dst.octets());
        d[2..4].copy_from_slice(&len.to_be_bytes());
        let c = !sum(&d);
        d[10..12].copy_from_slice(&c.to_be_bytes());
    }
    d.extend_from_slice(body);
    let mut p = Packet::from_slice(&d).unwrap();
    p.anno_mut().dst_ip = dst;
    if nh {
        p.set_network_header(0);
    }
    p
}

/// Whether SA `sa`'s receiver takes sequence number `seq` of a run that
/// sent every number in order: its window refuses 0 (which the sender's
/// counter reaches when it wraps, before starting again at the SA's first
/// number), and, with a window of 0 packets, the first number itself
/// (Click's `lastseq - seq >= oowin`).
fn accepted(sa: usize, seq: u32) -> bool {
    let (_, start, window) = SAS[sa];
    seq != 0 && !(window == 0 && seq == start)
}

/// The annotations a raw packet gets.
fn annotate(p: &mut Packet, choice: u8, pick: u8, data: &[u8]) {
    let word = |i: usize| {
        u32::from_be_bytes(std::array::from_fn(|k| {
            data.get(i + k).copied().unwrap_or(0)
        }))
    };
    let a = p.anno_mut();
    a.dst_ip = match choice % 8 {
        0 => ME,
        1..=3 => Ipv4Addr::new(18, 26, 7 + choice % 8, pick),
        4 => Ipv4Addr::new(18, 26, 11, 1),
        5 => Ipv4Addr::new(18, 26, 12, 1),
        6 => Ipv4Addr::new(18, 26, 7, 1),
        _ => Ipv4Addr::from(word(16)),
    };
    a.flow = match pick % 6 {
        0 => 0,
        1..=3 => SAS[usize::from(pick % 6 - 1)].0,
        4 => 237,
        _ => word(0),
    };
    match (choice >> 3) % 3 {
        0 => {}
        1 => p.set_network_header(0),
        _ => header::anywhere(p, pick, 4),
    }
}

fn raw(s: &mut Stack, cfg: Cfg, mut inp: Input<'_>) {
    let (choice, pick) = (inp.byte(), inp.byte());
    let data = inp.0;
    let make = || {
        let mut p = Packet::from_slice(data).unwrap();
        annotate(&mut p, choice, pick, data);
        p
    };
    for dut in [&mut s.esp, &mut s.ipencap, &mut s.strip, &mut s.unencap]
        .into_iter()
        .chain(s.auth0.iter_mut())
        .chain(s.auth1.iter_mut())
        .chain(s.enc.iter_mut())
        .chain(s.dec.iter_mut())
        .chain(s.lone.iter_mut())
    {
        let out = dut.run(make());
        if data.len() + GROWTH <= MAX_FRAME {
            assert!(out.iter().flatten().all(|q| q.len() <= MAX_FRAME));
        }
    }
    // The chains, from the lookup, and from each chain's start.
    s.route(cfg, make(), true);
    let _ = s.encap(cfg, make());
    let _ = s.decap(cfg, make());
}

fn round_trips(s: &mut Stack, cfg: Cfg, mut inp: Input<'_>, tamper: bool) {
    for _ in 0..8 {
        if inp.is_empty() {
            break;
        }
        let ctl = inp.byte();
        let flip = if tamper { inp.u16() } else { 0 };
        let len = usize::from(inp.u16()) % (MAX_FRAME - GROWTH - 20 + 1);
        let body = inp.cycled(len);
        let sa = usize::from(ctl & 3) % 3;
        let p = inner(sa, ctl & 4 == 0, ctl & 8 == 0, &body);
        let want = p.data().to_vec();
        let tunnel = only(s.rt.run(p), 1).expect("a packet to a tunnel's prefix leaves rt[1]");
        let mut e = s
            .encap(cfg, tunnel)
            .expect("the encapsulating chain takes any packet of a tunnel");
        assert!(e.len() <= MAX_FRAME);
        assert_eq!(e.data()[20..24], SAS[sa].0.to_be_bytes());
        let seq = u32::from_be_bytes(e.data()[24..28].try_into().unwrap());
        let at = usize::from(flip) % e.len();
        if tamper {
            e.data_mut()[at] ^= 1 << (ctl >> 5);
        }
        let mut out = s.rt.run(e);
        let got = match out[0].pop() {
            Some(q) => s.decap(cfg, q),
            None => None,
        };
        if !tamper {
            assert_eq!(
                got.is_some(),
                accepted(sa, seq),
                "SA {sa} sequence number {seq}"
            );
        } else if at >= 20 {
            assert!(got.is_none(), "flipped ESP byte {} accepted", at - 20);
        }
        if let Some(q) = got {
            assert_eq!(q.data(), want, "the inner packet back");
        }
    }
}

fn handlers(s: &mut Stack, cfg: Cfg, mut inp: Input<'_>) {
    let which = inp.byte();
    let len = usize::from(inp.byte());
    let text = String::from_utf8_lossy(&inp.bytes(len)).into_owned();
    let rt = &mut s.rt.rig;
    let _ = match which % 6 {
        0 => rt.call_handler("add", &text, true),
        1 => rt.call_handler("set", &text, true),
        2 => rt.call_handler("remove", &text, true),
        3 => rt.call_handler("ctrl", &text, true),
        4 => rt.call_handler("lookup", &text, false),
        _ => rt.call_handler("table", "", false),
    };
    assert!(rt.read_handler("table").is_ok());
    // Whatever the table now says, packets stay accounted for.
    let data = inp.0;
    for dst in [ME, Ipv4Addr::new(18, 26, 8, 1), Ipv4Addr::new(10, 0, 0, 1)] {
        let Ok(mut p) = Packet::from_slice(data) else {
            return;
        };
        p.anno_mut().dst_ip = dst;
        s.route(cfg, p, true);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_FRAME + 4 {
        return;
    }
    let mut inp = Input(data);
    let (mode, cfg) = (inp.byte(), inp.byte());
    click_random::srandom(u32::from(cfg));
    let cfg = Cfg {
        cipher: usize::from(cfg & 1),
        auth: usize::from(cfg >> 1 & 1),
    };
    let mut s = Stack::new();
    match mode % 4 {
        0 => raw(&mut s, cfg, inp),
        1 => round_trips(&mut s, cfg, inp, false),
        2 => round_trips(&mut s, cfg, inp, true),
        _ => handlers(&mut s, cfg, inp),
    }
});
