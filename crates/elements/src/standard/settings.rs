//! `Settings`: how a configuration wants to be run, written in the
//! configuration itself (an information element, like Click's
//! `AddressInfo`: no ports, no packets).
//!
//! `bricks run` reads it before starting the workers; its command-line
//! flags override it.

use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};
use std::time::Duration;

/// The `Settings` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Settings",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "how the router runs: workers, mode, idle polling",
    synopsis: "Settings([THREADS n, MODE m, IDLE_NAP d])",
    description: "Carries run settings in the configuration, so that a router file says \
        how many cores it wants. `bricks run` uses them unless its own flags \
        (--threads, --mode, --idle-nap) say otherwise. At most one Settings element \
        per configuration.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "THREADS",
            ty: "unsigned",
            default: Some("1"),
            doc: "workers, each pinned to a core with its own copy of the graph",
        },
        Keyword {
            name: "MODE",
            ty: "per-core, pipeline or serial",
            default: Some("per-core"),
            doc: "how received packets reach the workers (see `bricks run --help`)",
        },
        Keyword {
            name: "IDLE_NAP",
            ty: "duration",
            default: Some("50us"),
            doc: "the longest an idle worker sleeps before polling again; 0 busy-polls",
        },
    ],
    counters: &[],
    example: "Settings(THREADS 2, MODE per-core); FromDevice(eth0) -> Queue -> ToDevice(eth1);",
    see_also: &["FromDevice"],
};

/// What a `Settings` element says; `None` where it says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// Workers.
    pub threads: Option<usize>,
    /// `per-core`, `pipeline` or `serial`.
    pub mode: Option<String>,
    /// Longest idle nap.
    pub idle_nap: Option<Duration>,
}

/// Reads a `Settings` element's arguments (also used by the runner, which
/// reads them from the checked plan).
pub fn read(args: &mut Args<'_>) -> Result<RunSettings, ArgError> {
    let threads: Option<usize> = args.read("THREADS")?;
    if threads == Some(0) {
        return Err(ArgError::new("THREADS must be at least 1"));
    }
    let mode: Option<String> = args.read("MODE")?;
    if let Some(m) = &mode {
        if !["per-core", "pipeline", "serial"].contains(&m.as_str()) {
            return Err(ArgError::new(format!(
                "MODE `{m}`: expected per-core, pipeline or serial"
            )));
        }
    }
    Ok(RunSettings {
        threads,
        mode,
        idle_nap: args.read("IDLE_NAP")?,
    })
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    read(args)?;
    Ok(Box::new(Settings))
}

/// Holds nothing at run time: the runner read it before starting.
#[derive(Debug)]
pub struct Settings;

impl Element for Settings {}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::parse_args;

    #[test]
    fn reads_and_checks() {
        let a = parse_args("THREADS 2, MODE serial, IDLE_NAP 0").unwrap();
        let s = read(&mut Args::from_strs(&a)).unwrap();
        assert_eq!(s.threads, Some(2));
        assert_eq!(s.mode.as_deref(), Some("serial"));
        assert_eq!(s.idle_nap, Some(Duration::ZERO));
        let a = parse_args("MODE turbo").unwrap();
        assert!(read(&mut Args::from_strs(&a)).is_err());
        let a = parse_args("THREADS 0").unwrap();
        assert!(read(&mut Args::from_strs(&a)).is_err());
    }
}
