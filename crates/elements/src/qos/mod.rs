//! Quality of service (Hardekopf et al., §2-§6): flow tables,
//! classification, route selection, ordering and deadlines. The data
//! structures are in `bricks-qos`; these are their elements.

pub mod binsort_queue;
pub mod fifo_queue;
pub mod flow_lookup;
pub mod flow_table;
pub mod hash_classifier;
pub mod hash_fifo_queue;
pub mod heap_queue;
pub mod mds_binsort_queue;
pub(crate) mod memrefs;
mod ordered;
pub mod sroute_decap;
pub mod sroute_encap;
pub mod sroute_lookup;
pub mod tag_classifier;
#[cfg(test)]
mod testutil;
pub mod virtual_clock;

use bricks_element::ElementClass;

/// The QoS elements.
pub static CLASSES: &[&ElementClass] = &[
    &fifo_queue::CLASS,
    &heap_queue::CLASS,
    &binsort_queue::CLASS,
    &mds_binsort_queue::CLASS,
    &hash_fifo_queue::CLASS,
    &virtual_clock::CLASS,
    &flow_table::CLASS,
    &tag_classifier::CLASS,
    &hash_classifier::CLASS,
    &flow_lookup::CLASS,
    &sroute_encap::CLASS,
    &sroute_lookup::CLASS,
    &sroute_decap::CLASS,
];
