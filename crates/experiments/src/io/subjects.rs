//! The subjects of `bricks bench io`: Linux's forwarding, XDP_REDIRECT and
//! bricks with RouteBricks' batching and spreading choices, and the
//! router configuration each bricks subject runs.

use super::*;

/// How bricks forwards in one subject.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Bricks {
    /// FromDevice BURST: frames per queue and poll (RouteBricks' kp).
    pub(super) kp: u32,
    /// ToDevice BURST: frames per kick of the kernel (RouteBricks' kn).
    pub(super) kn: u32,
    /// ToDevice FLUSH.
    pub(super) flush: &'static str,
    /// `xdp` or `packet`.
    pub(super) backend: &'static str,
    /// Worker threads.
    pub(super) threads: usize,
    /// `per-core`, `pipeline` or `serial`.
    pub(super) mode: &'static str,
    /// `--idle-nap` in microseconds (bricks run's default when `None`).
    pub(super) idle_nap_us: Option<u64>,
    /// A Queue before ToDevice (which then pulls up to kn frames per
    /// round), as in Click's IP router; without it ToDevice is pushed
    /// each whole batch and kn is only the kick threshold.
    pub(super) queue: bool,
    /// FromDevice's FASTPATH: the ordinary packets forwarded in the
    /// kernel by bricks' XDP program, the rest through the configuration.
    pub(super) fast_path: bool,
    /// FromDevice's XDP_MODE: `auto`, `native` or `generic`.
    pub(super) xdp_mode: &'static str,
    /// FromDevice's BUSY_POLL in microseconds (off when `None`); the
    /// testbed then has the input interface defer its NAPI thread.
    pub(super) busy_poll_us: Option<u32>,
}

pub(super) const BRICKS: Bricks = Bricks {
    kp: 32,
    kn: 16,
    flush: "100us",
    backend: "xdp",
    threads: 1,
    mode: "per-core",
    idle_nap_us: None,
    queue: true,
    fast_path: false,
    xdp_mode: "auto",
    busy_poll_us: None,
};

/// What forwards between r0 and r1.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Forwarder {
    /// The kernel's IPv4 forwarding (`net.ipv4.ip_forward=1`).
    Linux,
    /// An XDP program on r0 redirecting every frame to r1 (DEVMAP).
    XdpRedirect,
    /// `bricks run` with the IPv4 forwarding configuration.
    Bricks(Bricks),
}

/// One measurement.
#[derive(Debug, Clone)]
pub(super) struct Subject {
    pub(super) name: &'static str,
    pub(super) label: &'static str,
    pub(super) fwd: Forwarder,
    /// The router gets every CPU instead of the router CPU alone.
    pub(super) wide: bool,
    /// Packets per second offered; `None`: as fast as the generator can.
    pub(super) rate: Option<u64>,
}

impl Subject {
    pub(super) fn is_latency(&self) -> bool {
        self.rate.is_some()
    }

    /// Whether the router reads its input with one worker on one CPU, so
    /// that frames on one queue load it as frames on all would (a veth
    /// hands an XDP live frame to the receive queue of the sending CPU).
    pub(super) fn reads_one_queue(&self) -> bool {
        !self.wide
            && match &self.fwd {
                Forwarder::Bricks(b) => b.threads == 1,
                Forwarder::Linux | Forwarder::XdpRedirect => true,
            }
    }
}

/// Every subject, in the order they are run and printed.
pub(super) fn subjects(latency_rate: u64) -> Vec<Subject> {
    let b = |f: fn(&mut Bricks)| {
        let mut x = BRICKS;
        f(&mut x);
        Forwarder::Bricks(x)
    };
    let t = |name, label, fwd, wide| Subject {
        name,
        label,
        fwd,
        wide,
        rate: None,
    };
    let l = |name, label, fwd| Subject {
        name,
        label,
        fwd,
        wide: false,
        rate: Some(latency_rate),
    };
    let mut v = vec![
        t("linux", "Linux forwarding", Forwarder::Linux, false),
        t(
            "xdp-redirect",
            "XDP_REDIRECT r0 -> r1",
            Forwarder::XdpRedirect,
            false,
        ),
        t("bricks", "bricks IPv4, kp 32, kn 16", b(|_| {}), false),
        t(
            "bricks-fastpath",
            "bricks IPv4, XDP fast path (FASTPATH true)",
            b(|x| x.fast_path = true),
            false,
        ),
        t(
            "bricks-fastpath-skb",
            "bricks IPv4, XDP fast path in generic (skb) mode",
            b(|x| {
                x.fast_path = true;
                x.xdp_mode = "generic";
            }),
            false,
        ),
        t(
            "bricks-prefer-busy-poll",
            "bricks IPv4, BUSY_POLL 50us (SO_PREFER_BUSY_POLL)",
            b(|x| x.busy_poll_us = Some(50)),
            false,
        ),
        t("bricks-kp1", "bricks kp 1, kn 16", b(|x| x.kp = 1), false),
        t("bricks-kn1", "bricks kp 32, kn 1", b(|x| x.kn = 1), false),
        t(
            "bricks-nobatch",
            "bricks kp 1, kn 1",
            b(|x| {
                x.kp = 1;
                x.kn = 1;
            }),
            false,
        ),
        t(
            "bricks-push",
            "bricks without Queue (push ToDevice)",
            b(|x| x.queue = false),
            false,
        ),
        t(
            "bricks-packet",
            "bricks AF_PACKET",
            b(|x| x.backend = "packet"),
            false,
        ),
        t(
            "bricks-2w",
            "bricks 2 workers, per-core queues",
            b(|x| x.threads = 2),
            true,
        ),
    ];
    // The worker sweep goes on to a worker per core (the NIC paper's
    // Figs. 2 and 3). Subject names are `&'static str` everywhere else; the
    // few made here live as long as the process, as the others do.
    for n in 3..=cores() {
        let name: &'static str = Box::leak(workers_name(n).into_boxed_str());
        let label: &'static str =
            Box::leak(format!("bricks {n} workers, per-core queues").into_boxed_str());
        v.push(t(name, label, b_threads(n), true));
    }
    v.extend([
        t(
            "bricks-pipeline",
            "bricks pipeline: poller + 1 worker",
            b(|x| x.mode = "pipeline"),
            true,
        ),
        t(
            "bricks-serial",
            "bricks serial: steerer + 1 worker",
            b(|x| x.mode = "serial"),
            true,
        ),
        l("lat-linux", "Linux forwarding", Forwarder::Linux),
        l("lat-xdp-redirect", "XDP_REDIRECT", Forwarder::XdpRedirect),
        l("lat-bricks", "bricks kn 16, FLUSH 100us", b(|_| {})),
        l(
            "lat-bricks-flush0",
            "bricks kn 16, FLUSH 0",
            b(|x| x.flush = "0"),
        ),
        l("lat-bricks-kn1", "bricks kn 1", b(|x| x.kn = 1)),
        l(
            "lat-bricks-busypoll",
            "bricks FLUSH 100us, --idle-nap 0",
            b(|x| x.idle_nap_us = Some(0)),
        ),
    ]);
    v
}

/// bricks with `n` workers and per-core queues.
fn b_threads(n: usize) -> Forwarder {
    Forwarder::Bricks(Bricks {
        threads: n,
        ..BRICKS
    })
}

/// The subjects `--only` selects (all when it is empty).
pub(super) fn select(all: Vec<Subject>, only: &[String]) -> Result<Vec<Subject>, Error> {
    if only.is_empty() {
        return Ok(all);
    }
    for o in only {
        if o != "latency" && !all.iter().any(|s| s.name == o) {
            let names: Vec<&str> = all.iter().map(|s| s.name).collect();
            return Err(Error::Argument(format!(
                "--only: no subject `{o}`; the subjects are {}, and `latency` for every lat-* one",
                names.join(", ")
            )));
        }
    }
    Ok(all
        .into_iter()
        .filter(|s| {
            only.iter()
                .any(|o| o == s.name || (o == "latency" && s.is_latency()))
        })
        .collect())
}

/// The router's configuration for `port`: Click's IPv4 forwarding path
/// (the `ipv4` workload of `bricks bench core`) between its two live
/// interfaces.
pub(super) fn bricks_config(b: &Bricks, port: &Port) -> String {
    format!(
        "rx :: FromDevice({rx}, BURST {kp}, BACKEND {be}, FASTPATH {fast}, XDP_MODE {mode}{busy})\n\
         \t-> c :: Classifier(12/0800, -)\n\
         \t-> Strip(14)\n\
         \t-> CheckIPHeader\n\
         \t-> rt :: StaticIPLookup({sink_net} 0, {gen_net} 1)\n\
         \t-> dt :: DecIPTTL\n\
         \t-> EtherEncap(0x0800, {out_mac}, {sink_mac})\n\
         {queue}\
         \t-> tx :: ToDevice({tx}, BURST {kn}, FLUSH {flush}, BACKEND {be});\n\
         c[1] -> Discard;\nrt[1] -> Discard;\ndt[1] -> Discard;\n",
        rx = port.in_if,
        tx = port.out_if,
        sink_net = port.sink_net(),
        gen_net = port.gen_net(),
        out_mac = port.out_mac,
        sink_mac = port.sink_mac,
        queue = if b.queue { "\t-> q :: Queue\n" } else { "" },
        kp = b.kp,
        kn = b.kn,
        flush = b.flush,
        be = b.backend,
        fast = b.fast_path,
        busy = match b.busy_poll_us {
            Some(us) => format!(", BUSY_POLL {us}us"),
            None => String::new(),
        },
        mode = b.xdp_mode,
    )
}
