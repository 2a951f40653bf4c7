//! `TokenBucketTest`: Click's `elements/test/tokenbuckettest.cc`, the
//! self-test of the token bucket its rated elements share. bricks' rated
//! elements use a port of that bucket (`standard::token_bucket`); this
//! element runs Click's checks on the port when the configuration is
//! built and reports the first that fails, or "All tests pass!".

use crate::standard::token_bucket::{TokenBucket, MAX_TOKENS};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};
use bricks_packet::Timestamp;

/// The `TokenBucketTest` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TokenBucketTest",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "runs regression tests for the token bucket",
    synopsis: "TokenBucketTest()",
    description: "Checks the token bucket that RatedUnqueue, BandwidthRatedUnqueue, \
        RatedSplitter and BandwidthRatedSplitter use (Click's TokenBucket, ported) when the \
        configuration is built: rates and sizes, refills by millisecond ticks, the time \
        until a bucket holds a number of tokens, unlimited and idle rates. It prints \
        `All tests pass!`, or fails the configuration with the first check that does not \
        hold.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "TokenBucketTest",
    see_also: &["RatedUnqueue", "RatedSplitter"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    run_checks().map_err(ArgError::new)?;
    Ok(Box::new(TokenBucketTest))
}

/// The start of tick (millisecond) `t`.
fn tick(t: u64) -> Timestamp {
    Timestamp(t * 1_000_000)
}

/// Click's checks, in Click's order.
fn run_checks() -> Result<(), String> {
    use super::click_check as check;

    // Click's `TokenBucket tb;`: idle and empty.
    let mut tb = TokenBucket::new(0, 1);
    tb.assign(1024, 2048);
    check!((1022..=1026).contains(&tb.rate()));
    check!((2046..=2050).contains(&tb.capacity()));
    tb.set_full();
    tb.refill(tick(0));
    check!(tb.remove_if(1024));
    check!(tb.remove_if(1024));
    check!(!tb.remove_if(1024));
    tb.refill(tick(1000 * 99 / 100));
    check!(!tb.remove_if(1024));
    tb.refill(tick(1000));
    check!(tb.remove_if(1024));
    check!(!tb.remove_if(1024));

    // A size too small for a tick's tokens grows.
    let mut tb2 = TokenBucket::new(1024 * 1024 * 1024, 1);
    check!(tb2.full());
    check!(tb2.remove_if(1000));

    let mut tb3 = TokenBucket::new(1, 1024 * 1024 * 1024);
    check!(tb3.remove_if(2 * (MAX_TOKENS / 1000)));

    // The rate ends up very slightly less than 2.
    let mut tb4 = TokenBucket::new(2, 1);
    tb4.refill(tick(0));
    tb4.clear();
    let Some(wait) = tb4.ticks_until(1) else {
        return Err("a bucket with a rate never fills".into());
    };
    tb4.refill(tick(wait));
    check!(tb4.contains(1));

    tb4.refill(tick(0));
    tb4.clear();
    let done_at = tb4.ticks_until(1).unwrap_or(u64::MAX);
    let mut now = 0;
    while now < done_at {
        check!(now == done_at - 1 || !tb4.contains(1));
        check!(tb4.ticks_until(1).is_some_and(|t| t <= done_at - now));
        now += 1;
        tb4.refill(tick(now));
    }
    check!(tb4.contains(1));

    tb4.assign_special(true);
    check!(tb4.rate() == MAX_TOKENS);
    check!(tb4.capacity() == MAX_TOKENS);

    for _ in 0..2 {
        tb4.assign_special(false);
        tb4.clear();
        tb4.refill(tick(now + 5));
        check!(tb4.rate() == 0);
        check!(tb4.capacity() == MAX_TOKENS);
        check!(tb4.empty());

        tb4.assign(0, 1024);
        check!(tb4.rate() == 0);
        check!(tb4.capacity() == 1024);
    }
    Ok(())
}

/// Its checks ran when it was made.
#[derive(Debug)]
pub struct TokenBucketTest;

impl Element for TokenBucketTest {
    fn configure_message(&self) -> Option<String> {
        Some("All tests pass!".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_checks_hold_for_the_port() {
        assert_eq!(run_checks(), Ok(()));
    }

    #[test]
    fn the_element_reports_that_every_check_passed() {
        let e = bricks_runtime::testing::make_element(&CLASS, "", &PortInfo::default()).unwrap();
        assert_eq!(e.configure_message().as_deref(), Some("All tests pass!"));
    }
}
