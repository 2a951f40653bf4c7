//! Arbitrary patterns through the Classifier and IPClassifier compilers:
//! compiling never panics, hangs or grows without bound, and every compiled
//! program classifies packets exactly as the patterns read directly do
//! (`classifier::interpret`, `Expr::eval`), on every prefix of the packet.
//!
//! Input: a mode byte, then pattern text, then optionally a zero byte and
//! the packet. With the top bit of the mode set, each text byte picks a word
//! from the vocabulary below instead of being a character, so the fuzzer
//! writes well-formed patterns without a seed corpus. Without a packet, the
//! mode's low bits pick one of the real packets below.
#![no_main]

use bricks_elements::classify::program::{IpHeaders, Program};
use bricks_elements::classify::{classifier, ip_classifier};
use libfuzzer_sys::fuzz_target;

/// Words of both pattern languages, and the comma that splits patterns.
const WORDS: &[&str] = &[
    ",",
    " ",
    "-",
    "!",
    "12/0800",
    "12/0806",
    "20/0001",
    "23/06",
    "14/4?",
    "0/01%01",
    "47/02%12",
    "12/08??",
    "26/0a000001",
    "tcp",
    "udp",
    "icmp",
    "igmp",
    "ip",
    "proto",
    "src",
    "dst",
    "host",
    "net",
    "port",
    "and",
    "or",
    "not",
    "&&",
    "||",
    "(",
    ")",
    "?",
    ":",
    "10.0.0.1",
    "10.0.0.2",
    "10.0.0.0/8",
    "mask",
    "255.0.0.0",
    "80",
    "53",
    "1023",
    "1024-65535",
    "http",
    "domain",
    "echo",
    "opt",
    "syn",
    "ack",
    "fin",
    "type",
    "echo-reply",
    "vers",
    "hl",
    "tos",
    "dscp",
    "ttl",
    "len",
    "id",
    "frag",
    "unfrag",
    "ect",
    "ce",
    "win",
    "[",
    "]",
    "9",
    "0:2",
    "13",
    "transp",
    "=",
    "!=",
    ">",
    "<",
    ">=",
    "<=",
    "&",
    "0x12",
    "true",
    "false",
    "any",
    "6",
    "17",
    "4",
    "5",
    "64",
];

/// IPv4/TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80 in an Ethernet frame.
const ETH_TCP_SYN: [u8; 54] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
    0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x50, 0x02,
    0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
];
/// ARP request, 192.168.1.1 asking for 192.168.1.2.
const ARP_REQUEST: [u8; 42] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06, 0x00, 0x01,
    0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xc0, 0xa8, 0x01, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02,
];
/// IPv4/UDP DNS query 192.168.1.10:53000 -> 8.8.8.8:53 (IP header first).
const UDP_DNS: [u8; 57] = [
    0x45, 0x00, 0x00, 0x39, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xbe, 0xc0, 0xa8, 0x01, 0x0a,
    0x08, 0x08, 0x08, 0x08, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xe3, 0x68, 0xab, 0xcd, 0x01, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65,
    0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
];
/// IPv4/ICMP echo request 10.0.0.1 -> 10.0.0.2 (IP header first).
const ICMP_ECHO: [u8; 36] = [
    0x45, 0x00, 0x00, 0x24, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0xa3, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0x66, 0x68, 0x00, 0x01, 0x00, 0x01, 0x61, 0x62, 0x63, 0x64,
    0x65, 0x66, 0x67, 0x68,
];
/// Last fragment (offset 1480) of a UDP datagram, IP header first.
const UDP_LATER_FRAG: [u8; 36] = [
    0x45, 0x00, 0x00, 0x24, 0x42, 0x42, 0x00, 0xb9, 0x40, 0x11, 0x23, 0xcc, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, 0x00, 0x35, 0x00, 0x35, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00,
];

const PACKETS: [&[u8]; 5] = [
    &ETH_TCP_SYN,
    &ARP_REQUEST,
    &UDP_DNS,
    &ICMP_ECHO,
    &UDP_LATER_FRAG,
];

/// Runs `program` on every prefix of `packet` and checks it against
/// `want`, the reference answer for that prefix.
fn check(
    program: &Program,
    npatterns: usize,
    packet: &[u8],
    ip: bool,
    want: impl Fn(&[u8]) -> Option<usize>,
) {
    for len in 0..=packet.len() {
        let p = &packet[..len];
        let got = if ip {
            program.classify_ip(p)
        } else {
            program.classify(p)
        };
        assert!(got.is_none_or(|o| o < npatterns));
        assert_eq!(got, want(p), "on {p:02x?}\n{program}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (text, packet) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let text: String = if mode & 0x80 != 0 {
        text.iter()
            .map(|&b| WORDS[b as usize % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        String::from_utf8_lossy(text).into_owned()
    };
    let packet = if packet.is_empty() {
        PACKETS[(mode & 0x7f) as usize % PACKETS.len()]
    } else {
        &packet[..packet.len().min(96)]
    };
    let patterns: Vec<&str> = text.split(',').collect();

    if let Ok(program) = classifier::compile(&patterns) {
        check(&program, patterns.len(), packet, false, |p| {
            classifier::interpret(&patterns, p).expect("interpret accepts what compile does")
        });
    } else {
        assert!(classifier::interpret(&patterns, packet).is_err());
    }

    if let Ok(exprs) = ip_classifier::parse(&patterns) {
        let program = Program::build(&exprs);
        check(&program, patterns.len(), packet, true, |p| {
            let h = IpHeaders::new(p);
            exprs.iter().position(|e| e.eval(&h))
        });
    } else {
        assert!(ip_classifier::compile(&patterns).is_err());
    }
});
