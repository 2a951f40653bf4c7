//! The SA and policy databases of one gateway, read by every worker without
//! a lock and replaced whole, RCU style, when the file is reloaded.
//!
//! A reload keeps the very same `Sa` (sequence counter, replay window,
//! counters) for every state whose line did not change, so replacing an SA
//! while traffic flows loses nothing: the new SA is added beside the old
//! one, the policy moves to it, and the old one is removed once the peer
//! has switched too.

use crate::file::{self, FileError, SaFile};
use crate::sa::Sa;
use crate::spd::{Action, Dir, FirstMatch, Flow, Selector, Template, TemplateIndex};
use arc_swap::ArcSwap;
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// Which element a database serves. Only decapsulation checks sequence
/// numbers, so only its SAs carry a receive window: with `replay-window
/// 65536` a window is 32 KiB, which an encapsulating copy of 100,000 SAs
/// would otherwise hold for nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Encapsulation only: SAs without receive windows.
    Encap,
    /// Decapsulation (or both): SAs with the windows their lines ask for.
    Decap,
}

impl Side {
    /// Whether SAs of this side check replay.
    pub fn checks_replay(self) -> bool {
        self == Side::Decap
    }
}

/// What an outbound policy does with a packet.
#[derive(Debug, Clone, Copy)]
pub enum Verdict<'a> {
    /// Encapsulate with this SA.
    Protect(&'a Sa),
    /// Send in the clear (an allow policy without template, or no policy).
    Bypass,
    /// Drop (a block policy).
    Block,
}

#[derive(Debug)]
struct OutPolicy {
    selector: Selector,
    action: Action,
    /// Index into `sas` of the SA serving the template.
    sa: Option<usize>,
}

#[derive(Debug)]
struct InPolicy {
    selector: Selector,
    action: Action,
    template: Option<Template>,
}

/// One version of the databases.
#[derive(Debug, Default)]
pub struct Snapshot {
    sas: Vec<Arc<Sa>>,
    /// (SPI, destination, index into `sas`), sorted.
    by_spi: Vec<(u32, u32, usize)>,
    out: Vec<OutPolicy>,
    inbound: Vec<InPolicy>,
    /// First-match indexes of `out` and `inbound`, made when a list is long
    /// enough that a scan would cost more than the index's probes.
    out_index: Option<FirstMatch>,
    in_index: Option<FirstMatch>,
}

/// Policy lists longer than this are searched through a [`FirstMatch`]
/// index; shorter ones are scanned (a few comparisons beat a hash probe).
const SCAN_AT_MOST: usize = 8;

fn index_of<'a>(selectors: impl ExactSizeIterator<Item = &'a Selector>) -> Option<FirstMatch> {
    (selectors.len() > SCAN_AT_MOST).then(|| FirstMatch::new(selectors))
}

impl Snapshot {
    /// Builds the databases from a parsed file, reusing the SAs of `old`
    /// whose state lines are unchanged. `now_ns` starts new SAs' lifetimes;
    /// `side` says whether they need receive windows. Linear in the file:
    /// old SAs and template matches are found by hash, not by a scan.
    pub fn build(file: &SaFile, old: Option<&Snapshot>, now_ns: u64, side: Side) -> Snapshot {
        // SPI and destination identify a state (the parser refuses
        // duplicates); the rest of the line must match too for it to be
        // kept. `old` was built for the same side.
        let old_by_id: HashMap<(u32, Ipv4Addr), &Arc<Sa>> = old
            .map(|o| o.sas.iter().map(|s| ((s.spi(), s.dst()), s)).collect())
            .unwrap_or_default();
        let sas: Vec<Arc<Sa>> = file
            .states
            .iter()
            .map(|spec| {
                old_by_id
                    .get(&(spec.spi, spec.dst))
                    .filter(|s| same_state(s.spec(), spec))
                    .map(|s| Arc::clone(s))
                    .unwrap_or_else(|| Arc::new(Sa::for_side(spec.clone(), now_ns, side)))
            })
            .collect();
        let mut by_spi: Vec<_> = sas
            .iter()
            .enumerate()
            .map(|(i, s)| (s.spi(), u32::from(s.dst()), i))
            .collect();
        by_spi.sort_unstable();
        let mut policies: Vec<_> = file.policies.iter().collect();
        // Lower priority values first; file order among equals.
        policies.sort_by_key(|p| p.priority);
        let mut templates = TemplateIndex::new(&file.states);
        let out: Vec<OutPolicy> = policies
            .iter()
            .filter(|p| p.dir == Dir::Out)
            .map(|p| OutPolicy {
                selector: p.selector,
                action: p.action,
                // The newest (last) matching state serves the template, as
                // Linux prefers the most recently added SA.
                sa: p.template.as_ref().and_then(|t| templates.last_match(t)),
            })
            .collect();
        let inbound: Vec<InPolicy> = policies
            .iter()
            .filter(|p| p.dir != Dir::Out)
            .map(|p| InPolicy {
                selector: p.selector,
                action: p.action,
                template: p.template,
            })
            .collect();
        Snapshot {
            out_index: index_of(out.iter().map(|p| &p.selector)),
            in_index: index_of(inbound.iter().map(|p| &p.selector)),
            sas,
            by_spi,
            out,
            inbound,
        }
    }

    /// Every SA, in file order.
    pub fn sas(&self) -> &[Arc<Sa>] {
        &self.sas
    }

    /// The SA for an inbound packet.
    #[inline]
    pub fn find(&self, spi: u32, dst: u32) -> Option<&Sa> {
        let i = self
            .by_spi
            .binary_search_by(|&(s, d, _)| (s, d).cmp(&(spi, dst)))
            .ok()?;
        Some(&self.sas[self.by_spi[i].2])
    }

    /// Whether any outbound policy exists.
    pub fn has_outbound(&self) -> bool {
        !self.out.is_empty()
    }

    /// What the outbound policies say about `flow` (RFC 4301 section
    /// 5.1: the first matching policy decides; traffic no policy selects
    /// passes in the clear, as in Linux).
    #[inline]
    pub fn outbound(&self, flow: &Flow) -> Verdict<'_> {
        let first = match &self.out_index {
            Some(index) => index.find(flow).map(|i| &self.out[i]),
            None => self.out.iter().find(|p| p.selector.matches(flow)),
        };
        match first {
            Some(p) => match (p.action, p.sa) {
                (Action::Block, _) => Verdict::Block,
                (Action::Allow, Some(i)) => Verdict::Protect(&self.sas[i]),
                (Action::Allow, None) => Verdict::Bypass,
            },
            None => Verdict::Bypass,
        }
    }

    /// Whether a packet decapsulated by `sa` may pass (RFC 4301 section
    /// 5.2, step 4): the first inbound (in or fwd) policy selecting its
    /// inner header must allow it and name this SA in its template, and the
    /// SA's own selector, if it has one, must take it too. Traffic no
    /// inbound policy selects is dropped: it came through a tunnel nobody
    /// said it may use.
    #[inline]
    pub fn inbound_allows(&self, sa: &Sa, flow: &Flow) -> bool {
        if !sa.selector_takes(flow) {
            return false;
        }
        let first = match &self.in_index {
            Some(index) => index.find(flow).map(|i| &self.inbound[i]),
            None => self.inbound.iter().find(|p| p.selector.matches(flow)),
        };
        first.is_some_and(|p| {
            p.action == Action::Allow && p.template.is_some_and(|t| t.matches(sa.spec()))
        })
    }
}

/// Whether two state lines describe the same SA (everything but where in
/// the file it is).
fn same_state(a: &file::StateSpec, b: &file::StateSpec) -> bool {
    a.spi == b.spi
        && a.src == b.src
        && a.dst == b.dst
        && a.reqid == b.reqid
        && a.algorithm == b.algorithm
        && a.replay_window == b.replay_window
        && a.esn == b.esn
        && a.lifetime == b.lifetime
        && a.selector == b.selector
}

/// The databases, swapped whole on reload.
#[derive(Debug)]
pub struct Database {
    current: ArcSwap<Snapshot>,
    side: Side,
}

impl Database {
    /// Parses and builds, with receive windows (decapsulation, or a test
    /// that does both).
    pub fn from_text(text: &str, now_ns: u64) -> Result<Database, FileError> {
        Database::for_side(text, now_ns, Side::Decap)
    }

    /// Parses and builds the databases one side uses.
    pub fn for_side(text: &str, now_ns: u64, side: Side) -> Result<Database, FileError> {
        let file = file::parse(text)?;
        Ok(Database {
            current: ArcSwap::from_pointee(Snapshot::build(&file, None, now_ns, side)),
            side,
        })
    }

    /// The current version; hold it for a batch.
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.current.load()
    }

    /// The current version as an `Arc`.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Replaces the databases with the file's new text, keeping every SA
    /// whose line is unchanged. On error nothing changes.
    pub fn reload(&self, text: &str, now_ns: u64) -> Result<ReloadSummary, FileError> {
        let file = file::parse(text)?;
        let old = self.current.load_full();
        let new = Snapshot::build(&file, Some(&old), now_ns, self.side);
        let old_sas: HashSet<*const Sa> = old.sas.iter().map(Arc::as_ptr).collect();
        let kept = new
            .sas
            .iter()
            .filter(|s| old_sas.contains(&Arc::as_ptr(s)))
            .count();
        let summary = ReloadSummary {
            kept,
            added: new.sas.len() - kept,
            removed: old.sas.len() - kept,
            policies: file.policies.len(),
        };
        self.current.store(Arc::new(new));
        Ok(summary)
    }
}

/// What a reload changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadSummary {
    /// SAs kept with their state.
    pub kept: usize,
    /// New SAs.
    pub added: usize,
    /// SAs gone.
    pub removed: usize,
    /// Policies now in force.
    pub policies: usize,
}

impl core::fmt::Display for ReloadSummary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} SAs kept, {} added, {} removed; {} policies",
            self.kept, self.added, self.removed, self.policies
        )
    }
}
