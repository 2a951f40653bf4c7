//! A real RIB dump, read by bricks and by an independent MRT reader.
//!
//! `tests/data/routeviews/rib.20140523.0600-head.bz2` is the head of
//! RouteViews' route-views2 TABLE_DUMP_V2 dump of 2014-05-23 06:00 UTC:
//! its PEER_INDEX_TABLE and the RIB records of its first 9,069 IPv4
//! prefixes (about 270,000 entries from the collector's peers, with AS
//! sets, MEDs from some peers and not others, and all three ORIGINs).
//!
//! `bgpdump` (Debian's package, RIPE NCC's libbgpdump) lists every entry;
//! this test applies the decision process bricks documents
//! (`crates/lpm/src/source/mrt.rs`) to that listing and checks that
//! bricks loaded the same prefixes with the chosen entry's next hop, for
//! every prefix, and the same for the routes of one peer.

use bricks_lpm::source::{load_with, MrtOptions, OnError, PeerSelect};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::Command;

fn dump() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/routeviews/rib.20140523.0600-head.bz2")
}

/// bgpdump's path, or `None` (with the reason printed) when it is not
/// installed outside CI. In CI it must be there: `scripts/setup` installs
/// it.
fn bgpdump(test: &str) -> Option<&'static str> {
    let path = "/usr/bin/bgpdump";
    if std::path::Path::new(path).exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: bgpdump is missing in CI (scripts/setup installs it)"
    );
    eprintln!("SKIP {test}: bgpdump is not installed (scripts/setup installs it)");
    None
}

/// One RIB entry as bgpdump lists it (`bgpdump -m`).
#[derive(Debug, Clone)]
struct Entry {
    peer: IpAddr,
    /// AS_PATH length by RFC 4271 §9.1.2.2 a: an AS_SET counts 1,
    /// confederation segments 0.
    path_len: usize,
    /// The first AS of the path when it starts with an AS_SEQUENCE.
    neighbour: Option<u32>,
    origin: u8,
    next_hop: Option<IpAddr>,
    local_pref: u32,
    med: u32,
}

/// Parses `bgpdump -m` output: `TABLE_DUMP2|time|B|peer|peer_as|prefix|
/// path|origin|next_hop|local_pref|med|...`, entries in record order.
fn entries(text: &str) -> BTreeMap<String, Vec<Entry>> {
    let mut by_prefix: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert!(f.len() >= 11 && f[0] == "TABLE_DUMP2", "{line}");
        let path = f[6];
        // Segments as bgpdump writes them: AS_SET `{a,b}`, confederation
        // sequence `(a b)` and set `[a,b]`.
        let mut len = 0;
        let mut depth = None::<char>;
        let mut first = None;
        let mut first_seen = false;
        for tok in path.split(' ').filter(|t| !t.is_empty()) {
            if let Some(close) = depth {
                if tok.ends_with(close) {
                    depth = None;
                }
                continue;
            }
            let open = tok.chars().next().unwrap();
            let close = match open {
                '{' => Some('}'),
                '(' => Some(')'),
                '[' => Some(']'),
                _ => None,
            };
            if let Some(close) = close {
                if open == '{' {
                    len += 1;
                    // A path that starts with an AS_SET has no neighbour.
                    first_seen = true;
                }
                if !tok.ends_with(close) {
                    depth = Some(close);
                }
                continue;
            }
            len += 1;
            if !first_seen {
                first = Some(tok.parse::<u32>().expect(line));
                first_seen = true;
            }
        }
        let origin = match f[7] {
            "IGP" => 0,
            "EGP" => 1,
            _ => 2,
        };
        let next_hop: IpAddr = f[8].parse().expect(line);
        by_prefix.entry(f[5].to_string()).or_default().push(Entry {
            peer: f[3].parse().expect(line),
            path_len: len,
            neighbour: first,
            origin,
            next_hop: (!next_hop.is_unspecified()).then_some(next_hop),
            local_pref: f[9].parse().expect(line),
            med: f[10].parse().expect(line),
        });
    }
    by_prefix
}

/// The peers' BGP identifiers from the dump's PEER_INDEX_TABLE (RFC 6396
/// §4.3.1), which bgpdump does not print.
fn peer_ids(path: &PathBuf) -> HashMap<IpAddr, u32> {
    let mut head = vec![0u8; 1 << 20];
    let mut r = bzip2::read::BzDecoder::new(std::fs::File::open(path).unwrap());
    r.read_exact(&mut head).unwrap();
    let be16 = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]) as usize;
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    // The MRT header: type 13 (TABLE_DUMP_V2), subtype 1.
    assert_eq!((be16(&head[4..]), be16(&head[6..])), (13, 1));
    let body = &head[12..12 + be32(&head[8..]) as usize];
    let name_len = be16(&body[4..]);
    let mut at = 6 + name_len;
    let count = be16(&body[at..]);
    at += 2;
    let mut ids = HashMap::new();
    for _ in 0..count {
        let kind = body[at];
        let id = be32(&body[at + 1..]);
        at += 5;
        let addr: IpAddr = if kind & 1 == 0 {
            let a = Ipv4Addr::new(body[at], body[at + 1], body[at + 2], body[at + 3]);
            at += 4;
            a.into()
        } else {
            let mut a = [0u8; 16];
            a.copy_from_slice(&body[at..at + 16]);
            at += 16;
            std::net::Ipv6Addr::from(a).into()
        };
        at += if kind & 2 == 0 { 2 } else { 4 };
        ids.insert(addr, id);
    }
    ids
}

/// The entry the decision process bricks documents chooses: highest
/// LOCAL_PREF, shortest AS_PATH, lowest ORIGIN, lowest MED among entries
/// of one neighbouring AS, lowest peer BGP identifier then peer address,
/// the first in the record.
fn best<'a>(entries: &'a [Entry], ids: &HashMap<IpAddr, u32>) -> &'a Entry {
    let mut left: Vec<&Entry> = entries.iter().collect();
    // bgpdump prints an absent LOCAL_PREF as 0; this dump has none
    // (checked by the caller), so the step keeps every entry.
    let lp = left.iter().map(|e| e.local_pref).max().unwrap();
    left.retain(|e| e.local_pref == lp);
    let len = left.iter().map(|e| e.path_len).min().unwrap();
    left.retain(|e| e.path_len == len);
    let origin = left.iter().map(|e| e.origin).min().unwrap();
    left.retain(|e| e.origin == origin);
    // MED: an entry loses to one of the same neighbouring AS with a
    // lower MED.
    let snapshot = left.clone();
    left.retain(|e| {
        !snapshot
            .iter()
            .any(|o| o.neighbour == e.neighbour && o.med < e.med)
    });
    let key = |e: &Entry| {
        let fam = u8::from(e.peer.is_ipv6());
        (ids[&e.peer], fam, e.peer)
    };
    let k = left.iter().map(|e| key(e)).min().unwrap();
    left.into_iter().find(|e| key(e) == k).unwrap()
}

fn bricks_routes(peer: Option<&str>) -> BTreeMap<String, Option<IpAddr>> {
    let opts = MrtOptions {
        peer: peer.map(|p| PeerSelect::Address(p.parse().unwrap())),
        ..MrtOptions::default()
    };
    let (table, _warnings) =
        load_with(dump(), OnError::Refuse, &opts).expect("bricks loads the dump");
    assert!(table.v6.is_empty());
    table
        .v4
        .iter()
        .map(|(p, hops)| {
            assert_eq!(hops.len(), 1);
            (
                format!("{}/{}", Ipv4Addr::from(p.addr), p.len),
                hops[0].gateway,
            )
        })
        .collect()
}

#[test]
fn bricks_picks_the_route_an_independent_reader_and_the_decision_process_pick() {
    let test = "bricks_picks_the_route_an_independent_reader_and_the_decision_process_pick";
    let Some(bgpdump) = bgpdump(test) else {
        return;
    };
    let out = Command::new(bgpdump)
        .arg("-m")
        .arg(dump())
        .output()
        .expect("runs bgpdump");
    assert!(out.status.success(), "{out:?}");
    let by_prefix = entries(&String::from_utf8(out.stdout).unwrap());
    let total: usize = by_prefix.values().map(Vec::len).sum();
    assert_eq!(by_prefix.len(), 9_069);
    assert!(total > 250_000, "{total} entries");
    assert!(
        by_prefix.values().flatten().all(|e| e.local_pref == 0),
        "the dump has no LOCAL_PREF"
    );
    let ids = peer_ids(&dump());

    // Every peer's best.
    let got = bricks_routes(None);
    let want: BTreeMap<String, Option<IpAddr>> = by_prefix
        .iter()
        .map(|(p, es)| (p.clone(), best(es, &ids).next_hop))
        .collect();
    assert_eq!(got.len(), want.len());
    let differ: Vec<_> = want
        .iter()
        .filter(|(p, nh)| got.get(*p) != Some(nh))
        .take(5)
        .map(|(p, nh)| {
            format!(
                "{p}: bgpdump's entries give {nh:?}, bricks {:?}",
                got.get(p)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    // The decision reaches past the AS path often enough to be tested.
    let decided_late = by_prefix
        .values()
        .filter(|es| {
            let len = es.iter().map(|e| e.path_len).min().unwrap();
            es.iter().filter(|e| e.path_len == len).count() > 1
        })
        .count();
    assert!(decided_late > 1_000, "{decided_late}");

    // One peer's routes (PEER 157.130.10.233, Verizon's AS 701).
    let peer: IpAddr = "157.130.10.233".parse().unwrap();
    let got = bricks_routes(Some("157.130.10.233"));
    let want: BTreeMap<String, Option<IpAddr>> = by_prefix
        .iter()
        .filter_map(|(p, es)| {
            let mine: Vec<Entry> = es.iter().filter(|e| e.peer == peer).cloned().collect();
            (!mine.is_empty()).then(|| (p.clone(), best(&mine, &ids).next_hop))
        })
        .collect();
    assert!(want.len() > 8_000, "{}", want.len());
    assert_eq!(got, want);
}

/// The same dump cut inside a record: the load stops with the byte offset
/// of the record that does not end and the routes read before it.
#[test]
fn a_real_dump_cut_short_names_where_and_how_many_routes() {
    let mut raw = Vec::new();
    bzip2::read::BzDecoder::new(std::fs::File::open(dump()).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    // Walk the records' headers to the one that holds byte 10,000,000.
    let cut = 10_000_000usize;
    let (mut at, mut routes) = (0usize, 0u64);
    loop {
        let len = u32::from_be_bytes(raw[at + 8..at + 12].try_into().unwrap()) as usize;
        if at + 12 + len > cut {
            break;
        }
        let sub = u16::from_be_bytes([raw[at + 6], raw[at + 7]]);
        routes += u64::from(sub == 2);
        at += 12 + len;
    }
    let dir = std::env::temp_dir().join(format!("bricks-mrt-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rib.cut.mrt");
    std::fs::write(&file, &raw[..cut]).unwrap();
    let err = load_with(&file, OnError::Skip, &MrtOptions::default()).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = err.to_string();
    assert!(text.contains(&format!("byte {at}")), "{text}");
    assert!(text.contains(&format!("after {routes} routes")), "{text}");
    assert!(routes > 5_000, "{routes}");
}
