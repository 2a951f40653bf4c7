//! Packet analysis in Click's text formats: IP summary dumps and IPPrint,
//! aggregates, and the trace tools (anonymizing, erasing and truncating
//! payloads, timestamp ranges, stored timestamps), and packets read back
//! from tcpdump's text; Click's other trace files: NLANR (TSH, FR, FR+),
//! DAG/ERF and NetFlow summaries read, per-flow dumps written.

pub mod aggregate_counter;
pub mod aggregate_filter;
pub mod aggregate_first;
pub mod aggregate_ip;
pub mod aggregate_ip_addr_pair;
pub mod aggregate_ipflows;
pub mod aggregate_last;
pub mod aggregate_length;
pub mod aggregate_packet_counter;
pub mod aggregate_paint;
pub mod anonymize_ip_addr;
pub mod erase_ip_payload;
pub mod from_dagdump;
pub mod from_ipsumdump;
pub mod from_netflowsumdump;
pub mod from_nlanrdump;
pub mod from_tcpdump;
pub mod info;
pub mod ip_field;
pub mod ipprint;
pub mod ipsumdump_binary;
pub mod md5;
pub mod options;
pub mod store_timestamp;
pub mod time_range;
pub mod timestamp_accum;
pub mod to_ipflowdumps;
pub mod to_ipsumdump;
pub mod trace_file;
pub mod truncate_ip_payload;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &from_ipsumdump::CLASS,
    &to_ipsumdump::CLASS,
    &ipprint::CLASS,
    &aggregate_counter::CLASS,
    &aggregate_ipflows::CLASS,
    &aggregate_ip::CLASS,
    &aggregate_length::CLASS,
    &aggregate_first::CLASS,
    &aggregate_last::CLASS,
    &aggregate_filter::CLASS,
    &aggregate_packet_counter::CLASS,
    &truncate_ip_payload::CLASS,
    &erase_ip_payload::CLASS,
    &anonymize_ip_addr::CLASS,
    &time_range::CLASS,
    &timestamp_accum::CLASS,
    &from_tcpdump::CLASS,
    &store_timestamp::CLASS,
    &aggregate_ip_addr_pair::CLASS,
    &aggregate_paint::CLASS,
    &from_nlanrdump::CLASS,
    &from_dagdump::CLASS,
    &from_netflowsumdump::CLASS,
    &to_ipflowdumps::CLASS,
];

/// Reads CAPACITY, the bound of an element's table: `default` when it is
/// not given, refused outside 1 to `max`.
fn read_capacity(
    args: &mut bricks_element::Args<'_>,
    default: usize,
    max: usize,
) -> Result<usize, bricks_element::ArgError> {
    let capacity = args.read::<usize>("CAPACITY")?.unwrap_or(default);
    if !(1..=max).contains(&capacity) {
        return Err(bricks_element::ArgError::new(format!(
            "CAPACITY {capacity}: from 1 to {max}"
        )));
    }
    Ok(capacity)
}

/// The configure message of an element that keeps its warnings about
/// its arguments: one `warning:` line each, `None` when there are none.
fn warnings_message(warnings: &[String]) -> Option<String> {
    (!warnings.is_empty()).then(|| {
        warnings
            .iter()
            .map(|w| format!("warning: {w}"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

#[cfg(test)]
mod tests {
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine};

    /// The manual examples of FromTcpdump, StoreTimestamp,
    /// AggregateIPAddrPair, AggregatePaint and the trace readers run to their end without
    /// errors or bad lines (files named from the workspace root).
    #[test]
    fn manual_examples_run() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        for class in [
            &super::from_tcpdump::CLASS,
            &super::store_timestamp::CLASS,
            &super::aggregate_ip_addr_pair::CLASS,
            &super::aggregate_paint::CLASS,
            &super::from_nlanrdump::CLASS,
            &super::from_dagdump::CLASS,
            &super::from_netflowsumdump::CLASS,
        ] {
            let text = class
                .manual
                .example
                .replace("crates/", &format!("{root}crates/"));
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: "<example>".into(),
                    text,
                },
            )
            .unwrap_or_else(|_| panic!("{} example parses", class.name));
            let plan = build(&router, &crate::registry())
                .unwrap_or_else(|_| panic!("{} example builds", class.name));
            let mut engine = Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(
                summary.errors.is_empty(),
                "{}: {:?}",
                class.name,
                summary.errors
            );
            for e in &summary.elements {
                for (name, v) in e.stats.entries() {
                    let bad = matches!(
                        name.as_ref(),
                        "bad_lines"
                            | "too_long"
                            | "table_full"
                            | "no_ip"
                            | "truncated"
                            | "other_types"
                            | "bad_records"
                    );
                    assert!(!bad || *v == 0, "{}: {}.{name} = {v}", class.name, e.name);
                }
            }
        }
    }
}
