//! `click-align`, Click's alignment tool (`tools/click-align/`).
//!
//! Click on machines that refuse unaligned loads needs packet data at
//! known alignments: an alignment is "offset mod modulus" of the data's
//! address. The tool computes, for every input port, the alignment
//! packets arrive with (sources generate one, `Strip(n)` shifts it by n,
//! merging paths weakens it) and the alignment the element wants (IP
//! header checks want the header 4-byte aligned), inserts `Align`
//! elements where what arrives is not what is wanted, removes Aligns that
//! do nothing, and records the result in one `AlignmentInfo` element.
//! bricks loads header fields at any alignment, so it runs the result
//! exactly as it runs the input; the tool exists for Click users' scripts.
//!
//! Element classes the analysis knows are Click's tool's own table
//! ([`aligner`]); flow codes (which inputs reach which outputs) are those
//! of Click's element map for the classes that have one other than `x/x`.

use super::graph::{Elem, Graph, Port};
use crate::args::{process, split_args, split_keyword};
use crate::{Router, SourceMap};

/// An alignment: data at `offset` mod `modulus`, or one of Click's
/// special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alignment {
    modulus: i32,
    offset: i32,
}

const EMPTY: i32 = 0;
const BAD: i32 = -1;
const UNIVERSAL: i32 = -2;

fn gcd(a: i32, b: i32) -> i32 {
    let (mut x, mut b) = (a, b);
    while b != 0 {
        let r = x % b;
        x = b;
        b = r;
    }
    x
}

impl Default for Alignment {
    fn default() -> Alignment {
        Alignment::EMPTY
    }
}

impl Alignment {
    /// No packets: what an input nothing is connected to sees.
    pub const EMPTY: Alignment = Alignment {
        modulus: EMPTY,
        offset: 0,
    };
    /// No alignment can satisfy what is wanted.
    pub const BAD: Alignment = Alignment {
        modulus: BAD,
        offset: 0,
    };
    /// Any alignment at all (packets from `Idle`, which sends none).
    pub const UNIVERSAL: Alignment = Alignment {
        modulus: UNIVERSAL,
        offset: 0,
    };

    /// `offset` mod `modulus`; `None` unless `0 <= offset < modulus`.
    pub fn new(modulus: i32, offset: i32) -> Option<Alignment> {
        (modulus > 0 && (0..modulus).contains(&offset)).then_some(Alignment { modulus, offset })
    }

    /// The modulus as Click prints it (1 for the special values).
    pub fn modulus(&self) -> i32 {
        self.modulus.max(1)
    }

    /// The offset (0 for the special values).
    pub fn offset(&self) -> i32 {
        self.offset
    }

    /// Whether no alignment can satisfy what is wanted.
    pub fn is_bad(&self) -> bool {
        self.modulus == BAD
    }

    /// Whether packets with this alignment have alignment `x` too.
    pub fn le(&self, x: &Alignment) -> bool {
        if self.modulus == BAD || x.modulus == BAD {
            false
        } else if self.modulus == UNIVERSAL || x.modulus == UNIVERSAL {
            self.modulus == UNIVERSAL
        } else if x.modulus <= 1 {
            true
        } else if self.modulus <= 1 || self.modulus % x.modulus != 0 {
            false
        } else {
            self.offset % x.modulus == x.offset
        }
    }

    /// Shifted by `delta` bytes.
    pub fn shift(mut self, delta: i32) -> Alignment {
        if self.modulus > 1 {
            let mut d = delta;
            if d < 0 {
                d += ((-d) / self.modulus + 1) * self.modulus;
            }
            self.offset = (self.offset + d) % self.modulus;
        }
        self
    }

    /// The weakest alignment of packets having `self` or `x`.
    pub fn or(mut self, x: Alignment) -> Alignment {
        if self.modulus == EMPTY || x.modulus == BAD || (self.modulus == UNIVERSAL && x.modulus > 0)
        {
            return x;
        } else if self.modulus <= 1 || x.modulus <= 0 {
            return self;
        }
        let m = gcd(self.modulus, x.modulus);
        let (o1, o2) = (self.offset % m, x.offset % m);
        if o1 == o2 {
            self.modulus = m;
            self.offset = o1;
            return self;
        }
        let mut diff = o2 - o1;
        if diff < 0 {
            diff += m;
        }
        if diff > m / 2 {
            diff = m - diff;
        }
        if m % diff == 0 {
            Alignment {
                modulus: diff,
                offset: o1 % diff,
            }
        } else {
            Alignment {
                modulus: 1,
                offset: 0,
            }
        }
    }

    /// The alignment satisfying both `self` and `x`.
    pub fn and(self, x: Alignment) -> Alignment {
        if self.modulus <= 0 || x.modulus <= 0 {
            if self.modulus == EMPTY || x.modulus == BAD {
                return x;
            }
            return self;
        }
        if self.le(&x) {
            return self;
        } else if x.le(&self) {
            return x;
        } else if self.modulus == x.modulus {
            return Alignment::BAD;
        }
        let lcm = self.modulus * x.modulus / gcd(self.modulus, x.modulus);
        let (smaller, larger) = if self.modulus < x.modulus {
            (self, x)
        } else {
            (x, self)
        };
        let mut otry = larger.offset;
        while otry < lcm && otry % smaller.modulus != smaller.offset {
            otry += larger.modulus;
        }
        if otry < lcm {
            Alignment {
                modulus: lcm,
                offset: otry,
            }
        } else {
            Alignment::BAD
        }
    }

    /// Click's text for the alignment.
    pub fn unparse(&self) -> String {
        match self.modulus {
            BAD => "BAD".into(),
            EMPTY => "EMPTY".into(),
            UNIVERSAL => "UNIVERSAL".into(),
            m => format!("{m}/{}", self.offset),
        }
    }
}

/// How an element class changes and wants alignment.
#[derive(Clone, Debug)]
enum Aligner {
    /// Outputs have what reaches them; inputs want what their outputs want.
    Flow,
    /// Neither produces nor wants (`Discard`).
    Null,
    /// Outputs have this; inputs want nothing.
    Generator(Alignment),
    /// Outputs have the inputs' alignment shifted by this many bytes.
    Shifter(i32),
    /// Inputs want this; outputs as `Flow`.
    Want(Alignment),
    /// As `Flow`, and then wants any consistent alignment of modulus 4 or more.
    Classifier,
    ArpQuerier,
    /// Outputs as the first, inputs as the second.
    Combined(Box<Aligner>, Box<Aligner>),
}

fn args_of(config: &str) -> Vec<String> {
    split_args(config)
        .iter()
        .map(|a| process(a, None).text)
        .collect()
}

fn keyword<'a>(args: &'a [String], kw: &str) -> Option<&'a str> {
    args.iter().find_map(|a| match split_keyword(a) {
        (Some(k), v) if k == kw => Some(v),
        _ => None,
    })
}

/// The `ALIGNMENT` keyword's "MODULUS OFFSET" or an Align's "MODULUS, OFFSET".
fn parse_alignment(parts: &[&str]) -> Alignment {
    match parts {
        [m, o] => match (m.trim().parse::<i32>(), o.trim().parse::<i32>()) {
            (Ok(m), Ok(o)) => Alignment::new(m, o).unwrap_or(Alignment::BAD),
            _ => Alignment::BAD,
        },
        _ => Alignment::BAD,
    }
}

/// An `Align` element's alignment (BAD if its arguments are not one).
fn align_config(config: &str) -> Alignment {
    let args = args_of(config);
    let parts: Vec<&str> = args.iter().map(String::as_str).collect();
    parse_alignment(&parts)
}

fn is_true(v: &str) -> bool {
    matches!(v, "true" | "1" | "yes")
}

/// Click's tool's table of element classes (`class_factory`).
fn aligner(class: &str, config: &str) -> Aligner {
    let args = args_of(config);
    match class {
        "Align" => match align_config(config) {
            a if a.is_bad() => Aligner::Flow,
            a => Aligner::Generator(a),
        },
        "Strip" | "Unstrip" => match args.as_slice() {
            [n] => match n.parse::<u32>() {
                Ok(n) if class == "Strip" => Aligner::Shifter(n as i32),
                Ok(n) => Aligner::Shifter(-(n as i32)),
                Err(_) => Aligner::Flow,
            },
            _ => Aligner::Flow,
        },
        "CheckIPHeader" | "CheckIPHeader2" | "MarkIPHeader" => {
            // OFFSET by keyword, first, or after an old BADSRC argument.
            let positional: Vec<&String> = args
                .iter()
                .filter(|a| split_keyword(a).0.is_none())
                .collect();
            let offset = keyword(&args, "OFFSET")
                .and_then(|v| v.parse::<u32>().ok())
                .or_else(|| positional.first().and_then(|a| a.parse::<u32>().ok()))
                .or_else(|| positional.get(1).and_then(|a| a.parse::<u32>().ok()))
                .unwrap_or(0);
            Aligner::Want(
                Alignment {
                    modulus: 4,
                    offset: 0,
                }
                .shift(-(offset as i32)),
            )
        }
        "Classifier" => Aligner::Classifier,
        "EtherEncap" => Aligner::Shifter(-14),
        "FromHost" | "FromDevice" | "PollDevice" | "ToHost" => {
            let a = match (keyword(&args, "ALIGNMENT"), keyword(&args, "TYPE")) {
                (Some(v), _) => parse_alignment(&v.split_whitespace().collect::<Vec<_>>()),
                (None, Some("IP")) => Alignment {
                    modulus: 4,
                    offset: 0,
                },
                _ => Alignment {
                    modulus: 4,
                    offset: 2,
                },
            };
            if a.is_bad() {
                Aligner::Flow
            } else if class == "ToHost" {
                Aligner::Want(a)
            } else {
                Aligner::Generator(a)
            }
        }
        "SR2SetChecksum" | "SR2CheckHeader" | "SetSRChecksum" | "CheckSRHeader" => {
            Aligner::Generator(Alignment {
                modulus: 4,
                offset: 2,
            })
        }
        "ICMPError" => {
            if keyword(&args, "ETHER").is_some_and(is_true) {
                Aligner::Flow
            } else {
                Aligner::Generator(Alignment {
                    modulus: 4,
                    offset: 0,
                })
            }
        }
        "InfiniteSource" | "RatedSource" => Aligner::Generator(Alignment {
            modulus: 4,
            offset: 0,
        }),
        "Idle" => Aligner::Generator(Alignment::UNIVERSAL),
        "IPEncap"
        | "UDPIPEncap"
        | "ICMPPingEncap"
        | "RandomUDPIPEncap"
        | "RoundRobinUDPIPEncap"
        | "RoundRobinTCPIPEncap"
        | "StoreUDPTimeSeqRecord" => Aligner::Want(Alignment {
            modulus: 4,
            offset: 0,
        }),
        "ARPResponder" => Aligner::Want(Alignment {
            modulus: 2,
            offset: 0,
        }),
        "ARPQuerier" => Aligner::ArpQuerier,
        "IPInputCombo" => Aligner::Combined(
            Box::new(Aligner::Shifter(14)),
            Box::new(Aligner::Want(Alignment {
                modulus: 4,
                offset: 2,
            })),
        ),
        "GridEncap" => Aligner::Combined(
            Box::new(Aligner::Shifter(98)),
            Box::new(Aligner::Want(Alignment {
                modulus: 4,
                offset: 0,
            })),
        ),
        "Discard" => Aligner::Null,
        _ => Aligner::Flow,
    }
}

/// Classes that rely on alignment: they are listed in `AlignmentInfo`
/// (the `A` flag of Click's element map).
fn wants_alignment_info(class: &str) -> bool {
    matches!(
        class,
        "Classifier"
            | "CheckIPHeader"
            | "CheckIPHeader2"
            | "IPInputCombo"
            | "IPsecEncap"
            | "ICMPIPEncap"
            | "ICMPPingEncap"
            | "UDPIP6Encap"
            | "UDPIPEncap"
            | "DynamicUDPIPEncap"
            | "GridProxy"
    )
}

/// Click's flow code of `class` (`x/x`, every input reaching every
/// output, unless listed).
fn flow_code(class: &str) -> &'static str {
    match class {
        "Idle" | "SimpleIdle" | "Socket" | "RawSocket" | "KernelTun" | "KernelTap"
        | "FromSocket" | "ToSocket" | "FromRawSocket" | "ToRawSocket" | "UMLSwitch" => "x/y",
        "ARPQuerier" | "IP6NDSolicitor" => "xy/x",
        "Bypass" => "xy/[xy]x",
        "Hub" | "EtherSwitch" => "#/[^#]",
        "Suppressor" | "PacketStore" | "PacketLogger2" => "#/#",
        "SnoopTCP" => "xyz/xy",
        _ => "x/x",
    }
}

/// One code of a flow code side: the letters (and `#`, as 128 + port) it
/// holds.
fn flow_codes(side: &str, port: usize) -> Vec<bool> {
    let b = side.as_bytes();
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            let s = i;
            while i < b.len() && b[i] != b']' {
                i += 1;
            }
            i = (i + 1).min(b.len());
            items.push((s, i));
        } else {
            items.push((i, i + 1));
            i += 1;
        }
    }
    let mut code = vec![false; 128 + 256];
    let Some(&(s, e)) = items.get(port).or(items.last()) else {
        return code;
    };
    let mark = |code: &mut Vec<bool>, c: u8| {
        if c.is_ascii_alphabetic() {
            code[c as usize] = true;
        } else if c == b'#' && port < 256 {
            code[128 + port] = true;
        }
    };
    if b[s] == b'[' {
        let negated = b.get(s + 1) == Some(&b'^');
        let start = if negated { s + 2 } else { s + 1 };
        for &c in &b[start..e.saturating_sub(1).max(start)] {
            mark(&mut code, c);
        }
        if negated {
            for x in code.iter_mut() {
                *x = !*x;
            }
        }
    } else {
        mark(&mut code, b[s]);
    }
    code
}

/// Whether input `i` reaches output `o` by `code`.
fn flows(code: &str, i: usize, o: usize) -> bool {
    if code == "x/x" {
        return true;
    }
    let (ins, outs) = code.split_once('/').unwrap_or((code, code));
    let a = flow_codes(ins, i);
    let b = flow_codes(outs, o);
    a.iter().zip(&b).any(|(x, y)| *x && *y)
}

/// Alignments of every port of every slot.
#[derive(Clone)]
struct RouterAlign {
    ialign: Vec<Vec<Alignment>>,
    oalign: Vec<Vec<Alignment>>,
    aligners: Vec<Aligner>,
    codes: Vec<&'static str>,
}

impl RouterAlign {
    fn new(g: &Graph) -> RouterAlign {
        let n = g.elems.len();
        RouterAlign {
            ialign: (0..n)
                .map(|e| vec![Alignment::EMPTY; g.ninputs(e)])
                .collect(),
            oalign: (0..n)
                .map(|e| vec![Alignment::EMPTY; g.noutputs(e)])
                .collect(),
            aligners: g
                .elems
                .iter()
                .map(|e| aligner(&e.class, &e.config))
                .collect(),
            codes: g.elems.iter().map(|e| flow_code(&e.class)).collect(),
        }
    }

    fn have_flow(a: &Aligner, code: &str, ain: &[Alignment], aout: &mut [Alignment]) {
        match a {
            Aligner::Flow | Aligner::Want(_) | Aligner::Classifier => {
                for (j, o) in aout.iter_mut().enumerate() {
                    let mut x = Alignment::EMPTY;
                    for (i, a) in ain.iter().enumerate() {
                        if flows(code, i, j) {
                            x = x.or(*a);
                        }
                    }
                    *o = x;
                }
            }
            Aligner::Null => {}
            Aligner::Generator(g) => aout.iter_mut().for_each(|o| *o = *g),
            Aligner::Shifter(s) => {
                let c = common(ain).shift(*s);
                aout.iter_mut().for_each(|o| *o = c);
            }
            Aligner::ArpQuerier => {
                if ain.is_empty() {
                    return;
                }
                for (j, o) in aout.iter_mut().enumerate() {
                    *o = if j == 0 {
                        ain[0].shift(-14)
                    } else {
                        Alignment {
                            modulus: 4,
                            offset: 2,
                        }
                    };
                }
            }
            Aligner::Combined(h, _) => RouterAlign::have_flow(h, code, ain, aout),
        }
    }

    fn want_flow(a: &Aligner, code: &str, ain: &mut [Alignment], aout: &[Alignment]) {
        match a {
            Aligner::Flow | Aligner::Classifier => {
                for (i, x) in ain.iter_mut().enumerate() {
                    let mut w = Alignment::EMPTY;
                    for (j, o) in aout.iter().enumerate() {
                        if flows(code, i, j) {
                            w = w.and(*o);
                        }
                    }
                    *x = w;
                }
            }
            Aligner::Null => {}
            Aligner::Generator(_) => ain.iter_mut().for_each(|x| *x = Alignment::EMPTY),
            Aligner::Shifter(s) => {
                let c = combine(aout).shift(-*s);
                ain.iter_mut().for_each(|x| *x = c);
            }
            Aligner::Want(w) => ain.iter_mut().for_each(|x| *x = *w),
            Aligner::ArpQuerier => {
                for (i, x) in ain.iter_mut().enumerate() {
                    *x = if i == 0 && !aout.is_empty() {
                        aout[0].shift(14)
                    } else {
                        Alignment {
                            modulus: 2,
                            offset: 0,
                        }
                    };
                }
            }
            Aligner::Combined(_, w) => RouterAlign::want_flow(w, code, ain, aout),
        }
    }

    fn have_output(&mut self) {
        for e in 0..self.aligners.len() {
            let ain = self.ialign[e].clone();
            RouterAlign::have_flow(&self.aligners[e], self.codes[e], &ain, &mut self.oalign[e]);
        }
    }

    fn have_input(&mut self, g: &Graph) -> bool {
        let mut new: Vec<Vec<Alignment>> = self
            .ialign
            .iter()
            .map(|v| vec![Alignment::EMPTY; v.len()])
            .collect();
        for c in &g.conns {
            let x = &mut new[c.to.e][c.to.port];
            *x = x.or(self.oalign[c.from.e][c.from.port]);
        }
        let changed = new != self.ialign;
        self.ialign = new;
        changed
    }

    fn want_input(&mut self) {
        for e in 0..self.aligners.len() {
            let aout = self.oalign[e].clone();
            RouterAlign::want_flow(&self.aligners[e], self.codes[e], &mut self.ialign[e], &aout);
        }
    }

    fn want_output(&mut self, g: &Graph) -> bool {
        let mut new: Vec<Vec<Alignment>> = self
            .oalign
            .iter()
            .map(|v| vec![Alignment::EMPTY; v.len()])
            .collect();
        for c in &g.conns {
            let x = &mut new[c.from.e][c.from.port];
            *x = x.and(self.ialign[c.to.e][c.to.port]);
        }
        let changed = new != self.oalign;
        self.oalign = new;
        changed
    }

    fn adjust(&mut self) {
        for e in 0..self.aligners.len() {
            if let Aligner::Classifier = self.aligners[e] {
                let mut a = common(&self.ialign[e]);
                if a.modulus() < 4 {
                    a = Alignment {
                        modulus: 4,
                        offset: a.offset,
                    };
                }
                self.ialign[e].iter_mut().for_each(|x| *x = a);
            }
        }
    }

    /// What arrives at each input.
    fn have(g: &Graph) -> RouterAlign {
        let mut r = RouterAlign::new(g);
        loop {
            r.have_output();
            if !r.have_input(g) {
                return r;
            }
        }
    }

    /// What each input wants.
    fn want(g: &Graph) -> RouterAlign {
        let mut r = RouterAlign::new(g);
        loop {
            r.want_input();
            if !r.want_output(g) {
                return r;
            }
        }
    }
}

fn common(a: &[Alignment]) -> Alignment {
    match a.split_first() {
        None => Alignment {
            modulus: 1,
            offset: 0,
        },
        Some((f, rest)) => rest.iter().fold(*f, |m, x| m.or(*x)),
    }
}

fn combine(a: &[Alignment]) -> Alignment {
    match a.split_first() {
        None => Alignment {
            modulus: 1,
            offset: 0,
        },
        Some((f, rest)) => rest.iter().fold(*f, |m, x| m.and(*x)),
    }
}

/// What [`align`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aligned {
    /// The configuration with Align elements and an AlignmentInfo, as
    /// Click's tools print it.
    pub config: String,
    /// Align elements the tool added and kept.
    pub aligns_added: usize,
    /// With `verbose`: one line per Align added, saying why.
    pub notes: Vec<String>,
}

/// Inserts `e` before input `h`: everything connected to `h` goes to `e`,
/// and `e` to `h` (Click's `RouterT::insert_before`).
fn insert_before(g: &mut Graph, e: usize, h: Port) {
    let inserter = Port::new(e, 0);
    if !g.add_connection(inserter, h) {
        return;
    }
    for c in g.conns_to(h) {
        if g.conns[c].from != inserter {
            g.change_connection_to(c, inserter);
        }
    }
}

/// A port as Click's `PortT::unparse_output` names it: `name[port]`.
fn port_name(g: &Graph, p: Port) -> String {
    format!("{}[{}]", g.elems[p.e].name, p.port)
}

/// Adds to `router` (read into `map`) the Align elements and the AlignmentInfo Click's `click-align`
/// adds, or with `assertions`, a `CheckAlign` before every input that
/// wants an alignment.
pub fn align(router: &Router, map: &SourceMap, assertions: bool, verbose: bool) -> Aligned {
    let mut g = Graph::from_router(router, map);
    let original = g.elems.len();
    let mut anonymizer = original + 1;
    while g
        .eindex(&format!("Align@click_align@{anonymizer}"))
        .is_some()
    {
        anonymizer += 1;
    }
    let mut notes = Vec::new();
    let new_align = |g: &mut Graph, name: String, class: &str, config: String| {
        let mut e = Elem::new(&name, class, &config);
        e.added = true;
        g.get_element(&name, || e)
    };

    if assertions {
        let want = RouterAlign::want(&g);
        for i in 0..original {
            for j in 0..want.ialign[i].len() {
                let w = want.ialign[i][j];
                if w.modulus() > 1 {
                    let name = format!("CheckAlign@click_align@{anonymizer}");
                    let e = new_align(
                        &mut g,
                        name,
                        "CheckAlign",
                        format!("{}, {}, ASSERT true", w.modulus(), w.offset),
                    );
                    insert_before(&mut g, e, Port::new(i, j));
                    anonymizer += 1;
                }
            }
        }
        return Aligned {
            config: g.unparse(),
            aligns_added: 0,
            notes,
        };
    }

    let mut added = 0usize;
    // Required alignments.
    {
        let have = RouterAlign::have(&g);
        let want = RouterAlign::want(&g);
        for i in 0..original {
            for j in 0..have.ialign[i].len() {
                let (h, w) = (have.ialign[i][j], want.ialign[i][j]);
                if h.le(&w) || w.is_bad() {
                    continue;
                }
                let name = format!("Align@click_align@{anonymizer}");
                let e = new_align(
                    &mut g,
                    name,
                    "Align",
                    format!("{}, {}", w.modulus(), w.offset),
                );
                if verbose {
                    notes.push(format!(
                        "{}: adding Align({}, {}) to fix {}",
                        port_name(&g, Port::new(i, j)),
                        w.modulus(),
                        w.offset,
                        h.unparse()
                    ));
                }
                insert_before(&mut g, e, Port::new(i, j));
                anonymizer += 1;
                added += 1;
            }
        }
    }

    // Align -> Align: keep one.
    let mut ci = 0;
    while ci < g.conns.len() {
        let c = g.conns[ci];
        let (fe, te) = (&g.elems[c.from.e], &g.elems[c.to.e]);
        if te.class == "Align" && c.to.port == 0 && fe.class == "Align" && c.from.port == 0 {
            let it0 = g.conns_to(Port::new(c.from.e, 0));
            let it1 = g.conns_from(Port::new(c.from.e, 0));
            let it2 = g.conns_to(Port::new(c.to.e, 0));
            let (afrom, ato) = (align_config(&fe.config), align_config(&te.config));
            if afrom.le(&ato) {
                // The second is redundant; it goes below.
            } else if it2.len() == 1 && it0.len() == 1 {
                let src = g.conns[it0[0]].from;
                g.change_connection_from(it2[0], src);
            } else if it1.len() == 1 {
                for k in it0 {
                    g.change_connection_to(k, c.to);
                }
                g.erase(&[it1[0]]);
                // `ci` now names the next connection.
                continue;
            }
        }
        ci += 1;
    }

    // Alignments that elements can adjust to (Classifier).
    {
        let have = RouterAlign::have(&g);
        let mut want = have.clone();
        want.adjust();
        for i in 0..original {
            for j in 0..have.ialign[i].len() {
                let (h, w) = (have.ialign[i][j], want.ialign[i][j]);
                if h.le(&w) || w.is_bad() {
                    continue;
                }
                let name = format!("Align@click_align@{anonymizer}");
                let e = new_align(
                    &mut g,
                    name,
                    "Align",
                    format!("{}, {}", w.modulus(), w.offset),
                );
                insert_before(&mut g, e, Port::new(i, j));
                anonymizer += 1;
                added += 1;
            }
        }
    }

    // Skip Aligns that change nothing.
    loop {
        let have = RouterAlign::have(&g);
        let mut changed = false;
        let mut ci = 0;
        while ci < g.conns.len() {
            let c = g.conns[ci];
            if g.elems[c.to.e].class == "Align" {
                let h = have.oalign[c.from.e][c.from.port];
                let w = have.oalign[c.to.e].first().copied().unwrap_or_default();
                if h.le(&w) {
                    changed = true;
                    for d in g.targets(c.to) {
                        g.add_connection(c.from, d);
                    }
                    g.erase(&[ci]);
                    continue;
                }
            }
            ci += 1;
        }
        if !changed {
            break;
        }
        g.remove_duplicate_connections();
    }

    // Remove unused Aligns and old AlignmentInfos.
    for e in 0..g.elems.len() {
        if g.elems[e].live && g.elems[e].class == "AlignmentInfo" {
            g.kill(e);
        }
    }
    loop {
        let mut again = false;
        for e in 0..g.elems.len() {
            if g.elems[e].live
                && g.elems[e].class == "Align"
                && (g.ninputs(e) == 0 || g.noutputs(e) == 0)
            {
                if g.elems[e].added {
                    added -= 1;
                }
                again = true;
                g.kill(e);
            }
        }
        // As in Click, connections stay until the dead are removed, so an
        // Align left without ports by this removal stays.
        if !again {
            break;
        }
    }
    g.remove_dead_elements();

    let have = RouterAlign::have(&g);
    let mut info = String::new();
    for (e, el) in g.elems.iter().enumerate() {
        if el.live && g.ninputs(e) > 0 && wants_alignment_info(&el.class) {
            if !info.is_empty() {
                info.push_str(",\n  ");
            }
            info.push_str(&el.name);
            for a in &have.ialign[e] {
                info.push_str(&format!("  {} {}", a.modulus(), a.offset));
            }
        }
    }
    if !info.is_empty() {
        let name = format!("AlignmentInfo@click_align@{anonymizer}");
        g.get_element(&name, || Elem::new(&name, "AlignmentInfo", &info));
    }
    Aligned {
        config: g.unparse(),
        aligns_added: added,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(m: i32, o: i32) -> Alignment {
        Alignment::new(m, o).expect("valid")
    }

    #[test]
    fn alignment_algebra_is_clicks() {
        assert!(a(1, 0).le(&Alignment::EMPTY));
        assert!(!a(2, 0).le(&a(4, 0)));
        assert!(a(4, 0).le(&a(2, 0)));
        assert!(a(4, 1).le(&a(2, 1)));
        assert!(Alignment::UNIVERSAL.le(&a(2, 1)));
        assert_eq!(a(4, 1).and(a(2, 1)), a(4, 1));
        assert_eq!(a(4, 1).or(a(2, 1)), a(2, 1));
        assert_eq!(a(4, 1).and(a(5, 1)), a(20, 1));
        assert_eq!(a(4, 1).and(a(5, 3)), a(20, 13));
        assert_eq!(a(6, 1).and(a(10, 7)), a(30, 7));
        assert!(a(4, 1).and(a(4, 2)).is_bad());
        assert_eq!(a(4, 0).or(a(4, 2)), a(2, 0));
        assert_eq!(a(4, 0).shift(-14), a(4, 2));
        assert_eq!(Alignment::EMPTY.or(a(4, 2)), a(4, 2));
        assert_eq!(Alignment::UNIVERSAL.or(a(4, 2)), a(4, 2));
        assert_eq!(a(8, 3).unparse(), "8/3");
    }

    #[test]
    fn flow_codes_link_ports() {
        assert!(flows("x/x", 3, 0));
        assert!(!flows("x/y", 0, 0));
        assert!(flows("xy/x", 0, 0));
        assert!(!flows("xy/x", 1, 0));
        assert!(flows("xy/[xy]x", 1, 0));
        assert!(!flows("xy/[xy]x", 1, 1));
        assert!(flows("#/#", 2, 2));
        assert!(!flows("#/#", 2, 1));
        assert!(!flows("#/[^#]", 1, 1));
        assert!(flows("#/[^#]", 1, 0));
    }

    fn run(text: &str) -> Aligned {
        let mut map = crate::SourceMap::default();
        let r = crate::parse(&mut map, crate::Source::from_string(text)).expect("parses");
        align(&r, &map, false, false)
    }

    #[test]
    fn stripped_ethernet_needs_an_align_before_the_classifier() {
        let x = run(
            "src :: Src -> c :: Classifier(12/0800) -> Strip(14) -> ch :: CheckIPHeader -> Discard",
        );
        assert_eq!(x.aligns_added, 1);
        assert!(x.config.contains(":: Align(4, 2);\n"), "{}", x.config);
        assert!(
            x.config.contains("AlignmentInfo(c  4 2,\n  ch  4 0)"),
            "{}",
            x.config
        );
    }

    #[test]
    fn device_input_is_already_aligned() {
        let x = run("FromDevice(eth0) -> c :: Classifier(12/0800) -> Strip(14) -> ch :: CheckIPHeader -> Discard");
        assert_eq!(x.aligns_added, 0);
        assert!(!x.config.contains(":: Align("), "{}", x.config);
    }

    #[test]
    fn an_align_that_changes_nothing_goes() {
        let x = run("x :: X -> Align(8, 0) -> Align(4, 0) -> y :: Y");
        assert_eq!(
            x.config,
            "x :: X;\nAlign@2 :: Align(8, 0);\ny :: Y;\nx -> Align@2\n    -> y;\n"
        );
    }

    #[test]
    fn assertions_check_instead_of_aligning() {
        let mut map = crate::SourceMap::default();
        let r = crate::parse(
            &mut map,
            crate::Source::from_string("s :: S -> c :: CheckIPHeader(14) -> d :: Discard"),
        )
        .expect("parses");
        let x = align(&r, &map, true, false);
        assert!(
            x.config
                .contains("CheckAlign@click_align@4 :: CheckAlign(4, 2, ASSERT true);"),
            "{}",
            x.config
        );
    }
}
