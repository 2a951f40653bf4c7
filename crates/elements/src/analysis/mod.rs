//! Packet analysis in Click's text formats: IP summary dumps and IPPrint.

pub mod aggregate_counter;
pub mod aggregate_ipflows;
pub mod from_ipsumdump;
pub mod info;
pub mod ipprint;
pub mod md5;
pub mod options;
pub mod to_ipsumdump;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &from_ipsumdump::CLASS,
    &to_ipsumdump::CLASS,
    &ipprint::CLASS,
    &aggregate_counter::CLASS,
    &aggregate_ipflows::CLASS,
];
