//! Per-packet annotations: what elements tell each other about a packet
//! besides its bytes (Click's packet annotations).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// How the link layer addressed the packet, set from the destination MAC
/// address on input (Linux's `skb->pkt_type`, Click's packet type
/// annotation). ICMP errors are never sent for link broadcasts or
/// multicasts (RFC 1812 §4.3.2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PacketType {
    /// Addressed to this host.
    #[default]
    Host,
    /// Sent to the link broadcast address.
    Broadcast,
    /// Sent to a link multicast address.
    Multicast,
    /// Addressed to another host (seen in promiscuous mode).
    OtherHost,
    /// Sent by this host.
    Outgoing,
}

/// Nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Timestamp(pub u64);

/// Click's `timewarp`: from the moment it was set the clock runs `speed`
/// times as fast as the wall clock, from where it stood then.
#[derive(Clone, Copy)]
struct Warp {
    real: u64,
    warped: u64,
    speed: f64,
}

impl Warp {
    fn apply(&self, real: u64) -> u64 {
        let since = real.saturating_sub(self.real) as f64 * self.speed;
        self.warped.saturating_add(since as u64)
    }
}

/// Whether the clock was ever warped: until then `now` reads the wall
/// clock with no lock.
static WARPED: AtomicBool = AtomicBool::new(false);
static WARP: Mutex<Warp> = Mutex::new(Warp {
    real: 0,
    warped: 0,
    speed: 1.0,
});

impl Timestamp {
    /// The current time: the wall clock, as warped by
    /// [`Timestamp::set_warp`].
    pub fn now() -> Timestamp {
        let real = Self::now_unwarped();
        if !WARPED.load(Ordering::Relaxed) {
            return real;
        }
        let w = *WARP.lock().unwrap_or_else(|e| e.into_inner());
        Timestamp(w.apply(real.0))
    }

    /// The wall-clock time, whatever the warp.
    pub fn now_unwarped() -> Timestamp {
        // The clock read directly: `SystemTime`'s subtraction of the epoch
        // and its 128-bit nanoseconds cost more than the read (once a
        // round of the engine). Before the epoch counts as 0.
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
        let secs = u64::try_from(t.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
        Timestamp(secs.wrapping_mul(1_000_000_000).wrapping_add(nanos))
    }

    /// Click's `timewarp` write handler: from now on, the clock of the
    /// whole process runs `speed` times as fast as the wall clock (2:
    /// a `wait 1s` takes half a second), continuing from where it
    /// stands. `speed` must be positive and finite.
    pub fn set_warp(speed: f64) -> Result<(), String> {
        if !(speed > 0.0 && speed.is_finite()) {
            return Err("timefactor must be > 0".to_string());
        }
        let mut w = WARP.lock().unwrap_or_else(|e| e.into_inner());
        let real = Self::now_unwarped().0;
        let warped = if WARPED.load(Ordering::Relaxed) {
            w.apply(real)
        } else {
            real
        };
        *w = Warp {
            real,
            warped,
            speed,
        };
        WARPED.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The `timewarp` write handler's text: a speed, as
    /// [`Timestamp::set_warp`] takes it, with Click's errors.
    pub fn write_warp(text: &str) -> Result<(), String> {
        let speed: f64 = text.trim().parse().map_err(|_| "expected double")?;
        Timestamp::set_warp(speed)
    }

    /// The clock's speed against the wall clock (`timewarp`'s read
    /// handler): 1 unless [`Timestamp::set_warp`] changed it.
    pub fn warp() -> f64 {
        if !WARPED.load(Ordering::Relaxed) {
            return 1.0;
        }
        WARP.lock().unwrap_or_else(|e| e.into_inner()).speed
    }

    /// Whole seconds.
    pub fn secs(self) -> u64 {
        self.0 / 1_000_000_000
    }

    /// Nanoseconds within the second.
    pub fn subsec_nanos(self) -> u32 {
        (self.0 % 1_000_000_000) as u32
    }

    /// Builds a timestamp from seconds and nanoseconds.
    pub fn from_parts(secs: u64, nanos: u32) -> Timestamp {
        Timestamp(secs * 1_000_000_000 + nanos as u64)
    }

    /// The time as signed nanoseconds. Click's timestamps are signed and
    /// `AdjustTimestamp` can move one before the epoch; such a time is kept
    /// as its two's complement, which no real clock reaches before 2262.
    pub fn signed_nanos(self) -> i64 {
        self.0 as i64
    }

    /// Builds a timestamp from signed nanoseconds (see
    /// [`Timestamp::signed_nanos`]).
    pub fn from_signed_nanos(ns: i64) -> Timestamp {
        Timestamp(ns as u64)
    }

    /// The time as Click's `Timestamp::unparse` writes it (see
    /// [`ClickTime`]), signed as [`Timestamp::signed_nanos`].
    pub fn click_text(self) -> String {
        ClickTime(i128::from(self.signed_nanos())).to_string()
    }
}

/// Signed nanoseconds shown as Click's `Timestamp::unparse` writes a time
/// (a build with nanosecond timestamps): `-` when negative, the seconds,
/// and six decimals, or nine when the time is not a whole number of
/// microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClickTime(pub i128);

impl std::fmt::Display for ClickTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        let (sec, sub) = (a / 1_000_000_000, a % 1_000_000_000);
        if sub % 1000 == 0 {
            write!(f, "{sign}{sec}.{:06}", sub / 1000)
        } else {
            write!(f, "{sign}{sec}.{sub:09}")
        }
    }
}

/// What elements know about a packet besides its bytes.
///
/// All of it fits in the buffer's first cache line with the offsets. Header
/// offsets are positions in the buffer, not in the frame, so they stay
/// valid when a `Strip` moves the frame start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// Next-hop IPv4 address (Click's `DST_IP_ANNO`): set from the IP
    /// destination by `GetIPAddress`/`CheckIPHeader`, replaced by a route's
    /// gateway, read by `ARPQuerier`.
    pub dst_ip: Ipv4Addr,
    /// Next-hop IPv6 address.
    pub dst_ip6: Ipv6Addr,
    /// Arrival or generation time.
    pub timestamp: Timestamp,
    /// When the packet should leave, in nanoseconds on the engine clock
    /// (the clock of `Context::now`, which `--clock trace` makes follow
    /// the packets); 0 when nothing set one. Stamped by `VirtualClock`,
    /// read by the deadline-ordered queues (`HeapQueue`, `BinSortQueue`,
    /// `MDSBinSortQueue`).
    pub deadline: u64,
    /// Bytes the packet stood for beyond those it carries (Click's
    /// `EXTRA_LENGTH_ANNO`): a trace line's IP length past its captured
    /// bytes (`FromIPSummaryDump`), bytes `Truncate` removed. `Pad`
    /// without a length restores them as zeros; `LinkUnqueue` counts them.
    pub extra_length: u32,
    /// Flow hash (software RSS/Toeplitz or the device's), used to pick
    /// among equal-cost paths and queues.
    pub flow_hash: u32,
    /// The packet's flow record in its `FlowTable`, plus one; 0 when no
    /// classifier set one. Set by `TagClassifier`/`HashClassifier`, read by
    /// `FlowLookup` and `VirtualClock` (use [`Annotations::flow_record`]).
    pub flow: u32,
    /// Where the network header starts, as a buffer offset, or [`NO_L3`]
    /// when no element has set it (read it with
    /// [`Annotations::l3_offset`]). A sentinel rather than an `Option` so
    /// that one comparison with the frame's end both finds the header
    /// annotated and finds its bytes in the frame
    /// ([`crate::Packet::l3_chunk_mut`]): no buffer offset reaches it.
    pub(crate) l3: u16,
    /// Next-hop MTU reported by a fragmenter that refused a DF packet; the
    /// ICMP "fragmentation needed" error quotes it (RFC 1191).
    pub mtu: u16,
    /// Input device index (0 when unknown).
    pub device: u16,
    /// Virtual router the packet belongs to.
    pub vrouter: u16,
    /// 802.1Q Tag Control Information (priority, DEI, VLAN ID) in host
    /// order (Click's `VLAN_TCI` annotation): set by `VLANDecap` from the
    /// tag it removed (0 for an untagged frame), read by `VLANEncap(ANNO)`.
    pub vlan_tci: u16,
    /// Cluster output node chosen at the input node.
    pub output_node: u16,
    /// Click's paint annotation.
    pub paint: u8,
    /// Link-layer addressing of the packet.
    pub packet_type: PacketType,
    /// Click's `FIX_IP_SRC` annotation: `FixIPSrc` rewrites the source.
    pub fix_ip_src: bool,
    /// Offset of an IP option error for an ICMP parameter problem
    /// (Click's `ICMP_PARAMPROB_ANNO`), relative to the IP header.
    pub param_off: Option<u8>,
}

/// [`Annotations::l3`] of a packet whose network header no element has set.
pub(crate) const NO_L3: u16 = u16::MAX;
const _: () = assert!(2 * crate::BUFFER_SIZE < NO_L3 as usize);

impl Annotations {
    /// Where the network header starts, as a buffer offset, if an element
    /// has set it ([`crate::Packet::set_network_header`]).
    #[inline(always)]
    pub fn l3_offset(&self) -> Option<u16> {
        (self.l3 != NO_L3).then_some(self.l3)
    }

    /// The index of the packet's flow record, if a classifier set one.
    #[inline(always)]
    pub fn flow_record(&self) -> Option<u32> {
        self.flow.checked_sub(1)
    }

    /// Sets the index of the packet's flow record (indexes up to
    /// `u32::MAX - 1`; a flow table holds far fewer).
    #[inline(always)]
    pub fn set_flow_record(&mut self, index: u32) {
        self.flow = index.saturating_add(1);
    }
}

impl Default for Annotations {
    #[inline]
    fn default() -> Self {
        Annotations {
            dst_ip: Ipv4Addr::UNSPECIFIED,
            dst_ip6: Ipv6Addr::UNSPECIFIED,
            timestamp: Timestamp(0),
            deadline: 0,
            extra_length: 0,
            flow_hash: 0,
            flow: 0,
            l3: NO_L3,
            mtu: 0,
            device: 0,
            vrouter: 0,
            vlan_tci: 0,
            output_node: 0,
            paint: 0,
            packet_type: PacketType::Host,
            fix_ip_src: false,
            param_off: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_clicks() {
        let t = |ns| ClickTime(ns).to_string();
        assert_eq!(t(0), "0.000000");
        assert_eq!(t(1_000_001_000), "1.000001");
        assert_eq!(t(1_000_000_001), "1.000000001");
        assert_eq!(t(-1), "-0.000000001");
        assert_eq!(t(-2_000_000_000), "-2.000000");
        assert_eq!(
            Timestamp(1_000_000_000_010_000_000).click_text(),
            "1000000000.010000"
        );
    }
}
