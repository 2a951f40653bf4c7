//! Rates, durations, addresses and MACs as the cluster file writes them,
//! and back as [`crate::Cluster::describe`] and the generated
//! configurations print them.

use std::net::Ipv4Addr;
use std::time::Duration;

pub use bricks_spec::net::{broadcast, format_mac, mask, network, overlap, parse_mac};

/// Reads a decimal number with an optional fraction, times `scale`,
/// exactly: `2.5` at scale 10^9 is 2_500_000_000. Refuses a result that is
/// not whole or does not fit in a u64.
fn scaled(number: &str, scale: u64) -> Option<u64> {
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // At most 19 digits each side keeps every step inside a u128.
    if int.len() > 19 || frac.len() > 19 {
        return None;
    }
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let whole = int.checked_mul(u128::from(scale))?;
    let frac_value: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let den = 10u128.pow(frac.len() as u32);
    let part = frac_value * u128::from(scale);
    if !part.is_multiple_of(den) {
        return None;
    }
    u64::try_from(whole + part / den).ok()
}

/// Splits `100Mbps` into (`100`, `Mbps`).
fn split_unit(s: &str) -> (&str, &str) {
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (s[..at].trim(), s[at..].trim())
}

/// Reads a rate: a number and a unit, bps, kbps (or Kbps), Mbps, Gbps or
/// Tbps, also written bit/s (`Gbit/s`) or as the bare prefix (`10G`, as
/// on command lines); decimals allowed where the result is a whole number
/// of bits per second (`2.5Gbps`).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (number, unit) = split_unit(s.trim());
    if number.is_empty() {
        return Err(format!(
            "rate `{s}`: expected a rate, a number and a unit such as \"100Mbps\" or \"10G\""
        ));
    }
    let prefix = unit
        .strip_suffix("bps")
        .or_else(|| unit.strip_suffix("bit/s"))
        .unwrap_or(unit);
    let scale = match prefix {
        "" if !unit.is_empty() => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "" => return Err(format!("rate `{s}` has no unit: write e.g. \"100Mbps\"")),
        _ => {
            return Err(format!(
                "rate `{s}`: unknown unit `{unit}` (use bps, kbps, Mbps, Gbps or Tbps)"
            ))
        }
    };
    scaled(number, scale).ok_or_else(|| format!("rate `{s}` is not a number of bits per second"))
}

/// Reads a duration: a number and one of us, ms, s.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = split_unit(s.trim());
    let scale = match unit {
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" => return Err(format!("duration `{s}` has no unit: write e.g. \"100ms\"")),
        _ => {
            return Err(format!(
                "duration `{s}`: unknown unit `{unit}` (use us, ms or s)"
            ))
        }
    };
    scaled(number, scale)
        .map(Duration::from_nanos)
        .ok_or_else(|| format!("duration `{s}` is not a whole number of nanoseconds"))
}

/// A rate for people: `100 Mbps`, `2.5 Gbps`, `1.25 Gbps`, `625 Mbps`.
pub fn format_rate(bps: u64) -> String {
    for (scale, unit) in [
        (1_000_000_000u64, "Gbps"),
        (1_000_000, "Mbps"),
        (1_000, "kbps"),
    ] {
        if bps >= scale {
            return format!("{} {unit}", decimal(bps, scale));
        }
    }
    format!("{bps} bps")
}

/// A duration for people: `100 ms`, `1.5 s`, `250 us`.
pub fn format_duration(d: Duration) -> String {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    for (scale, unit) in [(1_000_000_000u64, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns >= scale {
            return format!("{} {unit}", decimal(ns, scale));
        }
    }
    format!("{ns} ns")
}

/// `value / scale` with at most three decimals, trailing zeros dropped.
fn decimal(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let milli =
        ((u128::from(value % scale) * 1000 + u128::from(scale) / 2) / u128::from(scale)) as u64;
    let (whole, milli) = if milli == 1000 {
        (whole + 1, 0)
    } else {
        (whole, milli)
    };
    if milli == 0 {
        return whole.to_string();
    }
    let mut s = format!("{whole}.{milli:03}");
    while s.ends_with('0') {
        s.pop();
    }
    s
}

/// Reads `10.1.0.1/24`: an address and a prefix length 0..=32.
pub fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    bricks_spec::net::parse_prefix_like(s, "10.1.0.0/24")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100Mbps"), Ok(100_000_000));
        assert_eq!(parse_rate("10 Gbps"), Ok(10_000_000_000));
        assert_eq!(parse_rate("2.5Gbps"), Ok(2_500_000_000));
        assert_eq!(parse_rate("64kbps"), Ok(64_000));
        assert_eq!(parse_rate("64Kbps"), Ok(64_000));
        assert_eq!(parse_rate("9600bps"), Ok(9600));
        assert_eq!(parse_rate("0bps"), Ok(0));
        assert!(parse_rate("1.5bps").unwrap_err().contains("not a number"));
        assert!(parse_rate("100").unwrap_err().contains("no unit"));
        assert_eq!(parse_rate("10G"), Ok(10_000_000_000));
        assert_eq!(parse_rate("40 Mbit/s"), Ok(40_000_000));
        assert_eq!(parse_rate("1Tbps"), Ok(1_000_000_000_000));
        assert!(parse_rate("100MB")
            .unwrap_err()
            .contains("unknown unit `MB`"));
        assert!(parse_rate("Gbps").is_err());
        assert!(parse_rate(".Gbps").is_err());
        assert!(parse_rate("1.2.3Gbps").is_err());
        assert!(parse_rate("99999999999999999999Gbps").is_err());
        assert!(parse_rate("18446744074Gbps").is_err(), "over u64");
        assert_eq!(format_rate(100_000_000), "100 Mbps");
        assert_eq!(format_rate(2_500_000_000), "2.5 Gbps");
        assert_eq!(format_rate(1_250_000_000), "1.25 Gbps");
        assert_eq!(format_rate(625_000_000), "625 Mbps");
        assert_eq!(format_rate(25_000_000), "25 Mbps");
        assert_eq!(format_rate(33_333_333), "33.333 Mbps");
        assert_eq!(format_rate(999), "999 bps");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("50 ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
        assert!(parse_duration("100").unwrap_err().contains("no unit"));
        assert!(parse_duration("1min").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("0.0001us").is_err());
        assert_eq!(format_duration(Duration::from_millis(100)), "100 ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(format_duration(Duration::from_micros(250)), "250 us");
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            parse_prefix("10.1.0.1/24"),
            Ok((Ipv4Addr::new(10, 1, 0, 1), 24))
        );
        assert_eq!(parse_prefix("0.0.0.0/0"), Ok((Ipv4Addr::UNSPECIFIED, 0)));
        assert!(parse_prefix("10.1.0.1")
            .unwrap_err()
            .contains("no prefix length"));
        assert!(parse_prefix("10.1.0.1/33").is_err());
        assert!(parse_prefix("10.1.0.1/+8").is_err());
        assert!(parse_prefix("10.1.0/8").is_err());
        assert_eq!(mask(0), 0);
        assert_eq!(mask(24), 0xffff_ff00);
        assert_eq!(mask(32), u32::MAX);
        let a = Ipv4Addr::new(10, 1, 2, 3);
        assert_eq!(network(a, 16), Ipv4Addr::new(10, 1, 0, 0));
        assert_eq!(broadcast(a, 24), Ipv4Addr::new(10, 1, 2, 255));
        assert!(overlap(a, 24, Ipv4Addr::new(10, 1, 0, 0), 16));
        assert!(!overlap(a, 24, Ipv4Addr::new(10, 1, 3, 1), 24));
    }

    #[test]
    fn macs() {
        let m = parse_mac("02:00:00:00:01:0a").unwrap();
        assert_eq!(m, [2, 0, 0, 0, 1, 10]);
        assert_eq!(format_mac(&m), "02:00:00:00:01:0a");
        assert!(parse_mac("02:00:00:00:01").is_err());
        assert!(parse_mac("02:00:00:00:01:01:01").is_err());
        assert!(parse_mac("02:00:00:00:01:g1").is_err());
        assert!(parse_mac("02:00:00:00:01:101").is_err());
        assert!(parse_mac("02::00:00:01:01").is_err());
    }
}
