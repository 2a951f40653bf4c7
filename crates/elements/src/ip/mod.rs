//! IPv4 forwarding elements, with Click's names, arguments and ports:
//! the pieces of Click's IP router (`make-ip-conf.pl`) and RFC 1812's
//! requirements on each step a forwarded datagram takes.
//!
//! ```text
//! Strip(14) -> CheckIPHeader(INTERFACES ...) -> GetIPAddress(16)
//!   -> rt :: StaticIPLookup(...)
//! rt[1] -> DropBroadcasts -> cp :: PaintTee(1) -> gio :: IPGWOptions(ADDR)
//!   -> FixIPSrc(ADDR) -> dt :: DecIPTTL -> fr :: IPFragmenter(1500) -> ...
//! dt[1] -> ICMPError(ADDR, timeexceeded) -> rt
//! fr[1] -> ICMPError(ADDR, unreachable, needfrag) -> rt
//! gio[1] -> ICMPError(ADDR, parameterproblem) -> rt
//! cp[1] -> ICMPError(ADDR, redirect, host) -> rt
//! ```
//!
//! Each element finds the IP header through the network header annotation
//! that CheckIPHeader or MarkIPHeader sets (or at the start of the data),
//! checks the length of what it reads, and counts what it drops.

pub mod checkicmpheader;
pub mod checkipheader;
pub mod checktcpheader;
pub mod checkudpheader;
pub mod decipttl;
pub mod dropbroadcasts;
pub mod fixipsrc;
pub mod getipaddress;
pub(crate) mod header;
pub mod icmperror;
pub mod icmppingresponder;
pub mod icmppingsource;
pub mod ip_rate_monitor;
pub mod ipencap;
pub mod ipfilter;
pub mod ipfragmenter;
pub mod ipgwoptions;
pub mod ipinputcombo;
pub mod ipmirror;
pub mod ipoutputcombo;
pub mod ipreassembler;
pub mod markipheader;
pub mod prefix_table;
pub mod setipaddress;
pub mod setipchecksum;
pub mod setipecn;
pub mod setrandipaddress;
pub mod settcpchecksum;
pub mod setudpchecksum;
pub mod staticiplookup;
pub mod stripipheader;
pub(crate) mod transport;
pub mod udpipencap;
pub mod unstripipheader;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &checkicmpheader::CLASS,
    &checkipheader::CLASS,
    &checktcpheader::CLASS,
    &checkudpheader::CLASS,
    &decipttl::CLASS,
    &dropbroadcasts::CLASS,
    &fixipsrc::CLASS,
    &getipaddress::CLASS,
    &icmperror::CLASS,
    &icmppingsource::CLASS,
    &icmppingresponder::CLASS,
    &ipencap::CLASS,
    &ipfilter::CLASS,
    &ipfragmenter::CLASS,
    &ipgwoptions::CLASS,
    &ipreassembler::CLASS,
    &ip_rate_monitor::CLASS,
    &ipinputcombo::CLASS,
    &ipoutputcombo::CLASS,
    &markipheader::CLASS,
    &ipmirror::CLASS,
    &setipaddress::CLASS,
    &setrandipaddress::CLASS,
    &setipchecksum::CLASS,
    &setipecn::CLASS,
    &settcpchecksum::CLASS,
    &setudpchecksum::CLASS,
    &staticiplookup::CLASS,
    &stripipheader::CLASS,
    &udpipencap::CLASS,
    &unstripipheader::CLASS,
];

#[cfg(test)]
mod tests {
    use super::header::testing::{fix_ip_checksum, udp};
    use super::CLASSES;
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine, RunSummary};

    fn run(config: &str) -> RunSummary {
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<test>".into(),
                text: config.to_string(),
            },
        )
        .unwrap_or_else(|d| {
            panic!(
                "{config}\n{}",
                d.iter()
                    .map(|d| map.render(d))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        let plan = build(&router, &crate::registry()).unwrap_or_else(|d| {
            panic!(
                "{config}\n{}",
                d.iter()
                    .map(|d| map.render(d))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        let mut engine = Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        let summary = engine.run();
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        summary
    }

    #[test]
    fn manual_examples_run() {
        for class in CLASSES {
            let m = class.manual;
            assert!(
                !m.summary.is_empty() && !m.description.is_empty(),
                "{}",
                class.name
            );
            assert!(m.example.contains(class.name), "{} example", class.name);
            let s = run(m.example);
            assert!(!s.elements.is_empty(), "{}", class.name);
            // The examples feed well-formed packets: nothing is refused.
            for e in &s.elements {
                for (name, v) in e.stats.entries() {
                    let bad = name == "drops"
                        || name == "no_route"
                        || name == "truncated"
                        || name.starts_with("bad_")
                        || name.starts_with("suppressed")
                        || name == "unconnected_drops";
                    assert!(!bad || *v == 0, "{}: {}.{name} = {v}", class.name, e.name);
                }
            }
        }
    }

    /// An Ethernet frame around `ip`, as a Click data literal.
    fn frame(ip: &[u8]) -> String {
        let mut f = vec![
            0x00, 0x00, 0xc0, 0xae, 0x67, 0xef, 0x00, 0x20, 0x6f, 0x14, 0x54, 0xc2,
        ];
        f.extend([0x08, 0x00]);
        f.extend(ip);
        let hex: Vec<String> = f.iter().map(|b| format!("{b:02x}")).collect();
        format!("\\<{}>", hex.join(" "))
    }

    /// A UDP datagram between the given hosts.
    fn dgram(src: [u8; 4], dst: [u8; 4], ttl: u8, df: bool, payload: usize) -> Vec<u8> {
        let mut p = udp(payload);
        p[6] = if df { 0x40 } else { 0 };
        p[8] = ttl;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        fix_ip_checksum(&mut p);
        p
    }

    /// Click's two-interface IP router (make-ip-conf.pl) without ARP, with
    /// one change: the runtime refuses push cycles, so the ICMP errors
    /// reach the route lookup through a Queue.
    #[test]
    fn two_interface_ip_router() {
        let if0 = [18, 26, 4, 9];
        let if0b = [18, 26, 4, 10];
        let far = [1, 2, 3, 4];
        let bcast1 = [1, 255, 255, 255];
        let mut bad_sum = dgram(if0, far, 64, false, 30);
        bad_sum[10] ^= 0xff;
        let mut rr_bad = dgram(far, [18, 26, 4, 77], 64, false, 30);
        rr_bad = [&rr_bad[..20], &[7, 7, 2, 0, 0, 0, 0, 0][..], &rr_bad[20..]].concat();
        rr_bad[0] = 0x47;
        let total = rr_bad.len() as u16;
        rr_bad[2..4].copy_from_slice(&total.to_be_bytes());
        fix_ip_checksum(&mut rr_bad);

        let on0 = [
            dgram(if0, far, 64, false, 100),
            dgram(if0, far, 1, false, 100),
            dgram(if0, if0b, 64, false, 100),
            bad_sum,
            dgram(if0, far, 64, false, 1600 - 28),
        ];
        let on1 = [
            dgram(far, [18, 26, 4, 77], 64, true, 1600 - 28),
            rr_bad,
            dgram(bcast1, [18, 26, 4, 77], 64, false, 10),
        ];
        let mut config = String::new();
        for (i, ip) in on0.iter().enumerate() {
            config += &format!(
                "s0_{i} :: InfiniteSource(DATA {}, LIMIT 1) -> in0;\n",
                frame(ip)
            );
        }
        for (i, ip) in on1.iter().enumerate() {
            config += &format!(
                "s1_{i} :: InfiniteSource(DATA {}, LIMIT 1) -> in1;\n",
                frame(ip)
            );
        }
        config += "
            in0 :: Paint(1) -> Strip(14) -> c0 :: CheckIPHeader(INTERFACES 18.26.4.24/24 1.0.0.1/8)
                -> GetIPAddress(16) -> rt;
            in1 :: Paint(2) -> Strip(14) -> c1 :: CheckIPHeader(INTERFACES 18.26.4.24/24 1.0.0.1/8)
                -> GetIPAddress(16) -> rt;
            rt :: StaticIPLookup(18.26.4.24/32 0, 18.26.4.255/32 0, 18.26.4.0/32 0,
                1.0.0.1/32 0, 1.255.255.255/32 0, 1.0.0.0/32 0,
                18.26.4.0/255.255.255.0 1, 1.0.0.0/255.0.0.0 2,
                255.255.255.255/32 0.0.0.0 0, 0.0.0.0/32 0, 0.0.0.0/0 18.26.4.1 1);
            rt[0] -> local :: Counter -> Discard;
            errors :: Queue(100) -> Unqueue -> rt;

            rt[1] -> DropBroadcasts -> cp0 :: PaintTee(1) -> gio0 :: IPGWOptions(18.26.4.24)
                -> FixIPSrc(18.26.4.24) -> dt0 :: DecIPTTL -> fr0 :: IPFragmenter(1500)
                -> out0 :: Counter -> Discard;
            dt0[1] -> te0 :: ICMPError(18.26.4.24, timeexceeded) -> errors;
            fr0[1] -> nf0 :: ICMPError(18.26.4.24, unreachable, needfrag) -> errors;
            gio0[1] -> pp0 :: ICMPError(18.26.4.24, parameterproblem) -> errors;
            cp0[1] -> rd0 :: ICMPError(18.26.4.24, redirect, host) -> errors;

            rt[2] -> DropBroadcasts -> cp1 :: PaintTee(2) -> gio1 :: IPGWOptions(1.0.0.1)
                -> FixIPSrc(1.0.0.1) -> dt1 :: DecIPTTL -> fr1 :: IPFragmenter(1500)
                -> out1 :: Counter -> Discard;
            dt1[1] -> te1 :: ICMPError(1.0.0.1, timeexceeded) -> errors;
            fr1[1] -> nf1 :: ICMPError(1.0.0.1, unreachable, needfrag) -> errors;
            gio1[1] -> pp1 :: ICMPError(1.0.0.1, parameterproblem) -> errors;
            cp1[1] -> rd1 :: ICMPError(1.0.0.1, redirect, host) -> errors;
        ";
        let s = run(&config);
        let get = |e: &str, c: &str| s.stats(e).and_then(|st| st.get(c)).unwrap_or(0);
        // Forwarded: the redirected packet and the Time Exceeded and
        // Redirect errors leave by interface 0; the first packet, two
        // fragments, and the Fragmentation Needed and Parameter Problem
        // errors by interface 1.
        assert_eq!(get("out0", "count"), 3, "{}", s.render());
        assert_eq!(get("out1", "count"), 5, "{}", s.render());
        assert_eq!(get("te1", "generated"), 1);
        assert_eq!(get("rd0", "generated"), 1);
        assert_eq!(get("nf0", "generated"), 1);
        assert_eq!(get("pp0", "generated"), 1);
        assert_eq!(get("fr1", "fragments"), 2);
        assert_eq!(get("c0", "bad_checksum"), 1);
        assert_eq!(get("c1", "bad_source"), 1);
        assert_eq!(get("rt", "no_route"), 0);
        assert_eq!(get("local", "count"), 0);
    }
}
