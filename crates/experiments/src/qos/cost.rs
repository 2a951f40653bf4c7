//! The paper's scaling model (§2.1.2, §5.2, §6) applied to bricks'
//! measured counts: a block making `R` memory references and touching
//! `W` 32-bit words per packet needs, at a link of `C` bit/s with
//! packets of `M` bits,
//!
//! - `R x L x C / M` threads to hide a memory latency `L` (80 ns for the
//!   paper's SRAM), and
//! - `W x 32 x C / M` bit/s of memory bandwidth.
//!
//! Table 4 gives both per architecture as coefficients of `C` in Mbit/s
//! at 64-byte packets: threads `R x 80 ns x 10^6 / 512`, bandwidth
//! `W x 32 / 512` Mbit/s per Mbit/s of link. Table 3 scales the sort
//! block from OC-1 to OC-768 with the paper's 14.5 references and 40
//! words per packet, and an SRAM size proportional to the packets held:
//! the paper assumes "a network of 10 hops with an end-to-end propagation
//! delay of 10ms" and gives 17.41 MB at 10 Gbit/s; here the packets held
//! are those arriving in 10 ms at 64 bytes, `C x 10 ms / M`, each taking
//! what one held packet takes in the structure (a BinSort node is one
//! 64-byte cache line), and the paper's figure implies 89 bytes per such
//! packet. The formulas are [`bricks_qos::model`]'s.

use bricks_qos::model;

/// The paper's SRAM latency.
pub const SRAM_LATENCY_S: f64 = 80e-9;
/// The paper's minimum packet: 64 bytes.
pub const PACKET_BYTES: f64 = 64.0;
/// Time the packets held by the sort block arrive in (Table 3's 10 ms).
pub const HELD_FOR_S: f64 = 0.010;
/// Bytes of one packet held in a BinSort (its node, one cache line).
pub const BINSORT_NODE_BYTES: f64 = 64.0;

/// A block's measured counts per packet.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockCounts {
    /// Memory references per packet.
    pub refs: f64,
    /// 32-bit words per packet.
    pub words: f64,
    /// Bytes the block holds per packet held.
    pub held_bytes: f64,
    /// Where the counts come from.
    pub source: String,
}

/// Table 4's thread coefficient: threads per Mbit/s of link.
pub fn threads_per_mbps(refs: f64) -> f64 {
    model::threads(refs, SRAM_LATENCY_S, 1e6, PACKET_BYTES)
}

/// Table 4's bandwidth coefficient: Mbit/s of memory per Mbit/s of link.
pub fn bandwidth_per_mbps(words: f64) -> f64 {
    model::bandwidth_bps(words, 1e6, PACKET_BYTES) / 1e6
}

/// Table 4 as the paper prints it: architecture, threads per Mbit/s,
/// SRAM bandwidth per Mbit/s.
pub const PAPER_TABLE4: [(&str, f64, f64); 12] = [
    ("match_look_fifo", 2.46e-3, 2.88),
    ("match_look_sort", 3.52e-3, 4.63),
    ("match_pre_fifo", 3.28e-3, 3.06),
    ("match_pre_sort", 4.34e-3, 4.81),
    ("null_look_fifo", 1.31e-3, 0.75),
    ("null_look_sort", 2.38e-3, 2.50),
    ("null_pre_fifo", 2.13e-3, 0.94),
    ("null_pre_sort", 3.19e-3, 2.69),
    ("tag_look_fifo", 1.97e-3, 1.38),
    ("tag_look_sort", 3.03e-3, 3.13),
    ("tag_pre_fifo", 2.79e-3, 1.56),
    ("tag_pre_sort", 3.85e-3, 3.31),
];

/// One line of Table 3.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// The link's name.
    pub link: &'static str,
    /// Its rate in Gbit/s.
    pub gbps: f64,
    /// Threads to hide the latency.
    pub threads: f64,
    /// SRAM for the packets held, MB.
    pub sram_mb: f64,
    /// SRAM bandwidth, Gbit/s.
    pub bandwidth_gbps: f64,
}

/// Table 3 as the paper prints it: link, Gbit/s, threads, SRAM MB, SRAM
/// bandwidth Gbit/s.
pub const PAPER_TABLE3: [(&str, f64, f64, f64, f64); 8] = [
    ("OC-1", 0.051, 1.0, 0.09, 0.127),
    ("OC-3", 0.152, 1.0, 0.26, 0.380),
    ("OC-12", 0.608, 2.0, 1.06, 1.52),
    ("OC-24", 1.244, 3.0, 2.17, 3.11),
    ("OC-48", 2.488, 6.0, 4.33, 6.22),
    ("OC-192", 10.0, 22.0, 17.41, 25.0),
    ("OC-256", 13.271, 30.0, 23.10, 33.18),
    ("OC-768", 40.0, 91.0, 69.63, 100.0),
];

/// Table 3 for a sort block with `b`'s counts: each of the paper's links.
pub fn table3(b: &BlockCounts) -> Vec<Scale> {
    PAPER_TABLE3
        .iter()
        .map(|&(link, gbps, ..)| {
            let c = gbps * 1e9;
            let held = c * HELD_FOR_S / (PACKET_BYTES * 8.0);
            Scale {
                link,
                gbps,
                threads: model::threads(b.refs, SRAM_LATENCY_S, c, PACKET_BYTES),
                sram_mb: held * b.held_bytes / 1e6,
                bandwidth_gbps: model::bandwidth_bps(b.words, c, PACKET_BYTES) / 1e9,
            }
        })
        .collect()
}

/// The paper's own counts for the sort block (§5.2: 14.5 references, 40
/// words), with the bytes per held packet its SRAM sizes imply.
pub fn paper_sort_block() -> BlockCounts {
    let held_at_10g = 10e9 * HELD_FOR_S / (PACKET_BYTES * 8.0);
    BlockCounts {
        refs: 14.5,
        words: 40.0,
        held_bytes: 17.41e6 / held_at_10g,
        source: "the paper's counts (§5.2)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_counts_give_its_tables() {
        let rows = table3(&paper_sort_block());
        for (r, p) in rows.iter().zip(PAPER_TABLE3) {
            // Bandwidth and SRAM follow exactly; threads to within one
            // (the paper rounds, not always the same way).
            assert!((r.bandwidth_gbps - p.4).abs() / p.4 < 0.01, "{r:?}");
            assert!((r.sram_mb - p.3).abs() / p.3 < 0.02, "{r:?}");
            assert!((r.threads - p.2).abs() <= 1.0, "{r:?}");
        }
        // Table 4: null_pre_fifo's 0.94 is 15 words per packet.
        assert!((bandwidth_per_mbps(15.0) - 0.9375).abs() < 1e-9);
        assert!((threads_per_mbps(1.0) - 1.5625e-4).abs() < 1e-12);
    }
}
