//! What can stop an experiment.

use std::fmt;

/// Why an experiment could not be run (a result that misses the paper's is
/// a verdict, not an error).
#[derive(Debug)]
pub enum Error {
    /// A workload's configuration did not parse or build (a bug in the
    /// workload, or an element it needs is missing).
    Config {
        /// The workload.
        workload: String,
        /// The diagnostics, rendered.
        message: String,
    },
    /// A run reported errors or did not deliver what it should have.
    Run {
        /// The workload.
        workload: String,
        /// What went wrong.
        message: String,
    },
    /// Writing a plot or a file failed.
    Io(std::io::Error),
    /// Counting instructions with callgrind failed.
    Callgrind(String),
    /// A command-line argument is out of range; the message names the
    /// option and what it takes.
    Argument(String),
    /// The bench cannot run on this machine as it is (no root, a missing
    /// tool); the message says what to install or how to run it.
    CannotRun(String),
    /// A test network could not be built or changed (a namespace, a veth,
    /// an address, a sysctl, a kernel thread's placement): `ip`, `ethtool`
    /// or the kernel refused, in their own words.
    Network(String),
    /// A process the bench started (`bricks run`, `gen`, `sink`, an XDP
    /// holder) failed, did not get ready or printed no report; the message
    /// ends with the last lines it wrote to stderr.
    Process(String),
    /// A record of what is up (`/run/bricks-KIND/NAME/state.json`) lacks
    /// a field or holds the wrong type; taking the thing down by hand
    /// (`ip netns del`, killing its processes) clears it.
    Record(String),
    /// The run was stopped by a signal (Ctrl-C); the test networks are
    /// deleted.
    Interrupted,
    /// What was being done when `source` went wrong.
    Context {
        /// What was being done (`building the test network`).
        doing: String,
        /// What went wrong.
        source: Box<Error>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { workload, message } => {
                write!(
                    f,
                    "workload {workload}: the configuration does not build:\n{message}"
                )
            }
            Error::Run { workload, message } => write!(f, "workload {workload}: {message}"),
            Error::Io(e) => write!(f, "{e}"),
            Error::Callgrind(e) => write!(f, "callgrind: {e}"),
            Error::Argument(e) => write!(f, "{e}"),
            Error::CannotRun(e) => write!(f, "{e}"),
            Error::Network(e) => write!(f, "{e}"),
            Error::Process(e) => write!(f, "{e}"),
            Error::Record(e) => write!(f, "a state record: {e}"),
            Error::Interrupted => write!(f, "interrupted"),
            Error::Context { doing, source } => write!(f, "{doing}: {source}"),
        }
    }
}

// No `source()`: Display already tells the whole chain, and a caller
// that walks the sources (anyhow's `{:#}`) would print it twice.
impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}

impl From<bricks_netns::NetnsError> for Error {
    fn from(e: bricks_netns::NetnsError) -> Error {
        Error::Network(e.0)
    }
}

/// Says what was being done when an error happened, as the message a
/// user reads: `building the test network: the test network: ...`.
pub trait Context<T> {
    /// The error, if any, wrapped with `doing`.
    fn context(self, doing: impl Into<String>) -> Result<T, Error>;
    /// The error, if any, wrapped with what `doing` returns (called only
    /// on an error).
    fn with_context<S: Into<String>>(self, doing: impl FnOnce() -> S) -> Result<T, Error>;
}

impl<T, E: Into<Error>> Context<T> for Result<T, E> {
    fn context(self, doing: impl Into<String>) -> Result<T, Error> {
        self.map_err(|e| Error::Context {
            doing: doing.into(),
            source: Box::new(e.into()),
        })
    }

    fn with_context<S: Into<String>>(self, doing: impl FnOnce() -> S) -> Result<T, Error> {
        self.map_err(|e| Error::Context {
            doing: doing().into(),
            source: Box::new(e.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_reads_outside_in() {
        let e: Result<(), Error> =
            Err(bricks_netns::NetnsError("ip: no such device".into()).into());
        let e = e
            .context("adding r0's address")
            .with_context(|| "building the test network")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "building the test network: adding r0's address: ip: no such device"
        );
    }
}
