//! Labels of packets inside the cluster.
//!
//! A frame on an internal link is
//!
//! ```text
//! dst MAC (6)  src MAC (6)  EtherType 0x88B5 (2)  shim (12)  IPv4 packet
//! ```
//!
//! The destination MAC is the forwarding key, written once by the input
//! node (RouteBricks §6.1: "encodes the identity of the output node in the
//! packet's MAC address"); intermediate and output nodes forward by it
//! alone:
//!
//! ```text
//! byte 0: 0x02 (locally administered, unicast)
//! byte 1: cluster id
//! byte 2: output node
//! byte 3: output port (index among the output node's external ports)
//! byte 4: intermediate node, or NONE once reached / when sent directly
//! byte 5: 0
//! ```
//!
//! The source MAC is the sending interface's own. The shim carries what
//! the output node needs and cannot find in the MAC:
//!
//! ```text
//! 0: version (1)     1: input node     2: hops left     3: flags (bit 0: balanced)
//! 4..8:  next-hop IPv4 address (the route's gateway, or the destination)
//! 8..10: flow tag (16 bits of the flow hash)
//! 10..12: per-(input node, flow tag) sequence number, for the reorder metric
//! ```
//!
//! Hello frames (liveness, BFD-like) use EtherType 0x88B6 with
//! [`Hello`]'s layout.

/// EtherType of data frames inside the cluster (IEEE 802 local
/// experimental 1).
pub const ETHERTYPE_DATA: u16 = 0x88b5;
/// EtherType of hello frames (IEEE 802 local experimental 2).
pub const ETHERTYPE_HELLO: u16 = 0x88b6;
/// Bytes of the shim after the Ethernet header.
pub const SHIM_LEN: usize = 12;
/// Ethernet header plus shim: what the input node prepends to an IPv4
/// packet.
pub const HEADER_LEN: usize = 14 + SHIM_LEN;
/// "No intermediate node" in byte 4 of the destination MAC.
pub const NONE: u8 = 0xff;
/// Version in the shim.
pub const VERSION: u8 = 1;
/// Hops a packet may take inside the cluster before it is dropped (a
/// guard against loops while the nodes' views of liveness differ).
pub const MAX_HOPS: u8 = 8;
/// Flag: the packet was load-balanced through an intermediate node.
pub const FLAG_BALANCED: u8 = 1;

/// The destination MAC's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dst {
    pub cluster: u8,
    pub output: u8,
    pub port: u8,
    /// [`NONE`] when there is none (left).
    pub intermediate: u8,
}

impl Dst {
    /// The six bytes.
    #[inline]
    pub fn mac(self) -> [u8; 6] {
        [
            0x02,
            self.cluster,
            self.output,
            self.port,
            self.intermediate,
            0,
        ]
    }

    /// Reads a destination MAC; `None` if it is not a cluster label.
    #[inline]
    pub fn parse(mac: &[u8; 6]) -> Option<Dst> {
        if mac[0] != 0x02 || mac[5] != 0 {
            return None;
        }
        Some(Dst {
            cluster: mac[1],
            output: mac[2],
            port: mac[3],
            intermediate: mac[4],
        })
    }
}

/// The shim's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shim {
    pub input: u8,
    pub hops: u8,
    pub flags: u8,
    pub next_hop: [u8; 4],
    pub flow: u16,
    pub seq: u16,
}

impl Shim {
    /// The twelve bytes.
    #[inline]
    pub fn bytes(self) -> [u8; SHIM_LEN] {
        let f = self.flow.to_be_bytes();
        let s = self.seq.to_be_bytes();
        let n = self.next_hop;
        [
            VERSION, self.input, self.hops, self.flags, n[0], n[1], n[2], n[3], f[0], f[1], s[0],
            s[1],
        ]
    }

    /// Reads a shim; `None` if the version is not ours.
    #[inline]
    pub fn parse(b: &[u8; SHIM_LEN]) -> Option<Shim> {
        if b[0] != VERSION {
            return None;
        }
        Some(Shim {
            input: b[1],
            hops: b[2],
            flags: b[3],
            next_hop: [b[4], b[5], b[6], b[7]],
            flow: u16::from_be_bytes([b[8], b[9]]),
            seq: u16::from_be_bytes([b[10], b[11]]),
        })
    }
}

/// A hello frame's payload (after the Ethernet header, EtherType
/// [`ETHERTYPE_HELLO`]):
///
/// ```text
/// 0: version   1: cluster id   2: sender node   3: reserved
/// 4..8: sequence number (u32)
/// 8..40: the nodes the sender hears from, a 256-bit map (bit n of byte
///        n / 8, least significant first)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub cluster: u8,
    pub sender: u8,
    pub seq: u32,
    /// Bit n: the sender hears hellos from node n (its link to n is up).
    pub alive: [u8; 32],
}

/// Bytes of a hello payload.
pub const HELLO_LEN: usize = 40;

impl Hello {
    pub fn bytes(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0] = VERSION;
        b[1] = self.cluster;
        b[2] = self.sender;
        b[4..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..40].copy_from_slice(&self.alive);
        b
    }

    pub fn parse(b: &[u8]) -> Option<Hello> {
        let b: &[u8; HELLO_LEN] = b.get(..HELLO_LEN)?.try_into().ok()?;
        if b[0] != VERSION {
            return None;
        }
        Some(Hello {
            cluster: b[1],
            sender: b[2],
            seq: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            alive: b[8..40].try_into().expect("32 bytes"),
        })
    }

    /// Whether bit `node` is set.
    pub fn hears(&self, node: u8) -> bool {
        self.alive[usize::from(node / 8)] & (1 << (node % 8)) != 0
    }

    /// Sets bit `node`.
    pub fn set(&mut self, node: u8) {
        self.alive[usize::from(node / 8)] |= 1 << (node % 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dst_mac_round_trips_and_is_unicast_local() {
        let d = Dst {
            cluster: 7,
            output: 3,
            port: 1,
            intermediate: NONE,
        };
        let mac = d.mac();
        assert_eq!(mac, [0x02, 7, 3, 1, 0xff, 0]);
        assert_eq!(mac[0] & 1, 0, "unicast");
        assert_eq!(mac[0] & 2, 2, "locally administered");
        assert_eq!(Dst::parse(&mac), Some(d));
        assert_eq!(Dst::parse(&[0x00, 0x11, 0x22, 0x33, 0x44, 0x55]), None);
    }

    #[test]
    fn shim_round_trips() {
        let s = Shim {
            input: 2,
            hops: MAX_HOPS,
            flags: FLAG_BALANCED,
            next_hop: [10, 2, 0, 2],
            flow: 0xbeef,
            seq: 65535,
        };
        assert_eq!(Shim::parse(&s.bytes()), Some(s));
        let mut b = s.bytes();
        b[0] = 9;
        assert_eq!(Shim::parse(&b), None);
    }

    #[test]
    fn hello_round_trips() {
        let mut h = Hello {
            cluster: 1,
            sender: 4,
            seq: 77,
            alive: [0; 32],
        };
        h.set(0);
        h.set(255);
        h.set(9);
        let b = h.bytes();
        let back = Hello::parse(&b).unwrap();
        assert_eq!(back, h);
        assert!(back.hears(0) && back.hears(9) && back.hears(255) && !back.hears(1));
        assert_eq!(Hello::parse(&b[..39]), None);
    }
}
