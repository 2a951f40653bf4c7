//! ESP in memory on one core: encapsulation, decapsulation and the
//! source alone, by suite and size, timed and counted with callgrind,
//! against the goals and RouteBricks' instructions per packet.

use super::*;

/// What a configuration runs after the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Nothing: the source's own cost.
    Source,
    /// IPsecESPEncap.
    Encap,
    /// IPsecESPEncap, then IPsecESPDecap.
    Pipeline,
}

impl Stage {
    pub(super) fn name(self) -> &'static str {
        match self {
            Stage::Source => "source",
            Stage::Encap => "encap",
            Stage::Pipeline => "pipeline",
        }
    }
}

/// One in-memory configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MemConfig {
    pub(super) suite: Suite,
    pub(super) size: Size,
    pub(super) stage: Stage,
}

impl MemConfig {
    /// The name `--once` takes: `source-64`, `aes128gcm-64:encap`.
    pub(super) fn id(self) -> String {
        match self.stage {
            Stage::Source => format!("source-{}", self.size.name()),
            s => format!("{}:{}", workload_name(self.suite, self.size), s.name()),
        }
    }

    pub(super) fn parse(id: &str) -> Option<MemConfig> {
        let mut all = Vec::new();
        for size in SIZES {
            all.push(MemConfig {
                suite: Suite::Aes128Gcm,
                size,
                stage: Stage::Source,
            });
        }
        for (suite, size) in WORKLOADS {
            for stage in [Stage::Encap, Stage::Pipeline] {
                all.push(MemConfig { suite, size, stage });
            }
        }
        all.into_iter().find(|c| c.id() == id)
    }

    /// The configuration text; the SA files are in `dir`.
    pub(super) fn text(self, dir: &Path, packets: u64) -> String {
        let src = format!(
            "src :: WorkloadSource({}, FLOWS 64, SRC 192.168.1.0/24, DST 192.168.2.0/24, \
             LIMIT {packets}, STOP true)",
            self.size.source_arg()
        );
        let file = |dir_: &str| {
            dir.join(format!("{}-{dir_}.sa", self.suite.name()))
                .display()
                .to_string()
        };
        match self.stage {
            Stage::Source => format!("{src} -> Discard;"),
            Stage::Encap => format!(
                "{src} -> enc :: IPsecESPEncap(FILE {}) -> Discard;",
                file("out")
            ),
            Stage::Pipeline => format!(
                "{src} -> enc :: IPsecESPEncap(FILE {}) -> dec :: IPsecESPDecap(FILE {}) \
                 -> Discard;",
                file("out"),
                file("in")
            ),
        }
    }
}

/// One timed run.
#[derive(Debug, Clone, Copy)]
pub(super) struct MemRun {
    pub(super) secs: f64,
    pub(super) packets: u64,
    /// Inner IPv4 bytes (the frames less their Ethernet headers).
    pub(super) inner_bytes: u64,
}

/// Runs `c` once with `packets` packets on this thread and checks that
/// every packet went all the way.
pub(super) fn run_memory(c: MemConfig, dir: &Path, packets: u64) -> Result<MemRun, Error> {
    let mut e =
        crate::measure::engine_for(&format!("<bench ipsec {}>", c.id()), c.text(dir, packets))?;
    let t = Instant::now();
    let s = e.run();
    let secs = t.elapsed().as_secs_f64();
    if !s.errors.is_empty() {
        return Err(Error::Run {
            workload: c.id(),
            message: s.errors.join("\n"),
        });
    }
    let get = |el: &str, k: &str| s.stats(el).and_then(|st| st.get(k)).unwrap_or(0);
    let count = get("src", "count");
    let frames = get("src", "byte_count");
    let mut ok = count == packets;
    if c.stage != Stage::Source {
        ok &= get("enc", "protected") == packets;
    }
    if c.stage == Stage::Pipeline {
        ok &= get("dec", "decapsulated") == packets;
    }
    if !ok {
        return Err(Error::Run {
            workload: c.id(),
            message: format!(
                "not every one of the {packets} packets went through:\n{}",
                s.render()
            ),
        });
    }
    Ok(MemRun {
        secs,
        packets,
        inner_bytes: frames.saturating_sub(14 * count),
    })
}

/// Runs `--once`: one configuration, nothing printed.
pub(super) fn once(id: &str, packets: u64) -> Result<ExitCode, Error> {
    let c = MemConfig::parse(id)
        .ok_or_else(|| Error::Argument(format!("--once: no configuration `{id}`")))?;
    let dir = tempfile::tempdir().context("making a temporary directory")?;
    write_sa_files(dir.path())?;
    run_memory(c, dir.path(), packets)?;
    Ok(ExitCode::SUCCESS)
}

/// Instructions of one `--once` run of `c` with `packets` packets under
/// callgrind.
pub(super) fn callgrind_total(c: MemConfig, packets: u64) -> Result<u64, Error> {
    let exe = std::env::current_exe()?;
    let out = std::env::temp_dir().join(format!(
        "bricks-callgrind-ipsec-{}-{}-{packets}.out",
        std::process::id(),
        c.id().replace(':', "-")
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .args(["bench", "ipsec", "--once", &c.id(), "--packets"])
        .arg(packets.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running valgrind")?;
    if !status.success() {
        let _ = std::fs::remove_file(&out);
        return Err(Error::Callgrind(format!(
            "valgrind on {} exited with {status}",
            c.id()
        )));
    }
    let text = std::fs::read_to_string(&out)?;
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Callgrind("no instruction total in callgrind's output".into()))
}

/// Instructions per packet of `c`: two packet counts, differenced.
pub(super) fn instructions(c: MemConfig, quick: bool) -> Result<f64, Error> {
    let (small, big) = match (quick, c.size) {
        (true, _) => (500, 2_500),
        (false, Size::Bytes(n)) if n <= 128 => (5_000, 25_000),
        (false, _) => (2_000, 10_000),
    };
    let i1 = callgrind_total(c, small)?;
    let i2 = callgrind_total(c, big)?;
    Ok(i2.saturating_sub(i1) as f64 / (big - small) as f64)
}

/// The medians of one configuration.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Figures {
    pub(super) ns: f64,
    /// Inner bytes per packet, on average.
    pub(super) bytes: f64,
    pub(super) instr: Option<f64>,
}

impl Figures {
    pub(super) fn mpps(&self) -> f64 {
        1e3 / self.ns
    }

    pub(super) fn gbps(&self) -> f64 {
        self.bytes * 8.0 / self.ns
    }
}

/// The figures of one workload: the whole graphs as measured.
pub(super) struct MemResult {
    pub(super) suite: Suite,
    pub(super) size: Size,
    /// `source -> Discard`.
    pub(super) source: Figures,
    /// `source -> encap -> Discard`.
    pub(super) encap: Figures,
    /// `source -> encap -> decap -> Discard`.
    pub(super) pipeline: Figures,
}

/// `a - b`: the cost of what `a` runs and `b` does not.
pub(super) fn difference(a: &Figures, b: &Figures) -> Figures {
    Figures {
        ns: a.ns - b.ns,
        bytes: a.bytes,
        instr: a.instr.zip(b.instr).map(|(x, y)| x - y),
    }
}

impl MemResult {
    /// IPsecESPEncap alone: the encapsulating graph less the source's.
    pub(super) fn encap_alone(&self) -> Figures {
        difference(&self.encap, &self.source)
    }

    /// IPsecESPDecap alone: the pipeline less the encapsulating graph.
    pub(super) fn decap_alone(&self) -> Figures {
        difference(&self.pipeline, &self.encap)
    }
}

/// Times `configs` (interleaved, so that a change in the machine's load
/// touches them all) and counts their instructions.
pub(super) fn measure(
    configs: &[MemConfig],
    dir: &Path,
    st: &Settings,
    cancel: &AtomicBool,
) -> Result<Vec<Figures>, Error> {
    // One unmeasured run of each warms the pool and the caches, and
    // checks the configuration.
    for &c in configs {
        run_memory(c, dir, c.size.packets(st.packets).min(100_000))?;
    }
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut bytes = vec![0.0; configs.len()];
    for _ in 0..st.runs {
        for (i, &c) in configs.iter().enumerate() {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let r = run_memory(c, dir, c.size.packets(st.packets))?;
            ns[i].push(r.secs * 1e9 / r.packets as f64);
            bytes[i] = r.inner_bytes as f64 / r.packets as f64;
        }
    }
    let mut out = Vec::with_capacity(configs.len());
    for (i, &c) in configs.iter().enumerate() {
        let instr = if st.callgrind {
            Some(instructions(c, st.quick)?)
        } else {
            None
        };
        out.push(Figures {
            ns: median(&mut ns[i]),
            bytes: bytes[i],
            instr,
        });
    }
    Ok(out)
}

/// The issue's goals for AES-128-GCM, the same for encapsulation and
/// decapsulation.
pub(super) const GOAL_MPPS_64: f64 = 4.0;
pub(super) const GOAL_GBPS_1400: f64 = 20.0;
pub(super) const GOAL_INSTR_64: f64 = 1500.0;
/// RouteBricks (SOSP 2009): instructions per packet of its IPsec
/// configuration, for comparison.
pub(super) const ROUTEBRICKS_IPSEC_INSTR: f64 = 14_221.0;

pub(super) fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// The goal column of a row: only AES-128-GCM has goals.
pub(super) fn goal_text(suite: Suite, size: Size, f: &Figures) -> String {
    if suite != Suite::Aes128Gcm {
        return String::new();
    }
    match size {
        Size::Bytes(64) => {
            let mut s = format!(">= {GOAL_MPPS_64} Mpps {}", met(f.mpps() >= GOAL_MPPS_64));
            match f.instr {
                Some(i) => {
                    let _ = write!(
                        s,
                        ", <= {GOAL_INSTR_64:.0} instr {}",
                        met(i <= GOAL_INSTR_64)
                    );
                }
                None => {
                    let _ = write!(s, ", <= {GOAL_INSTR_64:.0} instr: not counted");
                }
            }
            s
        }
        Size::Bytes(1400) => format!(
            ">= {GOAL_GBPS_1400} Gbps {}",
            met(f.gbps() >= GOAL_GBPS_1400)
        ),
        _ => String::new(),
    }
}

pub(super) fn instr_text(i: Option<f64>) -> String {
    i.map_or("-".into(), |i| format!("{i:.0}"))
}

pub(super) fn memory_section(
    workloads: &[(Suite, Size)],
    dir: &Path,
    st: &Settings,
    cancel: &AtomicBool,
    progress: bool,
) -> Result<String, Error> {
    let mut sources: Vec<(Size, Figures)> = Vec::new();
    let mut results = Vec::new();
    for &(suite, size) in workloads {
        if !sources.iter().any(|(s, _)| *s == size) {
            if progress {
                eprint!("\r{:60}\rmemory: source {}", "", size.label());
            }
            let c = MemConfig {
                suite: Suite::Aes128Gcm,
                size,
                stage: Stage::Source,
            };
            sources.push((size, measure(&[c], dir, st, cancel)?[0]));
        }
        if progress {
            eprint!("\r{:60}\rmemory: {}", "", workload_name(suite, size));
        }
        let c = |stage| MemConfig { suite, size, stage };
        let f = measure(&[c(Stage::Encap), c(Stage::Pipeline)], dir, st, cancel)?;
        let source = sources
            .iter()
            .find(|(s, _)| *s == size)
            .map_or_else(Figures::default, |(_, f)| *f);
        results.push(MemResult {
            suite,
            size,
            source,
            encap: f[0],
            pipeline: f[1],
        });
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    Ok(memory_report(&results, &sources, st))
}

pub(super) fn memory_report(
    results: &[MemResult],
    sources: &[(Size, Figures)],
    st: &Settings,
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "in memory, one core: src :: WorkloadSource(64 flows, UDP 192.168.1.0/24 -> \
         192.168.2.0/24) -> ... -> Discard; median of {} run{} of {} packets (a quarter for \
         1400 and IMIX); inner = the IPv4 packet ESP encrypts; Gbps of inner bytes",
        st.runs,
        if st.runs == 1 { "" } else { "s" },
        st.packets
    );
    let sources_text: Vec<String> = sources
        .iter()
        .map(|(size, f)| {
            format!(
                "{} {:.1} ns, {} instr",
                size.label(),
                f.ns,
                instr_text(f.instr)
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "src -> Discard alone, per packet: {}",
        sources_text.join("; ")
    );
    let table = |o: &mut String,
                 title: &str,
                 graph: &str,
                 f: &dyn Fn(&MemResult) -> (Figures, Figures)| {
        let _ = writeln!(o, "\n{title}; whole graph: {graph}");
        let _ = writeln!(
            o,
            "{:<25}{:-^34}   {:-^26}",
            "", " element alone ", " whole graph ",
        );
        let _ = writeln!(
            o,
            "{:<18} {:>5} {:>7} {:>7} {:>8} {:>9}   {:>7} {:>8} {:>9}   goal",
            "suite", "inner", "Mpps", "Gbps", "ns/pkt", "instr/pkt", "Mpps", "ns/pkt", "instr/pkt"
        );
        for r in results {
            let (alone, whole) = f(r);
            let _ = writeln!(
                o,
                "{:<18} {:>5} {:>7.2} {:>7.2} {:>8.1} {:>9}   {:>7.2} {:>8.1} {:>9}   {}",
                r.suite.label(),
                r.size.label(),
                alone.mpps(),
                alone.gbps(),
                alone.ns,
                instr_text(alone.instr),
                whole.mpps(),
                whole.ns,
                instr_text(whole.instr),
                goal_text(r.suite, r.size, &alone),
            );
        }
    };
    table(
        &mut o,
        "encap: IPsecESPEncap alone = (src -> encap -> Discard) - (src -> Discard)",
        "src -> encap -> Discard",
        &|r| (r.encap_alone(), r.encap),
    );
    table(
        &mut o,
        "decap: IPsecESPDecap alone = (src -> encap -> decap -> Discard) - (src -> encap -> Discard)",
        "src -> encap -> decap -> Discard",
        &|r| (r.decap_alone(), r.pipeline),
    );
    let _ = writeln!(
        o,
        "\ngoals (AES-128-GCM, encap and decap each, judged on the element alone): \
         >= {GOAL_MPPS_64} Mpps at 64 bytes, >= {GOAL_GBPS_1400} Gbps at 1400 bytes, \
         <= {GOAL_INSTR_64:.0} instructions per 64-byte packet."
    );
    let gcm64 = results
        .iter()
        .find(|r| r.suite == Suite::Aes128Gcm && r.size == Size::Bytes(64));
    match gcm64.and_then(|r| r.encap_alone().instr.zip(r.decap_alone().instr)) {
        Some((e, d)) => {
            let _ = writeln!(
                o,
                "RouteBricks (SOSP 2009), IPsec: {ROUTEBRICKS_IPSEC_INSTR:.0} instructions per \
                 packet; bricks AES-128-GCM at 64 bytes: {e:.0} to encapsulate ({:.1}x fewer), \
                 {d:.0} to decapsulate ({:.1}x fewer).",
                ROUTEBRICKS_IPSEC_INSTR / e,
                ROUTEBRICKS_IPSEC_INSTR / d
            );
        }
        None => {
            let _ = writeln!(
                o,
                "RouteBricks (SOSP 2009), IPsec: {ROUTEBRICKS_IPSEC_INSTR:.0} instructions per \
                 packet."
            );
        }
    }
    if st.callgrind {
        let _ = writeln!(
            o,
            "instructions: callgrind, whose virtual CPU has AES-NI, PCLMULQDQ and AVX2 but \
             not VAES, VPCLMULQDQ, AVX-512 or SHA-NI: the counts are those of the code paths \
             the crypto crates choose without them (for HMAC-SHA1, software SHA-1)."
        );
    }
    o
}

// ---------------------------------------------------------------------
// Sequence numbers across cores
