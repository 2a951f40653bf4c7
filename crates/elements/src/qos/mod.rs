//! Quality of service (Hardekopf et al., §2-§6): flow tables,
//! classification, route selection, ordering and deadlines. The data
//! structures are in `bricks-qos`; these are their elements.

use bricks_element::ElementClass;

/// The QoS elements.
pub static CLASSES: &[&ElementClass] = &[];
