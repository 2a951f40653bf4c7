//! Elements that open a router to the outside for control: Click's
//! `ControlSocket`. The element checks its arguments; the `bricks` binary
//! serves the socket (the serving needs every worker, which no element has).

pub mod controlsocket;

use bricks_element::ElementClass;

/// The control element classes.
pub static CLASSES: &[&ElementClass] = &[&controlsocket::CLASS];
