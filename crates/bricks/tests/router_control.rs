//! Per-router control sockets (`bricks run --router-control NAME=PATH`):
//! a virtual router's administrator reads and changes that router and
//! nothing else, by any spelling of another router's element; the box's
//! own socket sums each router's counters (`routers`) and shows one
//! router's (`stats --router NAME`). Everything runs in memory: two
//! compound routers made of plain elements.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Two routers of one box. Red's route table is `rib` (it has no `rt`)
/// and every packet misses it (their destination annotation is 0.0.0.0),
/// so red only drops; blue's is `rt`, and its default route sends packets
/// out of the router through the Counter `o`. `top` is the box's own.
const TWO_ROUTERS: &str = "
elementclass Red {
  RatedSource(RATE 2000) -> c :: Counter -> rib :: RadixIPLookup(10.0.0.0/8 0, 192.168.0.0/16 1);
  rib[0] -> Discard; rib[1] -> Discard;
}
elementclass Blue {
  RatedSource(RATE 2000) -> c :: Counter -> rt :: RadixIPLookup(10.0.0.0/8 0, 0.0.0.0/0 1);
  rt[0] -> Discard; rt[1] -> o :: Counter -> output;
}
red :: Red;
blue :: Blue -> Discard;
top :: RatedSource(RATE 10) -> tc :: Counter -> Discard;
";

/// Two routers sharing one forwarding path: each is a compound holding
/// only its route table (`VRRouteTable`), which the box's `VRIPLookup`
/// reads by the packet's virtual-router annotation. RatedSource's packets
/// carry annotation 0 (red) and destination 0.0.0.0, so red's default
/// route sends them out of 1 (`c1`); blue's table sees none of them.
const SHARED_PLANE: &str = "
elementclass Tenant { $default |
  rt :: VRRouteTable(10.0.0.0/8 0, $default, OUTPUTS 2);
}
red :: Tenant(0.0.0.0/0 10.0.0.1 1);
blue :: Tenant(0.0.0.0/0 10.0.0.2 0);
RatedSource(RATE 2000) -> lk :: VRIPLookup(red/rt, blue/rt);
lk[0] -> c0 :: Counter -> Discard;
lk[1] -> c1 :: Counter -> Discard;
";

fn bricks() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A running `bricks run`, killed (by its PID) when dropped.
struct Router {
    child: Child,
}

impl Router {
    /// Starts `bricks run -e TWO_ROUTERS extra...` under `umask` and waits
    /// until every socket in `sockets` answers.
    fn start(extra: &[&str], sockets: &[&Path], umask: u32) -> Router {
        Router::start_config(TWO_ROUTERS, extra, sockets, umask)
    }

    /// [`Router::start`] with another configuration.
    fn start_config(config: &str, extra: &[&str], sockets: &[&Path], umask: u32) -> Router {
        let mut cmd = bricks();
        cmd.args(["run", "-e", config, "--quiet", "--duration", "60"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: umask(2) is async-signal-safe and cannot fail.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(umask as libc::mode_t);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("bricks runs");
        let start = Instant::now();
        for socket in sockets {
            while UnixStream::connect(socket).is_err() {
                if let Some(status) = child.try_wait().unwrap() {
                    let mut e = String::new();
                    child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
                    panic!("the router ended ({status}) before listening: {e}");
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no socket {} after 10 s",
                    socket.display()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Router { child }
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `bricks ctl socket command...`, killed after 10 s.
fn ctl(socket: &Path, command: &[&str]) -> Output {
    let mut child = bricks()
        .arg("ctl")
        .arg(socket)
        .args(command)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bricks ctl {command:?} took longer than 10 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// The reply, which must not be an error.
fn ok(socket: &Path, command: &[&str]) -> String {
    let o = ctl(socket, command);
    assert!(
        o.status.success(),
        "{command:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// The reply, which must be an error.
fn error(socket: &Path, command: &[&str]) -> String {
    let o = ctl(socket, command);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{command:?}: {out}");
    assert!(out.starts_with("error: "), "{command:?}: {out}");
    out
}

/// A number the router answers with.
fn number(socket: &Path, command: &[&str]) -> u64 {
    let reply = ok(socket, command);
    reply
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{command:?}: not a number: {reply}"))
}

/// Waits until `command`'s reply is `want`: counters are read from a copy
/// the workers publish, up to 50 ms old, so a write shows a moment later.
fn eventually(socket: &Path, command: &[&str], want: u64) {
    let start = Instant::now();
    loop {
        let got = number(socket, command);
        if got == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{command:?}: {got}, not {want}, after 5 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What `command` reads once every earlier change has been published.
fn settled(socket: &Path, command: &[&str]) -> u64 {
    std::thread::sleep(Duration::from_millis(200));
    number(socket, command)
}

/// The box's socket and one per router, in a fresh directory.
struct Sockets {
    _dir: tempfile::TempDir,
    main: PathBuf,
    red: PathBuf,
    blue: PathBuf,
}

impl Sockets {
    fn new() -> Sockets {
        let dir = tempfile::tempdir().unwrap();
        Sockets {
            main: dir.path().join("main.sock"),
            red: dir.path().join("red.sock"),
            blue: dir.path().join("blue.sock"),
            _dir: dir,
        }
    }

    /// `--control main --router-control red=... --router-control blue=...`.
    fn start_all(&self) -> Router {
        self.start_all_config(TWO_ROUTERS)
    }

    /// [`Sockets::start_all`] with another configuration.
    fn start_all_config(&self, config: &str) -> Router {
        let red = format!("red={}", self.red.display());
        let blue = format!("blue={}", self.blue.display());
        let main = self.main.display().to_string();
        Router::start_config(
            config,
            &[
                "--control",
                &main,
                "--router-control",
                &red,
                "--router-control",
                &blue,
            ],
            &[&self.main, &self.red, &self.blue],
            0o077,
        )
    }
}

#[test]
fn a_router_socket_changes_its_own_route_table() {
    let s = Sockets::new();
    let _r = s.start_all();
    assert_eq!(number(&s.red, &["read", "rib.routes"]), 2);
    assert_eq!(
        ok(&s.red, &["write", "rib.add", "10.9.0.0/16", "1"]).trim(),
        "ok"
    );
    eventually(&s.red, &["read", "rib.routes"], 3);
    // The box sees the same table under its full name.
    eventually(&s.main, &["read", "red/rib.routes"], 3);
    assert_eq!(ok(&s.red, &["read", "rib.name"]).trim(), "rib");
    assert_eq!(ok(&s.red, &["read", "rib.class"]).trim(), "RadixIPLookup");
    assert_eq!(
        ok(&s.red, &["write", "rib.remove", "10.9.0.0/16"]).trim(),
        "ok"
    );
    eventually(&s.red, &["read", "rib.routes"], 2);
    // Handler errors come back as errors.
    let e = error(&s.red, &["write", "rib.remove", "10.9.0.0/16"]);
    assert!(e.contains("no such route"), "{e}");
    // Blue's table was never touched.
    assert_eq!(settled(&s.blue, &["read", "rt.routes"]), 2);
}

#[test]
fn on_a_shared_plane_a_router_socket_changes_its_own_table_only() {
    let s = Sockets::new();
    let _r = s.start_all_config(SHARED_PLANE);
    assert_eq!(ok(&s.red, &["read", "rt.class"]).trim(), "VRRouteTable");
    assert_eq!(number(&s.red, &["read", "rt.routes"]), 2);
    // Red's packets leave by red's default route...
    let before = settled(&s.main, &["read", "c1.count"]);
    assert!(before > 0, "red's packets leave by output 1");
    assert_eq!(settled(&s.main, &["read", "c0.count"]), 0);
    // ... until red's administrator points it elsewhere: blue's socket
    // cannot, by any spelling.
    for name in ["../red/rt.set", "/red/rt.set", "red/rt.set"] {
        let e = error(&s.blue, &["write", name, "0.0.0.0/0 10.0.0.9 0"]);
        assert!(e.contains("in router `blue`"), "{name}: {e}");
    }
    assert!(settled(&s.main, &["read", "c1.count"]) > before);
    assert_eq!(
        ok(&s.red, &["write", "rt.set", "0.0.0.0/0 10.0.0.9 0"]).trim(),
        "ok"
    );
    let moved = settled(&s.main, &["read", "c0.count"]);
    assert!(moved > 0, "red's packets now leave by output 0");
    let c1 = number(&s.main, &["read", "c1.count"]);
    assert_eq!(settled(&s.main, &["read", "c1.count"]), c1);
    // Red's table changed, blue's did not.
    assert!(ok(&s.red, &["read", "rt.table"]).contains("10.0.0.9"));
    assert!(!ok(&s.blue, &["read", "rt.table"]).contains("10.0.0.9"));
    assert_eq!(number(&s.blue, &["read", "rt.no_route"]), 0);
    // A route red removes leaves its packets with no route, counted as
    // red's.
    ok(&s.red, &["write", "rt.remove", "0.0.0.0/0"]);
    let missed = settled(&s.red, &["read", "rt.no_route"]);
    assert!(missed > 0, "red counts its packets that found no route");
    assert!(settled(&s.red, &["read", "rt.no_route"]) > missed);
    assert_eq!(number(&s.blue, &["read", "rt.no_route"]), 0);
}

/// A refusal without its "did you mean" clause.
fn without_suggestion(reply: &str) -> String {
    match reply.find("; did you mean `") {
        Some(at) => {
            let end = reply[at..].find("`?").map_or(reply.len(), |e| at + e + 2);
            format!("{}{}", &reply[..at], &reply[end..])
        }
        None => reply.to_string(),
    }
}

#[test]
fn a_router_socket_refuses_another_routers_elements_by_every_spelling() {
    let s = Sockets::new();
    let _r = s.start_all();
    assert_eq!(number(&s.blue, &["read", "rt.routes"]), 2);
    let spellings = [
        "blue/rt",
        "../blue/rt",
        "/blue/rt",
        "rt",
        "./rt",
        "red/../blue/rt",
        "..",
        "",
        "top",
        "tc",
        "blue",
        "red/rib",
    ];
    for name in spellings {
        let target = format!("{name}.add");
        let e = error(&s.red, &["write", &target, "10.9.0.0/16", "1"]);
        assert!(
            e.starts_with(&format!("error: no element `{name}` in router `red`")),
            "{name}: {e}"
        );
        // Nothing in the reply tells whether the element exists elsewhere:
        // but for the name echoed and the suggestion drawn from red's own
        // elements, it reads exactly as for a name no router has.
        let nowhere = error(&s.red, &["write", "nowhere.add", "10.9.0.0/16", "1"]);
        assert_eq!(
            without_suggestion(&e.replacen(&format!("`{name}`"), "`nowhere`", 1)),
            without_suggestion(&nowhere),
            "{name}"
        );
        let rest = e.replacen(&format!("`{name}`"), "", 1);
        for other in ["blue", "top", "tc"] {
            assert!(!rest.contains(other), "{name}: {e}");
        }
        let read = format!("{name}.routes");
        let e = error(&s.red, &["read", &read]);
        assert!(e.contains("in router `red`"), "{name}: {e}");
        if !name.is_empty() {
            let e = error(&s.red, &["list", name]);
            assert!(e.contains("in router `red`"), "{name}: {e}");
        }
    }
    // Blue's state is unchanged, seen through its own socket and the box's.
    assert_eq!(settled(&s.blue, &["read", "rt.routes"]), 2);
    assert_eq!(settled(&s.main, &["read", "blue/rt.routes"]), 2);
    // Not even for a moment: the route was never there to remove.
    let e = error(&s.blue, &["write", "rt.remove", "10.9.0.0/16"]);
    assert!(e.contains("no such route"), "{e}");
    // And blue's socket is just as closed to red.
    let e = error(&s.blue, &["write", "rib.add", "10.9.0.0/16", "1"]);
    assert!(
        e.starts_with("error: no element `rib` in router `blue`"),
        "{e}"
    );
    assert_eq!(number(&s.red, &["read", "rib.routes"]), 2);
}

#[test]
fn list_and_stats_through_a_router_socket_show_that_router_only() {
    let s = Sockets::new();
    let _r = s.start_all();
    let list = ok(&s.red, &["list"]);
    assert!(list.lines().any(|l| l == "rib RadixIPLookup"), "{list}");
    assert!(list.lines().any(|l| l == "c Counter"), "{list}");
    for word in ["blue", "top", "tc", "red/", "rt "] {
        assert!(!list.contains(word), "{word} in {list}");
    }
    assert_eq!(list.lines().count(), 5, "{list}");
    let handlers = ok(&s.red, &["list", "c"]);
    assert!(handlers.lines().any(|l| l == "count"), "{handlers}");

    // Wait for the first published counters.
    let start = Instant::now();
    while number(&s.red, &["read", "c.count"]) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "c.count stays 0");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats = ok(&s.red, &["stats"]);
    for word in ["blue", "top", "tc", "red/"] {
        assert!(!stats.contains(word), "{word} in {stats}");
    }
    let v: serde_json::Value = serde_json::from_str(stats.trim()).unwrap();
    assert_eq!(v["router"], "red");
    let total = v["total"].as_object().unwrap();
    assert!(total.contains_key("rib"), "{stats}");
    assert!(total["c"]["count"].as_u64().unwrap() > 0, "{stats}");
    let names: Vec<&String> = total.keys().collect();
    assert_eq!(names.len(), 5, "{names:?}");
    let workers = v["workers"].as_array().unwrap();
    assert!(!workers.is_empty());
    for w in workers {
        for name in w["elements"].as_object().unwrap().keys() {
            assert!(total.contains_key(name), "{name}");
        }
    }
    // The box's socket shows the same router by name.
    let from_box = ok(&s.main, &["stats", "--router", "red"]);
    let v: serde_json::Value = serde_json::from_str(from_box.trim()).unwrap();
    assert_eq!(v["router"], "red");
    assert!(!from_box.contains("blue"), "{from_box}");
    assert_eq!(v["total"].as_object().unwrap().len(), 5, "{from_box}");
    let e = error(&s.main, &["stats", "--router", "green"]);
    assert!(e.contains("no router `green`"), "{e}");
    let e = error(&s.main, &["stats", "--router"]);
    assert!(e.contains("usage: stats [--router NAME]"), "{e}");
}

#[test]
fn a_router_socket_has_none_of_the_boxs_commands() {
    let s = Sockets::new();
    let _r = s.start_all();
    for command in [
        &["steer", "show"][..],
        &["steer", "queues", "1"],
        &["queues"],
        &["routers"],
        &["stop"],
    ] {
        let e = error(&s.red, command);
        assert!(
            e.starts_with(&format!(
                "error: unknown command `{}` on the control socket of router `red`",
                command[0]
            )),
            "{command:?}: {e}"
        );
        assert!(!e.contains("blue"), "{command:?}: {e}");
    }
    // `stats` takes no router there: it is always the socket's own.
    let e = error(&s.red, &["stats", "--router", "blue"]);
    assert!(e.contains("usage: stats"), "{e}");
    let help = ok(&s.red, &["help"]);
    assert!(help.contains("router `red`"), "{help}");
    for absent in ["steer", "queues", "routers", "--router"] {
        assert!(!help.contains(absent), "{absent} in {help}");
    }
    // The box's socket still has them all.
    ok(&s.main, &["steer", "show"]);
    ok(&s.main, &["queues"]);
    let help = ok(&s.main, &["help"]);
    for want in ["routers [--json]", "stats --router NAME", "no_route"] {
        assert!(help.contains(want), "{want}: {help}");
    }
}

#[test]
fn router_sockets_are_0600_whatever_the_umask_and_need_no_box_socket() {
    let s = Sockets::new();
    let red = format!("red={}", s.red.display());
    let r = Router::start(&["--router-control", &red], &[&s.red], 0o000);
    let mode = std::fs::metadata(&s.red).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "mode {mode:o} under umask 000");
    assert!(!s.main.exists());
    assert_eq!(number(&s.red, &["read", "rib.routes"]), 2);
    // A router stopped cleanly takes its socket with it.
    let mut r = r;
    // SAFETY: kill(2) on our own child's PID.
    assert_eq!(unsafe { libc::kill(r.child.id() as i32, libc::SIGTERM) }, 0);
    let start = Instant::now();
    while r.child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!s.red.exists());
}

#[test]
fn an_unknown_router_name_is_refused_at_start() {
    let s = Sockets::new();
    let run = |extra: &[&str]| {
        let o = bricks()
            .args(["run", "-e", TWO_ROUTERS, "--quiet", "--duration", "5"])
            .args(extra)
            .output()
            .unwrap();
        (o.status.code(), text(&o.stderr))
    };
    let green = format!("green={}", s.red.display());
    let (code, e) = run(&["--router-control", &green]);
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("no element of the configuration is named `green/...`"),
        "{e}"
    );
    assert!(e.contains("its routers: red, blue"), "{e}");
    assert!(!s.red.exists());
    let (code, e) = run(&["--router-control", &format!("bleu={}", s.red.display())]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("did you mean `blue`?"), "{e}");
    // Elements of the box are not a router.
    let (code, e) = run(&["--router-control", &format!("top={}", s.red.display())]);
    assert_eq!(code, Some(2), "{e}");
    // One socket per router, one router per socket.
    let red = format!("red={}", s.red.display());
    let (code, e) = run(&["--router-control", &red, "--router-control", &red]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("has a socket already"), "{e}");
    let blue_on_red = format!("blue={}", s.red.display());
    let (code, e) = run(&["--router-control", &red, "--router-control", &blue_on_red]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("another socket's path already"), "{e}");
    let (code, e) = run(&["--router-control", "red"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("expected NAME=PATH"), "{e}");
    // A group for sockets there are none of.
    let (code, e) = run(&["--control-group", "0"]);
    assert_eq!(code, Some(2), "{e}");
}

/// `routers`' line for `name`: (in, out, drops, elements).
fn tally(reply: &str, name: &str) -> (u64, u64, u64, u64) {
    let line = reply
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name}: {reply}"));
    let field = |k: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in {line}"))
            .parse()
            .unwrap()
    };
    (field("in"), field("out"), field("drops"), field("elements"))
}

#[test]
fn routers_sums_each_routers_counters_and_they_grow() {
    let s = Sockets::new();
    let _r = s.start_all();
    let start = Instant::now();
    let first = loop {
        let reply = ok(&s.main, &["routers"]);
        let (red_in, _, _, _) = tally(&reply, "red");
        let (blue_in, blue_out, _, _) = tally(&reply, "blue");
        if red_in > 0 && blue_in > 0 && blue_out > 0 {
            break reply;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{reply}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The box's own elements are no router.
    assert_eq!(first.lines().count(), 2, "{first}");
    let (red_in, red_out, red_drops, red_n) = tally(&first, "red");
    let (blue_in, blue_out, blue_drops, blue_n) = tally(&first, "blue");
    assert_eq!((red_n, blue_n), (5, 5), "{first}");
    // Red routes nothing: what comes in is dropped (no route), none leaves.
    assert_eq!(red_out, 0, "{first}");
    assert!(red_drops > 0, "{first}");
    // Blue's default route takes everything out through `o`.
    assert_eq!(blue_drops, 0, "{first}");
    assert!(blue_out > 0, "{first}");
    std::thread::sleep(Duration::from_millis(400));
    let later = ok(&s.main, &["routers"]);
    let (red_in2, _, red_drops2, _) = tally(&later, "red");
    let (blue_in2, blue_out2, _, _) = tally(&later, "blue");
    assert!(red_in2 > red_in, "{first}{later}");
    assert!(red_drops2 > red_drops, "{first}{later}");
    assert!(blue_in2 > blue_in && blue_out2 > blue_out, "{first}{later}");
    // The counters they are summed from.
    let red_c = number(&s.main, &["read", "red/c.count"]);
    let red_miss = number(&s.main, &["read", "red/rib.no_route"]);
    assert!(red_c >= red_in2 && red_miss >= red_drops2, "{later}");

    let json = ok(&s.main, &["routers", "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2, "{json}");
    assert_eq!(list[0]["router"], "red");
    assert_eq!(list[1]["router"], "blue");
    assert!(list[1]["out"].as_u64().unwrap() >= blue_out2, "{json}");
    let e = error(&s.main, &["routers", "red"]);
    assert!(e.contains("usage: routers [--json]"), "{e}");
}

#[test]
fn help_texts_name_router_sockets() {
    let o = bricks().args(["ctl", "--help"]).output().unwrap();
    let help = text(&o.stdout);
    for want in ["--router-control", "routers", "stats [--router", "no_route"] {
        assert!(help.contains(want), "{want}: {help}");
    }
    let o = bricks().args(["run", "--help"]).output().unwrap();
    let help = text(&o.stdout);
    assert!(help.contains("--router-control <NAME=PATH>"), "{help}");
}

/// Sends `bytes` on a fresh connection and returns the whole reply.
fn raw(socket: &Path, bytes: &[u8]) -> String {
    use std::io::Write;
    let mut c = UnixStream::connect(socket).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = c.write_all(bytes);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let mut reply = Vec::new();
    // A busy socket closes with our line unread, which resets the
    // connection after its reply.
    if let Err(e) = c.read_to_end(&mut reply) {
        assert!(!reply.is_empty(), "no reply: {e}");
    }
    text(&reply)
}

#[test]
fn a_tenant_filling_its_socket_does_not_lock_out_the_box() {
    let s = Sockets::new();
    let _r = s.start_all();
    let held: Vec<UnixStream> = (0..64)
        .map(|_| UnixStream::connect(&s.red).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let reply = raw(&s.red, b"list\n");
    assert!(reply.starts_with("error: busy: 64 clients"), "{reply}");
    // The box's socket and blue's have slots of their own.
    let start = Instant::now();
    assert_eq!(number(&s.main, &["read", "red/rib.routes"]), 2);
    assert_eq!(number(&s.blue, &["read", "rt.routes"]), 2);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?} with red's socket full",
        start.elapsed()
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(number(&s.red, &["read", "rib.routes"]), 2);
}

/// A group other than our own primary one that we may give a file to: any
/// as root, else one of our supplementary groups (if any).
fn another_group() -> Option<(String, u32)> {
    // SAFETY: getegid/geteuid cannot fail.
    let (egid, euid) = unsafe { (libc::getegid(), libc::geteuid()) };
    let mine: Vec<u32> = if euid == 0 {
        Vec::new()
    } else {
        let mut buf = [0 as libc::gid_t; 256];
        // SAFETY: `buf` holds 256 gids.
        let n = unsafe { libc::getgroups(256, buf.as_mut_ptr()) };
        buf[..n.max(0) as usize].to_vec()
    };
    std::fs::read_to_string("/etc/group")
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let gid: u32 = f.nth(1)?.parse().ok()?;
            (gid != egid && (euid == 0 || mine.contains(&gid))).then(|| (name.to_string(), gid))
        })
}

#[test]
fn with_control_group_router_sockets_are_0660_and_the_groups() {
    use std::os::unix::fs::MetadataExt;
    let Some((group, gid)) = another_group() else {
        eprintln!("skipped: no group other than our own to give the socket to");
        return;
    };
    let s = Sockets::new();
    let red = format!("red={}", s.red.display());
    let _r = Router::start(
        &["--router-control", &red, "--control-group", &group],
        &[&s.red],
        0o000,
    );
    let m = std::fs::metadata(&s.red).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o660);
    assert_eq!(m.gid(), gid, "group {group}");
    assert_eq!(number(&s.red, &["read", "rib.routes"]), 2);
}
