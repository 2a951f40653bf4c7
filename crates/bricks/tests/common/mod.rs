//! What several namespace tests share: frames built with bricks' own wire
//! views (`bricks_wire`'s `Repr`s), so that the tests send what the router
//! itself would parse and emit.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

/// `aa:bb:cc:dd:ee:ff` as bytes.
#[allow(dead_code)] // not every test binary uses it
pub fn mac_bytes(text: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (b, part) in m.iter_mut().zip(text.split(':')) {
        *b = u8::from_str_radix(part, 16).unwrap();
    }
    m
}

/// An Ethernet frame holding a UDP datagram from port 12345 to port 9 with
/// `payload`, its IPv4 and UDP checksums filled in.
#[allow(dead_code)] // not every test binary uses it
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
    #[allow(dead_code)] // not every test binary uses it
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
    #[allow(dead_code)] // not every test binary uses it
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

/// The repository's root, where `bricks` runs in the command-line tests.
#[allow(dead_code)] // not every test binary uses it
pub fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `bricks` with `args` in the repository's root.
#[allow(dead_code)] // not every test binary uses it
pub fn bricks(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("bricks runs")
}

/// What a run printed on stdout.
#[allow(dead_code)] // not every test binary uses it
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a run printed on stderr.
#[allow(dead_code)] // not every test binary uses it
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `bricks SUBCOMMAND check` on `text` written to a file called `name`:
/// the exit status, stdout, and stderr without the file's path.
#[allow(dead_code)] // not every test binary uses it
pub fn check_text(subcommand: &str, name: &str, text: &str) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let o = bricks(&[subcommand, "check", path.to_str().unwrap()]);
    let e = stderr(&o).replace(&format!("{}: ", path.display()), "");
    (o.status.code(), stdout(&o), e)
}

/// An Ethernet frame from `src` to `dst` around `payload`.
#[allow(dead_code)] // not every test binary uses it
pub fn ether(dst: [u8; 6], src: [u8; 6], ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let eth = EthernetRepr {
        src_addr: EthernetAddress(src),
        dst_addr: EthernetAddress(dst),
        ethertype,
    };
    let mut f = vec![0u8; eth.buffer_len() + payload.len()];
    let mut frame = EthernetFrame::new_unchecked(&mut f[..]);
    eth.emit(&mut frame);
    frame.payload_mut().copy_from_slice(payload);
    f
}

/// An IPv4 packet around `body`, its header checksum filled in.
#[allow(dead_code)] // not every test binary uses it
pub fn ipv4(
    src: [u8; 4],
    dst: [u8; 4],
    proto: IpProtocol,
    ident: u16,
    ttl: u8,
    body: &[u8],
) -> Vec<u8> {
    let ip = Ipv4Repr {
        src_addr: Ipv4Addr::from(src),
        dst_addr: Ipv4Addr::from(dst),
        next_header: proto,
        payload_len: body.len(),
        hop_limit: ttl,
        dscp_ecn: 0,
        ident,
        dont_frag: false,
    };
    let mut p = vec![0u8; ip.buffer_len() + body.len()];
    let mut packet = Ipv4Packet::new_unchecked(&mut p[..]);
    ip.emit(&mut packet);
    packet.payload_mut().copy_from_slice(body);
    p
}

/// Writes `frames`, each with the milliseconds after `start_s` seconds it
/// arrives at, as an Ethernet capture.
#[allow(dead_code)] // not every test binary uses it
pub fn write_pcap(path: &Path, frames: &[(u64, Vec<u8>)], start_s: u64) {
    use bricks_io::pcap::{LinkType, PcapWriter};
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(f, LinkType::Ethernet, false, 0).unwrap();
    for (ms, frame) in frames {
        w.write(
            bricks_packet::Timestamp::from_parts(
                start_s + ms / 1000,
                ((ms % 1000) * 1_000_000) as u32,
            ),
            frame,
        )
        .unwrap();
    }
    w.flush().unwrap();
}

/// The frames of a capture.
#[allow(dead_code)] // not every test binary uses it
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    use bricks_io::pcap::{PcapReader, Record};
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapReader::new(f).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Packet(p) = rec {
            v.push(p.data().to_vec());
        }
    }
    v
}

/// Runs `bricks` with `args` in the repository's root, for at most
/// `timeout`: whether it succeeded, and its stdout then its stderr.
#[allow(dead_code)] // not every test binary uses it
pub fn bricks_within(args: &[&str], timeout: Duration) -> (bool, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_bricks"));
    command.current_dir(root()).args(args);
    let out = bricks_netns::output_timeout(&mut command, timeout)
        .unwrap_or_else(|e| panic!("bricks {}: {e}", args.join(" ")));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Boxes in namespaces brought up by `bricks KIND up` (`cluster`,
/// `multistage`) under a name unique to this process, taken down when
/// dropped: `bricks KIND down` succeeds and leaves no namespace and no
/// state directory (or, when the test failed, the namespaces are
/// deleted).
#[allow(dead_code)] // not every test binary uses it
pub struct Brought {
    /// `cluster` or `multistage`.
    pub kind: &'static str,
    /// What the namespaces' names start with before the name (`bc`).
    pub ns_prefix: &'static str,
    /// The name they run under.
    pub name: String,
    /// `/run/bricks-KIND/NAME/state.json`.
    pub state: serde_json::Value,
    /// Where the description file was written (`TAG.toml`).
    pub dir: tempfile::TempDir,
}

#[allow(dead_code)] // not every test binary uses it
impl Brought {
    /// `bricks KIND up` on `text` (a description file) under a name unique
    /// to this process and `tag`, with `extra` arguments before the
    /// timeout.
    pub fn up(
        kind: &'static str,
        ns_prefix: &'static str,
        tag: &str,
        text: &str,
        extra: &[&str],
    ) -> Brought {
        let name = format!("t{}{tag}", std::process::id() % 100_000);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{tag}.toml"));
        std::fs::write(&file, text).unwrap();
        let t = Instant::now();
        let mut args = vec![kind, "up", file.to_str().unwrap(), "--name", &name];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--timeout", "60"]);
        let (ok, out) = bricks_within(&args, Duration::from_secs(120));
        // Taken down on drop even when `up` failed half way.
        let mut up = Brought {
            kind,
            ns_prefix,
            name: name.clone(),
            state: serde_json::Value::Null,
            dir,
        };
        assert!(ok, "bricks {kind} up failed:\n{out}");
        eprintln!("{name}: up in {:.1} s\n{out}", t.elapsed().as_secs_f64());
        let path = format!("/run/bricks-{kind}/{name}/state.json");
        up.state = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        up
    }

    /// `ip netns exec NS ARGV...`.
    pub fn exec(&self, ns: &str, argv: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", ns]).args(argv);
        c
    }
}

impl Drop for Brought {
    fn drop(&mut self) {
        let (ok, out) = bricks_within(&[self.kind, "down", &self.name], Duration::from_secs(60));
        let prefix = format!("{}-{}-", self.ns_prefix, self.name);
        let left: Vec<String> = bricks_netns::list_namespaces()
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        if !std::thread::panicking() {
            assert!(ok, "bricks {} down: {out}", self.kind);
            assert!(left.is_empty(), "namespaces left: {left:?}");
            assert!(
                !Path::new(&format!("/run/bricks-{}/{}", self.kind, self.name)).exists(),
                "state directory left"
            );
        } else {
            for ns in left {
                let _ = bricks_netns::ip(&["netns", "del", &ns]);
            }
        }
    }
}

/// The tests of one binary that bring up boxes take turns: several boxes
/// already share the machine's CPUs.
#[allow(dead_code)] // not every test binary uses it
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `bricks` binary under test.
#[allow(dead_code)] // not every test binary uses it
pub const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");

/// Checks that `text` is well-formed XML as SVG writers produce it
/// (elements, attributes in quotes, comments, a declaration, character
/// references): every tag closed in order, one root, no stray `<` or `&`.
#[allow(dead_code)] // not every test binary uses it
pub fn check_xml(text: &str) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = text;
    while let Some(lt) = rest.find('<') {
        check_chars(&rest[..lt])?;
        if !rest[..lt].trim().is_empty() && stack.is_empty() {
            return Err(format!("text outside the root: {:?}", &rest[..lt]));
        }
        rest = &rest[lt..];
        if let Some(r) = rest.strip_prefix("<!--") {
            let end = r.find("-->").ok_or("unclosed comment")?;
            rest = &r[end + 3..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("<?") {
            let end = r.find("?>").ok_or("unclosed declaration")?;
            rest = &r[end + 2..];
            continue;
        }
        // A tag ends at the first `>` outside quotes.
        let mut quote = None;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '<') => return Err("`<` inside a tag".into()),
                (None, '>') => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or("unclosed tag")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name = body.split_whitespace().next().ok_or("empty tag")?;
        check_attributes(&body[name.len()..])?;
        if stack.is_empty() {
            roots += 1;
        }
        if !self_closing {
            stack.push(name);
        }
    }
    check_chars(rest)?;
    if !rest.trim().is_empty() {
        return Err("text after the root".into());
    }
    match (stack.last(), roots) {
        (None, 1) => Ok(()),
        (Some(open), _) => Err(format!("<{open}> never closed")),
        (None, n) => Err(format!("{n} root elements")),
    }
}

/// `name="value"` pairs, values without `<` and with valid references.
#[allow(dead_code)] // not every test binary uses it
fn check_attributes(mut s: &str) -> Result<(), String> {
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(());
        }
        let eq = s
            .find('=')
            .ok_or_else(|| format!("attribute without value: {s}"))?;
        if s[..eq].trim().is_empty() || s[..eq].contains(char::is_whitespace) {
            return Err(format!("bad attribute name in {s}"));
        }
        let v = s[eq + 1..].trim_start();
        let q = v
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or("unquoted value")?;
        let close = v[1..].find(q).ok_or("unclosed value")?;
        check_chars(&v[1..1 + close])?;
        s = &v[close + 2..];
    }
}

/// Character data: no `<`, and every `&` a known or numeric reference.
#[allow(dead_code)] // not every test binary uses it
fn check_chars(s: &str) -> Result<(), String> {
    if s.contains('<') {
        return Err("stray `<`".into());
    }
    let mut rest = s;
    while let Some(a) = rest.find('&') {
        let r = &rest[a + 1..];
        let semi = r.find(';').ok_or("`&` without `;`")?;
        let name = &r[..semi];
        let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || name
                .strip_prefix("#x")
                .is_some_and(|h| u32::from_str_radix(h, 16).is_ok())
            || name
                .strip_prefix('#')
                .is_some_and(|d| d.parse::<u32>().is_ok());
        if !ok {
            return Err(format!("bad reference &{name};"));
        }
        rest = &r[semi + 1..];
    }
    Ok(())
}

/// The contents of every `<text>` element, trimmed.
#[allow(dead_code)] // not every test binary uses it
pub fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// Packets a receiver got: (sequence number, arrival).
pub type Arrivals = Arc<Mutex<Vec<(u64, Instant)>>>;

/// Receives numbered datagrams on `bind`:`port` in namespace `ns` until
/// `stop` (`bind` is `0.0.0.0` or `::`).
pub fn udp_receiver(
    ns: String,
    bind: &'static str,
    port: u16,
    stop: Arc<AtomicBool>,
) -> (Arrivals, std::thread::JoinHandle<()>) {
    let got: Arrivals = Arc::default();
    let g = got.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        bricks_netns::in_namespace(&ns, move || {
            let s = std::net::UdpSocket::bind((bind, port)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            ready_tx.send(()).unwrap();
            let mut buf = [0u8; 64];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    if n >= 8 {
                        let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                        g.lock().unwrap().push((seq, Instant::now()));
                    }
                }
            }
        })
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    (got, h)
}

/// Sends numbered datagrams from `bind` (`0.0.0.0:0` or `[::]:0`) to
/// `dst` in namespace `ns`, one a millisecond, until `stop` (20 s at
/// most); returns each one's send time.
pub fn udp_sender(
    ns: String,
    bind: &'static str,
    dst: &'static str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Instant>> {
    std::thread::spawn(move || {
        bricks_netns::in_namespace(&ns, move || {
            let s = std::net::UdpSocket::bind(bind).unwrap();
            let mut sent = Vec::new();
            let start = Instant::now();
            // Bounded: at most 20 s of sending.
            while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(20) {
                let seq = sent.len() as u64;
                let _ = s.send_to(&seq.to_be_bytes(), dst);
                sent.push(Instant::now());
                let next = start + Duration::from_millis(seq + 1);
                if let Some(d) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
            }
            sent
        })
    })
}
