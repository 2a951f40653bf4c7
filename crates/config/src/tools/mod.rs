//! Click's configuration tools, working on configurations rather than
//! running them: `click-xform` (pattern replacement), `click-align`
//! (alignment analysis) and `click-undead` (dead code removal). They edit the graph the way Click's tools do
//! ([`graph`]), so that what they print is what Click's tools print.

pub mod align;
mod graph;
pub mod undead;
pub mod xform;

pub use align::{align, Aligned, Alignment};
pub use undead::{undead, Undead};
pub use xform::{read_patterns, xform, Pattern, Xformed};
