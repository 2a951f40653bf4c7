//! Virtual routers sharing one box and its interfaces (Egi et al., "Towards
//! High Performance Virtual Routers on Commodity Hardware", CoNEXT 2008).

#![forbid(unsafe_code)]
