//! The traffic the demo sends through the router, from the hosts' own
//! Linux stacks: ping, a TCP transfer whose bytes are checked at the
//! receiver, and a UDP load from `bricks gen` to `bricks sink`.
//!
//! The TCP ends are hidden subcommands of `bricks demo` (`tcp-serve`,
//! `tcp-send`) so that the demo needs no other program; they use ordinary
//! sockets, so the segments are the hosts' kernels' own. `bricks gen`
//! and `bricks sink` speak for themselves; here are only their reports.

use anyhow::Context as _;
use clap::Subcommand;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The demo's helpers, run inside the hosts' namespaces.
#[derive(Subcommand)]
pub(crate) enum Helper {
    /// Accept one TCP connection, read BYTES of the demo's pattern from it
    /// and check them; print one JSON line with the result.
    #[command(hide = true)]
    TcpServe {
        /// Address to listen on.
        #[arg(long)]
        listen: SocketAddr,
        /// Bytes to expect.
        #[arg(long)]
        bytes: u64,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
    },
    /// Connect and send BYTES of the demo's pattern; print one JSON line.
    #[command(hide = true)]
    TcpSend {
        /// Address to connect to.
        #[arg(long)]
        to: SocketAddr,
        /// Bytes to send.
        #[arg(long)]
        bytes: u64,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
    },
}

/// Runs a helper.
pub(crate) fn helper(h: Helper) -> anyhow::Result<ExitCode> {
    match h {
        Helper::TcpServe {
            listen,
            bytes,
            timeout,
        } => {
            let r = tcp_serve(listen, bytes, Duration::from_secs_f64(timeout))?;
            println!("{}", r.to_json());
            Ok(if r.intact() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Helper::TcpSend { to, bytes, timeout } => {
            let secs = tcp_send(to, bytes, Duration::from_secs_f64(timeout))?;
            println!("{}", serde_json::json!({"bytes": bytes, "seconds": secs}));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The demo's byte pattern: the byte at offset `pos` of the stream is byte
/// `pos % 8` of splitmix64(`pos / 8`). Any lost, repeated, reordered or
/// altered byte breaks it.
pub(crate) fn fill_pattern(start: u64, buf: &mut [u8]) {
    let mut pos = start;
    let mut i = 0;
    while i < buf.len() {
        let word = splitmix64(pos / 8).to_le_bytes();
        let from = (pos % 8) as usize;
        let n = (8 - from).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&word[from..from + n]);
        i += n;
        pos += n as u64;
    }
}

/// The stream offset of the first byte of `data` (which starts at
/// offset `start`) that differs from the pattern; `scratch` must be at
/// least as long as `data`.
fn first_mismatch(start: u64, data: &[u8], scratch: &mut [u8]) -> Option<u64> {
    let want = &mut scratch[..data.len()];
    fill_pattern(start, want);
    data.iter()
        .zip(want.iter())
        .position(|(a, b)| a != b)
        .map(|i| start + i as u64)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What the receiving end of a TCP transfer saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TcpResult {
    /// Bytes expected.
    pub expected: u64,
    /// Bytes received.
    pub received: u64,
    /// Offset of the first byte that differed from the pattern.
    pub first_bad: Option<u64>,
    /// From the connection's acceptance to its last byte.
    pub seconds: f64,
}

impl TcpResult {
    /// Every byte arrived, in order, unchanged.
    pub fn intact(&self) -> bool {
        self.received == self.expected && self.first_bad.is_none()
    }

    /// Megabytes (10^6 bytes) per second.
    pub fn mbytes_per_s(&self) -> f64 {
        self.received as f64 / 1e6 / self.seconds.max(1e-9)
    }

    /// Megabits (10^6 bits) of payload per second, over the transfer's
    /// own duration.
    pub fn mbits_per_s(&self) -> f64 {
        self.mbytes_per_s() * 8.0
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "expected": self.expected,
            "received": self.received,
            "first_bad": self.first_bad,
            "seconds": self.seconds,
            "intact": self.intact(),
            "mbytes_per_s": self.mbytes_per_s(),
        })
    }

    /// Reads the line `tcp-serve` prints.
    pub fn from_json(line: &str) -> Option<TcpResult> {
        let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        Some(TcpResult {
            expected: v.get("expected")?.as_u64()?,
            received: v.get("received")?.as_u64()?,
            first_bad: v.get("first_bad").and_then(serde_json::Value::as_u64),
            seconds: v.get("seconds")?.as_f64()?,
        })
    }
}

const CHUNK: usize = 64 * 1024;

fn tcp_serve(listen: SocketAddr, bytes: u64, timeout: Duration) -> anyhow::Result<TcpResult> {
    let listener = TcpListener::bind(listen).with_context(|| format!("listening on {listen}"))?;
    println!("listening on {listen}");
    std::io::stdout().flush()?;
    serve_on(listener, bytes, timeout)
}

/// [`tcp_serve`] on a socket already listening.
fn serve_on(listener: TcpListener, bytes: u64, timeout: Duration) -> anyhow::Result<TcpResult> {
    // Accept with a deadline: a sender that never comes must not hang the
    // demo.
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    let mut conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "no connection within {timeout:?}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e).context("accept"),
        }
    };
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let start = Instant::now();
    let (mut buf, mut want) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut received = 0u64;
    let mut first_bad = None;
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("tcp-serve: {e} after {received} bytes");
                break;
            }
        };
        if first_bad.is_none() {
            first_bad = first_mismatch(received, &buf[..n], &mut want);
        }
        received += n as u64;
        if Instant::now() > deadline {
            eprintln!("tcp-serve: gave up after {timeout:?}");
            break;
        }
    }
    Ok(TcpResult {
        expected: bytes,
        received,
        first_bad,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn tcp_send(to: SocketAddr, bytes: u64, timeout: Duration) -> anyhow::Result<f64> {
    let deadline = Instant::now() + timeout;
    let mut conn = loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
            Ok(c) => break c,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e).with_context(|| format!("connecting to {to}")),
        }
    };
    conn.set_write_timeout(Some(Duration::from_secs(10)))?;
    let start = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    let mut sent = 0u64;
    while sent < bytes {
        let n = (bytes - sent).min(CHUNK as u64) as usize;
        fill_pattern(sent, &mut buf[..n]);
        conn.write_all(&buf[..n])
            .with_context(|| format!("sending to {to} after {sent} bytes"))?;
        sent += n as u64;
    }
    conn.shutdown(std::net::Shutdown::Write)?;
    // Wait for the receiver to close: then every byte has been read.
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let _ = conn.read(&mut buf);
    Ok(start.elapsed().as_secs_f64())
}

/// The summary lines of a `ping` run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PingResult {
    /// Echo requests sent.
    pub sent: u32,
    /// Replies received.
    pub received: u32,
    /// Round-trip times: min, avg, max in milliseconds.
    pub rtt_ms: Option<(f64, f64, f64)>,
    /// Lines about errors (`From 10.1.0.1 ... Time to live exceeded`).
    pub errors: Vec<String>,
}

impl PingResult {
    /// Reads iputils `ping` output.
    pub fn parse(text: &str) -> Option<PingResult> {
        let stats = text.lines().find(|l| l.contains("packets transmitted"))?;
        let num = |key: &str| -> Option<u32> {
            stats
                .split(',')
                .find(|p| p.contains(key))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        let rtt_ms = text
            .lines()
            .find(|l| l.starts_with("rtt") || l.starts_with("round-trip"))
            .and_then(|l| {
                let v: Vec<f64> = l
                    .split('=')
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .split('/')
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (v.len() >= 3).then(|| (v[0], v[1], v[2]))
            });
        let errors = text
            .lines()
            .filter(|l| l.starts_with("From "))
            .map(str::to_string)
            .collect();
        Some(PingResult {
            sent: num("transmitted")?,
            received: num("received")?,
            rtt_ms,
            errors,
        })
    }
}

/// What `bricks gen --json` sent and `bricks sink --json` received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UdpResult {
    /// Packets the generator sent.
    pub sent: u64,
    /// Packets the sink received.
    pub received: u64,
    /// Probes that never arrived, as the sink counts them.
    pub lost: u64,
    /// Probes that arrived after a later one.
    pub reordered: u64,
    /// One-way latency percentiles (p50, p99, p99.9) in microseconds.
    pub latency_us: Option<(f64, f64, f64)>,
}

impl UdpResult {
    /// Reads the two reports.
    pub fn from_reports(gen: &serde_json::Value, sink: &serde_json::Value) -> Option<UdpResult> {
        let lat = &sink["latency_ns"];
        let us = |k: &str| lat[k].as_f64().map(|ns| ns / 1e3);
        Some(UdpResult {
            sent: gen["sent"].as_u64()?,
            received: sink["packets"].as_u64()?,
            lost: sink["lost"].as_u64().unwrap_or(0),
            reordered: sink["reordered"].as_u64().unwrap_or(0),
            latency_us: us("p50")
                .zip(us("p99"))
                .zip(us("p999"))
                .map(|((a, b), c)| (a, b, c)),
        })
    }
}

impl UdpResult {
    /// The one-way latency percentiles, when the sink measured them.
    pub fn latency(&self) -> Option<String> {
        self.latency_us.map(|(p50, p99, p999)| {
            format!("one-way latency p50 {p50:.0} us, p99 {p99:.0} us, p99.9 {p999:.0} us")
        })
    }
}

/// The counts; [`UdpResult::latency`] is the rest.
impl core::fmt::Display for UdpResult {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "sent {}, received {}, lost {} ({:.2}%), reordered {}",
            self.sent,
            self.received,
            self.lost,
            self.lost as f64 * 100.0 / self.sent.max(1) as f64,
            self.reordered
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_the_same_from_any_offset() {
        let mut whole = vec![0u8; 1000];
        fill_pattern(0, &mut whole);
        for start in [0usize, 1, 7, 8, 9, 333] {
            let mut part = vec![0u8; 100];
            fill_pattern(start as u64, &mut part);
            assert_eq!(part, whole[start..start + 100], "start {start}");
        }
        assert_ne!(whole[..8], whole[8..16]);
    }

    #[test]
    fn a_transfer_over_loopback_is_checked() {
        // The listener the server uses is the one that picked the port:
        // freed and bound again, the port could be taken in between by
        // another test's socket, which then resets the sender.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server =
            std::thread::spawn(move || serve_on(l, 300_000, Duration::from_secs(10)).unwrap());
        tcp_send(addr, 300_000, Duration::from_secs(10)).unwrap();
        let r = server.join().unwrap();
        assert!(r.intact(), "{r:?}");
        let back = TcpResult::from_json(&r.to_json().to_string()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_corrupted_byte_is_found_at_its_stream_offset() {
        let mut data = vec![0u8; 64];
        fill_pattern(1000, &mut data);
        let mut scratch = vec![0u8; 64];
        assert_eq!(first_mismatch(1000, &data, &mut scratch), None);
        data[40] ^= 1;
        assert_eq!(first_mismatch(1000, &data, &mut scratch), Some(1040));
        // The right bytes at the wrong offset (a lost segment) are caught.
        let mut shifted = vec![0u8; 64];
        fill_pattern(1448, &mut shifted);
        assert_eq!(first_mismatch(0, &shifted, &mut scratch), Some(0));
    }

    #[test]
    fn ping_output_is_read() {
        let ok = "PING 10.2.0.2 (10.2.0.2) 56(84) bytes of data.\n\
            64 bytes from 10.2.0.2: icmp_seq=1 ttl=63 time=0.512 ms\n\
            \n--- 10.2.0.2 ping statistics ---\n\
            3 packets transmitted, 3 received, 0% packet loss, time 402ms\n\
            rtt min/avg/max/mdev = 0.071/0.285/0.512/0.181 ms\n";
        let r = PingResult::parse(ok).unwrap();
        assert_eq!((r.sent, r.received), (3, 3));
        assert_eq!(r.rtt_ms, Some((0.071, 0.285, 0.512)));
        let ttl = "PING 10.2.0.2 (10.2.0.2) 56(84) bytes of data.\n\
            From 10.1.0.1 icmp_seq=1 Time to live exceeded\n\
            \n--- 10.2.0.2 ping statistics ---\n\
            1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n";
        let r = PingResult::parse(ttl).unwrap();
        assert_eq!((r.sent, r.received), (1, 0));
        assert_eq!(r.rtt_ms, None);
        assert_eq!(r.errors, ["From 10.1.0.1 icmp_seq=1 Time to live exceeded"]);
        assert_eq!(
            PingResult::parse("ping: connect: Network is unreachable"),
            None
        );
    }

    #[test]
    fn gen_and_sink_reports_are_read() {
        let gen: serde_json::Value =
            serde_json::from_str(r#"{"bytes":6400,"drops":0,"sent":100,"stamped":100}"#).unwrap();
        let sink: serde_json::Value = serde_json::from_str(
            r#"{"packets":98,"lost":2,"reordered":1,"loss_pct":2.0,
                "latency_ns":{"p50":25000,"p99":81000,"p999":120500,"max":130000}}"#,
        )
        .unwrap();
        let r = UdpResult::from_reports(&gen, &sink).unwrap();
        assert_eq!((r.sent, r.received, r.lost, r.reordered), (100, 98, 2, 1));
        assert_eq!(r.latency_us, Some((25.0, 81.0, 120.5)));
        assert_eq!(
            r.to_string(),
            "sent 100, received 98, lost 2 (2.00%), reordered 1"
        );
        assert_eq!(
            r.latency().unwrap(),
            "one-way latency p50 25 us, p99 81 us, p99.9 120 us"
        );
        assert_eq!(UdpResult::from_reports(&sink, &gen), None);
    }
}
