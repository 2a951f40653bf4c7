//! What `bricks cluster up` and `bricks multistage up` share in bringing
//! up namespaces and processes and keeping their record
//! (`/run/bricks-KIND/NAME/state.json`): the record's JSON pieces and its
//! atomic write, the names recorded, the processes (recorded with their
//! start time, field 22 of `/proc/PID/stat`, so that a PID reused after
//! ours ended never matches and a stale record never leads to signalling
//! anything else), stopping them all in one grace period, and deleting
//! the namespaces.

use crate::{Context as _, Error};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A process in the record: `{"pid": .., "start_time": ..}` or null.
pub fn proc_json(p: Option<(u32, u64)>) -> Value {
    match p {
        Some((pid, start)) => json!({"pid": pid, "start_time": start}),
        None => Value::Null,
    }
}

/// A process read back from [`proc_json`]'s form.
pub fn proc_from(v: &Value) -> Option<(u32, u64)> {
    Some((
        u32::try_from(v.get("pid")?.as_u64()?).ok()?,
        v.get("start_time")?.as_u64()?,
    ))
}

/// The string `k` of `v`.
pub fn string(v: &Value, k: &str) -> Result<String, Error> {
    v.get(k)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::Record(format!("no string `{k}`")))
}

/// The strings of the array `k` of `v` (none when it is missing).
pub fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Writes a record (atomically: a reader never sees half of it).
pub fn save_json(path: &Path, v: &Value) -> Result<(), Error> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(v).map_err(std::io::Error::from)?;
    std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Reads a record; `Ok(None)` if there is none. `what` names it in
/// messages (`a cluster state`).
pub fn load_json(path: &Path, what: &str) -> Result<Option<Value>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(std::io::Error::from)
        .with_context(|| format!("{}: not {what}", path.display()))
}

/// The names with a record under `root`, sorted.
pub fn recorded(root: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .filter(|e| e.path().join("state.json").exists())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// `name`, or when none is given the one name recorded under `root`;
/// `plural` names them in the message when there are several.
pub fn only_one(root: &str, name: Option<&str>, plural: &str) -> Result<Option<String>, Error> {
    if let Some(n) = name {
        return Ok(Some(n.to_string()));
    }
    let all = recorded(root);
    match all.len() {
        0 => Ok(None),
        1 => Ok(all.into_iter().next()),
        _ => Err(Error::Argument(format!(
            "several {plural} are up ({}): name one",
            all.join(", ")
        ))),
    }
}

/// The name boxes run under: the one given, with anything but letters,
/// digits and `_` replaced by `_` (so that `PREFIX-NAME-` starts these
/// namespaces' names and no other's).
pub fn instance_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// An error once a signal has asked `up` to stop.
pub fn interrupted(stop: &AtomicBool) -> Result<(), Error> {
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    Ok(())
}

/// How `kill` stops a box's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StopSignal {
    /// SIGKILL: a crash; nothing is flushed.
    Kill,
    /// SIGTERM: the router drains and ends.
    Term,
}

impl StopSignal {
    /// `SIGKILL` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Kill => "SIGKILL",
            StopSignal::Term => "SIGTERM",
        }
    }
}

/// Stops the recorded `process` (SIGKILL, or SIGTERM and SIGKILL after
/// `grace`) and forgets it; returns whether it was running.
pub fn end_process(process: &mut Option<(u32, u64)>, how: StopSignal, grace: Duration) -> bool {
    let was = process.is_some_and(|(p, s)| alive(p, s));
    if let Some((pid, s)) = process.take() {
        match how {
            StopSignal::Kill => {
                signal(pid, s, libc::SIGKILL);
                wait_gone(pid, s, Duration::from_secs(5));
            }
            StopSignal::Term => {
                stop(pid, s, grace);
            }
        }
    }
    was
}

/// What `down` did.
#[derive(Debug, Default)]
pub struct DownReport {
    /// Processes stopped (by name), and whether each needed SIGKILL.
    pub stopped: Vec<(String, bool)>,
    pub namespaces: usize,
}

/// What a command calls what it brings up, in its messages.
pub struct Nouns {
    /// The whole, as in `NAME is down`: `cluster`, `multistage router`.
    pub what: &'static str,
    /// The whole in the line `down` prints: `cluster`, `multistage`.
    pub short: &'static str,
    /// One process and several: `server`, `servers`.
    pub one: &'static str,
    pub many: &'static str,
}

/// `bricks KIND down` once root is checked: takes down each of `names`
/// with `down` and says what it did.
pub fn down_each<E>(
    names: Vec<String>,
    nouns: &Nouns,
    down: impl Fn(&str) -> Result<Option<DownReport>, E>,
) -> Result<std::process::ExitCode, E> {
    if names.is_empty() {
        println!("No {} is up.", nouns.what);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    for n in names {
        match down(&n)? {
            Some(r) => {
                let killed: Vec<&str> = r
                    .stopped
                    .iter()
                    .filter(|s| s.1)
                    .map(|s| s.0.as_str())
                    .collect();
                println!(
                    "{} {n} is down: {} {} stopped{}, {} namespace{} deleted",
                    nouns.short,
                    r.stopped.len(),
                    if r.stopped.len() == 1 {
                        nouns.one
                    } else {
                        nouns.many
                    },
                    if killed.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} needed SIGKILL)", killed.join(", "))
                    },
                    r.namespaces,
                    if r.namespaces == 1 { "" } else { "s" },
                );
            }
            None => {
                let mut what = nouns.what.to_string();
                what[..1].make_ascii_uppercase();
                println!("{what} {n} is not up; nothing to do.");
            }
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Stops the recorded processes `(name, pid, start)` that still run:
/// SIGTERM to them all first, then one `grace` period for all, then
/// SIGKILL to those left. Returns each one stopped and whether it needed
/// SIGKILL.
pub fn stop_all<'a>(
    processes: impl Iterator<Item = (&'a str, u32, u64)>,
    grace: Duration,
) -> Vec<(String, bool)> {
    let running: Vec<(&str, u32, u64)> = processes.filter(|&(_, p, s)| alive(p, s)).collect();
    for &(_, pid, s) in &running {
        signal(pid, s, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let mut stopped = Vec::with_capacity(running.len());
    for &(name, pid, s) in &running {
        let left = deadline.saturating_duration_since(Instant::now());
        let killed = !wait_gone(pid, s, left);
        if killed {
            signal(pid, s, libc::SIGKILL);
            wait_gone(pid, s, Duration::from_secs(5));
        }
        stopped.push((name.to_string(), killed));
    }
    stopped
}

/// Deletes the recorded `namespaces` that exist, and any other whose name
/// starts with `prefix` (made after the record was last saved); returns
/// how many.
pub fn delete_namespaces(namespaces: &[String], prefix: &str) -> usize {
    let mut n = 0;
    let existing = bricks_netns::list_namespaces().unwrap_or_default();
    for ns in namespaces {
        if existing.contains(ns) && bricks_netns::ip(&["netns", "del", ns]).is_ok() {
            n += 1;
        }
    }
    for ns in existing {
        if ns.starts_with(prefix) && !namespaces.contains(&ns) {
            let _ = bricks_netns::ip(&["netns", "del", &ns]);
            n += 1;
        }
    }
    n
}

/// Takes down what has no record: the namespaces whose names start with
/// `prefix`, and the state directory `dir`; `None` if there was no such
/// namespace.
pub fn down_unrecorded(prefix: &str, dir: &Path) -> Option<DownReport> {
    let n = delete_namespaces(&[], prefix);
    let _ = std::fs::remove_dir_all(dir);
    (n > 0).then_some(DownReport {
        stopped: Vec::new(),
        namespaces: n,
    })
}

/// The process's start time in clock ticks since boot (field 22 of
/// `/proc/PID/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The process runs (not a zombie) and is the one recorded.
pub fn alive(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(i) = stat.rfind(')') else {
        return false;
    };
    let rest = &stat[i + 1..];
    !rest.trim_start().starts_with('Z')
        && rest
            .split_whitespace()
            .nth(19)
            .and_then(|t| t.parse::<u64>().ok())
            == Some(start)
}

/// CPU time the process has used, user + system, in seconds (fields 14
/// and 15 of `/proc/PID/stat`, in clock ticks).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) as f64 / bricks_netns::clock_ticks())
}

/// Sends `signal` to the recorded process if it is still the one
/// recorded.
pub fn signal(pid: u32, start: u64, signal: i32) {
    if alive(pid, start) {
        // `alive` has just matched this PID's start time, so the signal
        // goes to the process the record names.
        bricks_netns::kill_pid(pid, signal);
    }
}

/// SIGTERM, then SIGKILL if it still runs after `grace`; waits until it
/// is gone (at most a few seconds more). Returns whether it had to be
/// killed.
pub fn stop(pid: u32, start: u64, grace: Duration) -> bool {
    signal(pid, start, libc::SIGTERM);
    if wait_gone(pid, start, grace) {
        return false;
    }
    signal(pid, start, libc::SIGKILL);
    wait_gone(pid, start, Duration::from_secs(5));
    true
}

/// Waits at most `timeout` for the process to end.
pub fn wait_gone(pid: u32, start: u64, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    loop {
        reap(pid);
        if !alive(pid, start) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps `pid` if it is an ended child of this process (`up` and
/// `restart` start the servers; a server they stop must not stay a
/// zombie while they run).
fn reap(pid: u32) {
    bricks_netns::reap_child(pid);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(alive(me, start));
        assert!(!alive(me, start + 1));
        assert!(cpu_seconds(me).is_some());
        assert_eq!(proc_from(&proc_json(Some((me, start)))), Some((me, start)));
        assert_eq!(proc_from(&proc_json(None)), None);
    }

    #[test]
    fn names_are_made_safe_for_the_prefix() {
        assert_eq!(instance_name("my-fly.2"), "my_fly_2");
    }

    #[test]
    fn records_are_written_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("state.json");
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let v = json!({"name": "a", "namespaces": ["x", "y"]});
        save_json(&path, &v).unwrap();
        assert_eq!(load_json(&path, "a state").unwrap(), Some(v.clone()));
        assert_eq!(strings(&v, "namespaces"), ["x", "y"]);
        assert_eq!(string(&v, "name").unwrap(), "a");
        assert!(string(&v, "nothing").is_err());
        let root = dir.path().to_str().unwrap();
        assert_eq!(recorded(root), ["a"]);
        assert_eq!(only_one(root, None, "things").unwrap(), Some("a".into()));
        assert_eq!(
            load_json(&dir.path().join("none"), "a state").unwrap(),
            None
        );
        std::fs::write(&path, "{").unwrap();
        assert!(load_json(&path, "a state")
            .unwrap_err()
            .to_string()
            .contains(": not a state: "));
    }
}
