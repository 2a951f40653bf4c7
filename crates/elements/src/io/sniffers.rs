//! `ToHostSniffers`: packets for the host's packet sniffers (tcpdump) and
//! for nothing else, as Click's kernel element hands them to Linux's
//! packet taps only. In user space that is done by sending them out of a
//! Linux dummy (or ifb) interface (`bricks_io::sniffers`): the kernel
//! shows each to the sniffers, and the driver drops it.

use super::capture::CaptureSink;
use super::host::{ip_packet, HostType};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_io::binding::{self, Binding};
use bricks_io::pcap::LinkType;
use bricks_io::sniffers::{self, LinkKind, SnifferDevice};
use std::sync::Arc;

/// The `ToHostSniffers` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ToHostSniffers",
    ports: "1/0",
    processing: "h/",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "hands packets to the host's packet sniffers (tcpdump) only",
    synopsis: "ToHostSniffers([DEVNAME, KEYWORDS])",
    description: "Shows packets to the host's packet sniffers (tcpdump, Wireshark, any \
        packet socket) and to nothing else: neither the host's network stack nor a wire \
        sees them. Click's kernel element hands them to Linux's packet taps; bricks, in \
        user space, sends them out of a Linux interface that drops all it is given, a \
        dummy interface (an ifb interface where the kernel has no dummy driver): the \
        kernel shows each packet to the sniffers on that interface and on `any` before \
        the driver drops it. Watch them with `tcpdump -i DEVNAME` (they appear as sent \
        by that interface, `Out`).\n\n\
        The interface is DEVNAME when that is a dummy or ifb interface, or when no \
        interface has that name: bricks then makes it when the router starts (MTU \
        65,535, so that no packet is refused for its size; no IPv6, so that it sends \
        nothing of its own) and deletes it when the router stops. When DEVNAME names an \
        interface of another kind (`ToHostSniffers(eth0)`, as Click configurations \
        write it to make packets appear to come from eth0), sending there would put \
        the packets on its wire, so they go to the interface DEVNAME-sniff instead (cut \
        to Linux's 15 characters: eth0-sniff), and `bricks run` says so when it starts. \
        Without DEVNAME the interface is `bricks-sniff`. `ToHost(..., SNIFFERS true)` \
        is the same element.\n\n\
        When the command line binds DEVNAME to a capture (`--device \
        eth0=pcap:,sniffed.pcap`) the packets are recorded there instead. Making the \
        interface needs root (CAP_NET_ADMIN); without it, or when it fails, the packets \
        are counted in `drops` and the router runs on (the reason is printed once).",
    ports: "one push input; no outputs",
    keywords: &[
        Keyword {
            name: "DEVNAME",
            ty: "interface name",
            default: Some("bricks-sniff"),
            doc: "the dummy or ifb interface (or the interface whose DEVNAME-sniff is used)",
        },
        Keyword {
            name: "TYPE",
            ty: "ETHER or IP",
            default: Some("ETHER"),
            doc: "what the input carries: Ethernet frames, or IP packets, which are given \
                  an Ethernet header to the sniffer interface's address",
        },
        Keyword {
            name: "QUIET",
            ty: "boolean",
            default: Some("false"),
            doc: "say nothing when the sniffer interface is not DEVNAME itself",
        },
    ],
    counters: &[
        (
            "count",
            "packets shown to the sniffers or recorded to the capture",
        ),
        ("bytes", "their bytes (sniffer interface)"),
        (
            "drops",
            "packets dropped: no sniffer interface and no capture, or any reason below",
        ),
        (
            "not_ip",
            "packets shorter than an Ethernet header (TYPE ETHER) or not IP (TYPE IP)",
        ),
        ("errors", "sends the kernel refused"),
    ],
    example: "FromDevice(eth0) -> t :: Tee;\n\
        t[0] -> Queue -> ToDevice(eth1);\n\
        t[1] -> ToHostSniffers(eth0);  // tcpdump -i eth0-sniff",
    see_also: &["ToHost", "ToDump"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let name: Option<String> = args.read_p("DEVNAME")?;
    let ty = read_type(args)?;
    let quiet: bool = args.read("QUIET")?.unwrap_or(false);
    Ok(Box::new(ToHostSniffers::new(name, ty, quiet)))
}

/// Reads TYPE (ETHER or IP), as ToHost does.
pub(crate) fn read_type(args: &mut Args<'_>) -> Result<HostType, ArgError> {
    match args.read::<String>("TYPE")? {
        None => Ok(HostType::Ether),
        Some(t) if t.eq_ignore_ascii_case("ETHER") => Ok(HostType::Ether),
        Some(t) if t.eq_ignore_ascii_case("IP") => Ok(HostType::Ip),
        Some(t) => Err(ArgError::new(format!("TYPE `{t}`: expected ETHER or IP"))),
    }
}

/// A locally administered source address no interface has, for the
/// Ethernet header of TYPE IP packets.
const SOURCE_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// ToHostSniffers: sends into a sniffer interface, or records to a capture.
pub struct ToHostSniffers {
    /// DEVNAME as written (or the default).
    key: String,
    ty: HostType,
    quiet: bool,
    sink: Option<CaptureSink>,
    dev: Option<Arc<SnifferDevice>>,
    opened: bool,
    sent: u64,
    bytes: u64,
    no_device: u64,
    not_ip: u64,
    errors: u64,
    /// Whether a refused send was already reported.
    said: bool,
}

impl ToHostSniffers {
    /// A ToHostSniffers for `devname` (ToHost with SNIFFERS true makes
    /// one too).
    pub(crate) fn new(devname: Option<String>, ty: HostType, quiet: bool) -> ToHostSniffers {
        let key = devname.unwrap_or_else(|| sniffers::DEFAULT_NAME.to_string());
        let sink = match binding::lookup(&key) {
            Some(Binding::Pcap {
                output: Some(p), ..
            }) => Some(CaptureSink::new(p, LinkType::Ethernet, false, 0).stamp_with_send_time()),
            _ => None,
        };
        ToHostSniffers {
            key,
            ty,
            quiet,
            sink,
            dev: None,
            opened: false,
            sent: 0,
            bytes: 0,
            no_device: 0,
            not_ip: 0,
            errors: 0,
            said: false,
        }
    }

    /// Opens the sniffer interface, once; says why when it cannot, and
    /// where the packets go when that is not DEVNAME.
    fn open(&mut self, cx: &Context<'_>) {
        self.opened = true;
        if self.sink.is_some() {
            return;
        }
        let name = match sniffers::kind(&self.key) {
            Ok(LinkKind::Other(_)) => sniffers::dummy_for(&self.key),
            _ => self.key.clone(),
        };
        let first = cx.worker() == 0;
        match sniffers::open(&name) {
            Ok(d) => {
                if first && name != self.key && !self.quiet {
                    eprintln!(
                        "bricks: {}: {} is neither a dummy nor an ifb interface; its \
                         sniffers' packets go to the interface {name} (tcpdump -i {name})",
                        cx.name(),
                        self.key
                    );
                }
                self.dev = Some(d);
            }
            Err(e) if first => eprintln!(
                "bricks: {}: no interface for the sniffers: {e} (packets are counted in drops)",
                cx.name()
            ),
            Err(_) => {}
        }
    }

    fn send_one(&mut self, p: &mut Packet, cx: &Context<'_>) {
        let Some(dev) = &self.dev else {
            return;
        };
        let frame = match self.ty {
            HostType::Ether if p.len() < 14 => None,
            HostType::Ether => Some(p.data()),
            HostType::Ip => match ip_packet(p).map(|ip| (ip[0] >> 4, p.len() - ip.len())) {
                Some((version, skip)) => {
                    p.pull_front(skip);
                    let ethertype: u16 = if version == 4 { 0x0800 } else { 0x86dd };
                    let mut h = [0u8; 14];
                    h[..6].copy_from_slice(&dev.mac());
                    h[6..12].copy_from_slice(&SOURCE_MAC);
                    h[12..].copy_from_slice(&ethertype.to_be_bytes());
                    p.push_front_bytes(&h).ok().map(|()| p.data())
                }
                None => None,
            },
        };
        let Some(frame) = frame else {
            self.not_ip += 1;
            return;
        };
        match dev.send(frame) {
            Ok(()) => {
                self.sent += 1;
                self.bytes += frame.len() as u64;
            }
            Err(e) => {
                self.errors += 1;
                if !self.said {
                    self.said = true;
                    eprintln!(
                        "bricks: {}: sending to {}: {e} (counted; said once)",
                        cx.name(),
                        dev.name()
                    );
                }
            }
        }
    }
}

impl Element for ToHostSniffers {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.open(cx);
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if !self.opened {
            self.open(cx);
        }
        if let Some(s) = self.sink.as_mut() {
            s.write(batch, cx);
        } else if self.dev.is_some() {
            for mut p in batch.drain() {
                self.send_one(&mut p, cx);
            }
        } else {
            self.no_device += batch.len() as u64;
        }
        batch.clear();
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        if let Some(s) = self.sink.as_mut() {
            if cx.worker() == 0 || s.count > 0 {
                s.finish(cx);
            }
        }
        // The last user of an interface made at start deletes it.
        self.dev = None;
    }

    fn stats(&self, s: &mut Stats) {
        let (recorded, rec_errors) = self.sink.as_ref().map_or((0, 0), |s| (s.count, s.errors));
        s.counter("count", recorded + self.sent);
        s.counter("bytes", self.bytes);
        s.counter(
            "drops",
            self.no_device + rec_errors + self.not_ip + self.errors,
        );
        s.counter("not_ip", self.not_ip);
        s.counter("errors", self.errors);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "dev_name" => Some(
                self.dev
                    .as_ref()
                    .map_or_else(|| self.key.clone(), |d| d.name().to_string()),
            ),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("dev_name")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    fn ip_frame() -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 0x08, 0x00]);
        f.extend_from_slice(&[
            0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f
    }

    #[test]
    fn arguments_as_click_writes_them() {
        for args in [
            "",
            "eth0",
            "DEVNAME eth0, TYPE IP",
            "snf0, TYPE ether, QUIET true",
        ] {
            Harness::push(&CLASS, args, 1, 0);
        }
    }

    #[test]
    fn bad_arguments_are_refused() {
        for (args, word) in [("eth0, TYPE ARP", "TYPE"), ("eth0, BOGUS 1", "BOGUS")] {
            let ports = PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![],
            };
            let e = make_element(&CLASS, args, &ports).err().unwrap();
            assert!(e.contains(word), "{args}: {e}");
        }
    }

    /// With no interface (a name Linux cannot have) every packet is a
    /// drop, and the router runs on.
    #[test]
    fn without_an_interface_packets_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "this-name-is-too-long-for-linux", 1, 0);
        h.push_bytes(0, &ip_frame());
        h.push_bytes(0, &ip_frame());
        let s = h.stats();
        assert_eq!((s.get("count"), s.get("drops")), (Some(0), Some(2)));
    }
}
