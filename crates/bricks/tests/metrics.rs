//! `bricks run --metrics`: the Prometheus endpoint, read by Prometheus'
//! own Python parser and checked against `bricks ctl`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Python with Debian's `python3-prometheus-client` (scripts/setup
/// installs it), if there is one.
fn python_with_parser() -> Option<&'static str> {
    ["/usr/bin/python3", "python3"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import prometheus_client.openmetrics.parser"])
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn scrape(addr: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: bricks\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    body.to_string()
}

/// Parses `text` with prometheus_client's OpenMetrics parser; returns
/// `name{labels} value` lines of every sample.
fn parse(py: &str, text: &str) -> Vec<String> {
    let script = "import sys\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
        for f in text_string_to_metric_families(sys.stdin.read()):\n\
        \x20   for s in f.samples:\n\
        \x20       labels = ','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))\n\
        \x20       print(f'{s.name}{{{labels}}} {s.value}')\n";
    let mut child = Command::new(py)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "the parser refused the metrics: {}\n{text}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn sample(samples: &[String], prefix: &str) -> f64 {
    let line = samples
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no sample {prefix} in {samples:#?}"));
    line.rsplit_once(' ').unwrap().1.parse().unwrap()
}

#[test]
fn metrics_parse_as_openmetrics_and_agree_with_the_control_socket() {
    let Some(py) = python_with_parser() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3-prometheus-client is missing in CI (scripts/setup installs it)"
        );
        eprintln!("skipped: no python3 with prometheus_client (scripts/setup installs it)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("bricks-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ctl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args([
            "run",
            "--quiet",
            "--duration",
            "20",
            "--metrics",
            "0",
            "--control",
            sock.to_str().unwrap(),
            "-e",
            "RatedSource(RATE 2000, LIMIT 100000) -> c :: Counter -> q :: Queue(50) \
             -> Unqueue -> Discard;",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() && Instant::now() < deadline {
        line.clear();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        addr = line
            .trim()
            .strip_prefix("metrics: http://")
            .and_then(|s| s.strip_suffix("/metrics"))
            .map(str::to_string);
    }
    let addr = addr.expect("bricks run printed no metrics address");
    std::thread::sleep(Duration::from_millis(500));
    let first = parse(py, &scrape(&addr));
    let ctl = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["ctl", sock.to_str().unwrap(), "read", "c.count"])
        .output()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let second = parse(py, &scrape(&addr));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    let c = "bricks_element_packets_total{class=Counter,element=c,worker=0}";
    let (a, b) = (sample(&first, c), sample(&second, c));
    let read: f64 = String::from_utf8_lossy(&ctl.stdout).trim().parse().unwrap();
    assert!(a > 0.0 && a <= read && read <= b, "{a} <= {read} <= {b}");
    assert!(sample(&second, "bricks_uptime_seconds{}") > 0.5);
    assert!(
        sample(
            &second,
            "bricks_queue_length{class=Queue,element=q,worker=0}"
        ) <= 50.0
    );
    assert!(
        sample(
            &second,
            "bricks_element_bytes_total{class=Counter,element=c,worker=0}"
        ) >= 64.0 * a
    );
}
