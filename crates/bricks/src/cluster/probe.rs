//! How long flows stop when a server fails: a steady stream of numbered
//! UDP datagrams over several flows between two hosts' own sockets, and
//! a receiver that reports the longest silence of the whole stream and of
//! each flow.
//!
//! `bricks sink` counts loss and reordering but not time without packets;
//! the failover figure is that time. Per flow matters: when an
//! intermediate server dies, the flows (flowlets) that went through it
//! stop until the input server sees the link down (hellos missed) and
//! sends them another way, while the other flows never pause.

use anyhow::Context as _;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `bricks cluster probe-send` options.
#[derive(clap::Args)]
pub(crate) struct SendArgs {
    /// Where to send (the receiver's address and port).
    #[arg(long)]
    to: SocketAddr,
    /// Datagrams per second, over all flows.
    #[arg(long, default_value_t = 2000)]
    rate: u64,
    /// Flows (one socket, hence one source port, each).
    #[arg(long, default_value_t = 8)]
    flows: u32,
    /// Seconds to send.
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    /// UDP payload bytes (at least 20).
    #[arg(long, default_value_t = 64)]
    size: usize,
}

/// `bricks cluster probe-recv` options.
#[derive(clap::Args)]
pub(crate) struct RecvArgs {
    /// Address and port to listen on.
    #[arg(long)]
    listen: SocketAddr,
    /// Seconds to listen in all.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Stop once nothing has come for this many seconds after the first
    /// datagram.
    #[arg(long, default_value_t = 2.0)]
    idle: f64,
}

/// Header of every datagram: flow (u32), sequence number (u64) in the
/// flow, both big-endian, then a fixed marker.
const HEADER: usize = 12;
const MARKER: &[u8; 8] = b"bricksgp";

pub(crate) fn send(a: &SendArgs) -> anyhow::Result<ExitCode> {
    println!("{}", stream(a)?);
    Ok(ExitCode::SUCCESS)
}

/// Sends the stream; returns the report.
fn stream(a: &SendArgs) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(
        a.flows >= 1 && a.rate >= 1,
        "--flows and --rate must be positive"
    );
    anyhow::ensure!(
        a.duration.is_finite() && a.duration > 0.0 && a.duration < 3600.0,
        "--duration: expected seconds"
    );
    let size = a.size.max(HEADER + MARKER.len());
    let bind = if a.to.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socks: Vec<UdpSocket> = (0..a.flows)
        .map(|_| {
            let s = UdpSocket::bind(bind)?;
            s.connect(a.to)?;
            Ok(s)
        })
        .collect::<std::io::Result<_>>()
        .context("opening the flows' sockets")?;
    let mut seq = vec![0u64; a.flows as usize];
    let mut buf = vec![0u8; size];
    buf[HEADER..HEADER + MARKER.len()].copy_from_slice(MARKER);
    let start = Instant::now();
    let end = Duration::from_secs_f64(a.duration);
    let mut sent = 0u64;
    let mut errors = 0u64;
    let per = Duration::from_secs_f64(1.0 / a.rate as f64);
    loop {
        let now = start.elapsed();
        if now >= end {
            break;
        }
        // Everything due by now: a sleep that overslept catches up in a
        // burst, so the long-run rate holds.
        let due = (now.as_secs_f64() * a.rate as f64) as u64 + 1;
        while sent < due {
            let f = (sent % u64::from(a.flows)) as usize;
            buf[..4].copy_from_slice(&(f as u32).to_be_bytes());
            buf[4..12].copy_from_slice(&seq[f].to_be_bytes());
            // A full socket buffer or an unreachable answer must not end
            // the stream: count it and go on.
            if socks[f].send(&buf).is_err() {
                errors += 1;
            }
            seq[f] += 1;
            sent += 1;
        }
        let next = per.mul_f64(sent as f64);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    Ok(serde_json::json!({
        "sent": sent,
        "send_errors": errors,
        "flows": a.flows,
        "elapsed_s": start.elapsed().as_secs_f64(),
    }))
}

/// What the receiver saw of one flow.
#[derive(Debug, Default, Clone)]
struct Flow {
    received: u64,
    highest: Option<u64>,
    reordered: u64,
    last: Option<Instant>,
    max_gap: Duration,
}

pub(crate) fn recv(a: &RecvArgs) -> anyhow::Result<ExitCode> {
    let sock = UdpSocket::bind(a.listen).with_context(|| format!("listening on {}", a.listen))?;
    println!("listening on {}", a.listen);
    println!("{}", receive(a, &sock)?);
    Ok(ExitCode::SUCCESS)
}

/// Receives on `sock` as `a` says; returns the report.
fn receive(a: &RecvArgs, sock: &UdpSocket) -> anyhow::Result<serde_json::Value> {
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let start = Instant::now();
    let total = Duration::from_secs_f64(a.duration.max(0.1));
    let idle = Duration::from_secs_f64(a.idle.max(0.05));
    let mut flows: BTreeMap<u32, Flow> = BTreeMap::new();
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    let mut max_gap = Duration::ZERO;
    let mut max_gap_at = 0.0;
    let mut other = 0u64;
    let mut buf = [0u8; 2048];
    loop {
        let now = Instant::now();
        if now - start >= total || last.is_some_and(|l| now - l >= idle) {
            break;
        }
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e).context("receiving"),
        };
        let t = Instant::now();
        if n < HEADER + MARKER.len() || &buf[HEADER..HEADER + MARKER.len()] != MARKER {
            other += 1;
            continue;
        }
        let flow = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
        let seq = u64::from_be_bytes(buf[4..12].try_into().expect("8 bytes"));
        let f0 = *first.get_or_insert(t);
        if let Some(l) = last {
            if t - l > max_gap {
                max_gap = t - l;
                max_gap_at = (l - f0).as_secs_f64();
            }
        }
        last = Some(t);
        let f = flows.entry(flow).or_default();
        f.received += 1;
        match f.highest {
            Some(h) if seq < h => f.reordered += 1,
            _ => f.highest = Some(seq),
        }
        if let Some(l) = f.last {
            f.max_gap = f.max_gap.max(t - l);
        }
        f.last = Some(t);
    }
    let received: u64 = flows.values().map(|f| f.received).sum();
    let lost: u64 = flows
        .values()
        .map(|f| (f.highest.map_or(0, |h| h + 1)).saturating_sub(f.received))
        .sum();
    let reordered: u64 = flows.values().map(|f| f.reordered).sum();
    let (worst_flow, worst) = flows
        .iter()
        .map(|(k, f)| (*k, f.max_gap))
        .max_by_key(|&(_, g)| g)
        .unwrap_or((0, Duration::ZERO));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(serde_json::json!({
            "received": received,
            "lost": lost,
            "reordered": reordered,
            "flows": flows.len(),
            "other": other,
            "span_s": match (first, last) {
                (Some(f), Some(l)) => (l - f).as_secs_f64(),
                _ => 0.0,
            },
            "max_gap_ms": ms(max_gap),
            "max_gap_at_s": max_gap_at,
            "max_flow_gap_ms": ms(worst),
            "max_flow_gap_flow": worst_flow,
            "flow_gaps_ms": flows.values().map(|f| ms(f.max_gap)).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_over_loopback_arrives_whole_in_its_flows() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let a = RecvArgs {
            listen: addr,
            duration: 10.0,
            idle: 0.5,
        };
        let r = std::thread::spawn(move || receive(&a, &sock).unwrap());
        let s = stream(&SendArgs {
            to: addr,
            rate: 1000,
            flows: 4,
            duration: 0.3,
            size: 64,
        })
        .unwrap();
        let r = r.join().unwrap();
        let sent = s["sent"].as_u64().unwrap();
        assert!((250..=350).contains(&sent), "{s}");
        assert_eq!(r["flows"], 4, "{r}");
        // Loopback may drop under a busy machine, but not much.
        assert!(r["received"].as_u64().unwrap() * 10 >= sent * 9, "{r}");
        assert_eq!(r["reordered"], 0, "{r}");
        assert!(r["max_flow_gap_ms"].as_f64().unwrap() >= r["max_gap_ms"].as_f64().unwrap());
    }
}
