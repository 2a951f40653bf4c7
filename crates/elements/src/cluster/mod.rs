//! RouteBricks clusters (SOSP 2009 §3, §6): the element every node of a
//! cluster runs.

pub mod vlb;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[&vlb::CLASS];
