//! Which backend serves an interface name.
//!
//! A configuration names interfaces (`FromDevice(eth0)`, `ToDevice(eth1)`);
//! the command line decides what is behind each name. Bindings are set
//! before the configuration is built and read by the device elements when
//! they are made.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// What backs one interface name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// Offline: received packets are read from `input`, sent packets are
    /// written to `output`.
    Pcap {
        /// Capture read by `FromDevice`.
        input: Option<PathBuf>,
        /// Capture written by `ToDevice`.
        output: Option<PathBuf>,
    },
}

/// Why a binding specification was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingError(pub String);

impl core::fmt::Display for BindingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BindingError {}

impl Binding {
    /// Parses `NAME=pcap:IN[,OUT]` (either file may be left empty:
    /// `pcap:,out.pcap`). Returns the name and the binding.
    pub fn parse(spec: &str) -> Result<(String, Binding), BindingError> {
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| BindingError(format!("`{spec}`: expected NAME=pcap:IN[,OUT]")))?;
        if name.is_empty() {
            return Err(BindingError(format!("`{spec}`: empty interface name")));
        }
        let files = rest.strip_prefix("pcap:").ok_or_else(|| {
            BindingError(format!(
                "`{spec}`: unknown backend `{}` (expected pcap:IN[,OUT])",
                rest.split(':').next().unwrap_or(rest)
            ))
        })?;
        let (i, o) = files.split_once(',').unwrap_or((files, ""));
        let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        let b = Binding::Pcap {
            input: path(i),
            output: path(o),
        };
        if b == (Binding::Pcap {
            input: None,
            output: None,
        }) {
            return Err(BindingError(format!("`{spec}`: no file given")));
        }
        Ok((name.to_string(), b))
    }
}

fn table() -> &'static Mutex<HashMap<String, Binding>> {
    static T: OnceLock<Mutex<HashMap<String, Binding>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Binds interface `name` for the rest of the process.
pub fn bind(name: &str, binding: Binding) {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string(), binding);
}

/// What `name` is bound to, if anything.
pub fn lookup(name: &str) -> Option<Binding> {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_forms() {
        let (n, b) = Binding::parse("eth0=pcap:in.pcap,out.pcap").unwrap();
        assert_eq!(n, "eth0");
        assert_eq!(
            b,
            Binding::Pcap {
                input: Some("in.pcap".into()),
                output: Some("out.pcap".into())
            }
        );
        let (_, b) = Binding::parse("eth1=pcap:,out.pcap").unwrap();
        assert_eq!(
            b,
            Binding::Pcap {
                input: None,
                output: Some("out.pcap".into())
            }
        );
        assert!(Binding::parse("eth0").is_err());
        assert!(Binding::parse("eth0=xdp:0")
            .unwrap_err()
            .0
            .contains("unknown backend `xdp`"));
        assert!(Binding::parse("eth0=pcap:").is_err());
    }
}
