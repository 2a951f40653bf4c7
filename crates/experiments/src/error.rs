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
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}
