//! Network devices as address names (Click's user-level AddressInfo):
//! bricks runs inside a network namespace the test makes (and deletes,
//! also on failure) with a veth device whose addresses, prefix and
//! default gateway the test sets, and the configuration's `DEV`,
//! `DEV:net`, `DEV:bcast` and `DEV:gw` must be those. Root only; skipped
//! with a reason otherwise.

use bricks_netns::{ip, output_timeout, skip_unless_root, Network};
use std::time::Duration;

const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");

#[test]
fn a_device_name_stands_for_its_addresses() {
    if skip_unless_root("a_device_name_stands_for_its_addresses").is_some() {
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("ad")).unwrap();
    let ns = net.add_namespace("h").unwrap();
    // A veth pair inside the namespace (the dummy driver may be absent).
    ip(&[
        "-n", &ns, "link", "add", "dv0", "type", "veth", "peer", "name", "dv1",
    ])
    .unwrap();
    ip(&["-n", &ns, "link", "set", "dv1", "up"]).unwrap();
    ip(&[
        "-n",
        &ns,
        "link",
        "set",
        "dv0",
        "address",
        "02:11:22:33:44:55",
    ])
    .unwrap();
    ip(&["-n", &ns, "link", "set", "dv0", "up"]).unwrap();
    net.add_addr("h", "dv0", "10.77.1.5/24").unwrap();
    net.add_route("h", &["default", "via", "10.77.1.254", "dev", "dv0"])
        .unwrap();

    let config = "rt :: StaticIPLookup(dv0 0, dv0:net 1, dv0:bcast 2);
        Idle -> rt; rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;
        Idle -> s :: SetIPAddress(dv0:gw)
             -> e :: EtherEncap(0x0800, dv0, 00:00:00:00:00:01)
             -> q :: ARPQuerier(dv0) -> p :: Print(dv0) -> Discard; Idle -> [1]q;";
    let o = output_timeout(
        &mut net.exec(
            "h",
            &[
                BRICKS,
                "run",
                "-q",
                "--quiet",
                "-e",
                config,
                "-h",
                "rt.config",
                "-h",
                "s.config",
                "-h",
                "e.config",
                "-h",
                "q.config",
                "-h",
                "p.config",
            ],
        ),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "rt.config:\n10.77.1.5 0, 10.77.1.0/24 1, 10.77.1.255 2\n\n\
         s.config:\n10.77.1.254\n\n\
         e.config:\n0x0800, 02:11:22:33:44:55, 00:00:00:00:00:01\n\n\
         q.config:\n10.77.1.5 02:11:22:33:44:55\n\n\
         p.config:\ndv0\n\n",
        "a device name is read as each argument needs it; Print keeps it as a label"
    );

    // Without a default route through it, `dv0:gw` is the prefix's
    // network address with its lowest bit set, as in Click.
    ip(&["-n", &ns, "route", "del", "default"]).unwrap();
    let o = output_timeout(
        &mut net.exec(
            "h",
            &[
                BRICKS,
                "run",
                "-q",
                "--quiet",
                "-e",
                "Idle -> s :: SetIPAddress(dv0:gw) -> Discard;",
                "-h",
                "s.config",
            ],
        ),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "10.77.1.1\n");
    net.delete();
}
