//! What an element class declares about itself: ports, processing, manual,
//! and how to build an instance.

use crate::{ArgError, Args, Element};

/// A range of port counts, Click's `port_count` notation for one side:
/// `1`, `0-1`, `1-` (one or more), `-` (any number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// Fewest ports.
    pub min: usize,
    /// Most ports (`usize::MAX` for no limit).
    pub max: usize,
}

impl PortRange {
    fn parse(s: &str) -> Option<PortRange> {
        let s = s.trim();
        if s == "-" {
            return Some(PortRange {
                min: 0,
                max: usize::MAX,
            });
        }
        match s.split_once('-') {
            None => {
                let n = s.parse().ok()?;
                Some(PortRange { min: n, max: n })
            }
            Some((a, b)) => {
                let min = if a.is_empty() { 0 } else { a.parse().ok()? };
                let max = if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                };
                (min <= max).then_some(PortRange { min, max })
            }
        }
    }

    /// Whether `n` ports are allowed.
    pub fn contains(&self, n: usize) -> bool {
        n >= self.min && n <= self.max
    }
}

impl core::fmt::Display for PortRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (self.min, self.max) {
            (a, b) if a == b => write!(f, "{a}"),
            (0, usize::MAX) => write!(f, "any number"),
            (a, usize::MAX) => write!(f, "{a} or more"),
            (a, b) => write!(f, "{a} to {b}"),
        }
    }
}

/// Click's `port_count` string: `inputs/outputs`, e.g. `1/1-2`; a single
/// range means the same for both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortCount {
    /// Allowed number of inputs.
    pub inputs: PortRange,
    /// Allowed number of outputs.
    pub outputs: PortRange,
}

impl PortCount {
    /// Parses Click's notation; `None` if it is malformed.
    pub fn parse(s: &str) -> Option<PortCount> {
        match s.split_once('/') {
            Some((i, o)) => Some(PortCount {
                inputs: PortRange::parse(i)?,
                outputs: PortRange::parse(o)?,
            }),
            None => {
                let r = PortRange::parse(s)?;
                Some(PortCount {
                    inputs: r,
                    outputs: r,
                })
            }
        }
    }
}

/// Whether a port pushes, pulls, or takes whichever its neighbour needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Processing {
    /// Packets are pushed through it.
    Push,
    /// Packets are pulled through it.
    Pull,
    /// Push or pull, decided by the connections when the graph is built.
    Agnostic,
}

impl Processing {
    fn from_code(c: char) -> Option<Processing> {
        match c {
            'h' => Some(Processing::Push),
            'l' => Some(Processing::Pull),
            'a' => Some(Processing::Agnostic),
            _ => None,
        }
    }

    /// The word Click's documentation uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Processing::Push => "push",
            Processing::Pull => "pull",
            Processing::Agnostic => "agnostic",
        }
    }
}

/// Click's `processing` string, e.g. `a/ah`: one code per port (`h` push,
/// `l` pull, `a` agnostic) for inputs, then outputs; the last code of a side
/// repeats for the remaining ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessingSpec {
    inputs: Vec<Processing>,
    outputs: Vec<Processing>,
}

impl ProcessingSpec {
    /// Parses Click's notation; `None` if it is malformed.
    pub fn parse(s: &str) -> Option<ProcessingSpec> {
        let (i, o) = s.split_once('/').unwrap_or((s, s));
        // An empty side is allowed (Click writes `/h` for a source): that
        // side has no ports.
        let side =
            |t: &str| -> Option<Vec<Processing>> { t.chars().map(Processing::from_code).collect() };
        if s.is_empty() || s == "/" {
            return None;
        }
        Some(ProcessingSpec {
            inputs: side(i)?,
            outputs: side(o)?,
        })
    }

    /// Processing of input `port`.
    pub fn input(&self, port: usize) -> Processing {
        Self::at(&self.inputs, port)
    }

    /// Processing of output `port`.
    pub fn output(&self, port: usize) -> Processing {
        Self::at(&self.outputs, port)
    }

    fn at(side: &[Processing], port: usize) -> Processing {
        match side.last() {
            Some(last) => *side.get(port).unwrap_or(last),
            // A side declared empty has no ports; the port count check
            // refuses connections to it before anyone asks.
            None => Processing::Push,
        }
    }
}

/// The ports an element instance ended up with once the graph was built:
/// how many, and whether each pushes or pulls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortInfo {
    /// Resolved processing of each input.
    pub inputs: Vec<Processing>,
    /// Resolved processing of each output.
    pub outputs: Vec<Processing>,
}

impl PortInfo {
    /// Number of inputs.
    pub fn ninputs(&self) -> usize {
        self.inputs.len()
    }

    /// Number of outputs.
    pub fn noutputs(&self) -> usize {
        self.outputs.len()
    }

    /// Whether input `port` is pull.
    pub fn input_is_pull(&self, port: usize) -> bool {
        self.inputs.get(port) == Some(&Processing::Pull)
    }

    /// Whether output `port` is push.
    pub fn output_is_push(&self, port: usize) -> bool {
        self.outputs.get(port) == Some(&Processing::Push)
    }
}

/// One keyword argument in an element's manual.
#[derive(Debug, Clone, Copy)]
pub struct Keyword {
    /// The keyword, upper case as written in configurations.
    pub name: &'static str,
    /// Its type, in words ("unsigned", "IP address", "duration", ...).
    pub ty: &'static str,
    /// The default, or `None` when the argument is mandatory.
    pub default: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
}

/// An element's manual page, written next to its code and printed by
/// `bricks elements NAME`.
#[derive(Debug, Clone, Copy)]
pub struct Manual {
    /// One line: what the element does.
    pub summary: &'static str,
    /// How it is written in a configuration.
    pub synopsis: &'static str,
    /// The long description.
    pub description: &'static str,
    /// What arrives and leaves on each port.
    pub ports: &'static str,
    /// Keyword arguments (positional ones are named in the synopsis).
    pub keywords: &'static [Keyword],
    /// Counters it reports: (name, meaning).
    pub counters: &'static [(&'static str, &'static str)],
    /// A configuration fragment that uses it; the test suite checks it.
    pub example: &'static str,
    /// Related elements.
    pub see_also: &'static [&'static str],
}

/// Builds an element from its arguments and its resolved ports.
pub type MakeElement = fn(&mut Args<'_>, &PortInfo) -> Result<Box<dyn Element>, ArgError>;

/// Everything the router needs to know about one element class.
#[derive(Clone, Copy)]
pub struct ElementClass {
    /// The class name used in configurations.
    pub name: &'static str,
    /// Click's port count notation, e.g. `1/1-2`.
    pub ports: &'static str,
    /// Click's processing notation, e.g. `a/ah`.
    pub processing: &'static str,
    /// The manual.
    pub manual: &'static Manual,
    /// Constructor.
    pub make: MakeElement,
}

impl core::fmt::Debug for ElementClass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ElementClass")
            .field("name", &self.name)
            .field("ports", &self.ports)
            .field("processing", &self.processing)
            .finish()
    }
}

impl ElementClass {
    /// The parsed port count; the element test suite checks that every
    /// class's string parses.
    pub fn port_count(&self) -> PortCount {
        PortCount::parse(self.ports).unwrap_or_else(|| panic!("{}: bad port count", self.name))
    }

    /// The parsed processing string.
    pub fn processing_spec(&self) -> ProcessingSpec {
        ProcessingSpec::parse(self.processing)
            .unwrap_or_else(|| panic!("{}: bad processing", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_counts() {
        let p = PortCount::parse("1/1-2").unwrap();
        assert_eq!(p.inputs, PortRange { min: 1, max: 1 });
        assert_eq!(p.outputs, PortRange { min: 1, max: 2 });
        let p = PortCount::parse("-/1").unwrap();
        assert!(p.inputs.contains(0) && p.inputs.contains(100));
        let p = PortCount::parse("1-/0").unwrap();
        assert!(!p.inputs.contains(0) && p.inputs.contains(5));
        assert!(!p.outputs.contains(1));
        assert_eq!(PortCount::parse("2").unwrap().outputs.max, 2);
        assert!(PortCount::parse("x/1").is_none());
        assert!(PortCount::parse("3-1").is_none());
    }

    #[test]
    fn processing_codes_repeat_last() {
        let p = ProcessingSpec::parse("a/ah").unwrap();
        assert_eq!(p.input(0), Processing::Agnostic);
        assert_eq!(p.output(0), Processing::Agnostic);
        assert_eq!(p.output(1), Processing::Push);
        assert_eq!(p.output(7), Processing::Push);
        let p = ProcessingSpec::parse("h/l").unwrap();
        assert_eq!(p.input(3), Processing::Push);
        assert_eq!(p.output(0), Processing::Pull);
        assert!(ProcessingSpec::parse("h/x").is_none());
        let src = ProcessingSpec::parse("/h").unwrap();
        assert_eq!(src.output(0), Processing::Push);
        assert!(ProcessingSpec::parse("").is_none());
    }
}
