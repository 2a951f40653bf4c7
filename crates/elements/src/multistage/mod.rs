//! Multistage software routers (Bianco et al., "Scalable Layer-2/Layer-3
//! Multistage Switching Architectures for Software Routers", §III): L2
//! load balancers in front of L3 routers, joined by an ordinary Ethernet
//! switch.
//!
//! - [`l2_balancer`]: `L2Balancer`, one balancer: rewrites the destination
//!   MAC of frames from its front ports to a live router's (round robin,
//!   per flow or per flowlet), sends frames coming back from the routers
//!   out of the front port their destination was learnt on, and probes the
//!   routers' liveness.
//! - [`probe_responder`]: `ProbeResponder`, on each router: answers the
//!   balancers' probes once per front port, so that the switch learns every
//!   internal MAC and never floods frames addressed to them.
//! - [`mac_table`]: the bounded MAC-to-port table that `L2Balancer` (its
//!   return table) and `EtherSwitch` share among workers.
//!
//! Internal addresses ("labels") are locally administered MACs: router
//! `i`'s MAC for front port `k` is `02:4d:53:ii:kk:00`, balancer `b`'s back
//! port `j` is `02:4d:42:bb:jj:00`. Probes and replies are Ethernet frames
//! of type 0x88B7 whose payload is [`Probe`].

pub mod l2_balancer;
pub mod mac_table;
pub mod probe_responder;

use bricks_element::{Batch, Context, ElementClass, Packet};
use bricks_packet::MAX_BATCH;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[&l2_balancer::CLASS, &probe_responder::CLASS];

/// EtherType of probes and replies (IEEE 802's "local experimental"
/// OUI-extended type, never routed).
pub const ETHERTYPE_PROBE: u16 = 0x88B7;
/// First bytes of every probe and reply payload.
pub const PROBE_MAGIC: [u8; 4] = *b"BKMS";
/// Length of a probe or reply payload.
pub const PROBE_LEN: usize = 12;
/// Probes and replies are padded to Ethernet's minimum frame (no FCS).
pub const PROBE_FRAME_LEN: usize = 60;
/// Ethernet header length.
pub(crate) const ETHER_LEN: usize = 14;
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const ETHERTYPE_ARP: u16 = 0x0806;

/// Router `router`'s MAC for front port `front`.
#[inline]
pub const fn router_mac(router: u8, front: u8) -> [u8; 6] {
    [0x02, 0x4d, 0x53, router, front, 0x00]
}

/// The default MAC of balancer `balancer`'s back port `back`.
#[inline]
pub const fn balancer_mac(balancer: u8, back: u8) -> [u8; 6] {
    [0x02, 0x4d, 0x42, balancer, back, 0x00]
}

/// Whether `mac` (at least 3 bytes) is one of the multistage router's
/// internal addresses (a router's or a balancer's).
#[inline(always)]
pub fn is_internal(mac: &[u8]) -> bool {
    mac.len() >= 3 && mac[0] == 0x02 && mac[1] == 0x4d && (mac[2] == 0x53 || mac[2] == 0x42)
}

/// What a probe frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// From a balancer to a router.
    Probe = 1,
    /// From a router to a balancer, one per front port.
    Reply = 2,
}

/// The payload of a probe or a reply, 12 bytes after the Ethernet header:
/// magic (4), kind (1), balancer (1), router (1), front port (1), sequence
/// number (4, big-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Probe or reply.
    pub kind: ProbeKind,
    /// The balancer that sent the probe (a reply copies it).
    pub balancer: u8,
    /// The router probed (a reply: the router answering).
    pub router: u8,
    /// 0 in a probe; in a reply, the front port whose MAC is its source.
    pub front: u8,
    /// The probe's sequence number (a reply copies it).
    pub seq: u32,
}

impl Probe {
    /// Reads a payload; `None` unless it is a well-formed probe or reply.
    pub fn parse(payload: &[u8]) -> Option<Probe> {
        let b: &[u8; PROBE_LEN] = payload.get(..PROBE_LEN)?.try_into().ok()?;
        if b[..4] != PROBE_MAGIC {
            return None;
        }
        let kind = match b[4] {
            1 => ProbeKind::Probe,
            2 => ProbeKind::Reply,
            _ => return None,
        };
        Some(Probe {
            kind,
            balancer: b[5],
            router: b[6],
            front: b[7],
            seq: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        })
    }

    /// The payload bytes.
    pub fn bytes(&self) -> [u8; PROBE_LEN] {
        let mut b = [0u8; PROBE_LEN];
        b[..4].copy_from_slice(&PROBE_MAGIC);
        b[4] = self.kind as u8;
        b[5] = self.balancer;
        b[6] = self.router;
        b[7] = self.front;
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// A whole frame carrying this payload from `src` to `dst`, padded to
    /// 60 bytes.
    pub fn frame(&self, dst: [u8; 6], src: [u8; 6]) -> [u8; PROBE_FRAME_LEN] {
        let mut f = [0u8; PROBE_FRAME_LEN];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f[12..14].copy_from_slice(&ETHERTYPE_PROBE.to_be_bytes());
        f[ETHER_LEN..ETHER_LEN + PROBE_LEN].copy_from_slice(&self.bytes());
        f
    }
}

/// A MAC address (the first 6 bytes of `b`) as a number.
#[inline(always)]
pub(crate) fn mac_u64(b: &[u8]) -> u64 {
    let mut m = [0u8; 8];
    m[2..].copy_from_slice(&b[..6]);
    u64::from_be_bytes(m)
}

/// A MAC address from its number.
pub(crate) fn mac_bytes(m: u64) -> [u8; 6] {
    let b = m.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// A MAC address as text.
pub(crate) fn mac_text(m: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// Per-packet verdicts of a mixed batch: drop it, or hand it to the
/// element's own code for copies.
pub(crate) const DROP: u16 = u16::MAX;
pub(crate) const SPECIAL: u16 = u16::MAX - 1;

/// Sends the packets of `batch` out of the outputs `ports` names (one per
/// packet, in order), keeping their order within each output; a [`DROP`]
/// is freed, a [`SPECIAL`] goes to `special`. Sorting by (port, position)
/// costs O(log n) per packet whatever the number of outputs.
pub(crate) fn scatter(
    batch: &mut Batch,
    ports: &[u16],
    cx: &mut Context<'_>,
    mut special: impl FnMut(Packet, &mut Context<'_>),
) {
    let len = batch.len().min(ports.len());
    if len == 0 {
        batch.clear();
        return;
    }
    let mut keys = [0u32; MAX_BATCH];
    for (i, (k, &port)) in keys.iter_mut().zip(&ports[..len]).enumerate() {
        *k = u32::from(port) << 16 | i as u32;
    }
    keys[..len].sort_unstable();
    let mut slots: [Option<Packet>; MAX_BATCH] = [const { None }; MAX_BATCH];
    for (slot, p) in slots.iter_mut().zip(batch.drain()) {
        *slot = Some(p);
    }
    let mut out = Batch::new();
    let mut run = (keys[0] >> 16) as u16;
    for &k in &keys[..len] {
        let port = (k >> 16) as u16;
        if port != run {
            if !out.is_empty() {
                cx.push(usize::from(run), &mut out);
            }
            run = port;
        }
        let Some(p) = slots[(k & 0xffff) as usize].take() else {
            continue;
        };
        match port {
            DROP => drop(p),
            SPECIAL => special(p, cx),
            _ => {
                let _ = out.push(p);
            }
        }
    }
    if !out.is_empty() {
        cx.push(usize::from(run), &mut out);
    }
}

/// Reads a list of small numbers separated by spaces (`FRONT 0 1 2`).
pub(crate) fn parse_u8_list(text: &str, what: &str) -> Result<Vec<u8>, String> {
    text.split_whitespace()
        .map(|w| {
            w.parse::<u8>()
                .map_err(|_| format!("{what}: `{w}` is not a number from 0 to 255"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_config::{Source, SourceMap};

    #[test]
    fn probe_round_trips_and_rejects_damage() {
        let p = Probe {
            kind: ProbeKind::Reply,
            balancer: 3,
            router: 7,
            front: 2,
            seq: 0x0102_0304,
        };
        let f = p.frame(balancer_mac(3, 0), router_mac(7, 2));
        assert_eq!(f.len(), 60);
        assert_eq!(&f[..6], &[0x02, 0x4d, 0x42, 3, 0, 0]);
        assert_eq!(&f[6..12], &[0x02, 0x4d, 0x53, 7, 2, 0]);
        assert_eq!(&f[12..14], &[0x88, 0xb7]);
        assert_eq!(
            &f[14..26],
            &[b'B', b'K', b'M', b'S', 2, 3, 7, 2, 1, 2, 3, 4]
        );
        assert_eq!(Probe::parse(&f[14..]), Some(p));
        assert_eq!(Probe::parse(&f[14..25]), None, "truncated");
        let mut bad = f;
        bad[14] ^= 1;
        assert_eq!(Probe::parse(&bad[14..]), None, "magic");
        let mut bad = f;
        bad[18] = 3;
        assert_eq!(Probe::parse(&bad[14..]), None, "kind");
    }

    #[test]
    fn internal_addresses() {
        assert!(is_internal(&router_mac(0, 0)));
        assert!(is_internal(&balancer_mac(255, 255)));
        assert!(!is_internal(&[0x02, 0x4d, 0x54, 0, 0, 0]));
        assert!(!is_internal(&[0x00, 0x4d, 0x53, 0, 0, 0]));
        assert!(!is_internal(&[0x02]));
        assert_eq!(mac_bytes(mac_u64(&router_mac(9, 4))), router_mac(9, 4));
        assert_eq!(mac_text(&router_mac(10, 1)), "02:4d:53:0a:01:00");
        assert_eq!(parse_u8_list(" 0 3  7", "FRONT"), Ok(vec![0, 3, 7]));
        assert!(parse_u8_list("0 256", "FRONT").is_err());
    }

    /// Every manual's example builds and runs to completion.
    #[test]
    fn manual_examples_run() {
        let registry = crate::registry();
        for c in CLASSES {
            let m = c.manual;
            assert!(m.synopsis.starts_with(c.name), "{}", c.name);
            assert!(m.example.contains(c.name), "{}", c.name);
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: format!("{} example", c.name),
                    text: m.example.to_string(),
                },
            )
            .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let plan = bricks_runtime::build(&router, &registry)
                .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let mut engine = bricks_runtime::Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(
                summary.errors.is_empty(),
                "{}: {:?}",
                c.name,
                summary.errors
            );
            // Each example does its element's main job: balance one frame
            // (after the routers answered the first probes), answer one
            // probe for two front ports.
            let count = |class: &str, counter: &str| -> u64 {
                summary
                    .elements
                    .iter()
                    .filter(|e| e.class == class)
                    .map(|e| e.stats.get(counter).unwrap_or(0))
                    .sum()
            };
            match c.name {
                "L2Balancer" => assert_eq!(count("L2Balancer", "balanced"), 1),
                "ProbeResponder" => assert_eq!(count("ProbeResponder", "replies"), 2),
                _ => {}
            }
        }
    }
}
