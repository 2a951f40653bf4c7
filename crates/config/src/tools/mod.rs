//! Click's configuration tools, working on configurations rather than
//! running them: `click-xform` (pattern replacement), `click-align`
//! (alignment analysis), `click-undead` (dead code removal) and
//! `click-combine`/`click-uncombine` (configurations joined at their
//! devices). They edit the graph the way Click's tools do
//! ([`graph`]), so that what they print is what Click's tools print.

pub mod align;
pub mod combine;
mod graph;
pub mod undead;
pub mod xform;

pub use align::{align, Aligned, Alignment};
pub use combine::{combine, uncombine, Combined, Component, Uncombined};
pub use undead::{undead, Undead};
pub use xform::{read_patterns, xform, Pattern, Xformed};
