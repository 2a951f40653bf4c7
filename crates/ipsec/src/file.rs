//! The SA and policy file: `ip xfrm state add` and `ip xfrm policy add`
//! lines, as Linux users write them.
//!
//! A gateway's file can be pasted from (or to) a Linux peer's set-up
//! script: the leading `ip xfrm` is optional, quotes around algorithm
//! names are accepted as the shell would strip them, keys are `0x` hex or
//! quoted strings, and strongSwan's proposal names (`aes128gcm16`,
//! `aes256gcm16`, `aes128`, `sha1`) are accepted in place of the kernel's
//! (`rfc4106(gcm(aes))`, `cbc(aes)`, `hmac(sha1)`). A `#` starts a comment
//! and a line ending in `\` continues on the next.
//!
//! ```text
//! ip xfrm state add src 10.0.0.1 dst 10.0.0.2 proto esp spi 0x1001 reqid 1 \
//!     mode tunnel replay-window 64 flag esn \
//!     aead 'rfc4106(gcm(aes))' 0x0123456789abcdef0123456789abcdef01234567 128 \
//!     limit byte-soft 1000000000 limit time-hard 3600
//! ip xfrm policy add src 192.168.1.0/24 dst 192.168.2.0/24 dir out \
//!     tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel
//! ```
//!
//! Everything bricks does not implement (transport mode, AH, NAT
//! traversal, other algorithms or ICV lengths) is refused with the line
//! and the reason rather than ignored.

use crate::spd::{Action, Dir, Prefix, Selector, Template, TemplateIndex};
use core::fmt;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// The default anti-replay window when a state gives none (RFC 4303
/// section 3.4.3 suggests 64; `ip xfrm`'s default of 0 would turn the
/// check off, which bricks only does when asked to).
pub const DEFAULT_REPLAY_WINDOW: u32 = 64;

/// A problem in the file, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The line the problem is on (the first line of a continued one).
    pub line: usize,
    /// What is wrong, and what would be right.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for FileError {}

/// A cipher suite and its keys.
#[derive(Clone, PartialEq, Eq)]
pub enum Algorithm {
    /// AES-GCM with a 16-byte ICV (RFC 4106); key of 16 or 32 bytes.
    AesGcm {
        /// The AES key.
        key: Vec<u8>,
        /// The 4-byte salt that starts every nonce.
        salt: [u8; 4],
    },
    /// AES-CBC (RFC 3602) with HMAC-SHA1-96 (RFC 2404).
    AesCbcHmacSha1 {
        /// The AES key, 16 or 32 bytes.
        key: Vec<u8>,
        /// The HMAC key, 20 bytes.
        auth_key: Vec<u8>,
    },
}

impl Algorithm {
    /// The name `ip xfrm state` shows, with the key size.
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::AesGcm { key, .. } if key.len() == 32 => "aes256-gcm16",
            Algorithm::AesGcm { .. } => "aes128-gcm16",
            Algorithm::AesCbcHmacSha1 { key, .. } if key.len() == 32 => "aes256-cbc-hmac-sha1-96",
            Algorithm::AesCbcHmacSha1 { .. } => "aes128-cbc-hmac-sha1-96",
        }
    }
}

impl fmt::Debug for Algorithm {
    // Keys stay out of logs and panics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When an SA must be replaced (soft) or stops being used (hard); 0 is
/// no limit, as in `ip xfrm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifetime {
    /// Bytes protected (inner packet bytes) before the soft event.
    pub soft_bytes: u64,
    /// Bytes after which the SA is no longer used.
    pub hard_bytes: u64,
    /// Packets before the soft event.
    pub soft_packets: u64,
    /// Packets after which the SA is no longer used.
    pub hard_packets: u64,
    /// Seconds from installation to the soft event.
    pub soft_seconds: u64,
    /// Seconds from installation after which the SA is no longer used.
    pub hard_seconds: u64,
}

/// One `ip xfrm state add` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSpec {
    /// Where it is in the file.
    pub line: usize,
    /// Tunnel source (the outer header's source address).
    pub src: Ipv4Addr,
    /// Tunnel destination.
    pub dst: Ipv4Addr,
    /// Security Parameters Index.
    pub spi: u32,
    /// Request id tying policies to states (0: none).
    pub reqid: u32,
    /// Cipher suite and keys.
    pub algorithm: Algorithm,
    /// Anti-replay window in packets (0: off).
    pub replay_window: u32,
    /// Extended (64-bit) sequence numbers, RFC 4303 section 2.2.1.
    pub esn: bool,
    /// Soft and hard limits.
    pub lifetime: Lifetime,
    /// The state's own selector (`sel ...`): decapsulated packets must
    /// match it too.
    pub selector: Option<Selector>,
}

/// One `ip xfrm policy add` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    /// Where it is in the file.
    pub line: usize,
    /// Which traffic.
    pub selector: Selector,
    /// out, in or fwd.
    pub dir: Dir,
    /// Lower values are tried first, as in Linux; equal ones in file
    /// order.
    pub priority: u32,
    /// allow (protected with the template when there is one) or block.
    pub action: Action,
    /// The SA the traffic goes through (out) or must have come through
    /// (in, fwd).
    pub template: Option<Template>,
}

/// A whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaFile {
    /// The states, in file order.
    pub states: Vec<StateSpec>,
    /// The policies, in file order.
    pub policies: Vec<PolicySpec>,
}

/// Reads a file's text. The first problem found is returned, with its
/// line; the file is also checked as a whole (duplicate SPIs, templates
/// that name no state).
pub fn parse(text: &str) -> Result<SaFile, FileError> {
    let mut file = SaFile::default();
    for (line, words) in logical_lines(text)? {
        let mut t = Tokens {
            words,
            pos: 0,
            line,
        };
        if t.peek() == Some("ip") {
            t.next();
            t.expect_word("xfrm")?;
        }
        match t.next().map(str::to_string).as_deref() {
            Some("state") => {
                t.expect_one_of(&["add", "update"])?;
                file.states.push(state(&mut t)?);
            }
            Some("policy") => {
                t.expect_one_of(&["add", "update"])?;
                file.policies.push(policy(&mut t)?);
            }
            Some(other) => {
                return Err(t.error(format!(
                    "expected `ip xfrm state add ...` or `ip xfrm policy add ...`, found `{other}`"
                )))
            }
            None => {
                return Err(t.error("expected `state add ...` or `policy add ...` after `ip xfrm`"))
            }
        }
    }
    check_whole(&file)?;
    Ok(file)
}

/// Checks what no single line shows, in time linear in the file.
fn check_whole(file: &SaFile) -> Result<(), FileError> {
    let mut first_line: HashMap<(u32, Ipv4Addr), usize> = HashMap::with_capacity(file.states.len());
    for s in &file.states {
        if let Some(first) = first_line.insert((s.spi, s.dst), s.line) {
            return Err(FileError {
                line: s.line,
                message: format!(
                    "a second state with spi {:#x} to {} (the first is on line {first}); \
                     an SA is identified by its destination and SPI",
                    s.spi, s.dst
                ),
            });
        }
    }
    let mut index = TemplateIndex::new(&file.states);
    for p in &file.policies {
        if let Some(t) = &p.template {
            if index.last_match(t).is_none() {
                return Err(FileError {
                    line: p.line,
                    message: format!(
                        "the policy's template ({t}) matches no state in the file: \
                         add the `ip xfrm state` it refers to"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Splits the text into logical lines of words, with their first line
/// number: comments removed, continuations joined, quotes stripped.
fn logical_lines(text: &str) -> Result<Vec<(usize, Vec<String>)>, FileError> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if words.is_empty() {
            start = line;
        }
        let body = raw.split('#').next().unwrap_or("").trim_end();
        let (body, continued) = match body.strip_suffix('\\') {
            Some(b) => (b, true),
            None => (body, false),
        };
        split_words(body, line, &mut words)?;
        if !continued && !words.is_empty() {
            out.push((start, std::mem::take(&mut words)));
        }
    }
    if !words.is_empty() {
        out.push((start, words));
    }
    Ok(out)
}

fn split_words(body: &str, line: usize, words: &mut Vec<String>) -> Result<(), FileError> {
    let mut chars = body.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut w = String::new();
            loop {
                match chars.next() {
                    Some(q) if q == c => break,
                    Some(ch) => w.push(ch),
                    None => {
                        return Err(FileError {
                            line,
                            message: format!("unterminated {c}quote"),
                        })
                    }
                }
            }
            words.push(w);
        } else {
            let mut w = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                w.push(ch);
                chars.next();
            }
            words.push(w);
        }
    }
    Ok(())
}

struct Tokens {
    words: Vec<String>,
    pos: usize,
    line: usize,
}

impl Tokens {
    fn peek(&self) -> Option<&str> {
        self.words.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let w = self.words.get(self.pos).map(String::as_str);
        self.pos += 1;
        w
    }

    fn error(&self, message: impl Into<String>) -> FileError {
        FileError {
            line: self.line,
            message: message.into(),
        }
    }

    /// The value after keyword `key`.
    fn value(&mut self, key: &str) -> Result<String, FileError> {
        match self.next() {
            Some(v) => Ok(v.to_string()),
            None => Err(self.error(format!("`{key}` needs a value"))),
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<(), FileError> {
        match self.next() {
            Some(w) if w == word => Ok(()),
            Some(w) => {
                let w = w.to_string();
                Err(self.error(format!("expected `{word}`, found `{w}`")))
            }
            None => Err(self.error(format!("expected `{word}`"))),
        }
    }

    fn expect_one_of(&mut self, words: &[&str]) -> Result<(), FileError> {
        let list = words.join("` or `");
        match self.next() {
            Some(w) if words.contains(&w) => Ok(()),
            Some(w) => {
                let w = w.to_string();
                Err(self.error(format!("expected `{list}`, found `{w}`")))
            }
            None => Err(self.error(format!("expected `{list}`"))),
        }
    }

    fn number<T: TryFrom<u64>>(&mut self, key: &str) -> Result<T, FileError> {
        let v = self.value(key)?;
        let n = parse_number(&v)
            .ok_or_else(|| self.error(format!("`{key}` needs a number, found `{v}`")))?;
        T::try_from(n).map_err(|_| self.error(format!("`{key}` {v} is too large")))
    }

    fn addr(&mut self, key: &str) -> Result<Ipv4Addr, FileError> {
        let v = self.value(key)?;
        v.parse().map_err(|_| {
            self.error(format!(
                "`{key}` needs an IPv4 address, found `{v}` (bricks' tunnels are IPv4)"
            ))
        })
    }

    fn prefix(&mut self, key: &str) -> Result<Prefix, FileError> {
        let v = self.value(key)?;
        Prefix::parse(&v).ok_or_else(|| {
            self.error(format!(
                "`{key}` needs an IPv4 address or prefix like 192.168.1.0/24, found `{v}`"
            ))
        })
    }
}

/// Decimal or 0x-hexadecimal.
fn parse_number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Key material: `0x` hex, or a string taken byte for byte, as `ip xfrm`
/// reads it.
fn key_bytes(t: &Tokens, v: &str) -> Result<Vec<u8>, FileError> {
    let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) else {
        return Ok(v.as_bytes().to_vec());
    };
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(t.error(format!("key {v} is not hexadecimal")));
    }
    if hex.len() % 2 != 0 {
        return Err(t.error(format!(
            "key {v} has an odd number of hex digits ({})",
            hex.len()
        )));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| t.error(format!("key {v} is not hexadecimal")))
}

enum AlgWord {
    Aead {
        name: String,
        key: Vec<u8>,
        icv: u32,
    },
    Enc {
        name: String,
        key: Vec<u8>,
    },
    Auth {
        name: String,
        key: Vec<u8>,
        trunc: Option<u32>,
    },
}

fn state(t: &mut Tokens) -> Result<StateSpec, FileError> {
    let (mut src, mut dst, mut spi) = (None, None, None);
    let mut reqid = 0;
    let mut mode_seen = false;
    let mut replay_window = None;
    let mut esn = false;
    let mut lifetime = Lifetime::default();
    let mut selector = None;
    let mut algs = Vec::new();
    while let Some(w) = t.next() {
        match w {
            "src" => src = Some(t.addr("src")?),
            "dst" => dst = Some(t.addr("dst")?),
            "proto" => proto_esp(t)?,
            "spi" => spi = Some(t.number::<u32>("spi")?),
            "reqid" => reqid = t.number("reqid")?,
            "mode" => {
                mode_tunnel(t)?;
                mode_seen = true;
            }
            "replay-window" => replay_window = Some(t.number::<u32>("replay-window")?),
            "flag" => {
                // One or more flags follow.
                let mut any = false;
                while let Some(f) = t.peek() {
                    match f {
                        "esn" => esn = true,
                        // ECN is always propagated as RFC 6040 asks and
                        // bricks never sends ICMP for its outer packets:
                        // these change nothing here.
                        "noecn" | "decap-dscp" | "nopmtudisc" | "align4" | "af-unspec" => {}
                        _ if any => break,
                        other => {
                            let other = other.to_string();
                            return Err(t.error(format!(
                                "unknown state flag `{other}` (bricks knows esn, noecn, \
                                 decap-dscp, nopmtudisc, align4, af-unspec)"
                            )));
                        }
                    }
                    any = true;
                    t.next();
                }
            }
            "aead" => {
                let name = t.value("aead")?;
                let key = t.value("aead")?;
                let key = key_bytes(t, &key)?;
                let icv = t.number("aead ICV length")?;
                algs.push(AlgWord::Aead { name, key, icv });
            }
            "enc" => {
                let name = t.value("enc")?;
                let key = t.value("enc")?;
                algs.push(AlgWord::Enc {
                    name,
                    key: key_bytes(t, &key)?,
                });
            }
            "auth" => {
                let name = t.value("auth")?;
                let key = t.value("auth")?;
                algs.push(AlgWord::Auth {
                    name,
                    key: key_bytes(t, &key)?,
                    trunc: None,
                });
            }
            "auth-trunc" => {
                let name = t.value("auth-trunc")?;
                let key = t.value("auth-trunc")?;
                let key = key_bytes(t, &key)?;
                let trunc = t.number("auth-trunc length")?;
                algs.push(AlgWord::Auth {
                    name,
                    key,
                    trunc: Some(trunc),
                });
            }
            "limit" => limit(t, &mut lifetime)?,
            "sel" => selector = Some(selector_words(t)?),
            // Accepted and meaningless here: which SA a packet takes is
            // the policies' business, and `dir` (Linux 6.10) only
            // restates it.
            "dir" => {
                t.expect_one_of(&["in", "out"])?;
            }
            "encap" => {
                return Err(t.error(
                    "UDP encapsulation (NAT traversal) is not supported: bricks speaks \
                     plain ESP (IP protocol 50)",
                ))
            }
            "comp" => return Err(t.error("IP compression (comp) is not supported")),
            "seq" | "replay-seq" | "replay-oseq" | "replay-seq-hi" | "replay-oseq-hi" => {
                let w = w.to_string();
                return Err(t.error(format!(
                    "`{w}` is not supported: sequence numbers start at 1 when the SA is installed"
                )));
            }
            other => {
                let other = other.to_string();
                return Err(t.error(format!("unknown word `{other}` in a state")));
            }
        }
    }
    let (Some(src), Some(dst), Some(spi)) = (src, dst, spi) else {
        return Err(t.error("a state needs `src ADDR dst ADDR proto esp spi SPI`"));
    };
    if !mode_seen {
        return Err(t.error(
            "a state needs `mode tunnel` (Linux's default is transport mode, which bricks \
             does not implement)",
        ));
    }
    if spi < 256 {
        return Err(t.error(format!(
            "spi {spi:#x} is reserved: SPIs 0 to 255 are not used for SAs (RFC 4303 section 2.1)"
        )));
    }
    let replay_window = replay_window.unwrap_or(DEFAULT_REPLAY_WINDOW);
    if replay_window > crate::replay::MAX_WINDOW {
        return Err(t.error(format!(
            "replay-window {replay_window} is larger than {}",
            crate::replay::MAX_WINDOW
        )));
    }
    if esn && replay_window == 0 {
        return Err(t.error("flag esn needs a replay-window above 0 (as in Linux)"));
    }
    let algorithm = algorithm(t, algs)?;
    Ok(StateSpec {
        line: t.line,
        src,
        dst,
        spi,
        reqid,
        algorithm,
        replay_window,
        esn,
        lifetime,
        selector,
    })
}

fn proto_esp(t: &mut Tokens) -> Result<(), FileError> {
    match t.value("proto")?.as_str() {
        "esp" | "50" => Ok(()),
        other => Err(t.error(format!(
            "proto {other}: bricks implements ESP only (`proto esp`)"
        ))),
    }
}

fn mode_tunnel(t: &mut Tokens) -> Result<(), FileError> {
    match t.value("mode")?.as_str() {
        "tunnel" => Ok(()),
        other => Err(t.error(format!(
            "mode {other}: bricks implements tunnel mode only (`mode tunnel`)"
        ))),
    }
}

fn limit(t: &mut Tokens, l: &mut Lifetime) -> Result<(), FileError> {
    // `limit` is followed by one or more KIND VALUE pairs.
    let mut any = false;
    while let Some(kind) = t.peek() {
        let slot = match kind {
            "time-soft" => &mut l.soft_seconds,
            "time-hard" => &mut l.hard_seconds,
            "byte-soft" => &mut l.soft_bytes,
            "byte-hard" => &mut l.hard_bytes,
            "packet-soft" => &mut l.soft_packets,
            "packet-hard" => &mut l.hard_packets,
            "time-use-soft" | "time-use-hard" => {
                return Err(t.error(format!(
                    "`limit {kind}` (time since first use) is not supported; use time-soft \
                     and time-hard"
                )))
            }
            _ if any => return Ok(()),
            other => {
                return Err(t.error(format!(
                    "unknown limit `{other}` (time-soft, time-hard, byte-soft, byte-hard, \
                     packet-soft, packet-hard)"
                )))
            }
        };
        let kind = kind.to_string();
        t.next();
        let v = t.value(&kind)?;
        *slot = parse_limit(&v)
            .ok_or_else(|| t.error(format!("`limit {kind}` needs a number, found `{v}`")))?;
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err(t.error("`limit` needs a kind and a value, e.g. `limit byte-soft 1000000`"))
    }
}

/// A limit value; `inf` is no limit.
fn parse_limit(v: &str) -> Option<u64> {
    if v == "inf" {
        Some(0)
    } else {
        parse_number(v)
    }
}

fn algorithm(t: &Tokens, algs: Vec<AlgWord>) -> Result<Algorithm, FileError> {
    let mut aead = None;
    let mut enc = None;
    let mut auth = None;
    for a in algs {
        match a {
            AlgWord::Aead { .. } if aead.is_some() => return Err(t.error("two `aead` algorithms")),
            AlgWord::Aead { .. } => aead = Some(a),
            AlgWord::Enc { .. } if enc.is_some() => return Err(t.error("two `enc` algorithms")),
            AlgWord::Enc { .. } => enc = Some(a),
            AlgWord::Auth { .. } if auth.is_some() => return Err(t.error("two `auth` algorithms")),
            AlgWord::Auth { .. } => auth = Some(a),
        }
    }
    match (aead, enc, auth) {
        (Some(AlgWord::Aead { name, key, icv }), None, None) => gcm(t, &name, key, icv),
        (Some(_), _, _) => Err(t.error(
            "`aead` combines encryption and authentication: give no `enc` or `auth` with it",
        )),
        (
            None,
            Some(AlgWord::Enc { name, key }),
            Some(AlgWord::Auth {
                name: an,
                key: ak,
                trunc,
            }),
        ) => cbc_sha1(t, &name, key, &an, ak, trunc),
        (None, Some(_), None) => Err(t.error(
            "`enc` without `auth`: ESP without integrity is not supported; add \
             `auth-trunc 'hmac(sha1)' 0xKEY 96`",
        )),
        (None, None, Some(_)) => Err(t.error(
            "`auth` without `enc`: ESP with null encryption is not supported; add \
             `enc 'cbc(aes)' 0xKEY`",
        )),
        _ => Err(t.error(
            "a state needs an algorithm: `aead 'rfc4106(gcm(aes))' 0xKEY 128` or \
             `enc 'cbc(aes)' 0xKEY auth-trunc 'hmac(sha1)' 0xKEY 96`",
        )),
    }
}

fn gcm(t: &Tokens, name: &str, mut key: Vec<u8>, icv: u32) -> Result<Algorithm, FileError> {
    let want = match name {
        "rfc4106(gcm(aes))" => None,
        "aes128gcm16" | "aes128gcm128" => Some(16),
        "aes256gcm16" | "aes256gcm128" => Some(32),
        _ => {
            return Err(t.error(format!(
                "aead {name} is not supported: use rfc4106(gcm(aes)) (or strongSwan's \
                 aes128gcm16 / aes256gcm16)"
            )))
        }
    };
    if icv != 128 {
        return Err(t.error(format!(
            "aead ICV length {icv} is not supported: bricks uses 16-byte ICVs (128)"
        )));
    }
    let n = key.len();
    let ok = match want {
        Some(aes) => n == aes + 4,
        None => n == 20 || n == 36,
    };
    if !ok {
        let expect = match want {
            Some(16) => "20 bytes (a 16-byte AES-128 key and a 4-byte salt, 40 hex digits)",
            Some(_) => "36 bytes (a 32-byte AES-256 key and a 4-byte salt, 72 hex digits)",
            None => {
                "20 bytes (AES-128 key + 4-byte salt, 40 hex digits) or 36 bytes (AES-256 \
                 + salt, 72 hex digits)"
            }
        };
        let extra = if n == 28 {
            "; AES-192 is not supported"
        } else {
            ""
        };
        return Err(t.error(format!(
            "the key of {name} must be {expect}; this one is {n} bytes{extra}"
        )));
    }
    let salt_bytes = key.split_off(n - 4);
    let mut salt = [0; 4];
    salt.copy_from_slice(&salt_bytes);
    Ok(Algorithm::AesGcm { key, salt })
}

fn cbc_sha1(
    t: &Tokens,
    name: &str,
    key: Vec<u8>,
    auth: &str,
    auth_key: Vec<u8>,
    trunc: Option<u32>,
) -> Result<Algorithm, FileError> {
    let want = match name {
        "cbc(aes)" | "aes" | "aes-cbc" => None,
        "aes128" => Some(16),
        "aes256" => Some(32),
        _ => {
            return Err(t.error(format!(
                "enc {name} is not supported: use cbc(aes) (or strongSwan's aes128 / aes256)"
            )))
        }
    };
    let n = key.len();
    if want.map_or(n != 16 && n != 32, |w| n != w) {
        return Err(t.error(format!(
            "the key of enc {name} must be {}; this one is {n} bytes",
            match want {
                Some(16) => "16 bytes (32 hex digits)",
                Some(_) => "32 bytes (64 hex digits)",
                None => "16 bytes (AES-128, 32 hex digits) or 32 bytes (AES-256, 64 hex digits)",
            }
        )));
    }
    if !matches!(auth, "hmac(sha1)" | "sha1") {
        return Err(t.error(format!(
            "auth {auth} is not supported: use hmac(sha1) (strongSwan's sha1)"
        )));
    }
    if let Some(bits) = trunc {
        if bits != 96 {
            return Err(t.error(format!(
                "auth-trunc length {bits} is not supported: HMAC-SHA1-96 truncates to 96 bits \
                 (RFC 2404)"
            )));
        }
    }
    if auth_key.len() != 20 {
        return Err(t.error(format!(
            "the key of hmac(sha1) must be 20 bytes (160 bits, RFC 2404; 40 hex digits); \
             this one is {} bytes",
            auth_key.len()
        )));
    }
    Ok(Algorithm::AesCbcHmacSha1 { key, auth_key })
}

fn selector_words(t: &mut Tokens) -> Result<Selector, FileError> {
    let mut s = Selector::any();
    while let Some(w) = t.peek() {
        match w {
            "src" => {
                t.next();
                s.src = t.prefix("src")?;
            }
            "dst" => {
                t.next();
                s.dst = t.prefix("dst")?;
            }
            "proto" => {
                t.next();
                let v = t.value("proto")?;
                s.proto = match v.as_str() {
                    "any" | "0" => None,
                    "tcp" => Some(6),
                    "udp" => Some(17),
                    "icmp" => Some(1),
                    "sctp" => Some(132),
                    "gre" => Some(47),
                    other => Some(
                        parse_number(other)
                            .and_then(|n| u8::try_from(n).ok())
                            .ok_or_else(|| {
                                t.error(format!(
                                    "unknown protocol `{other}` (tcp, udp, icmp, a number)"
                                ))
                            })?,
                    ),
                };
            }
            "sport" | "dport" | "type" | "code" => {
                let key = w.to_string();
                t.next();
                let n: u16 = t.number(&key)?;
                match (key.as_str(), s.proto) {
                    ("sport", Some(6 | 17 | 132)) => s.sport = Some(n),
                    ("dport", Some(6 | 17 | 132)) => s.dport = Some(n),
                    // Linux keeps the ICMP type and code where the ports go.
                    ("type", Some(1)) => s.sport = Some(n),
                    ("code", Some(1)) => s.dport = Some(n),
                    _ => {
                        return Err(t.error(format!(
                            "`{key}` needs `proto tcp`, `udp` or `sctp` before it (type and \
                             code: `proto icmp`)"
                        )))
                    }
                }
            }
            "dev" => {
                return Err(t.error(
                    "`dev` in a selector is not supported: bricks' policies select by \
                     addresses, protocol and ports",
                ))
            }
            _ => break,
        }
    }
    Ok(s)
}

fn policy(t: &mut Tokens) -> Result<PolicySpec, FileError> {
    let selector = selector_words(t)?;
    let mut dir = None;
    let mut priority = 0;
    let mut action = Action::Allow;
    let mut template = None;
    while let Some(w) = t.next() {
        match w {
            "dir" => {
                dir = Some(match t.value("dir")?.as_str() {
                    "out" => Dir::Out,
                    "in" => Dir::In,
                    "fwd" => Dir::Fwd,
                    other => return Err(t.error(format!("dir {other}: expected out, in or fwd"))),
                })
            }
            "priority" => priority = t.number("priority")?,
            "action" => {
                action = match t.value("action")?.as_str() {
                    "allow" => Action::Allow,
                    "block" => Action::Block,
                    other => {
                        return Err(t.error(format!("action {other}: expected allow or block")))
                    }
                }
            }
            "index" | "ptype" | "mark" | "if_id" => {
                let w = w.to_string();
                t.value(&w)?;
                if w != "ptype" && w != "index" {
                    return Err(t.error(format!("`{w}` is not supported in a policy")));
                }
            }
            "tmpl" => {
                if template.is_some() {
                    return Err(t.error(
                        "more than one `tmpl`: bundles (ESP inside AH, say) are not supported",
                    ));
                }
                template = Some(tmpl(t)?);
            }
            "flag" => {
                let f = t.value("flag")?;
                if f != "localok" && f != "icmp" {
                    return Err(t.error(format!("unknown policy flag `{f}`")));
                }
            }
            "limit" => limit(t, &mut Lifetime::default())?,
            other => {
                let other = other.to_string();
                return Err(t.error(format!("unknown word `{other}` in a policy")));
            }
        }
    }
    let Some(dir) = dir else {
        return Err(t.error("a policy needs a direction: `dir out`, `dir in` or `dir fwd`"));
    };
    Ok(PolicySpec {
        line: t.line,
        selector,
        dir,
        priority,
        action,
        template,
    })
}

fn tmpl(t: &mut Tokens) -> Result<Template, FileError> {
    let mut tm = Template::default();
    let mut mode_seen = false;
    while let Some(w) = t.peek() {
        match w {
            "src" => {
                t.next();
                tm.src = Some(t.addr("src")?);
            }
            "dst" => {
                t.next();
                tm.dst = Some(t.addr("dst")?);
            }
            "proto" => {
                t.next();
                proto_esp(t)?;
            }
            "spi" => {
                t.next();
                tm.spi = Some(t.number("spi")?);
            }
            "reqid" => {
                t.next();
                let r: u32 = t.number("reqid")?;
                tm.reqid = (r != 0).then_some(r);
            }
            "mode" => {
                t.next();
                mode_tunnel(t)?;
                mode_seen = true;
            }
            "level" => {
                t.next();
                t.expect_one_of(&["required", "use"])?;
            }
            _ => break,
        }
    }
    if !mode_seen {
        return Err(t.error("a template needs `mode tunnel`"));
    }
    if tm.src.is_none() || tm.dst.is_none() {
        return Err(t.error("a tunnel template needs `src ADDR dst ADDR` (the tunnel's ends)"));
    }
    Ok(tm)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GCM: &str = "ip xfrm state add src 10.0.0.1 dst 10.0.0.2 proto esp spi 0x1001 reqid 1 \
        mode tunnel aead 'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0fcafebabe 128";

    fn err(text: &str) -> FileError {
        parse(text).unwrap_err()
    }

    #[test]
    fn linux_lines_parse() {
        let text = format!(
            "# a gateway\n{GCM} \\\n  replay-window 128 flag esn limit byte-soft 1000 time-hard 60\n\
             state add src 10.0.0.2 dst 10.0.0.1 proto esp spi 4098 reqid 2 mode tunnel \
             enc \"cbc(aes)\" 0x00112233445566778899aabbccddeeff auth-trunc 'hmac(sha1)' \
             0x0102030405060708090a0b0c0d0e0f1011121314 96\n\
             ip xfrm policy add src 192.168.1.0/24 dst 192.168.2.0/24 proto tcp dport 80 dir out \
             priority 5 tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel\n\
             ip xfrm policy add src 192.168.2.0/24 dst 192.168.1.0/24 dir fwd \
             tmpl src 10.0.0.2 dst 10.0.0.1 proto esp reqid 2 mode tunnel level required\n"
        );
        let f = parse(&text).unwrap();
        assert_eq!(f.states.len(), 2);
        let s = &f.states[0];
        assert_eq!(
            (s.spi, s.reqid, s.replay_window, s.esn, s.line),
            (0x1001, 1, 128, true, 2)
        );
        assert_eq!(s.lifetime.soft_bytes, 1000);
        assert_eq!(s.lifetime.hard_seconds, 60);
        let Algorithm::AesGcm { key, salt } = &s.algorithm else {
            panic!()
        };
        assert_eq!((key.len(), *salt), (16, [0xca, 0xfe, 0xba, 0xbe]));
        assert_eq!(f.states[1].spi, 4098);
        assert_eq!(f.states[1].replay_window, DEFAULT_REPLAY_WINDOW);
        assert!(matches!(
            f.states[1].algorithm,
            Algorithm::AesCbcHmacSha1 { .. }
        ));
        assert_eq!(f.policies.len(), 2);
        let p = &f.policies[0];
        assert_eq!(
            (p.dir, p.priority, p.selector.proto, p.selector.dport),
            (Dir::Out, 5, Some(6), Some(80))
        );
        assert_eq!(p.template.as_ref().unwrap().reqid, Some(1));
        assert_eq!(f.policies[1].dir, Dir::Fwd);
    }

    #[test]
    fn strongswan_names() {
        let f = parse(
            "state add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x300 mode tunnel aead aes256gcm16 \
             0x000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f01020304 128\n\
             state add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x301 mode tunnel enc aes128 \
             0x00112233445566778899aabbccddeeff auth sha1 0x0102030405060708090a0b0c0d0e0f1011121314",
        )
        .unwrap();
        assert_eq!(f.states[0].algorithm.name(), "aes256-gcm16");
        assert_eq!(f.states[1].algorithm.name(), "aes128-cbc-hmac-sha1-96");
    }

    #[test]
    fn wrong_key_lengths_name_the_line_and_the_sizes() {
        let e = err(
            "\n\nstate add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x300 mode tunnel aead \
             'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0f 128",
        );
        assert_eq!(e.line, 3);
        assert!(e.message.contains("must be 20 bytes"), "{e}");
        assert!(e.message.contains("this one is 16 bytes"), "{e}");
        let e = err("state add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x300 mode tunnel enc \
             'cbc(aes)' 0x0011 auth-trunc 'hmac(sha1)' 0x0102030405060708090a0b0c0d0e0f1011121314 96");
        assert!(e.message.contains("this one is 2 bytes"), "{e}");
        let e = err(
            "state add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x300 mode tunnel enc \
             'cbc(aes)' 0x00112233445566778899aabbccddeeff auth-trunc 'hmac(sha1)' 0x0102 96",
        );
        assert!(e.message.contains("hmac(sha1) must be 20 bytes"), "{e}");
        let e = err(
            "state add src 1.0.0.1 dst 1.0.0.2 proto esp spi 0x300 mode tunnel aead \
             'rfc4106(gcm(aes))' 0x0001020 128",
        );
        assert!(e.message.contains("odd number"), "{e}");
    }

    #[test]
    fn policy_naming_a_missing_sa_is_refused() {
        let text = format!(
            "{GCM}\n\npolicy add src 192.168.1.0/24 dst 192.168.2.0/24 dir out tmpl src \
             10.0.0.1 dst 10.0.0.2 proto esp reqid 7 mode tunnel\n"
        );
        let e = err(&text);
        assert_eq!(e.line, 3);
        assert!(e.message.contains("matches no state"), "{e}");
    }

    #[test]
    fn unsupported_things_are_refused_with_a_reason() {
        for (text, want) in [
            (GCM.replace("mode tunnel", "mode transport"), "tunnel mode only"),
            (GCM.replace("proto esp", "proto ah"), "ESP only"),
            (GCM.replace(" 128", " 64"), "ICV length 64"),
            (GCM.replace("mode tunnel", "mode tunnel encap espinudp 4500 4500 0.0.0.0"), "NAT"),
            (GCM.replace("spi 0x1001", "spi 7"), "reserved"),
            (GCM.replace("spi 0x1001 ", ""), "needs `src ADDR"),
            (GCM.replace("mode tunnel ", ""), "needs `mode tunnel`"),
            (format!("{GCM} flag esn replay-window 0"), "esn needs"),
            (format!("{GCM} bogus"), "unknown word `bogus`"),
            (format!("{GCM} replay-window 1000000"), "larger than"),
            (GCM.replace("10.0.0.2", "fe80::1"), "IPv4 address"),
            ("ip route add 1.2.3.4".to_string(), "expected `xfrm`"),
            ("ip xfrm state add 'src".to_string(), "unterminated"),
            ("ip xfrm".to_string(), "after `ip xfrm`"),
            (GCM.replace("0x0001", "0xé001"), "not hexadecimal"),
            (
                "policy add src 1.0.0.0/8 dst 2.0.0.0/8 tmpl src 1.1.1.1 dst 2.2.2.2 proto esp mode tunnel"
                    .to_string(),
                "needs a direction",
            ),
            (
                "policy add src 1.0.0.0/8 dport 80 dir out".to_string(),
                "needs `proto tcp`",
            ),
        ] {
            let e = err(&text);
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn duplicate_spi_names_both_lines() {
        let e = err(&format!("{GCM}\n{GCM}"));
        assert_eq!(e.line, 2);
        assert!(e.message.contains("line 1"), "{e}");
    }
}
