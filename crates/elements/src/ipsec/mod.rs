//! IPsec ESP in tunnel mode: `IPsecESPEncap` and `IPsecESPDecap` over an SA
//! and policy file in `ip xfrm` notation (see `bricks_ipsec::file`).
//!
//! Click's IPsec elements are here too (`click_*`, `radix_ipsec_lookup`):
//! `RadixIPsecLookup`, `IPsecESPEncap()` (Click's form, without FILE),
//! `IPsecAuthHMACSHA1`, `IPsecAuthSHA1`, `IPsecAES`, `IPsecDES`,
//! `IPsecESPUnencap` and `IPsecEncap`, which write Click's own ESP format
//! ([`click_sa`]), not RFC 4303's.
//!
//! Each element reads the file once into a database every worker's
//! instance shares (read without locks, replaced whole by the `reload`
//! handler). The encapsulating element uses the states its `dir out`
//! policies name; the decapsulating one finds states by SPI and checks the
//! result against the `dir in` / `dir fwd` policies. Giving both elements
//! the same file is the usual set-up: it then reads like the Linux peer's.

pub mod click_auth;
pub mod click_cipher;
pub mod click_esp;
pub mod click_ipencap;
pub mod click_sa;
pub mod decap;
pub mod encap;
pub mod radix_ipsec_lookup;

use bricks_element::{ArgError, Args, Context, ElementClass, Stats};
use bricks_ipsec::sa::{Expiry, SaCount};
use bricks_ipsec::{Database, Sa, Side};
use bricks_packet::Timestamp;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &encap::CLASS,
    &decap::CLASS,
    &radix_ipsec_lookup::CLASS,
    &click_esp::UNENCAP_CLASS,
    &click_auth::HMAC_CLASS,
    &click_auth::SHA1_CLASS,
    &click_cipher::AES_CLASS,
    &click_cipher::DES_CLASS,
    &click_ipencap::CLASS,
];

/// The database of one element and the file it came from.
#[derive(Debug)]
pub(crate) struct SaFileDb {
    pub db: Database,
    pub path: PathBuf,
}

impl SaFileDb {
    /// Reads the `FILE` argument and, for the first instance, the file,
    /// into SAs for `side` (only decapsulation keeps receive windows).
    pub fn open(args: &mut Args<'_>, side: Side) -> Result<Arc<SaFileDb>, ArgError> {
        let path: PathBuf = args.read_mp("FILE")?;
        SaFileDb::open_path(args, path, side)
    }

    /// [`SaFileDb::open`] with the `FILE` argument read already.
    pub fn open_path(
        args: &mut Args<'_>,
        path: PathBuf,
        side: Side,
    ) -> Result<Arc<SaFileDb>, ArgError> {
        args.shared(|_| {
            let text = read(&path)?;
            let db = Database::for_side(&text, Timestamp::now().0, side)
                .map_err(|e| ArgError::new(format!("{}: {e}", path.display())))?;
            Ok(SaFileDb { db, path })
        })
    }

    /// The `reload` handler: reads the file again and swaps the databases,
    /// keeping the SAs whose lines did not change.
    pub fn reload(&self) -> Result<String, String> {
        let text = read(&self.path).map_err(|e| e.to_string())?;
        let summary = self
            .db
            .reload(&text, Timestamp::now().0)
            .map_err(|e| format!("{}: {e}; nothing changed", self.path.display()))?;
        Ok(format!("{}: {summary}", self.path.display()))
    }

    /// Time limits pass while an SA is idle too: when any SA has one, the
    /// first worker's instance looks once a second.
    pub fn arm_lifetimes(&self, cx: &mut Context<'_>) {
        let timed = self.db.load().sas().iter().any(|sa| {
            let l = &sa.spec().lifetime;
            l.soft_seconds != 0 || l.hard_seconds != 0
        });
        if timed {
            cx.schedule_at(Timestamp(cx.now().0 + 1_000_000_000));
        }
    }

    /// The timer of [`SaFileDb::arm_lifetimes`].
    pub fn check_lifetimes(&self, cx: &mut Context<'_>) {
        let now = cx.now().0;
        for sa in self.db.load().sas() {
            if let Some(e) = sa.check_time(now) {
                announce(sa, e);
            }
        }
        cx.schedule_at(Timestamp(now + 1_000_000_000));
    }
}

fn read(path: &Path) -> Result<String, ArgError> {
    std::fs::read_to_string(path).map_err(|e| {
        ArgError::new(format!("cannot read SA file {}: {e}", path.display()))
            .with_help("FILE names a file of `ip xfrm state add` and `ip xfrm policy add` lines")
    })
}

/// Tells the operator about a lifetime event, once per SA and limit.
pub(crate) fn announce(sa: &Sa, e: Expiry) {
    let what = if e.hard {
        "hard lifetime reached; the SA is no longer used"
    } else {
        "soft lifetime reached; replace it (rekey)"
    };
    eprintln!(
        "ipsec: SA spi {:#x} {} -> {}: {what}: {}",
        sa.spi(),
        sa.src(),
        sa.dst(),
        e.reason
    );
}

/// One worker's share of each SA's counters. Each instance reports its
/// own and the runner sums them, so the totals are exact however the
/// workers end; the SA's shared counters serve its lifetimes.
#[derive(Debug, Default)]
pub(crate) struct SaCounts {
    /// In order of first use.
    counts: Vec<(u32, SaCount)>,
    /// SPI -> index into `counts`, once there are more than a few.
    index: HashMap<u32, usize>,
}

/// Up to this many SAs are found by a scan, cheaper than hashing.
const SCAN: usize = 8;

impl SaCounts {
    /// The counters of the SA with this SPI (SPIs are unique in a file).
    pub fn of(&mut self, spi: u32) -> &mut SaCount {
        let found = if self.counts.len() <= SCAN {
            self.counts.iter().position(|e| e.0 == spi)
        } else {
            self.index.get(&spi).copied()
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.counts.push((spi, SaCount::default()));
                if self.counts.len() > SCAN {
                    if self.index.is_empty() {
                        self.index = self
                            .counts
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (e.0, i))
                            .collect();
                    } else {
                        self.index.insert(spi, self.counts.len() - 1);
                    }
                }
                self.counts.len() - 1
            }
        };
        &mut self.counts[i].1
    }

    /// Reports every SA of the database (zeros included), then those this
    /// worker counted that a reload has since removed.
    pub fn report(&self, db: &SaFileDb, s: &mut Stats) {
        let snap = db.db.load();
        let counted: HashMap<u32, SaCount> = self.counts.iter().copied().collect();
        let in_db: HashSet<u32> = snap.sas().iter().map(|sa| sa.spi()).collect();
        let spis = snap.sas().iter().map(|sa| sa.spi()).chain(
            self.counts
                .iter()
                .map(|e| e.0)
                .filter(|spi| !in_db.contains(spi)),
        );
        for spi in spis {
            let c = counted.get(&spi).copied().unwrap_or_default();
            s.counter(format!("sa {spi:#x} packets"), c.packets);
            s.counter(format!("sa {spi:#x} bytes"), c.bytes);
            for (name, n) in [
                ("replay", c.replay),
                ("auth_failed", c.auth_failed),
                ("expired", c.expired),
            ] {
                if n != 0 {
                    s.counter(format!("sa {spi:#x} {name}"), n);
                }
            }
        }
    }
}

/// Adds a batch's traffic to each SA's shared counters in one go, rather
/// than one atomic add per packet on a line every worker writes, and to
/// this worker's [`SaCounts`].
pub(crate) struct Tally<'a> {
    current: Option<&'a Sa>,
    packets: u64,
    bytes: u64,
    now: u64,
    local: &'a mut SaCounts,
}

impl<'a> Tally<'a> {
    pub fn new(now: u64, local: &'a mut SaCounts) -> Tally<'a> {
        Tally {
            current: None,
            packets: 0,
            bytes: 0,
            now,
            local,
        }
    }

    #[inline]
    pub fn add(&mut self, sa: &'a Sa, bytes: usize) {
        if !self.current.is_some_and(|c| core::ptr::eq(c, sa)) {
            self.flush();
            self.current = Some(sa);
        }
        self.packets += 1;
        self.bytes += bytes as u64;
    }

    /// Counts a packet of `sa` dropped for `why` (replay, auth_failed,
    /// expired) on the SA and in this worker's counters.
    pub fn dropped(&mut self, sa: &Sa, why: SaDrop) {
        let k = sa.counters();
        let c = self.local.of(sa.spi());
        let (shared, local) = match why {
            SaDrop::Replay => (&k.replay, &mut c.replay),
            SaDrop::AuthFailed => (&k.auth_failed, &mut c.auth_failed),
            SaDrop::Expired => (&k.expired, &mut c.expired),
        };
        shared.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        *local += 1;
    }

    pub fn flush(&mut self) {
        if let Some(sa) = self.current.take() {
            let c = self.local.of(sa.spi());
            c.packets += self.packets;
            c.bytes += self.bytes;
            if let Some(e) = sa.account(self.packets, self.bytes, self.now) {
                announce(sa, e);
            }
        }
        self.packets = 0;
        self.bytes = 0;
    }
}

/// Why a packet of an SA was dropped, for [`Tally::dropped`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum SaDrop {
    Replay,
    AuthFailed,
    Expired,
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past a few SAs the counters are found by hash; every SA keeps its
    /// own, in order of first use.
    #[test]
    fn per_sa_counts_stay_apart_past_the_scan() {
        let mut c = SaCounts::default();
        for round in 1..=3u64 {
            for spi in (0..1000u32).map(|i| 0x100 + i * 7) {
                c.of(spi).packets += u64::from(spi) * round;
            }
        }
        assert_eq!(c.counts.len(), 1000);
        assert!(c.counts.iter().enumerate().all(|(i, (spi, n))| {
            *spi == 0x100 + i as u32 * 7 && n.packets == u64::from(*spi) * 6
        }));
    }
}
