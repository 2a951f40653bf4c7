//! Packet analysis in Click's text formats: IP summary dumps and IPPrint,
//! aggregates, and the trace tools (anonymizing, erasing and truncating
//! payloads, timestamp ranges).

pub mod aggregate_counter;
pub mod aggregate_filter;
pub mod aggregate_first;
pub mod aggregate_ip;
pub mod aggregate_ipflows;
pub mod aggregate_last;
pub mod aggregate_length;
pub mod aggregate_packet_counter;
pub mod anonymize_ip_addr;
pub mod erase_ip_payload;
pub mod from_ipsumdump;
pub mod info;
pub mod ip_field;
pub mod ipprint;
pub mod md5;
pub mod options;
pub mod time_range;
pub mod timestamp_accum;
pub mod to_ipsumdump;
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
