//! The control socket of a running router, and `bricks ctl`, its client.
//!
//! `bricks run --control PATH` listens on a Unix stream socket. A client
//! sends one command line and reads the answer until the router closes the
//! connection. Commands change the router while traffic flows:
//!
//! - `write ELEMENT.HANDLER [VALUE]`: a write handler (a route `add`, a
//!   Counter `reset`), called on every worker, or on one worker when the
//!   handler edits a table the workers share;
//! - `steer ...`: the software traffic splitting of `--mode serial`
//!   (`steer show`, `steer key symmetric`, `steer queues 1`,
//!   `steer mac AA:BB:CC:DD:EE:FF 1`, `steer flow udp 10.1.0.2:5000
//!   10.2.0.2:9 0`);
//! - `stats`: every element's counters as JSON, per worker and summed;
//! - `queues`: which worker owns which device queue.

use bricks_io::live;
use bricks_io::steer::Steering;
use bricks_runtime::Control;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const HELP: &str = "commands:
  write ELEMENT.HANDLER [VALUE]   call a write handler (e.g. write rt.add 10.9.0.0/16 1)
  steer show|key HEX|key symmetric|key default|queues N|mac MAC WORKER|mac del MAC|
        flow udp|tcp SRC:PORT DST:PORT WORKER|flow del ...   software steering (--mode serial)
  stats                           counters as JSON, per worker and summed
  queues                          which worker owns which device queue
  help                            this text";

/// A listening control socket; the file is removed when it is dropped.
pub(crate) struct ControlSocket {
    path: PathBuf,
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts answering commands on `path` in a thread of its own.
pub(crate) fn serve(
    path: &Path,
    control: Control,
    steering: Arc<Steering>,
) -> anyhow::Result<ControlSocket> {
    if path.exists() {
        // A socket left by a router that was killed; a live one answers.
        if UnixStream::connect(path).is_ok() {
            anyhow::bail!("{}: another router is listening there", path.display());
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| anyhow::anyhow!("control socket {}: {e}", path.display()))?;
    std::thread::Builder::new()
        .name("bricks-control".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let _ = answer(conn, &control, &steering);
            }
        })?;
    Ok(ControlSocket {
        path: path.to_path_buf(),
    })
}

fn answer(conn: UnixStream, control: &Control, steering: &Steering) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line)?;
    let reply = execute(line.trim(), control, steering);
    let mut w = &conn;
    w.write_all(reply.as_bytes())?;
    if !reply.ends_with('\n') {
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Runs one command; the answer starts with `error:` when it failed.
pub(crate) fn execute(cmd: &str, control: &Control, steering: &Steering) -> String {
    let (verb, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
    let rest = rest.trim();
    match verb {
        "write" => {
            let (target, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let Some((element, handler)) = target.rsplit_once('.') else {
                return format!("error: `{target}`: expected ELEMENT.HANDLER");
            };
            match control.write_handler(element, handler, value.trim()) {
                Ok(()) => "ok".into(),
                Err(e) => format!("error: {e}"),
            }
        }
        "steer" => match steering.apply(rest) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        },
        "stats" => {
            let per = control.live();
            let total = bricks_runtime::sum_stats(per.iter().map(Vec::as_slice));
            let mut v: serde_json::Value =
                serde_json::from_str(&crate::runner::stats_json(Duration::ZERO, &per))
                    .unwrap_or_default();
            let mut sum = serde_json::Map::new();
            for e in &total {
                let mut c = serde_json::Map::new();
                for (k, n) in e.stats.entries() {
                    c.insert(k.to_string(), (*n).into());
                }
                sum.insert(e.name.clone(), c.into());
            }
            v["total"] = sum.into();
            v.to_string()
        }
        "queues" => live::ownership()
            .iter()
            .map(|o| {
                format!(
                    "{} {} queue {} ({}) -> worker {}\n",
                    o.device, o.direction, o.queue, o.backend, o.worker
                )
            })
            .collect(),
        "help" | "" => HELP.into(),
        _ => format!("error: unknown command `{verb}`\n{HELP}"),
    }
}

/// `bricks ctl SOCKET COMMAND...`: sends the command, prints the answer.
pub(crate) fn ctl(socket: &Path, command: &[String]) -> anyhow::Result<std::process::ExitCode> {
    let mut conn = UnixStream::connect(socket).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e} (is a router running with --control {}?)",
            socket.display(),
            socket.display()
        )
    })?;
    conn.write_all(command.join(" ").as_bytes())?;
    conn.write_all(b"\n")?;
    conn.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    conn.read_to_string(&mut reply)?;
    print!("{reply}");
    Ok(if reply.starts_with("error:") {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}
