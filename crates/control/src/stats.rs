//! A route source's counters, shared between its thread and the element
//! that reports them, and its warnings, printed with a bound.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Kind {
    /// Messages read.
    Messages,
    /// Routes set in the table (new or changed).
    Added,
    /// Routes withdrawn from the table.
    Removed,
    /// Routes of other tables, protocols or families (not an error).
    Filtered,
    /// Messages too short or with impossible lengths.
    Malformed,
    /// Messages of types a route source does not read.
    UnknownType,
    /// Routes out of an interface that is not one of the element's.
    UnknownInterface,
    /// Routes bricks cannot forward by (blackhole, source-specific, ...).
    Unsupported,
    /// Changes past a table bound.
    Bound,
    /// Changes the route table refused (its memory bound).
    Refused,
    /// Full re-reads of the source (lost notifications, reconnections).
    Resyncs,
    /// FPM connections accepted.
    Connections,
    /// FPM connections refused (one peer at a time).
    ConnectionsRefused,
}

const KINDS: usize = 13;

impl Kind {
    /// Every kind, in the order of the counters.
    pub const ALL: [Kind; KINDS] = [
        Kind::Messages,
        Kind::Added,
        Kind::Removed,
        Kind::Filtered,
        Kind::Malformed,
        Kind::UnknownType,
        Kind::UnknownInterface,
        Kind::Unsupported,
        Kind::Bound,
        Kind::Refused,
        Kind::Resyncs,
        Kind::Connections,
        Kind::ConnectionsRefused,
    ];

    /// The counter's name as an element reports it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Messages => "route_messages",
            Kind::Added => "route_updates_set",
            Kind::Removed => "route_updates_removed",
            Kind::Filtered => "route_messages_filtered",
            Kind::Malformed => "route_messages_malformed",
            Kind::UnknownType => "route_messages_unknown_type",
            Kind::UnknownInterface => "route_updates_unknown_interface",
            Kind::Unsupported => "route_updates_unsupported",
            Kind::Bound => "route_updates_over_limit",
            Kind::Refused => "route_updates_refused",
            Kind::Resyncs => "route_source_resyncs",
            Kind::Connections => "fpm_connections",
            Kind::ConnectionsRefused => "fpm_connections_refused",
        }
    }

    /// Whether it counts a skipped message or change (warned about).
    fn is_skip(self) -> bool {
        matches!(
            self,
            Kind::Malformed
                | Kind::UnknownType
                | Kind::UnknownInterface
                | Kind::Unsupported
                | Kind::Bound
                | Kind::Refused
        )
    }
}

/// Warnings printed per kind before the rest are only counted.
const WARNINGS: u64 = 10;

/// A route source's counters.
#[derive(Debug)]
pub struct SourceStats {
    counts: [AtomicU64; KINDS],
    /// Prefix of the warnings (`rt: netlink table 100`).
    label: std::sync::OnceLock<String>,
    /// Print warnings to standard error.
    quiet: std::sync::atomic::AtomicBool,
}

impl Default for SourceStats {
    fn default() -> SourceStats {
        SourceStats {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            label: std::sync::OnceLock::new(),
            quiet: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl SourceStats {
    /// Counters whose warnings start with `label`.
    pub fn labelled(label: impl Into<String>) -> SourceStats {
        let s = SourceStats::default();
        let _ = s.label.set(label.into());
        s
    }

    /// Starts warnings with `label` (the first label set stays).
    pub fn set_label(&self, label: impl Into<String>) {
        let _ = self.label.set(label.into());
    }

    /// Prints no warnings (the counters still count).
    pub fn quiet(&self) {
        self.quiet.store(true, Ordering::Relaxed);
    }

    /// Adds one.
    #[inline]
    pub fn count(&self, k: Kind) {
        self.counts[k as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one to a skip counter and warns, the first few times.
    pub fn skip(&self, k: Kind, why: &str) {
        let n = self.counts[k as usize].fetch_add(1, Ordering::Relaxed) + 1;
        if !k.is_skip() || self.quiet.load(Ordering::Relaxed) || n > WARNINGS {
            return;
        }
        let label = self
            .label
            .get()
            .map(String::as_str)
            .unwrap_or("route source");
        let more = if n == WARNINGS {
            " (further ones are only counted)"
        } else {
            ""
        };
        eprintln!("warning: {label}: skipped {why}{more}");
    }

    /// A counter's value.
    pub fn get(&self, k: Kind) -> u64 {
        self.counts[k as usize].load(Ordering::Relaxed)
    }

    /// Every counter with its name.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Kind::ALL.iter().map(|k| (k.name(), self.get(*k)))
    }
}
