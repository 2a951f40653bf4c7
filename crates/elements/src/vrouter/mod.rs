//! Virtual routers sharing one box (Egi et al., CoNEXT 2008, §3.2): the
//! elements that put a demultiplexing tag on the wire and take it off
//! again (802.1Q VLAN, MPLS, IP-in-IP), and the demultiplexer that hands
//! each frame to its virtual router by that tag.

use bricks_element::ElementClass;

/// The virtual-router elements.
pub static CLASSES: &[&ElementClass] = &[];
