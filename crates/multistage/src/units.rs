//! Durations, addresses and MACs as the multistage file writes them, and
//! back as the description and the generated configurations print them.

use std::time::Duration;

pub use bricks_spec::net::{
    broadcast, contains, format_mac, mask, network, overlap, parse_mac, parse_prefix,
};

/// Reads a duration: a whole number and one of `us`, `ms`, `s` (`50ms`,
/// `250us`, `2s`), or a decimal number of milliseconds or seconds that
/// comes to whole microseconds (`1.5ms`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (t[..at].trim(), t[at..].trim());
    let scale: u64 = match unit {
        "us" => 1,
        "ms" => 1_000,
        "s" => 1_000_000,
        "" => return Err(format!("duration `{s}` has no unit: write e.g. \"50ms\"")),
        _ => {
            return Err(format!(
                "duration `{s}`: unknown unit `{unit}` (use us, ms or s)"
            ))
        }
    };
    let bad = || format!("duration `{s}` is not a whole number of microseconds");
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 12
        || frac.len() > 6
    {
        return Err(bad());
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let frac_value: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad())?
    };
    let den = 10u64.pow(frac.len() as u32);
    let part = frac_value * scale;
    if !part.is_multiple_of(den) {
        return Err(bad());
    }
    Ok(Duration::from_micros(int * scale + part / den))
}

/// A duration as a Click argument: `50ms`, `250us`, `2s`.
pub fn click_duration(d: Duration) -> String {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    if us != 0 && us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us != 0 && us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// A duration for people: `50 ms`, `1.5 s`, `250 us`.
pub fn format_duration(d: Duration) -> String {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    for (scale, unit) in [(1_000_000u64, "s"), (1_000, "ms")] {
        if us >= scale {
            let whole = us / scale;
            let rest = us % scale;
            if rest == 0 {
                return format!("{whole} {unit}");
            }
            let mut s = format!("{whole}.{:0width$}", rest, width = scale.ilog10() as usize);
            while s.ends_with('0') {
                s.pop();
            }
            return format!("{s} {unit}");
        }
    }
    format!("{us} us")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn durations_read_and_print() {
        assert_eq!(parse_duration("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_duration(" 250us "), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
        assert!(parse_duration("50").unwrap_err().contains("no unit"));
        assert!(parse_duration("5min").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("0.5us")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("99999999999999999s").is_err());
        assert_eq!(click_duration(Duration::from_millis(50)), "50ms");
        assert_eq!(click_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(click_duration(Duration::from_secs(3)), "3s");
        assert_eq!(format_duration(Duration::from_millis(50)), "50 ms");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1.5 ms");
        assert_eq!(format_duration(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(format_duration(Duration::from_micros(20)), "20 us");
    }

    #[test]
    fn addresses_read_and_print() {
        assert_eq!(
            parse_prefix("10.1.0.1/24"),
            Ok((Ipv4Addr::new(10, 1, 0, 1), 24))
        );
        assert!(parse_prefix("10.1.0.1").is_err());
        assert!(parse_prefix("10.1.0.1/33").is_err());
        assert!(parse_prefix("10.1.0.1/+3").is_err());
        assert_eq!(
            network(Ipv4Addr::new(10, 1, 0, 9), 24),
            Ipv4Addr::new(10, 1, 0, 0)
        );
        assert_eq!(
            broadcast(Ipv4Addr::new(10, 1, 0, 9), 24),
            Ipv4Addr::new(10, 1, 0, 255)
        );
        assert!(overlap(
            Ipv4Addr::new(10, 0, 0, 0),
            8,
            Ipv4Addr::new(10, 1, 0, 1),
            24
        ));
        assert!(!overlap(
            Ipv4Addr::new(10, 2, 0, 0),
            24,
            Ipv4Addr::new(10, 1, 0, 1),
            24
        ));
        assert!(contains(
            Ipv4Addr::new(10, 1, 0, 0),
            24,
            Ipv4Addr::new(10, 1, 0, 254)
        ));
        assert_eq!(parse_mac("02:4d:53:00:01:00"), Ok([2, 0x4d, 0x53, 0, 1, 0]));
        assert!(parse_mac("02:4d:53:00:01").is_err());
        assert!(parse_mac("02:4d:53:00:01:00:00").is_err());
        assert!(parse_mac("02:4d:53:00:01:+0").is_err());
        assert_eq!(format_mac(&[2, 0x4d, 0x42, 1, 0, 0]), "02:4d:42:01:00:00");
    }
}
