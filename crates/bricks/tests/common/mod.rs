//! What several namespace tests share: frames built with bricks' own wire
//! views (`bricks_wire`'s `Repr`s), so that the tests send what the router
//! itself would parse and emit.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

/// `aa:bb:cc:dd:ee:ff` as bytes.
pub fn mac_bytes(text: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (b, part) in m.iter_mut().zip(text.split(':')) {
        *b = u8::from_str_radix(part, 16).unwrap();
    }
    m
}

/// An Ethernet frame holding a UDP datagram from port 12345 to port 9 with
/// `payload`, its IPv4 and UDP checksums filled in.
pub fn udp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
    let udp = UdpRepr {
        src_port: 12345,
        dst_port: 9,
        payload_len: payload.len(),
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::UDP,
        payload_len: udp.buffer_len() + payload.len(),
        hop_limit: ttl,
        dscp_ecn: 0,
        ident: 0x1234,
        dont_frag: false,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(src_mac),
        dst_addr: EthernetAddress(dst_mac),
        ethertype: EtherType::IPV4,
    };
    let mut f = vec![0u8; eth.buffer_len() + ip.buffer_len() + ip.payload_len];
    let mut frame = EthernetFrame::new_unchecked(&mut f[..]);
    eth.emit(&mut frame);
    let mut packet = Ipv4Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut packet);
    let mut datagram = UdpPacket::new_unchecked(packet.payload_mut());
    udp.emit(&mut datagram);
    datagram.payload_mut().copy_from_slice(payload);
    datagram.fill_checksum_v4(src, dst);
    f
}

/// A `bricks run` in a namespace whose counters (`--stats-json`, every
/// half second) and stderr are read as they come.
pub struct LiveRouter {
    /// The process; killed when dropped.
    pub child: bricks_netns::ChildGuard,
    /// The last stats line.
    stats: Arc<Mutex<Option<serde_json::Value>>>,
    /// Everything printed on stderr.
    stderr: Arc<Mutex<String>>,
}

impl LiveRouter {
    /// Runs `conf` with `threads` workers and the `NAME=VALUE` defines in
    /// namespace `ns` of `net`; returns once its first counters are in,
    /// which is when every device is open.
    pub fn start(
        net: &bricks_netns::Network,
        ns: &str,
        conf: &Path,
        threads: usize,
        defines: &[String],
    ) -> LiveRouter {
        LiveRouter::start_with(net, ns, conf, threads, defines, &[])
    }

    /// [`LiveRouter::start`] with more `bricks run` arguments.
    pub fn start_with(
        net: &bricks_netns::Network,
        ns: &str,
        conf: &Path,
        threads: usize,
        defines: &[String],
        extra: &[String],
    ) -> LiveRouter {
        let threads = threads.to_string();
        let mut argv = vec![
            env!("CARGO_BIN_EXE_bricks"),
            "run",
            conf.to_str().unwrap(),
            "--threads",
            &threads,
            "--stats-interval",
            "0.5",
            "--stats-json",
        ];
        for d in defines {
            argv.extend(["-D", d.as_str()]);
        }
        argv.extend(extra.iter().map(String::as_str));
        let mut cmd = net.exec(ns, &argv);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = bricks_netns::ChildGuard::spawn(&mut cmd).unwrap();
        let stats = Arc::new(Mutex::new(None));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.child_mut().stdout.take().unwrap();
        let err = child.child_mut().stderr.take().unwrap();
        {
            let stats = stats.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                        *stats.lock().unwrap() = Some(v);
                    }
                }
            });
        }
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let mut s = stderr.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        let router = LiveRouter {
            child,
            stats,
            stderr,
        };
        router.wait_for(
            "the router's first counters",
            Duration::from_secs(30),
            |r| r.stats().is_some(),
        );
        router
    }

    /// Waits until `ok` holds; fails with the router's stderr otherwise.
    pub fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&LiveRouter) -> bool) {
        let end = Instant::now() + timeout;
        while !ok(self) {
            assert!(
                Instant::now() < end,
                "no {what} within {timeout:?}; router stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last stats line, if one came.
    pub fn stats(&self) -> MutexGuard<'_, Option<serde_json::Value>> {
        self.stats.lock().unwrap()
    }

    /// What the router printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Counter `counter` of element `name`, summed over the workers, from
    /// the last stats line.
    pub fn counter(&self, name: &str, counter: &str) -> u64 {
        let stats = self.stats();
        let Some(s) = stats.as_ref() else { return 0 };
        s["workers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| w["elements"][name][counter].as_u64().unwrap_or(0))
            .sum()
    }
}
