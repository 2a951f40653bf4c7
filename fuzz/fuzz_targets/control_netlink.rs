//! Route sources from arbitrary bytes: FPM frames split from a stream,
//! their netlink messages (routes, links, nexthop objects) decoded and
//! applied by a follower to a table, never a panic; every route the
//! follower sets has a hop, and a withdrawal follows only a set. Seeds:
//! zebra's IPv4 and IPv6 FPM streams (seeds/control_netlink).
#![no_main]

use bricks_control::{fpm, Filter, Follower, RouteSink, SourceStats};
use bricks_lpm::source::{Hop, RoutePrefix};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<HashSet<RoutePrefix>>>);

impl RouteSink for Sink {
    fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        assert!(!hops.is_empty());
        self.0.lock().unwrap().insert(prefix);
        Ok(())
    }
    fn remove(&self, p: RoutePrefix) -> Result<(), String> {
        assert!(
            self.0.lock().unwrap().remove(&p),
            "{p} withdrawn but never set"
        );
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let stats = Arc::new(SourceStats::default());
    stats.quiet();
    let devices = Some(vec!["eth0".to_string(), "eth1".to_string()]);
    let filter = |table| Filter {
        table,
        protocol: None,
        v4: true,
        v6: true,
        devices: devices.clone(),
    };
    // The bytes as one netlink datagram.
    let mut f = Follower::new(filter(Some(100)), Sink::default(), stats.clone());
    f.feed(data);
    f.begin_snapshot();
    f.feed(data);
    f.end_snapshot();
    // The bytes as an FPM stream, read as a router reads zebra's: every
    // add a whole route, IPv6 too.
    let mut f = Follower::new(filter(None), Sink::default(), stats).whole_routes();
    let (used, _) = fpm::deframe(data, |ty, payload| {
        if ty == 1 {
            f.feed(payload);
        }
    });
    assert!(used <= data.len());
});
