//! Hot swap of a running router (Click's `hotswap`): `bricks ctl SOCK
//! hotswap FILE`, Click's `hotswap` write handler, and SIGHUP to `bricks
//! run CONFIG`, which re-reads CONFIG.
//!
//! The new configuration is parsed and checked against the running one
//! ([`bricks_runtime::build_hotswap`]) and its graphs instantiated while
//! the old one forwards; a configuration that fails changes nothing and
//! the reason goes back to whoever asked. Then the workers switch over
//! between two rounds ([`bricks_runtime::hotswap`]). One swap runs at a
//! time.

use bricks_config::Source;
use bricks_runtime::{Control, Plan};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Builds the plan of a configuration text beside the running plan, with
/// the run's `-D` variables and build options.
pub(crate) type BuildBeside = dyn Fn(Source, &Plan) -> Result<Plan, String> + Send + Sync;

/// Called with the new plan after every swap (the control sockets update
/// their element lists).
type Listener = Box<dyn Fn(&Arc<Plan>) + Send>;

/// How a running router is reconfigured: what builds a new plan, and the
/// file SIGHUP re-reads.
#[derive(Clone)]
pub(crate) struct Reconfigure {
    /// Builds a plan beside the running one.
    pub build: Arc<BuildBeside>,
    /// The configuration file of `bricks run`, if it was given as one.
    pub file: Option<PathBuf>,
}

impl std::fmt::Debug for Reconfigure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconfigure")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Swaps the configuration of running workers.
pub(crate) struct Swapper {
    plan: Mutex<Arc<Plan>>,
    control: Control,
    how: Reconfigure,
    listeners: Mutex<Vec<Listener>>,
}

/// The classes of the host's TUN and TAP devices: made when the router
/// starts, so a swap carries those that are open and opens no other.
const HOST_DEVICES: [&str; 3] = ["KernelTun", "KernelTap", "FromHost"];

impl Swapper {
    /// A swapper for workers running `plan`.
    pub fn new(plan: Arc<Plan>, control: Control, how: Reconfigure) -> Swapper {
        Swapper {
            plan: Mutex::new(plan),
            control,
            how,
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// The plan running now.
    pub fn plan(&self) -> Arc<Plan> {
        self.plan.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Calls `f` with the new plan after each swap.
    pub fn on_swap(&self, f: impl Fn(&Arc<Plan>) + Send + 'static) {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(f));
    }

    /// The configuration file SIGHUP re-reads.
    pub fn file(&self) -> Option<&Path> {
        self.how.file.as_deref()
    }

    /// Swaps in the configuration in file `path`.
    pub fn swap_file(&self, path: &Path) -> Result<String, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        self.swap(Source {
            name: path.display().to_string(),
            text,
        })
    }

    /// Swaps in configuration `source`: checks it, builds it beside the
    /// running one, and switches the workers over. On any error the
    /// running configuration stays and the error is returned.
    pub fn swap(&self, source: Source) -> Result<String, String> {
        // The fast path's maps follow the running configuration's tables;
        // a new configuration would need new ones, loaded before its
        // interfaces open.
        if bricks_io::live::any_fast_path() {
            return Err("a hot swap is refused while an XDP fast path (FASTPATH true) is in                         use: restart the router with the new configuration"
                .into());
        }
        let mut current = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        let new = (self.how.build)(source, &current)?;
        let added = check_devices(&new)?;
        let opened = bricks_io::live::open_more(&added)?;
        if let Err(e) = self.control.hotswap(&new) {
            bricks_io::live::close(&added);
            return Err(e);
        }
        for r in &opened {
            eprintln!("hot swap: {r}");
        }
        let (elements, kept) = carried(&current, &new);
        let new = Arc::new(new);
        *current = new.clone();
        drop(current);
        for l in self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            l(&new);
        }
        let mut said = format!(
            "ok: hot-swapped to {elements} elements, {kept} of them taking over the state of \
             the running ones\n"
        );
        for r in &opened {
            said.push_str(&format!("ok: opened {r}\n"));
        }
        Ok(said)
    }
}

/// The new plan's element count, and how many of them have an element of
/// the same name and class in the old one.
fn carried(old: &Plan, new: &Plan) -> (usize, usize) {
    let old: std::collections::HashMap<&str, &str> = old
        .elements
        .iter()
        .map(|e| (e.name.as_str(), e.class.name))
        .collect();
    let kept = new
        .elements
        .iter()
        .filter(|e| old.get(e.name.as_str()) == Some(&e.class.name))
        .count();
    (new.elements.len(), kept)
}

/// Refuses a configuration that needs a host device the running router
/// has not made (a swap hands over the open TUN/TAP devices and makes
/// none); returns the interfaces it names that are not open yet, for the
/// swap to open.
fn check_devices(plan: &Plan) -> Result<Vec<String>, String> {
    // The host's devices (KernelTun, KernelTap, FromHost) were declared
    // while the new plan was built; one the running router has open is
    // carried (its queues stay in the device table and the new elements
    // take them), a new one would need opening.
    let missing = bricks_io::tun::unopened();
    if !missing.is_empty() {
        let which: Vec<String> = plan
            .elements
            .iter()
            .filter(|e| HOST_DEVICES.contains(&e.class.name))
            .map(|e| format!("{} :: {}", e.name, e.class.name))
            .collect();
        return Err(format!(
            "{}: the host device{} {} {} not open in the running router, and a hot swap \
             opens none; restart the router to add a host device",
            which.join(", "),
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" }
        ));
    }
    let mut added: Vec<String> = Vec::new();
    for e in &plan.elements {
        if !matches!(e.class.name, "FromDevice" | "PollDevice" | "ToDevice") {
            continue;
        }
        let dev = e.args.iter().find_map(|a| {
            let (k, v) = bricks_config::split_keyword(&a.text);
            match k {
                None | Some("DEVNAME") => Some(v.trim().to_string()),
                _ => None,
            }
        });
        let Some(dev) = dev else { continue };
        if bricks_io::binding::lookup(&dev).is_none()
            && !bricks_io::live::is_open(&dev)
            && !added.contains(&dev)
        {
            added.push(dev);
        }
    }
    Ok(added)
}
