//! Click's configuration tools, working on configurations rather than
//! running them: `click-xform` (pattern replacement) and `click-align`
//! (alignment analysis). They edit the graph the way Click's tools do
//! ([`graph`]), so that what they print is what Click's tools print.

pub mod align;
mod graph;
pub mod xform;

pub use align::{align, Aligned, Alignment};
pub use xform::{read_patterns, xform, Pattern, Xformed};
