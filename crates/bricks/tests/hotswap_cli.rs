//! Hot swap from the command line, with no interface: `bricks ctl SOCK
//! hotswap FILE` (a path relative to the client's directory), a file that
//! fails or is missing, and SIGHUP, which re-reads the configuration file
//! of `bricks run` and never ends the router.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bricks() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
}

/// A router killed when dropped.
struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str], socket: &Path, stderr: &Path) -> Router {
    let child = bricks()
        .arg("run")
        .args(args)
        .args(["--quiet", "--duration", "60", "--control"])
        .arg(socket)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .expect("bricks runs");
    let mut r = Router(child);
    let start = Instant::now();
    while UnixStream::connect(socket).is_err() {
        assert!(r.0.try_wait().unwrap().is_none(), "the router ended");
        assert!(start.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    r
}

fn ctl(dir: &Path, socket: &Path, command: &[&str]) -> Output {
    bricks()
        .current_dir(dir)
        .arg("ctl")
        .arg(socket)
        .args(command)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn signal(r: &Router, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &r.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits until `list` names `element` (or no longer does, with `present`
/// false).
fn wait_listed(dir: &Path, socket: &Path, element: &str, present: bool) {
    let start = Instant::now();
    loop {
        let list = text(&ctl(dir, socket, &["list"]));
        if list.lines().any(|l| l.split(' ').next() == Some(element)) == present {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "`{element}` {} the list:\n{list}",
            if present {
                "never joined"
            } else {
                "never left"
            }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

const OLD: &str = "RatedSource(RATE 2000) -> c :: Counter -> q :: Queue -> Unqueue -> Discard;";
const NEW: &str =
    "RatedSource(RATE 2000) -> c :: Counter -> c2 :: Counter -> q :: Queue -> Unqueue -> Discard;";

#[test]
fn ctl_hotswap_takes_a_relative_path_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let (sock, err) = (dir.path().join("s"), dir.path().join("err"));
    std::fs::write(dir.path().join("old.click"), OLD).unwrap();
    std::fs::write(dir.path().join("new.click"), NEW).unwrap();
    std::fs::write(
        dir.path().join("bad.click"),
        "c :: Counter(BOGUS 1) -> Discard;",
    )
    .unwrap();
    let _r = start(
        &[dir.path().join("old.click").to_str().unwrap()],
        &sock,
        &err,
    );
    let out = ctl(dir.path(), &sock, &["hotswap", "bad.click"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).starts_with("error: hot swap refused, the running configuration stays")
            && text(&out).contains("BOGUS"),
        "{}",
        text(&out)
    );
    let out = ctl(dir.path(), &sock, &["hotswap", "missing.click"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("missing.click"), "{}", text(&out));
    let out = ctl(dir.path(), &sock, &["hotswap", "new.click"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).starts_with("ok: hot-swapped to 6 elements, "),
        "{}",
        text(&out)
    );
    wait_listed(dir.path(), &sock, "c2", true);
}

#[test]
fn sighup_rereads_the_configuration_file() {
    let dir = tempfile::tempdir().unwrap();
    let (sock, err) = (dir.path().join("s"), dir.path().join("err"));
    let conf = dir.path().join("router.click");
    std::fs::write(&conf, OLD).unwrap();
    let r = start(&[conf.to_str().unwrap()], &sock, &err);
    std::fs::write(&conf, NEW).unwrap();
    signal(&r, "-HUP");
    wait_listed(dir.path(), &sock, "c2", true);
    // A broken file leaves the running configuration.
    std::fs::write(&conf, "c :: Nonesuch;").unwrap();
    signal(&r, "-HUP");
    let start = Instant::now();
    while !std::fs::read_to_string(&err)
        .unwrap()
        .contains("not swapped")
    {
        assert!(start.elapsed() < Duration::from_secs(10), "no refusal");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_listed(dir.path(), &sock, "c2", true);
    std::fs::write(&conf, OLD).unwrap();
    signal(&r, "-HUP");
    wait_listed(dir.path(), &sock, "c2", false);
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(
        stderr.contains("SIGHUP: ") && stderr.contains("ok: hot-swapped"),
        "{stderr}"
    );
    assert!(stderr.contains("Nonesuch"), "{stderr}");
}

#[test]
fn sighup_without_a_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (sock, err) = (dir.path().join("s"), dir.path().join("err"));
    let mut r = start(&["-e", OLD], &sock, &err);
    signal(&r, "-HUP");
    let start = Instant::now();
    while !std::fs::read_to_string(&err)
        .unwrap()
        .contains("nothing to re-read")
    {
        assert!(start.elapsed() < Duration::from_secs(10), "no message");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(r.0.try_wait().unwrap().is_none(), "SIGHUP ended the router");
    assert!(ctl(dir.path(), &sock, &["read", "c.count"])
        .status
        .success());
}
