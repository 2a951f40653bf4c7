//! `AddressInfo`: names in other elements' arguments, read as each
//! argument needs them (Click's addressinfo.cc).

use std::process::Command;

fn bricks(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("running bricks")
}

#[test]
fn names_become_the_address_each_argument_takes() {
    let config = "AddressInfo(foo 1.2.3.4/20, intern 10.0.0.1 10.0.0.0/8 00:50:ba:85:84:a9, \
                  x 10.0.0.2 00:50:ba:85:84:aa);
        rt :: StaticIPLookup(foo 0, foo:ipnet 1, foo:bcast 2);
        Idle -> rt; rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;
        Idle -> r :: ARPResponder(intern) -> e :: EtherEncap(0x0800, intern, x)
             -> q :: ARPQuerier(x) -> Discard; Idle -> [1]q;";
    let o = bricks(&[
        "run",
        "-q",
        "--quiet",
        "-e",
        config,
        "-h",
        "rt.config",
        "-h",
        "e.config",
        "-h",
        "r.config",
        "-h",
        "q.config",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "rt.config:\n1.2.3.4 0, 1.2.0.0/20 1, 1.2.15.255 2\n\n\
         e.config:\n0x0800, 00:50:ba:85:84:a9, 00:50:ba:85:84:aa\n\n\
         r.config:\n10.0.0.1 00:50:ba:85:84:a9\n\n\
         q.config:\n10.0.0.2 00:50:ba:85:84:aa\n\n"
    );
}

#[test]
fn a_name_defined_in_a_compound_is_unknown_outside_it() {
    let inside =
        "c :: { AddressInfo(mazu 10.0.0.10); input -> IPEncap(6, 10.0.0.1, mazu) -> output };
        Idle -> c -> Discard;";
    assert!(bricks(&["check", "-e", inside]).status.success());
    let outside = "c :: { AddressInfo(mazu 10.0.0.10); input -> output };
        Idle -> c -> IPEncap(6, 10.0.0.1, mazu) -> Discard;";
    let o = bricks(&["check", "-e", outside]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("mazu"));
}

#[test]
fn a_bad_definition_is_refused_where_it_is_written() {
    let o = bricks(&["check", "-e", "AddressInfo(a 10.0.0.300); Idle -> Discard;"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("10.0.0.300") && err.contains("1:"), "{err}");
}

#[test]
fn click_capture_keywords_of_from_device_are_accepted() {
    let ok =
        "FromDevice(eth0, METHOD LINUX, SNAPLEN 2046, HEADROOM 64, OUTBOUND false, ENCAP ETHER) \
              -> Discard;";
    let o = bricks(&["check", "-e", ok]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bad = "FromDevice(eth0, METHOD CARRIER_PIGEON) -> Discard;";
    let o = bricks(&["check", "-e", bad]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("METHOD"));
}

#[test]
fn a_device_this_host_lacks_is_a_warning_for_check_and_an_error_for_run() {
    let config = "Idle -> SetIPAddress(nodev7:gw) -> q :: ARPQuerier(10.0.0.1, nodev7) \
                  -> Discard; Idle -> [1]q;";
    let o = bricks(&["check", "-e", config]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("no network device `nodev7` on this host"),
        "{err}"
    );
    let o = bricks(&["run", "-q", "-e", config]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("no network device `nodev7` on this host"),
        "{err}"
    );
    // A word that is no device name stays an error of the element's.
    let o = bricks(&[
        "check",
        "-e",
        "Idle -> ARPQuerier(10.0.0.1, NOPE) -> Discard;",
    ]);
    assert!(!o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("network device"));
}

#[test]
fn clicks_device_configurations_check_on_a_host_without_their_devices() {
    // Click's conf/fromhost-tunnel.click names eth1 for its Ethernet
    // address (this check needs no such device).
    let config = "AddressInfo(MY_ADDR 10.0.0.2);
        Idle -> aq :: ARPQuerier(MY_ADDR, nodev1) -> Discard; Idle -> [1]aq;
        Idle -> SetIPAddress(nodev1:gw) -> Discard;";
    let o = bricks(&["check", "-e", config]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("`nodev1`"), "{err}");
}
