//! Elements where packets enter and leave: capture files and interfaces.

pub mod capture;
pub mod device;
pub mod from_dump;
pub mod live;
pub mod to_dump;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &device::FROM_DEVICE,
    &device::POLL_DEVICE,
    &device::TO_DEVICE,
    &device::TO_HOST,
    &from_dump::CLASS,
    &to_dump::CLASS,
];
