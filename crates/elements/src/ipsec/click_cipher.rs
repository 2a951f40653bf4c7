//! Click's ESP ciphers: `IPsecAES` (`elements/ipsec/aes.cc`) and
//! `IPsecDES` (`des.cc`). The format is described in [`super::click_sa`].

use super::click_sa::{aes_decrypt, aes_encrypt, des_decrypt, des_encrypt, CipherError};
use super::radix_ipsec_lookup::{tables_for, IpsecTable, Tables};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::sync::Arc;

/// The `IPsecAES` class.
pub static AES_CLASS: ElementClass = ElementClass {
    name: "IPsecAES",
    ports: "1/1",
    processing: "a/a",
    manual: &AES_MANUAL,
    make: make_aes,
};

/// The `IPsecDES` class.
pub static DES_CLASS: ElementClass = ElementClass {
    name: "IPsecDES",
    ports: "1/1",
    processing: "a/a",
    manual: &DES_MANUAL,
    make: make_des,
};

const ENCRYPT: Keyword = Keyword {
    name: "ENCRYPT",
    ty: "integer",
    default: None,
    doc: "1 encrypts, anything else decrypts; positional",
};

const COUNTERS: &[(&str, &str)] = &[
    ("encrypted", "packets encrypted (ENCRYPT 1)"),
    ("decrypted", "packets decrypted"),
    (
        "truncated",
        "packets shorter than the 16-byte ESP header, dropped",
    ),
    (
        "bad_length",
        "IPsecAES: packets whose length after the header and ICV is not a multiple of 8, \
         whose last block Click would take past the end, dropped",
    ),
    ("no_sa", "packets whose SPI is no SA's, dropped"),
];

static AES_MANUAL: Manual = Manual {
    summary: "encrypts or decrypts Click's ESP packets with AES-128 (Click's own mode)",
    synopsis: "IPsecAES(ENCRYPT)",
    description: "Click's element (elements/ipsec/aes.cc), between IPsecAuthHMACSHA1 and \
        IPsecEncap in Click's IPsec chains. The key is the ENCRYPT_KEY of the SA, of the \
        RadixIPsecLookup upstream, whose SPI the ESP header names.\n\n\
        Click's ESP header is 16 bytes: SPI, sequence number and an 8-byte IV. After it, \
        IPsecAES takes the packet but its last 12 bytes (the ICV), 8 bytes more when that \
        length is not a multiple of 16 (so the first 8 bytes of the ICV are encrypted too), \
        in 16-byte blocks; before AES-128 encrypts a block, its first 8 bytes are XORed with \
        the IV (the first block) or the first 8 bytes of the previous ciphertext block, and \
        its last 8 bytes with nothing. Decryption undoes it. This is not AES-CBC (RFC 3602, \
        a 16-byte IV chaining whole blocks), and Click authenticates the plaintext before \
        encrypting: Click's ESP interoperates with Click and with bricks, not with Linux \
        XFRM or other RFC 4303 peers (IPsecESPEncap(FILE) and IPsecESPDecap are bricks' \
        standard ESP).\n\n\
        A packet too short for the ESP header, or whose length after header and ICV is not a \
        multiple of 8 (Click would run past its end), or with an SPI of no SA, is dropped and \
        counted. A packet with nothing after the header and ICV passes unchanged, as in \
        Click.",
    ports: "one input, one output; agnostic",
    keywords: &[ENCRYPT],
    counters: COUNTERS,
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 12 1a \
        08 02 00 07 00 09 00 08 00 00>, LIMIT 1) -> SetIPChecksum -> CheckIPHeader \
        -> rt :: RadixIPsecLookup(18.26.8.0/24 18.26.4.1 1 234 \
        \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 300 64, \
        0/0 0); rt[0] -> Discard; \
        rt[1] -> IPsecESPEncap() -> IPsecAuthHMACSHA1(0) -> IPsecAES(1) -> IPsecAES(0) \
        -> IPsecAuthHMACSHA1(1) -> Discard;",
    see_also: &[
        "IPsecDES",
        "IPsecAuthHMACSHA1",
        "IPsecESPEncap",
        "RadixIPsecLookup",
    ],
};

static DES_MANUAL: Manual = Manual {
    summary: "encrypts or decrypts Click's ESP packets with DES-CBC",
    synopsis: "IPsecDES(ENCRYPT)",
    description: "Click's element (elements/ipsec/des.cc): DES-CBC (RFC 2405's mode) with \
        the first 8 bytes of the SA's ENCRYPT_KEY, of the RadixIPsecLookup upstream whose \
        SPI the ESP header names, chained from the 8-byte IV in Click's 16-byte ESP header, \
        over the packet after the header but its last 12 bytes (the ICV), rounded up to \
        8-byte blocks. Click's manual gives it a KEY and an IGNORE argument that its code \
        never read (the key is the SA's); bricks takes ENCRYPT only, as Click's code does. \
        Single DES has a 56-bit key and is broken: it is here for Click's configurations. \
        Packets shorter than the ESP header or with an SPI of no SA are dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[ENCRYPT],
    counters: COUNTERS,
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 12 1a \
        08 02 00 07 00 09 00 08 00 00>, LIMIT 1) -> SetIPChecksum -> CheckIPHeader \
        -> rt :: RadixIPsecLookup(18.26.8.0/24 18.26.4.1 1 234 \
        \\<ABCDEFFF001DEFD2354550FE40CD708E> \\<112233EE556677888877665544332211> 300 64, \
        0/0 0); rt[0] -> Discard; \
        rt[1] -> IPsecESPEncap() -> IPsecAuthHMACSHA1(0) -> IPsecDES(1) -> IPsecDES(0) \
        -> IPsecAuthHMACSHA1(1) -> Discard;",
    see_also: &[
        "IPsecAES",
        "IPsecAuthHMACSHA1",
        "IPsecESPEncap",
        "RadixIPsecLookup",
    ],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cipher {
    Aes,
    Des,
}

fn make_aes(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make(args, Cipher::Aes, "IPsecAES")
}

fn make_des(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make(args, Cipher::Des, "IPsecDES")
}

fn make(args: &mut Args<'_>, cipher: Cipher, class: &str) -> Result<Box<dyn Element>, ArgError> {
    // Click: `_op = dec_int`, and `_op == DECRYPT` (0) decrypts; anything
    // else encrypts.
    let encrypt = args.read_mp::<i64>("ENCRYPT")? != 0;
    Ok(Box::new(ClickCipher {
        cipher,
        encrypt,
        tables: tables_for(args, class)?,
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    encrypted: u64,
    decrypted: u64,
    truncated: u64,
    bad_length: u64,
    no_sa: u64,
}

/// Click's `IPsecAES` or `IPsecDES`.
#[derive(Debug)]
pub struct ClickCipher {
    cipher: Cipher,
    encrypt: bool,
    tables: Vec<Arc<IpsecTable>>,
    c: Counts,
}

fn apply(cipher: Cipher, encrypt: bool, snaps: &Tables, c: &mut Counts, p: &mut Packet) -> bool {
    let d = p.data_mut();
    let Some(spi) = d.first_chunk::<4>().map(|s| u32::from_be_bytes(*s)) else {
        c.truncated += 1;
        return false;
    };
    let Some(sa) = snaps.sa(spi) else {
        if d.len() < 16 {
            c.truncated += 1;
        } else {
            c.no_sa += 1;
        }
        return false;
    };
    let r = match (cipher, encrypt) {
        (Cipher::Aes, true) => aes_encrypt(sa.aes(), d),
        (Cipher::Aes, false) => aes_decrypt(sa.aes(), d),
        (Cipher::Des, true) => des_encrypt(sa.des(), d),
        (Cipher::Des, false) => des_decrypt(sa.des(), d),
    };
    match r {
        Ok(()) if encrypt => c.encrypted += 1,
        Ok(()) => c.decrypted += 1,
        Err(CipherError::Truncated) => {
            c.truncated += 1;
            return false;
        }
        Err(CipherError::BadLength) => {
            c.bad_length += 1;
            return false;
        }
    }
    true
}

impl Element for ClickCipher {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snaps = Tables::load(&self.tables);
        let (cipher, encrypt, c) = (self.cipher, self.encrypt, &mut self.c);
        batch.retain(|p| apply(cipher, encrypt, &snaps, c, p));
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let snaps = Tables::load(&self.tables);
        let (cipher, encrypt, c) = (self.cipher, self.encrypt, &mut self.c);
        cx.pull_with(out, max, |b, _| {
            b.retain(|p| apply(cipher, encrypt, &snaps, c, p))
        });
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("encrypted", c.encrypted);
        s.counter("decrypted", c.decrypted);
        s.counter("truncated", c.truncated);
        if self.cipher == Cipher::Aes {
            s.counter("bad_length", c.bad_length);
        }
        s.counter("no_sa", c.no_sa);
    }
}
