//! IPsec through the command line, in memory: an encapsulating gateway
//! and a decapsulating one in one configuration, each with its own SA file
//! (as two real gateways would have), run with `bricks run`; configuration
//! errors as `bricks check` reports them; rekeying with the control socket
//! while traffic flows; several workers sharing one SA.
//!
//! Interoperation with Linux XFRM over veths is in `ipsec_netns.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("bricks runs")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const KEY_A: &str = "0x3ad77bb40d7a3660a89ecaf32466ef97c0ffee01";
const KEY_B: &str = "0x000102030405060708090a0b0c0d0e0f10111213";

fn state(spi: &str, key: &str, extra: &str) -> String {
    format!(
        "ip xfrm state add src 10.0.0.1 dst 10.0.0.2 proto esp spi {spi} reqid 1 mode tunnel \
         aead 'rfc4106(gcm(aes))' {key} 128 {extra}\n"
    )
}

const OUT_POLICY: &str = "ip xfrm policy add src 192.168.1.0/24 dst 192.168.2.0/24 dir out \
    tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel\n";
const IN_POLICY: &str = "ip xfrm policy add src 192.168.1.0/24 dst 192.168.2.0/24 dir in \
    tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel\n";

/// The two gateways' files: the sender's out policy, the receiver's in
/// policy, the same states.
fn files(dir: &Path, states: &str) -> (String, String) {
    let a = dir.join("a.sa");
    let b = dir.join("b.sa");
    std::fs::write(&a, format!("{states}{OUT_POLICY}")).unwrap();
    std::fs::write(&b, format!("{states}{IN_POLICY}")).unwrap();
    (
        a.to_string_lossy().into_owned(),
        b.to_string_lossy().into_owned(),
    )
}

/// Encapsulate, decapsulate, check the inner packets.
fn tunnel(source: &str, a: &str, b: &str) -> String {
    format!(
        "{source} -> Strip(14) -> MarkIPHeader -> enc :: IPsecESPEncap(FILE {a}) \
         -> ct :: Counter -> dec :: IPsecESPDecap(FILE {b}) -> CheckIPHeader -> inner :: Counter \
         -> Discard;"
    )
}

fn counter(out: &str, element: &str, name: &str) -> u64 {
    zero_or(out, element, name).unwrap_or_else(|| panic!("no {name} for {element} in\n{out}"))
}

/// A counter of the final report (`element (Class): a=1 b=2 ...`), which
/// leaves out counters that are zero: `None` if absent.
fn zero_or(out: &str, element: &str, name: &str) -> Option<u64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{element} (")))
        .unwrap_or_else(|| panic!("no line for {element} in\n{out}"));
    let key = format!(" {name}=");
    let at = line.find(&key)?;
    line[at + key.len()..].split(' ').next()?.parse().ok()
}

#[test]
fn a_tunnel_in_memory_delivers_every_packet() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path(), &state("0x1001", KEY_A, ""));
    let src =
        "WorkloadSource(IMIX true, FLOWS 16, SRC 192.168.1.0/24, DST 192.168.2.0/24, LIMIT 5000)";
    let o = bricks(&["run", "-e", &tunnel(src, &a, &b)]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "{out}");
    assert_eq!(counter(&out, "enc", "protected"), 5000, "{out}");
    assert_eq!(counter(&out, "dec", "decapsulated"), 5000, "{out}");
    assert_eq!(counter(&out, "inner", "count"), 5000, "{out}");
    assert_eq!(counter(&out, "enc", "sa 0x1001 packets"), 5000, "{out}");
    assert_eq!(counter(&out, "dec", "sa 0x1001 packets"), 5000, "{out}");
    // Inner bytes in, inner bytes out.
    assert_eq!(
        counter(&out, "enc", "sa 0x1001 bytes"),
        counter(&out, "dec", "sa 0x1001 bytes")
    );
    // The ESP packets are bigger by the overhead: outer header 20, ESP
    // header 8, IV 8, trailer 2 to 5, ICV 16.
    let overhead = counter(&out, "ct", "byte_count") - counter(&out, "inner", "byte_count");
    assert!((54 * 5000..=57 * 5000).contains(&overhead), "{overhead}");
}

#[test]
fn traffic_no_policy_selects_bypasses_and_the_receiver_drops_what_its_policy_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path(), &state("0x1001", KEY_A, ""));
    // 192.168.3.0/24 is no policy's business: it leaves in the clear on
    // output 1.
    let conf = format!(
        "WorkloadSource(SRC 192.168.1.0/24, DST 192.168.3.0/24, LIMIT 10) -> Strip(14) \
         -> MarkIPHeader -> enc :: IPsecESPEncap(FILE {a}) -> Discard; enc[1] -> clear :: Counter -> Discard;"
    );
    let o = bricks(&["run", "-e", &conf]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert_eq!(counter(&out, "enc", "bypass"), 10, "{out}");
    assert_eq!(counter(&out, "clear", "count"), 10, "{out}");
    // The receiver's file allows 192.168.1/24 -> 192.168.2/24 only: the
    // same SA carrying other inner addresses is refused.
    let (a2, _) = {
        let d = dir.path().join("wide");
        std::fs::create_dir(&d).unwrap();
        let a2 = d.join("a.sa");
        std::fs::write(
            &a2,
            format!(
                "{}ip xfrm policy add src 0.0.0.0/0 dst 0.0.0.0/0 dir out tmpl src 10.0.0.1 \
                 dst 10.0.0.2 proto esp reqid 1 mode tunnel\n",
                state("0x1001", KEY_A, "")
            ),
        )
        .unwrap();
        (a2.to_string_lossy().into_owned(), ())
    };
    let src = "WorkloadSource(SRC 172.16.0.0/24, DST 192.168.2.0/24, LIMIT 10)";
    let o = bricks(&["run", "-e", &tunnel(src, &a2, &b)]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert_eq!(counter(&out, "dec", "policy"), 10, "{out}");
}

#[test]
fn errors_in_the_sa_file_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad_key = state("0x1001", "0x0011223344", "");
    let cases = [
        (
            format!("# comment\n\n{bad_key}{OUT_POLICY}"),
            "line 3",
            "must be 20 bytes",
        ),
        (
            format!(
                "{}{}",
                state("0x1001", KEY_A, ""),
                OUT_POLICY.replace("reqid 1", "reqid 9")
            ),
            "line 2",
            "matches no state",
        ),
        (
            format!(
                "{}{OUT_POLICY}",
                state("0x1001", KEY_A, "").replace("mode tunnel", "mode transport")
            ),
            "line 1",
            "tunnel mode only",
        ),
    ];
    for (i, (file, line, why)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{i}.sa"));
        std::fs::write(&path, file).unwrap();
        let conf = format!("Idle -> IPsecESPEncap(FILE {}) -> Discard;", path.display());
        let o = bricks(&["check", "-e", &conf]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(line) && err.contains(why), "{i}: {err}");
    }
    let o = bricks(&[
        "check",
        "-e",
        "Idle -> IPsecESPDecap(FILE /nonexistent.sa) -> Discard;",
    ]);
    assert!(text(&o.stderr).contains("cannot read SA file /nonexistent.sa"));
}

#[test]
fn several_workers_never_reuse_a_sequence_number() {
    // Both workers encapsulate with the one SA; the receiver's replay
    // window (4096, wide enough for the two workers' interleaving) would
    // count any number used twice as a replay.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path(), &state("0x1001", KEY_A, "replay-window 4096"));
    let src = "WorkloadSource(SRC 192.168.1.0/24, DST 192.168.2.0/24, FLOWS 64, LIMIT 40000, ALL_WORKERS true)";
    let o = bricks(&["run", "-e", &tunnel(src, &a, &b), "--threads", "2"]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "{out}");
    assert_eq!(counter(&out, "enc", "sa 0x1001 packets"), 40000, "{out}");
    assert_eq!(counter(&out, "dec", "decapsulated"), 40000, "{out}");
    assert_eq!(zero_or(&out, "dec", "replay"), None, "{out}");
    assert_eq!(zero_or(&out, "dec", "too_old"), None, "{out}");
}

#[test]
fn lifetimes_raise_events_and_stop_the_sa() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(
        dir.path(),
        &state("0x1001", KEY_A, "limit packet-soft 100 packet-hard 200"),
    );
    // One packet per batch, so that the limits are checked per packet.
    let src = "WorkloadSource(SRC 192.168.1.0/24, DST 192.168.2.0/24, LIMIT 300, BURST 1)";
    let o = bricks(&["run", "-e", &tunnel(src, &a, &b)]);
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(
        out.contains("soft lifetime reached; replace it (rekey): 100 packets"),
        "{out}"
    );
    assert!(
        out.contains("hard lifetime reached; the SA is no longer used"),
        "{out}"
    );
    assert_eq!(counter(&out, "enc", "protected"), 200, "{out}");
    assert_eq!(counter(&out, "enc", "expired"), 100, "{out}");
}

#[test]
fn rekeying_while_traffic_flows_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let old = state("0x1001", KEY_A, "");
    let new = state("0x1002", KEY_B, "");
    let (a, b) = files(dir.path(), &old);
    let sock = dir.path().join("ctl.sock");
    let s = sock.to_str().unwrap();
    // 20,000 packets/s for 3 s.
    let src = "WorkloadSource(SRC 192.168.1.0/24, DST 192.168.2.0/24, RATE 20000, LIMIT 60000, STOP true)";
    let child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["run", "-e", &tunnel(src, &a, &b), "--control", s])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let ctl = |what: &str| {
        let o = bricks(&["ctl", s, "write", what, "x"]);
        assert_eq!(text(&o.stdout).trim(), "ok", "{what}: {}", text(&o.stderr));
    };
    std::thread::sleep(Duration::from_millis(700));
    // 1. The receiver learns the new SA; the sender starts using it.
    std::fs::write(&b, format!("{old}{new}{IN_POLICY}")).unwrap();
    ctl("dec.reload");
    std::fs::write(
        &a,
        format!(
            "{old}{new}{}",
            OUT_POLICY.replace("reqid 1", "spi 0x1002 reqid 1")
        ),
    )
    .unwrap();
    ctl("enc.reload");
    std::thread::sleep(Duration::from_millis(700));
    // 2. The old SA goes, on both sides.
    std::fs::write(&a, format!("{new}{OUT_POLICY}")).unwrap();
    ctl("enc.reload");
    std::fs::write(&b, format!("{new}{IN_POLICY}")).unwrap();
    ctl("dec.reload");
    let o = child.wait_with_output().unwrap();
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "{out}");
    assert_eq!(counter(&out, "enc", "protected"), 60000, "{out}");
    assert_eq!(counter(&out, "dec", "decapsulated"), 60000, "{out}");
    assert_eq!(counter(&out, "inner", "count"), 60000, "{out}");
    assert!(
        out.contains("2 SAs kept, 0 added") || out.contains("1 SAs kept, 1 added"),
        "{out}"
    );
    // The new SA carried the end of the run; the old one, removed, still
    // reports what it carried before: between them, every packet.
    for e in ["enc", "dec"] {
        let (old, new) = (
            counter(&out, e, "sa 0x1001 packets"),
            counter(&out, e, "sa 0x1002 packets"),
        );
        assert!(old > 0 && new > 0, "{e}: {out}");
        assert_eq!(old + new, 60000, "{e}: {out}");
    }
}
