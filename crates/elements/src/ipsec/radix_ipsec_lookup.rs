//! `RadixIPsecLookup`: Click's IP route lookup with IPsec tunnels
//! (`elements/ipsec/radixipseclookup.cc`, `ipsecroutetable.cc`,
//! `satable.cc`): a route may carry a security association, and the
//! element keeps the SAs by SPI for the ESP packets addressed to it.
//!
//! Click hands the SA to the elements after it as a pointer in a packet
//! annotation. bricks keeps the SAs in a table every worker's instance
//! shares ([`IpsecTable`]); a packet leaving on output 1 carries its
//! route's SPI in the `flow` annotation (Click's `IPSEC_SPI_ANNO`), which
//! `IPsecESPEncap()` reads and clears, and the elements that see an ESP
//! header (IPsecAuthHMACSHA1, IPsecAES, IPsecDES, IPsecESPUnencap) take
//! the SPI from it. They find this table by following the connections
//! upstream, as Click's flow-based router context does.

use super::click_sa::{ClickSa, KEY_SIZE};
use crate::ip::prefix_table::PrefixTable;
use arc_swap::ArcSwap;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Manual, PortInfo,
    Stats,
};
use bricks_wire::Ipv4Cidr;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

/// The `RadixIPsecLookup` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RadixIPsecLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// Routes a table may hold.
pub const MAX_ROUTES: usize = 65_536;
/// Security associations a table may hold (each keeps its key schedules,
/// about 1 KiB).
pub const MAX_SAS: usize = 4_096;

static MANUAL: Manual = Manual {
    summary: "IP route lookup with IPsec ESP tunnels (Click's IPsec router table)",
    synopsis: "RadixIPsecLookup(ADDR/MASK [GW] OUT [SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE], ...)",
    description: "Longest-prefix match of each packet's destination address annotation, as \
        RadixIPLookup, over routes `ADDR/MASK [GW] OUT`, where a route may end with an IPsec \
        security association: SPI (a 32-bit number, not 0), ENCRYPT_KEY and AUTH_KEY (16 \
        bytes each: Click data such as \\<0183A9471ABE01FFFA04103BB1020304> or a 16-character \
        string; bricks also reads 32 hex digits, which Click refuses as 32 bytes), REPLAY \
        (the first sequence number, at least 1) and OOSIZE (the replay window, 0 to 255 \
        packets). A route's gateway, if any, replaces the destination annotation.\n\n\
        Outputs 0, 1 and 2 are Click's tunnel ports. A packet routed to output 1 is to \
        enter a tunnel: its route must have an SA (else it is dropped and counted as \
        no_sa), whose SPI goes with the packet to IPsecESPEncap() (in the `flow` \
        annotation, Click's IPSEC_SPI_ANNO). A packet routed to output 0 is addressed to \
        this router: an ESP packet (IP protocol 50) whose SPI names one of the table's SAs \
        leaves on output 0 for the decapsulating chain, an ESP packet with an unknown SPI \
        is dropped (unknown_spi), and any other protocol leaves on output 2, for the host. \
        Outputs 3 and up are ordinary routes. The elements of the chains (IPsecESPEncap(), \
        IPsecAuthHMACSHA1, IPsecAES, IPsecDES, IPsecESPUnencap) find this element's SAs by \
        following their input connections upstream.\n\n\
        An SA belongs to its SPI: routes naming one SPI must give it the same keys and \
        numbers, and share its sending counter and replay window. A prefix given twice \
        keeps its first route, as in Click's configuration. The table holds at most 65,536 \
        routes and 4,096 SAs; an SA stays when its route is removed (Click's SA table keeps \
        it for the packets still arriving).\n\n\
        Handlers as Click's: `table` (read; with each SA's SPI and keys in hex, as Click \
        prints them), `lookup ADDR` (read: the output and gateway), `add ROUTE`, `set ROUTE`, \
        `remove ADDR/MASK [GW [OUT]]` and `ctrl` (lines of `add`/`set`/`remove` applied \
        together or not at all) (write).",
    ports: "one push input; push outputs: 0 ESP for this router, 1 into the tunnel, 2 other \
        traffic for this router, 3 and up ordinary routes",
    keywords: &[],
    counters: &[
        (
            "no_route",
            "packets whose destination matched no route, dropped",
        ),
        (
            "no_sa",
            "packets routed to output 1 by a route without an SA, dropped",
        ),
        (
            "unknown_spi",
            "ESP packets for this router whose SPI is no SA's, dropped",
        ),
        (
            "truncated",
            "packets for this router too short for an IP header (and an SPI), dropped",
        ),
        (
            "no_output",
            "packets for an output the element does not have (output 2 for non-ESP \
             traffic), dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 00 00 12 1a 07 05 12 1a \
        08 02 00 07 00 09 00 08 00 00>, LIMIT 1) -> SetIPChecksum -> CheckIPHeader \
        -> rt :: RadixIPsecLookup(18.26.4.24/32 0, 18.26.7.0/24 2, \
        18.26.8.0/24 18.26.4.1 1 234 \\<ABCDEFFF001DEFD2354550FE40CD708E> \
        \\<112233EE556677888877665544332211> 300 64); \
        rt[0] -> Discard; rt[1] -> IPsecESPEncap() -> Discard; rt[2] -> Discard;",
    see_also: &[
        "IPsecESPEncap",
        "IPsecESPUnencap",
        "IPsecAuthHMACSHA1",
        "IPsecAES",
        "IPsecDES",
        "IPsecEncap",
        "RadixIPLookup",
    ],
};

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpsecRoute {
    /// Host bits cleared.
    pub prefix: Ipv4Cidr,
    pub gateway: Option<Ipv4Addr>,
    pub port: usize,
    /// The route's SA, 0 for none.
    pub spi: u32,
}

/// A route as written, for `remove` (gateway and output optional).
#[derive(Debug)]
struct RouteSpec {
    prefix: Ipv4Cidr,
    gateway: Option<Option<Ipv4Addr>>,
    port: Option<usize>,
    sa: Option<ClickSa>,
}

/// The table at one moment: read without locks by every worker.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// In the order they were added.
    routes: Vec<IpsecRoute>,
    /// `routes` compiled.
    lpm: PrefixTable,
    /// Where each prefix's route is in `routes`.
    at: HashMap<Ipv4Cidr, usize>,
    /// `routes` changed since `lpm` was compiled: compiled once when a
    /// configuration or a `ctrl` is done, not after every line.
    stale: bool,
    sas: HashMap<u32, Arc<ClickSa>>,
}

impl Snapshot {
    /// The route for `dst`.
    #[inline]
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<&IpsecRoute> {
        self.lpm
            .lookup(u32::from(dst))
            .and_then(|i| self.routes.get(i))
    }

    /// The SA with this SPI.
    #[inline]
    pub fn sa(&self, spi: u32) -> Option<&Arc<ClickSa>> {
        if spi == 0 {
            return None;
        }
        self.sas.get(&spi)
    }

    /// Compiles the routes if they changed.
    fn compile(&mut self) {
        if !self.stale {
            return;
        }
        self.lpm = PrefixTable::build(
            self.routes
                .iter()
                .map(|r| (u32::from(r.prefix.address()), r.prefix.prefix_len())),
        );
        self.stale = false;
    }

    fn copy(&self) -> Snapshot {
        Snapshot {
            routes: self.routes.clone(),
            lpm: self.lpm.clone(),
            at: self.at.clone(),
            stale: self.stale,
            sas: self.sas.clone(),
        }
    }

    /// Adds `spec`'s route (and SA); with `replace`, over the route of the
    /// same prefix. Returns the route replaced.
    fn add(&mut self, spec: RouteSpec, replace: bool) -> Result<Option<IpsecRoute>, String> {
        let mut spi = 0;
        if let Some(sa) = spec.sa {
            spi = sa.spi();
            match self.sas.get(&spi) {
                Some(old) if old.same_as(&sa) => {}
                Some(_) => {
                    return Err(format!(
                        "SPI {spi} already has an SA with other keys or numbers; an SPI \
                         names one SA"
                    ))
                }
                None if self.sas.len() >= MAX_SAS => {
                    return Err(format!("the table holds {MAX_SAS} SAs already"))
                }
                None => {
                    self.sas.insert(spi, Arc::new(sa));
                }
            }
        }
        let route = IpsecRoute {
            prefix: spec.prefix,
            gateway: spec.gateway.flatten(),
            port: spec.port.unwrap_or(0),
            spi,
        };
        if let Some(&i) = self.at.get(&route.prefix) {
            let was = self.routes[i];
            if !replace {
                return Err(format!(
                    "conflict with existing route '{}'",
                    unparse(&was, false, self).trim_end()
                ));
            }
            // Same prefix, same place: the compiled table stays right.
            self.routes[i] = route;
            return Ok(Some(was));
        }
        if self.routes.len() >= MAX_ROUTES {
            return Err(format!("the table holds {MAX_ROUTES} routes already"));
        }
        self.at.insert(route.prefix, self.routes.len());
        self.routes.push(route);
        self.stale = true;
        Ok(None)
    }

    fn remove(&mut self, spec: &RouteSpec, text: &str) -> Result<IpsecRoute, String> {
        let at = self.at.get(&spec.prefix).copied().filter(|&i| {
            let r = &self.routes[i];
            spec.port.is_none()
                || (spec.gateway.is_none_or(|g| g == r.gateway) && spec.port == Some(r.port))
        });
        match at {
            Some(i) => {
                let r = self.routes.remove(i);
                self.at.remove(&r.prefix);
                for j in self.at.values_mut() {
                    if *j > i {
                        *j -= 1;
                    }
                }
                self.stale = true;
                Ok(r)
            }
            None => Err(format!("route '{}' not found", text.trim())),
        }
    }
}

/// The routes and SAs of one `RadixIPsecLookup`, shared by its instances
/// and by the IPsec elements that use its SAs.
#[derive(Debug, Default)]
pub struct IpsecTable {
    snap: ArcSwap<Snapshot>,
    /// Serialises changes.
    edit: Mutex<()>,
}

impl IpsecTable {
    /// The table now.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snap.load()
    }

    /// Applies `f` to a copy of the table and installs the copy if it
    /// succeeds: all of a `ctrl`'s lines or none.
    fn change<T>(&self, f: impl FnOnce(&mut Snapshot) -> Result<T, String>) -> Result<T, String> {
        let _g = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = self.snap.load().copy();
        let out = f(&mut next)?;
        next.compile();
        self.snap.store(Arc::new(next));
        Ok(out)
    }
}

/// Splits a route into words as Click's `cp_shift_spacevec` does: at
/// spaces outside quotes and `\<...>` data.
fn words(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            match b[i] {
                q @ (b'"' | b'\'') => {
                    i += 1;
                    while i < b.len() && b[i] != q {
                        if q == b'"' && b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                b'\\' if b.get(i + 1) == Some(&b'<') => {
                    while i < b.len() && b[i] != b'>' {
                        i += 1;
                    }
                    i += 1;
                }
                _ => i += 1,
            }
        }
        let end = i.min(b.len());
        out.push(&text[start..end]);
    }
    out
}

/// A 16-byte key: Click data (`\<...>`, a quoted or plain 16-character
/// string), or, as bricks also reads it, 32 hex digits.
fn parse_key(what: &str, word: &str) -> Result<[u8; KEY_SIZE], String> {
    let bytes = bricks_config::parse_data(word).map_err(|e| format!("{what}: {e}"))?;
    if let Ok(k) = <[u8; KEY_SIZE]>::try_from(bytes.as_slice()) {
        return Ok(k);
    }
    let hex = word.strip_prefix("0x").unwrap_or(word);
    if hex.len() == 2 * KEY_SIZE && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        let mut k = [0u8; KEY_SIZE];
        for (i, b) in k.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits");
        }
        return Ok(k);
    }
    Err(format!(
        "{what} `{word}` is {} bytes; a key is 16 bytes: \\<32 hex digits>, 32 hex digits, \
         or a 16-character string",
        bytes.len()
    ))
}

/// Reads Click's `ADDR/MASK [GW] OUT [SPI ENCRYPT_KEY AUTH_KEY REPLAY
/// OOSIZE]` (`cp_ipsec_route`); with `remove`, OUT may be left out.
fn parse_route(text: &str, remove: bool) -> Result<RouteSpec, String> {
    let expected = if remove {
        "expected 'ADDR/MASK [GATEWAY OUTPUT]'"
    } else {
        "expected 'ADDR/MASK [GATEWAY] OUTPUT [SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE]'"
    };
    let w = words(text);
    let Some(first) = w.first() else {
        return Err(format!("{expected}, found nothing"));
    };
    let prefix = Ipv4Cidr::from_arg(first)
        .map_err(|_| format!("{expected}: `{first}` is not an address or prefix"))?
        .network();
    let mut rest = &w[1..];
    let mut gateway = None;
    if let Some(&g) = rest.first() {
        if g == "-" {
            gateway = Some(None);
            rest = &rest[1..];
        } else if let Ok(a) = g.parse::<Ipv4Addr>() {
            // Click writes a route without gateway with 0.0.0.0 too.
            gateway = Some((!a.is_unspecified()).then_some(a));
            rest = &rest[1..];
        }
    }
    let mut port = None;
    if let Some(&p) = rest.first() {
        port = Some(
            p.parse::<usize>()
                .map_err(|_| format!("{expected}: `{p}` is not an output number"))?,
        );
        rest = &rest[1..];
    } else if !remove {
        return Err(format!("{expected}: the output is missing"));
    }
    let sa = match rest {
        [] => None,
        [spi, enc, auth, replay, window] => {
            let spi = u32::from_arg(spi).map_err(|e| format!("bad SPI: {e}"))?;
            if spi == 0 {
                return Err("bad SPI: 0 is no SA's (Click's SA table refuses it)".into());
            }
            let enc = parse_key("ENCRYPT_KEY", enc)?;
            let auth = parse_key("AUTH_KEY", auth)?;
            let replay = u32::from_arg(replay).map_err(|e| format!("bad REPLAY: {e}"))?;
            if replay == 0 {
                return Err("bad REPLAY: the first sequence number must be at least 1 \
                     (Click's SA table refuses a counter of 0 and its receiver drops \
                     sequence number 0)"
                    .into());
            }
            let window = u8::from_arg(window)
                .map_err(|e| format!("bad OOSIZE (a window of 0 to 255 packets): {e}"))?;
            Some(ClickSa::new(spi, enc, auth, replay, window))
        }
        _ => {
            return Err(format!(
                "{expected}: an SA is 5 words, SPI ENCRYPT_KEY AUTH_KEY REPLAY OOSIZE; found `{}`",
                rest.join(" ")
            ))
        }
    };
    Ok(RouteSpec {
        prefix,
        gateway,
        port,
        sa,
    })
}

/// A key as Click's `SADataTuple::unparse_entries` prints it.
fn hex(k: &[u8]) -> String {
    k.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// A route as Click's `IPsecRoute::unparse` writes it (with `tabs`, as the
/// `table` handler does).
fn unparse(r: &IpsecRoute, tabs: bool, snap: &Snapshot) -> String {
    let tab = if tabs { '\t' } else { ' ' };
    let mut s = String::new();
    let _ = write!(s, "{}{tab}", r.prefix);
    if s.len() < 17 && tabs {
        s.push('\t');
    }
    let l = s.len();
    match r.gateway {
        Some(g) => {
            let _ = write!(s, "{g}{tab}");
        }
        None => {
            let _ = write!(s, "-{tab}");
        }
    }
    if s.len() < l + 9 && tabs {
        s.push('\t');
    }
    let _ = write!(s, "{}", r.port);
    if r.spi != 0 {
        s.push_str("  |TUNNELED CONNECTION| \n|SPI| |ENC KEY| |AUTH KEY| ||\n");
        let _ = write!(s, " |{}|", r.spi);
        if let Some(sa) = snap.sa(r.spi) {
            let _ = write!(s, " |{}| |{}|", hex(sa.enc_key()), hex(sa.auth_key()));
        }
        s.push('\n');
    }
    s
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let noutputs = ports.noutputs();
    if args.shared_made() {
        args.skip_rest();
    }
    let table = args.shared(|args| {
        let mut snap = Snapshot::default();
        for (text, span) in args.rest() {
            let spec = parse_route(text, false).map_err(|e| ArgError::at(span, e))?;
            let port = spec.port.unwrap_or(0);
            if port >= noutputs {
                return Err(ArgError::at(
                    span,
                    format!(
                        "output {port} of a route: this RadixIPsecLookup has {noutputs} output{}",
                        if noutputs == 1 { "" } else { "s" }
                    ),
                ));
            }
            match snap.add(spec, false) {
                Ok(_) => {}
                // Click's configure keeps the first route of a prefix.
                Err(e) if e.starts_with("conflict") => {}
                Err(e) => return Err(ArgError::at(span, e)),
            }
        }
        snap.compile();
        Ok(IpsecTable {
            snap: ArcSwap::from_pointee(snap),
            edit: Mutex::new(()),
        })
    })?;
    Ok(Box::new(RadixIPsecLookup {
        table,
        noutputs,
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    no_route: u64,
    no_sa: u64,
    unknown_spi: u64,
    truncated: u64,
    no_output: u64,
}

/// Routes packets, into and out of Click's IPsec tunnels.
#[derive(Debug)]
pub struct RadixIPsecLookup {
    table: Arc<IpsecTable>,
    noutputs: usize,
    c: Counts,
}

/// The ESP packets' IP protocol.
const ESP: u8 = 50;

impl RadixIPsecLookup {
    /// The output for `p`, as Click's `IPsecRouteTable::push` picks it.
    #[inline]
    fn route(
        snap: &Snapshot,
        c: &mut Counts,
        noutputs: usize,
        p: &mut bricks_element::Packet,
    ) -> Option<usize> {
        let Some(r) = snap.lookup(p.anno().dst_ip) else {
            c.no_route += 1;
            return None;
        };
        let mut port = r.port;
        match port {
            1 => {
                if r.spi == 0 {
                    c.no_sa += 1;
                    return None;
                }
                p.anno_mut().flow = r.spi;
            }
            0 => {
                let ip = p.l3_bytes();
                if ip.len() < 20 {
                    c.truncated += 1;
                    return None;
                }
                if ip[9] != ESP {
                    port = 2;
                } else {
                    let hl = usize::from(ip[0] & 0x0f) * 4;
                    let Some(spi) = ip.get(hl.max(20)..hl.max(20) + 4) else {
                        c.truncated += 1;
                        return None;
                    };
                    let spi = u32::from_be_bytes(spi.try_into().expect("4 bytes"));
                    if snap.sa(spi).is_none() {
                        c.unknown_spi += 1;
                        return None;
                    }
                }
            }
            _ => {}
        }
        if port >= noutputs {
            c.no_output += 1;
            return None;
        }
        if let Some(g) = r.gateway {
            p.anno_mut().dst_ip = g;
        }
        Some(port)
    }

    fn lookup_text(&self, value: &str) -> Result<String, String> {
        let a: Ipv4Addr = value
            .trim()
            .parse()
            .map_err(|_| format!("expected IP address, not '{}'", value.trim()))?;
        let snap = self.table.load();
        Ok(match snap.lookup(a) {
            Some(IpsecRoute {
                port,
                gateway: Some(g),
                ..
            }) => format!("{port} {g}"),
            Some(r) => r.port.to_string(),
            None => "-1".into(),
        })
    }

    fn run(&self, command: &str, text: &str, snap: &mut Snapshot) -> Result<(), String> {
        let remove = command == "remove";
        let spec = parse_route(text, remove)?;
        if let Some(port) = spec.port {
            if port >= self.noutputs {
                return Err(format!(
                    "output {port}: this RadixIPsecLookup has {} outputs",
                    self.noutputs
                ));
            }
        }
        match command {
            "add" => snap.add(spec, false).map(drop),
            "set" => snap.add(spec, true).map(drop),
            _ => snap.remove(&spec, text).map(drop),
        }
    }
}

impl Element for RadixIPsecLookup {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let snap = self.table.load();
        let (c, n) = (&mut self.c, self.noutputs);
        cx.push_classified(batch, |p| Self::route(&snap, c, n, p));
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("no_route", c.no_route);
        s.counter("no_sa", c.no_sa);
        s.counter("unknown_spi", c.unknown_spi);
        s.counter("truncated", c.truncated);
        s.counter("no_output", c.no_output);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "add" | "set" | "remove" | "ctrl")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "add" | "set" | "remove" => self.table.change(|snap| self.run(handler, value, snap)),
            "ctrl" => self.table.change(|snap| {
                for line in value.lines() {
                    let line = line.split("//").next().unwrap_or("").trim();
                    let Some((command, rest)) = line
                        .split_once(char::is_whitespace)
                        .or((!line.is_empty()).then_some((line, "")))
                    else {
                        continue;
                    };
                    if !matches!(command, "add" | "set" | "remove") {
                        return Err(format!("bad command '{command}'"));
                    }
                    self.run(command, rest, snap)?;
                }
                Ok(())
            }),
            _ => Err(format!(
                "no write handler `{handler}`; RadixIPsecLookup has add, set, remove and ctrl"
            )),
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| {
            let snap = self.table.load();
            snap.routes
                .iter()
                .map(|r| unparse(r, true, &snap) + "\n")
                .collect()
        })
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        _cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        (handler == "lookup" && !write).then(|| self.lookup_text(value))
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 6] = [
            Handler::r("table"),
            Handler::r("lookup"),
            Handler::w("add"),
            Handler::w("set"),
            Handler::w("remove"),
            Handler::w("ctrl"),
        ];
        &HANDLERS
    }
}

/// The SA tables of the `RadixIPsecLookup`s an element's input comes from
/// (following the connections upstream, nearest first), or, when none is
/// upstream, every one in scope. An element that needs SAs and finds no
/// table is refused.
pub(crate) fn tables_for(args: &Args<'_>, class: &str) -> Result<Vec<Arc<IpsecTable>>, ArgError> {
    let mut t: Vec<Arc<IpsecTable>> = args
        .shared_by_flow(0, true, &["RadixIPsecLookup"])
        .map_err(ArgError::new)?;
    if t.is_empty() {
        t = args
            .shared_in_scope("RadixIPsecLookup")
            .map_err(ArgError::new)?;
    }
    if t.is_empty() {
        return Err(ArgError::new(format!(
            "{class} takes its keys from the SAs of a RadixIPsecLookup, and this \
             configuration has none upstream of it"
        ))
        .with_help(
            "route the packets through RadixIPsecLookup(... OUT SPI ENCRYPT_KEY AUTH_KEY REPLAY \
             OOSIZE) first, as Click's conf/ipsec-router.click does",
        ));
    }
    Ok(t)
}

/// The tables of an element, read once per batch.
pub(crate) struct Tables {
    first: arc_swap::Guard<Arc<Snapshot>>,
    more: Vec<arc_swap::Guard<Arc<Snapshot>>>,
}

impl Tables {
    /// `tables` now; `tables` is not empty ([`tables_for`]).
    pub fn load(tables: &[Arc<IpsecTable>]) -> Tables {
        Tables {
            first: tables[0].load(),
            more: tables[1..].iter().map(|t| t.load()).collect(),
        }
    }

    /// The SA with this SPI, from the nearest table that has one.
    #[inline]
    pub fn sa(&self, spi: u32) -> Option<&Arc<ClickSa>> {
        self.first
            .sa(spi)
            .or_else(|| self.more.iter().find_map(|s| s.sa(spi)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;

    const ROUTES: &str = "18.26.4.24/32 0, 18.26.4.1/32 3, 18.26.7.1/32 2, \
        18.26.7.0/24 4, 18.26.8.0/24 18.26.4.1 1 234 ABCDEFFF001DEFD2354550FE40CD708E \
        112233EE556677888877665544332211 300 64";

    fn to(dst: [u8; 4], proto: u8, spi: u32) -> Packet {
        let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, proto, 0, 0, 1, 2, 3, 4];
        ip.extend_from_slice(&dst);
        ip.extend_from_slice(&spi.to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0, 1]);
        let mut p = Packet::from_slice(&ip).unwrap();
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        p
    }

    #[test]
    fn click_routes_and_tunnel_ports() {
        let mut h = Harness::push(&CLASS, ROUTES, 1, 5);
        h.push_packets(
            0,
            [
                to([18, 26, 8, 9], 1, 0),
                to([18, 26, 4, 24], 50, 234),
                to([18, 26, 4, 24], 50, 235),
                to([18, 26, 4, 24], 1, 0),
                to([18, 26, 7, 9], 17, 0),
                to([9, 9, 9, 9], 17, 0),
            ],
        );
        let o1 = h.take(1);
        assert_eq!(o1.len(), 1);
        assert_eq!(o1[0].anno().flow, 234);
        assert_eq!(o1[0].anno().dst_ip, Ipv4Addr::new(18, 26, 4, 1));
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.take(2).len(), 1);
        assert_eq!(h.take(4).len(), 1);
        let s = h.stats();
        assert_eq!(s.get("unknown_spi"), Some(1));
        assert_eq!(s.get("no_route"), Some(1));
    }

    #[test]
    fn keys_in_click_data_hex_or_sixteen_characters() {
        let hexkey = parse_key("K", "ABCDEFFF001DEFD2354550FE40CD708E").unwrap();
        assert_eq!(hexkey[..3], [0xab, 0xcd, 0xef]);
        assert_eq!(
            parse_key("K", "\\<ABCDEFFF 001DEFD2 354550FE 40CD708E>").unwrap(),
            hexkey
        );
        assert_eq!(
            parse_key("K", "0123456789abcdef").unwrap(),
            *b"0123456789abcdef"
        );
        assert_eq!(
            parse_key("K", "\"0123456789 bcdef\"").unwrap(),
            *b"0123456789 bcdef"
        );
        assert!(parse_key("K", "ABCD").is_err());
        let w =
            words("10.0.0.0/8 1 5 \\<00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff> \"a b\" 1 2");
        assert_eq!(w.len(), 7, "{w:?}");
    }

    #[test]
    fn bad_routes_are_refused() {
        for bad in [
            "18.26.8.0/24 1 0 ABCDEFFF001DEFD2354550FE40CD708E ABCDEFFF001DEFD2354550FE40CD708E 1 1",
            "18.26.8.0/24 1 5 ABCDEFFF001DEFD2354550FE40CD708E ABCDEFFF001DEFD2354550FE40CD708E 0 1",
            "18.26.8.0/24 1 5 ABCDEFFF001DEFD2354550FE40CD708E ABCDEFFF001DEFD2354550FE40CD708E 1 256",
            "18.26.8.0/24 1 5 ABCD ABCDEFFF001DEFD2354550FE40CD708E 1 1",
            "18.26.8.0/24 1 5 ABCDEFFF001DEFD2354550FE40CD708E",
            "18.26.8.0/24 9",
            "18.26.8.0/24",
        ] {
            assert!(Harness::try_new(&CLASS, bad, PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![bricks_element::Processing::Push; 3],
            })
            .is_err(), "{bad}");
        }
        // One SPI, two sets of keys.
        let two =
            "1.0.0.0/8 1 5 ABCDEFFF001DEFD2354550FE40CD708E ABCDEFFF001DEFD2354550FE40CD708E 1 1, \
            2.0.0.0/8 1 5 ABCDEFFF001DEFD2354550FE40CD708F ABCDEFFF001DEFD2354550FE40CD708E 1 1";
        assert!(Harness::try_new(
            &CLASS,
            two,
            PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![bricks_element::Processing::Push; 3],
            }
        )
        .is_err());
    }

    #[test]
    fn handlers_as_clicks() {
        let mut h = Harness::push(&CLASS, ROUTES, 1, 5);
        let t = h.read_handler("table").unwrap();
        assert!(t.starts_with("18.26.4.24/32\t\t-\t\t0\n"), "{t:?}");
        assert!(
            t.contains("18.26.8.0/24\t\t18.26.4.1\t1  |TUNNELED CONNECTION| \n|SPI| |ENC KEY| |AUTH KEY| ||\n |234| |abcdefff001defd2354550fe40cd708e| |112233ee556677888877665544332211|\n\n"),
            "{t:?}"
        );
        assert_eq!(
            h.read_handler_with("lookup", "18.26.8.3").unwrap(),
            "1 18.26.4.1"
        );
        assert_eq!(h.read_handler_with("lookup", "18.26.7.3").unwrap(), "4");
        assert_eq!(h.read_handler_with("lookup", "8.8.8.8").unwrap(), "-1");
        assert!(h.call_write_handler("add", "18.26.7.0/24 3").is_err());
        h.call_write_handler("set", "18.26.7.0/24 3").unwrap();
        assert_eq!(h.read_handler_with("lookup", "18.26.7.3").unwrap(), "3");
        // A ctrl that fails half-way changes nothing.
        assert!(h
            .call_write_handler("ctrl", "add 10.0.0.0/8 3\nremove 11.0.0.0/8")
            .is_err());
        assert_eq!(h.read_handler_with("lookup", "10.1.1.1").unwrap(), "-1");
        h.call_write_handler("ctrl", "add 10.0.0.0/8 3\nremove 18.26.7.0/24")
            .unwrap();
        assert_eq!(h.read_handler_with("lookup", "10.1.1.1").unwrap(), "3");
        assert_eq!(h.read_handler_with("lookup", "18.26.7.3").unwrap(), "-1");
    }

    #[test]
    fn removing_a_route_keeps_the_others_where_they_were() {
        let table = IpsecTable::default();
        table
            .change(|s| {
                for (i, p) in ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8", "12.1.0.0/16"]
                    .iter()
                    .enumerate()
                {
                    s.add(parse_route(&format!("{p} {i}"), false)?, false)?;
                }
                Ok(())
            })
            .unwrap();
        table
            .change(|s| s.remove(&parse_route("11.0.0.0/8", true)?, "11.0.0.0/8"))
            .unwrap();
        let port = |a: [u8; 4]| table.load().lookup(Ipv4Addr::from(a)).map(|r| r.port);
        assert_eq!(port([10, 1, 1, 1]), Some(0));
        assert_eq!(port([11, 1, 1, 1]), None);
        assert_eq!(port([12, 2, 1, 1]), Some(2));
        assert_eq!(port([12, 1, 1, 1]), Some(3));
        // Replaced in place, and a removed prefix can come back.
        table
            .change(|s| {
                s.add(parse_route("12.1.0.0/16 1", false)?, true)?;
                s.add(parse_route("11.0.0.0/8 1", false)?, false)
            })
            .unwrap();
        assert_eq!(port([12, 1, 1, 1]), Some(1));
        assert_eq!(port([11, 1, 1, 1]), Some(1));
        let order: Vec<String> = table
            .load()
            .routes
            .iter()
            .map(|r| r.prefix.to_string())
            .collect();
        assert_eq!(
            order,
            ["10.0.0.0/8", "12.0.0.0/8", "12.1.0.0/16", "11.0.0.0/8"]
        );
    }

    #[test]
    fn the_table_is_bounded() {
        let mut s = Snapshot::default();
        for i in 0..MAX_ROUTES as u32 {
            let spec = RouteSpec {
                prefix: Ipv4Cidr::new(Ipv4Addr::from(i << 8), 24),
                gateway: None,
                port: Some(3),
                sa: None,
            };
            s.routes.push(IpsecRoute {
                prefix: spec.prefix,
                gateway: None,
                port: 3,
                spi: 0,
            });
        }
        let more = parse_route("255.255.255.0/24 3", false).unwrap();
        assert!(s.add(more, false).unwrap_err().contains("65536 routes"));
        let mut s = Snapshot::default();
        for spi in 1..=MAX_SAS as u32 {
            s.sas
                .insert(spi, Arc::new(ClickSa::new(spi, [1; 16], [2; 16], 1, 1)));
        }
        let more = parse_route(
            "1.0.0.0/8 1 99999 ABCDEFFF001DEFD2354550FE40CD708E ABCDEFFF001DEFD2354550FE40CD708E 1 1",
            false,
        )
        .unwrap();
        assert!(s.add(more, false).unwrap_err().contains("4096 SAs"));
    }
}
