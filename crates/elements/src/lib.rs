//! The built-in elements.
//!
//! One file per element, grouped by what they do. Every class is listed in
//! [`registry`], the one place a new element is registered.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod classify;
pub mod click;
pub mod cluster;
pub mod control;
pub mod ether;
pub mod fastpath;
pub mod io;
pub mod ip;
pub mod ip6;
pub mod ipsec;
pub mod measure;
pub mod multistage;
pub mod nat;
pub mod qos;
mod rng;
pub mod route;
pub mod standard;
pub mod tcpudp;
pub mod vrouter;

use bricks_element::{ElementClass, Registry};

/// Every built-in element class.
pub fn classes() -> impl Iterator<Item = &'static ElementClass> {
    [
        standard::CLASSES,
        io::CLASSES,
        classify::CLASSES,
        ip::CLASSES,
        ip6::CLASSES,
        ipsec::CLASSES,
        route::CLASSES,
        ether::CLASSES,
        measure::CLASSES,
        cluster::CLASSES,
        control::CLASSES,
        vrouter::CLASSES,
        multistage::CLASSES,
        qos::CLASSES,
        analysis::CLASSES,
        click::CLASSES,
        nat::CLASSES,
        tcpudp::CLASSES,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// A registry holding every built-in element class.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    for c in classes() {
        r.register(*c);
    }
    r
}
