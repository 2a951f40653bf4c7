//! `IPNameInfo` and `IPFieldInfo`: Click's holders of the IP name
//! databases (`elements/ip/ipnameinfo.cc`, `ipfieldinfo.cc`). In Click
//! they install, when the router is built, the names other elements'
//! arguments may use: protocols, ports, ICMP types and codes, and TCP/IP
//! header field names. bricks has those names built into the elements
//! that read them, so these classes do nothing: they are accepted so that
//! configurations (and flattened ones, where Click's tools may list them)
//! still check.

use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `IPNameInfo` class.
pub static IP_NAME_INFO: ElementClass = ElementClass {
    name: "IPNameInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &IP_NAME_INFO_MANUAL,
    make,
};

/// The `IPFieldInfo` class.
pub static IP_FIELD_INFO: ElementClass = ElementClass {
    name: "IPFieldInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &IP_FIELD_INFO_MANUAL,
    make,
};

static IP_NAME_INFO_MANUAL: Manual = Manual {
    summary: "stores name information about IP packets",
    synopsis: "IPNameInfo()",
    description: "Holds IP-related names in Click: the names of IP protocols (dccp, gre, \
        icmp, igmp, ipip, payload, sctp, tcp, tcpudp, transp, udp), of well-known TCP and \
        UDP ports (auth, bootpc, bootps, chargen, daytime, discard, dns, domain, echo, \
        finger, ftp, ftp-data, https, imap3, imaps, irc, netbios-dgm, netbios-ns, \
        netbios-ssn, nntp, ntp, pop3, pop3s, pptp, rip, route, smtp, snmp, snmp-trap, ssh, \
        sunrpc, telnet, tftp, www), of ICMP types (echo, echo-reply, unreachable...) and of \
        the codes of ICMP unreachable, redirect, timeexceeded and parameterproblem \
        messages. Click's manual says it should not be used in configurations.\n\n\
        In bricks these names are built into the elements that read them (IPClassifier \
        and IPFilter, PortInfo's lookup, ICMPError, ForceICMP...), whether or not an \
        IPNameInfo is declared; declaring one changes nothing. It takes no arguments and \
        has no ports. Click at user level also reads /etc/services and /etc/protocols; \
        bricks does not: names defined only there are unknown to it (use PortInfo).",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "IPNameInfo(); InfiniteSource(LIMIT 1) -> c :: IPClassifier(tcp port www, -); \
        c[0] -> Discard; c[1] -> Discard;",
    see_also: &["PortInfo", "IPFieldInfo", "AddressInfo"],
};

static IP_FIELD_INFO_MANUAL: Manual = Manual {
    summary: "stores name information about IP header fields",
    synopsis: "IPFieldInfo()",
    description: "Holds the names of TCP/IP header fields in Click, as AggregateIP's FIELD \
        takes them: `ip` fields (vers, hl, tos, dscp, ecn, len, id, off, rf, df, mf, \
        fragoff, ttl, proto, sum, src, dst), `tcp` fields (sport, dport, seq, seqno, ack, \
        ackno, hl, flags, fin, syn, rst, psh, push, ack, urg, win, sum, urp), `udp` fields \
        (sport, dport, len, sum), `icmp` fields (type, code, sum) and `tcpudp` ports. \
        Click's manual says it should not be used in configurations.\n\n\
        In bricks the field names are built into the elements that read them \
        (AggregateIP), whether or not an IPFieldInfo is declared; declaring one changes \
        nothing. It takes no arguments and has no ports.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "IPFieldInfo(); InfiniteSource(LIMIT 1) -> AggregateIP(ip src) -> Discard;",
    see_also: &["AggregateIP", "IPNameInfo"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(NameInfo))
}

/// Holds nothing: the names are built in.
#[derive(Debug)]
pub struct NameInfo;

impl Element for NameInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn take_no_arguments() {
        for class in [&IP_NAME_INFO, &IP_FIELD_INFO] {
            assert!(make_element(class, "", &PortInfo::default()).is_ok());
            assert!(make_element(class, "tcp 6", &PortInfo::default()).is_err());
        }
    }
}
