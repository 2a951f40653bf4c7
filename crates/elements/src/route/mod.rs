//! Route lookup at Internet scale: elements over the `bricks_lpm` tables.

pub mod live;
pub mod lookup;
pub mod table;
pub mod vr_lookup;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &lookup::DIRECT,
    &lookup::LOOKUP,
    &lookup::RADIX,
    &lookup::RANGE,
    &lookup::LOOKUP6,
    &vr_lookup::TABLE,
    &vr_lookup::LOOKUP,
];
