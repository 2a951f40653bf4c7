//! Route tables fed live by the control plane: `ROUTES netlink:table=100`
//! or `ROUTES fpm` on a lookup element (see `bricks_control`).
//!
//! The source starts when the router starts (the first worker's `start`),
//! not when the configuration is checked, so that `bricks check` opens no
//! socket. Its thread holds the table weakly: the table owns the source,
//! and a dropped table stops it.

use bricks_control::{Kind, Running, SourceSpec, SourceStats};
use bricks_element::{ArgError, Args, Stats};
use bricks_lpm::source::{Hop, RoutePrefix};
use std::sync::{Arc, Mutex, Weak};

/// A lookup element's live route source, before and after it starts.
pub struct Live {
    spec: SourceSpec,
    devices: Vec<String>,
    stats: Arc<SourceStats>,
    running: Mutex<Option<Running>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        // Stopping joins the source's thread, which may be the one
        // dropping the table: hand it to a thread of its own.
        if let Some(r) = self.running.get_mut().ok().and_then(Option::take) {
            let _ = std::thread::Builder::new()
                .name("routes stop".into())
                .spawn(move || drop(r));
        }
    }
}

/// The ROUTES argument: a file, a live source, or nothing.
pub enum RoutesArg {
    /// No ROUTES.
    None,
    /// A route file.
    File(std::path::PathBuf),
    /// A live source and the interface of each output.
    Live(SourceSpec, Vec<String>),
}

/// Reads ROUTES and DEVICES.
pub fn read(args: &mut Args<'_>) -> Result<RoutesArg, ArgError> {
    let routes: Option<String> = args.read("ROUTES")?;
    let devices: Option<String> = args.read("DEVICES")?;
    let devices: Option<Vec<String>> =
        devices.map(|d| d.split_whitespace().map(str::to_string).collect());
    match routes {
        Some(r) if SourceSpec::is_source(&r) => {
            let spec = SourceSpec::parse(&r).map_err(|e| ArgError::new(format!("ROUTES: {e}")))?;
            let devices = devices.ok_or_else(|| {
                ArgError::new(format!(
                    "ROUTES {spec} needs DEVICES: the interface of each output, in order \
                     (e.g. DEVICES \"eth0 eth1\"), to send a route out of its interface"
                ))
            })?;
            Ok(RoutesArg::Live(spec, devices))
        }
        Some(r) => {
            if devices.is_some() {
                return Err(ArgError::new(
                    "DEVICES is for routes from netlink or FPM (ROUTES netlink:... or fpm)",
                ));
            }
            Ok(RoutesArg::File(r.into()))
        }
        None if devices.is_some() => Err(ArgError::new(
            "DEVICES is for routes from netlink or FPM (ROUTES netlink:... or fpm)",
        )),
        None => Ok(RoutesArg::None),
    }
}

impl Live {
    /// A source not yet started.
    pub fn new(spec: SourceSpec, devices: Vec<String>, noutputs: usize) -> Result<Live, ArgError> {
        if devices.len() > noutputs {
            return Err(ArgError::new(format!(
                "DEVICES names {} interfaces but the element has {} output{}",
                devices.len(),
                noutputs,
                if noutputs == 1 { "" } else { "s" }
            )));
        }
        Ok(Live {
            spec,
            devices,
            stats: Arc::new(SourceStats::default()),
            running: Mutex::new(None),
        })
    }

    /// Starts the source feeding `sink` (once; later calls do nothing).
    pub fn start<S: bricks_control::RouteSink>(
        &self,
        name: &str,
        v4: bool,
        sink: S,
    ) -> Result<(), String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Ok(());
        }
        let label = format!("{name}: {}", self.spec);
        self.stats.set_label(label.clone());
        let r = bricks_control::start(
            &self.spec,
            v4,
            !v4,
            Some(self.devices.clone()),
            sink,
            self.stats.clone(),
            &label,
        )
        .map_err(|e| format!("ROUTES {}: {e}", self.spec))?;
        *running = Some(r);
        Ok(())
    }

    /// The source's counters.
    pub fn stats(&self, s: &mut Stats) {
        for (name, v) in self.stats.all() {
            s.counter(name, v);
        }
    }

    /// Routes learnt and withdrawn so far.
    pub fn updates(&self) -> u64 {
        self.stats.get(Kind::Added) + self.stats.get(Kind::Removed)
    }
}

/// A sink writing into a table held weakly, through `set` and `remove`.
pub struct WeakSink<T: Send + Sync + 'static> {
    table: Weak<T>,
    set: fn(&T, RoutePrefix, &[Hop]) -> Result<(), String>,
    remove: fn(&T, RoutePrefix) -> Result<(), String>,
}

impl<T: Send + Sync + 'static> WeakSink<T> {
    /// A sink for `table`.
    pub fn new(
        table: &Arc<T>,
        set: fn(&T, RoutePrefix, &[Hop]) -> Result<(), String>,
        remove: fn(&T, RoutePrefix) -> Result<(), String>,
    ) -> WeakSink<T> {
        WeakSink {
            table: Arc::downgrade(table),
            set,
            remove,
        }
    }
}

impl<T: Send + Sync + 'static> bricks_control::RouteSink for WeakSink<T> {
    fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        let t = self.table.upgrade().ok_or("the router has stopped")?;
        (self.set)(&t, prefix, hops)
    }

    fn remove(&self, prefix: RoutePrefix) -> Result<(), String> {
        let t = self.table.upgrade().ok_or("the router has stopped")?;
        (self.remove)(&t, prefix)
    }
}
