//! `DropBroadcasts`: a router does not forward what arrived as a link-layer
//! broadcast or multicast (RFC 1812 section 5.3.4).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::PacketType;

/// The `DropBroadcasts` class.
pub static CLASS: ElementClass = ElementClass {
    name: "DropBroadcasts",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops link-level broadcast and multicast packets",
    synopsis: "DropBroadcasts",
    description: "Drops packets whose packet type annotation says they arrived as a \
        link-level broadcast or multicast (the input device sets it from the \
        destination MAC address). RFC 1812 section 5.3.4 forbids a router to forward \
        such a packet unless it is an IP multicast it routes on purpose; in Click's IP \
        router this element sits after the route lookup, on the path to each output \
        interface.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "link-level broadcasts and multicasts dropped")],
    example: "InfiniteSource(LIMIT 1) -> DropBroadcasts -> Discard;",
    see_also: &["CheckIPHeader", "StaticIPLookup"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(DropBroadcasts { drops: 0 }))
}

/// Drops link-level broadcasts and multicasts.
#[derive(Debug)]
pub struct DropBroadcasts {
    drops: u64,
}

impl DropBroadcasts {
    /// A DropBroadcasts (IPOutputCombo's).
    pub(crate) fn new() -> DropBroadcasts {
        DropBroadcasts { drops: 0 }
    }

    #[inline]
    pub(crate) fn keep(&mut self, p: &Packet) -> bool {
        let keep = !matches!(
            p.anno().packet_type,
            PacketType::Broadcast | PacketType::Multicast
        );
        self.drops += u64::from(!keep);
        keep
    }
}

impl Element for DropBroadcasts {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // Most batches hold no broadcast: they are only read, not rewritten.
        let any = batch.iter().any(|p| {
            matches!(
                p.anno().packet_type,
                PacketType::Broadcast | PacketType::Multicast
            )
        });
        if any {
            batch.retain(|p| self.keep(p));
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| b.retain(|p| self.keep(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    fn typed(t: PacketType, tag: u8) -> Packet {
        let mut p = Packet::from_slice(&[tag; 20]).unwrap();
        p.anno_mut().packet_type = t;
        p
    }

    #[test]
    fn drops_broadcast_and_multicast_only() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(
            0,
            [
                typed(PacketType::Host, 1),
                typed(PacketType::Broadcast, 2),
                typed(PacketType::Multicast, 3),
                typed(PacketType::OtherHost, 4),
                typed(PacketType::Outgoing, 5),
            ],
        );
        let tags: Vec<u8> = h.take(0).iter().map(|p| p.data()[0]).collect();
        assert_eq!(tags, vec![1, 4, 5]);
        assert_eq!(h.stats().get("drops"), Some(2));
    }
}
