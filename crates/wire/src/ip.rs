//! What IPv4 and IPv6 share: the protocol number of the next header.
//!
//! IPv4's Protocol field (RFC 791 section 3.1) and IPv6's Next Header field
//! (RFC 8200 section 3) take values from one IANA registry, "Assigned
//! Internet Protocol Numbers".

number_with_names! {
    /// An IANA protocol number, as carried by IPv4 Protocol and IPv6 Next
    /// Header.
    pub struct IpProtocol(u8), unknown as "{}" {
        /// IPv6 Hop-by-Hop Options (RFC 8200 section 4.3).
        HOPOPT = 0, "HOPOPT";
        /// ICMP for IPv4 (RFC 792).
        ICMP = 1, "ICMP";
        /// IGMP (RFC 3376).
        IGMP = 2, "IGMP";
        /// IPv4 encapsulated in IP (RFC 2003).
        IPV4 = 4, "IPv4";
        /// TCP (RFC 9293).
        TCP = 6, "TCP";
        /// UDP (RFC 768).
        UDP = 17, "UDP";
        /// IPv6 encapsulated in IP (RFC 2473).
        IPV6 = 41, "IPv6";
        /// IPv6 Routing header (RFC 8200 section 4.4).
        IPV6_ROUTE = 43, "IPv6-Route";
        /// IPv6 Fragment header (RFC 8200 section 4.5).
        IPV6_FRAG = 44, "IPv6-Frag";
        /// Generic Routing Encapsulation (RFC 2784).
        GRE = 47, "GRE";
        /// IPsec Encapsulating Security Payload (RFC 4303).
        ESP = 50, "ESP";
        /// IPsec Authentication Header (RFC 4302).
        AH = 51, "AH";
        /// ICMP for IPv6 (RFC 4443).
        ICMPV6 = 58, "ICMPv6";
        /// No next header for IPv6 (RFC 8200 section 4.7).
        IPV6_NO_NXT = 59, "IPv6-NoNxt";
        /// IPv6 Destination Options (RFC 8200 section 4.6).
        IPV6_OPTS = 60, "IPv6-Opts";
        /// SCTP (RFC 9260).
        SCTP = 132, "SCTP";
    }
}

impl IpProtocol {
    /// True for the IPv6 extension headers that sit between the IPv6 header
    /// and the upper-layer header (RFC 8200 section 4.1), including ESP and
    /// AH.
    #[inline]
    pub const fn is_ipv6_extension_header(self) -> bool {
        matches!(
            self.0,
            0 | 43 | 44 | 50 | 51 | 60 | 135 | 139 | 140 | 253 | 254
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(IpProtocol::from(6), IpProtocol::TCP);
        assert_eq!(u8::from(IpProtocol::ICMPV6), 58);
        assert_eq!(format!("{}", IpProtocol::ESP), "ESP");
        assert_eq!(format!("{}", IpProtocol(99)), "99");
        assert_eq!(format!("{:?}", IpProtocol::UDP), "IpProtocol(UDP)");
        assert_eq!(IpProtocol(253).name(), None);
        assert!(IpProtocol::IPV6_FRAG.is_ipv6_extension_header());
        assert!(!IpProtocol::TCP.is_ipv6_extension_header());
    }
}
