//! `bricks`: the command line. Subcommands only; the work is in the crates.

mod bench_cmd;
mod click_cmd;
mod click_tools;
mod clicktest_cmd;
mod cluster;
mod control;
mod controlsocket;
mod demo;
mod elements_cmd;
mod gen_cmd;
mod hotswap;
mod multistage;
mod routes_cmd;
mod runner;
mod sink_cmd;
mod vr_cmd;

use anyhow::Context as _;
use bricks_config::{Source, SourceMap};
use bricks_runtime::Plan;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// A programmable software router, configured in the Click language.
#[derive(Parser)]
#[command(name = "bricks", version, about, long_about = None)]
#[command(after_help = "Examples:\n  \
    bricks check conf/ip-router.click\n  \
    bricks run conf/ip-router.click --device eth0=pcap:in0.pcap,out0.pcap --device eth1=pcap:in1.pcap,out1.pcap\n  \
    bricks run -e 'InfiniteSource(LIMIT 5, STOP true) -> Print(hi) -> Discard'\n  \
    bricks elements ARPQuerier\n  \
    bricks routes gen --v4 1000000 --v6 200000 -o table.txt\n  \
    bricks routes lookup table.txt 9.9.9.9 2001:db8::1\n  \
    bricks cluster plan --ports 1024 --rate 10G --fanout 10 --ports-per-server 1\n  \
    sudo bricks cluster up conf/cluster/rb4.toml\n  \
    bricks bench core")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and check a configuration, then print its graph.
    ///
    /// Exits with status 2 and messages that point at file:line:column
    /// when the configuration has errors (all of them, in one pass). Needs
    /// no root and touches no interface.
    #[command(after_help = "Examples:\n  \
        bricks check conf/ip-router.click\n  \
        bricks check -e 'InfiniteSource(LIMIT 5) -> Counter -> Discard'\n  \
        bricks check conf/ip-router.click -d eth0=pcap:in0.pcap,out0.pcap -d eth1=pcap:in1.pcap")]
    Check(ConfigArgs),
    /// Run a configuration until its sources finish, or until Ctrl-C.
    ///
    /// Packets already inside the graph are delivered before it stops;
    /// the final counters of every element are printed at the end. Live
    /// interfaces (FromDevice/ToDevice not bound to captures with
    /// --device) need root; captures and in-memory sources do not.
    ///
    /// SIGHUP re-reads the configuration file and hot-swaps it in without
    /// losing a packet, as `bricks ctl SOCK hotswap FILE` does (SIGINT and
    /// SIGTERM stop the router); a configuration that fails to check
    /// leaves the running one and the reason is printed on stderr.
    #[command(after_help = "Examples:\n  \
        bricks run -e 'InfiniteSource(LIMIT 5, STOP true) -> Print(hi) -> Discard'\n  \
        bricks run conf/ip-router.click -d eth0=pcap:in0.pcap,out0.pcap -d eth1=pcap:in1.pcap,out1.pcap\n  \
        sudo bricks run conf/ip-router.click --threads 2 --stats-interval 1")]
    #[command(disable_help_flag = true)]
    Run(RunArgs),
    /// List the elements, or print one element's manual.
    #[command(after_help = "Examples:\n  \
        bricks elements\n  \
        bricks elements ARPQuerier")]
    Elements {
        /// Element class, e.g. Classifier.
        name: Option<String>,
    },
    /// Route files: statistics, lookups, a generator of realistic tables.
    #[command(after_help = "Examples:\n  \
        bricks routes gen --v4 1000000 --v6 200000 -o table.txt\n  \
        bricks routes stats table.txt\n  \
        bricks routes lookup table.txt 9.9.9.9 193.0.14.129 2001:db8::1")]
    Routes {
        #[command(subcommand)]
        what: routes_cmd::RoutesCommand,
    },
    /// Talk to a running router's control socket (`bricks run --control
    /// PATH`, or a virtual router's `--router-control NAME=PATH`): `bricks
    /// ctl PATH help`.
    ///
    /// Commands: `read ELEMENT.HANDLER [WORKER|per-worker]` (a counter
    /// summed over the workers, or `class`, `name`, `handlers`), `list
    /// [ELEMENT]`, `write ELEMENT.HANDLER [VALUE]`, `stats [--router
    /// NAME]`, `routers [--json]`, `queues`, `steer ...`, `hotswap FILE`,
    /// `help`.
    ///
    /// `hotswap FILE` (Click's hot swap) checks the configuration in FILE
    /// and builds it beside the running one while traffic flows; then the
    /// workers switch over between two rounds: every element whose name
    /// and class match a running one's takes its state (a Queue's
    /// packets, ARP and neighbour tables, route tables, counters, a
    /// device's open queues), and elements with unchanged arguments share
    /// the very same tables. No packet is lost. A configuration that fails
    /// to check changes nothing: the reply says why and the exit status
    /// is 1. FILE is made absolute here and read by the router.
    ///
    /// `routers` prints one line per virtual router (the first part of
    /// element names NAME/...): `NAME in=N out=N drops=N elements=N`,
    /// where in is the `count` of the router's entry elements (those no
    /// element of the router feeds), out the `count` of its exit elements
    /// (an output leaving the router, or a sink other than Discard), and
    /// drops the `count` of its Discards plus every counter named `drops`,
    /// `*_drops` or `no_route`.
    ///
    /// A virtual router's socket answers `read`, `list`, `write`, `stats`
    /// and `help` only, with element names relative to the router (`rt`
    /// is NAME/rt); nothing outside the router can be reached through it.
    /// The exit status is 1 when the reply is an error.
    #[command(after_help = "Examples:\n  \
        bricks ctl /run/bricks.sock read c.count\n  \
        bricks ctl /run/bricks.sock routers\n  \
        bricks ctl /run/bricks.sock stats --router red\n  \
        bricks ctl /run/bricks.sock hotswap router-v2.click\n  \
        bricks ctl /run/bricks/red.sock write rt.add 10.9.0.0/16 1\n  \
        bricks ctl /run/bricks/red.sock list")]
    Ctl {
        /// The socket given to `bricks run --control` or
        /// `--router-control NAME=PATH`.
        socket: PathBuf,
        /// The command and its arguments, e.g. `read c.count` or `write
        /// rt.add 10.9.0.0/16 1`.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Build a network of Linux namespaces (two hosts, a router), run
    /// conf/dual-stack-router.click in it, send real IPv4 and IPv6 traffic
    /// through it with live rates and a summary, and delete it all at the
    /// end.
    ///
    /// Needs root; without it, runs the same router in memory.
    Demo(demo::DemoArgs),
    /// Send traffic: a configuration of WorkloadSource (sizes, IMIX,
    /// flows, rate) or a capture, GenStamp (sequence numbers and send
    /// times for `bricks sink`) and ToDevice.
    Gen(gen_cmd::GenArgs),
    /// Receive traffic and report rate, loss, reordering and latency of
    /// the probes `bricks gen` stamps (FromDevice -> TrafficSink).
    Sink(sink_cmd::SinkArgs),
    /// RouteBricks clusters: size one, check a cluster file, print a
    /// server's configuration, or run a whole cluster in network
    /// namespaces (up, status, kill, restart, down).
    #[command(after_help = "Examples:\n  \
        bricks cluster plan --ports 4 --rate 10G --fanout 4 --ports-per-server 1\n  \
        bricks cluster check conf/cluster/rb4.toml\n  \
        bricks cluster config conf/cluster/rb4.toml n1 > n1.click\n  \
        sudo bricks cluster up conf/cluster/rb4.toml\n  \
        sudo ip netns exec bc-rb4-hn1ext0 ping 10.2.0.2\n  \
        sudo bricks cluster status\n  \
        sudo bricks cluster down\n\n\
        On real servers: `bricks cluster config FILE NODE > node.click` for each server, the \
        cluster file copied to every server at the path the configuration names, internal \
        interfaces cabled as the file's links say and set promiscuous (`ip link set IF promisc \
        on`), then on each server `bricks run node.click -D MAC0=<its external port's MAC>`.")]
    Cluster {
        #[command(subcommand)]
        what: cluster::ClusterCommand,
    },
    /// Virtual routers on one box (Egi et al., CoNEXT 2008): check a
    /// virtual-router file, or print the Click configuration it expands
    /// into (one compound per router, links shared by VLAN, MAC, MPLS
    /// label or IP-in-IP tunnel, by weight).
    #[command(after_help = "Examples:\n  \
        bricks vr check conf/vr/two-tenants.toml\n  \
        bricks vr config conf/vr/two-tenants.toml -o two-tenants.click\n  \
        sudo bricks run two-tenants.click --router-control red=/run/bricks/red.sock \
        --router-control blue=/run/bricks/blue.sock")]
    Vr {
        #[command(subcommand)]
        what: vr_cmd::VrCommand,
    },
    /// Multistage routers (Bianco et al.): L2 load balancers in front of
    /// L3 routers over an Ethernet switch, seen from outside as one
    /// router. Check a multistage file, or print the Click configuration
    /// of one of its boxes.
    #[command(after_help = "Examples:\n  \
        bricks multistage check conf/multistage/2x2.toml\n  \
        bricks multistage config conf/multistage/2x2.toml lb1 -o lb1.click\n  \
        bricks multistage config conf/multistage/2x2.toml r1 -o r1.click")]
    Multistage {
        #[command(subcommand)]
        what: multistage::MultistageCommand,
    },
    /// Measure the packet path: in memory on one core (core, lpm, the
    /// first parts of ipsec) or between veths in network namespaces as
    /// root (io, ipsec's gateway part, cluster).
    #[command(after_help = "Examples:\n  \
        bricks bench core --workload ipv4 --no-callgrind\n  \
        bricks bench lpm\n  \
        sudo bricks bench io --seconds 1 --runs 1\n  \
        sudo bricks bench cluster --quick")]
    Bench {
        #[command(subcommand)]
        what: bench_cmd::BenchCommand,
    },
    /// Run Click's driver command line (`click [OPTION]... [FILE]
    /// [PARAM=VALUE]...`: `-e`, `-f`, `-h`, `-x`, `-q`, `-j`,
    /// `--simtime`, bundled as in `-qh c.count`) as `bricks run`. A link to
    /// bricks named `click` does the same.
    #[command(disable_help_flag = true)]
    Click {
        /// Click's driver arguments; `bricks click --help` lists them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's flattener: the configuration with its compound elements
    /// expanded, as Click's tools print it (or its classes, element names
    /// or declarations, sorted). The configuration is read, not checked.
    /// A link named `click-flatten` does the same; `bricks click-flatten
    /// --help` gives its options.
    #[command(name = "click-flatten", disable_help_flag = true)]
    ClickFlatten {
        /// click-flatten's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's pattern optimizer: replace the patterns of pattern files
    /// (`elementclass NAME` with `NAME_Replacement`) in a configuration
    /// and print the result. A link to bricks named `click-xform` does the
    /// same; `bricks click-xform --help` gives its options.
    #[command(name = "click-xform", disable_help_flag = true)]
    ClickXform {
        /// click-xform's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's alignment tool: add the Align elements and AlignmentInfo
    /// Click's alignment analysis asks for, and print the configuration.
    /// A link named `click-align` does the same; `bricks click-align
    /// --help` gives its options.
    #[command(name = "click-align", disable_help_flag = true)]
    ClickAlign {
        /// click-align's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's dead code remover: drop the elements no packet can reach
    /// from a source and leave for a sink, StaticSwitches, Nulls, and
    /// schedulers and tees left with one port, and print the
    /// configuration. A link named `click-undead` does the same; `bricks
    /// click-undead --help` gives its options.
    #[command(name = "click-undead", disable_help_flag = true)]
    ClickUndead {
        /// click-undead's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's classifier compiler: bricks compiles every Classifier,
    /// IPClassifier and IPFilter when a configuration loads, so this
    /// loads the configuration (checking every classifier) and writes it
    /// flattened. A link named `click-fastclassifier` does the same.
    #[command(name = "click-fastclassifier", disable_help_flag = true)]
    ClickFastclassifier {
        /// click-fastclassifier's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's network combiner: join several configurations at their
    /// devices (`A.eth1=B.eth0`: A's ToDevice(eth1) feeds B's
    /// FromDevice(eth0)) into one, written as a Click archive with its
    /// component map. A link named `click-combine` does the same; `bricks
    /// click-combine --help` gives its options.
    #[command(name = "click-combine", disable_help_flag = true)]
    ClickCombine {
        /// click-combine's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Click's component extractor: one component of a configuration
    /// click-combine made, its links turned back into its devices. A link
    /// named `click-uncombine` does the same; `bricks click-uncombine
    /// --help` gives its options.
    #[command(name = "click-uncombine", disable_help_flag = true)]
    ClickUncombine {
        /// click-uncombine's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run test cases in Click's `.clicktest` format (Click's own test
    /// suite or bricks' tests/clicktest), with bricks as `click`.
    Clicktest(clicktest_cmd::ClicktestArgs),
    /// Rerun the experiments of the five papers bricks is built from
    /// (RouteBricks, the NIC paper, Egi et al.'s virtual routers, Bianco
    /// et al.'s multistage routers, Hardekopf et al.'s QoS blocks) and
    /// write one report: per figure and table, the paper's setup and
    /// values, bricks' on this machine, the comparison, a verdict and SVG
    /// plots (report.html, report.md and results.json in the output
    /// directory). Every figure and table is listed, those that cannot be
    /// rerun here with the reason. Experiments that build network
    /// namespaces need root and are reported as not run without it.
    #[command(after_help = "Examples:\n  \
        sudo bricks reproduce --quick\n  \
        bricks reproduce vr qos -o /tmp/repro\n  \
        bricks reproduce --report-only -o /tmp/repro\n  \
        sudo bricks reproduce --quick -o /tmp/new --compare /tmp/repro")]
    Reproduce(bricks_experiments::reproduce::ReproduceArgs),
}

#[derive(clap::Args)]
struct ConfigArgs {
    /// Configuration file in the Click language (`-` or none: standard
    /// input, as Click reads it when it is not a terminal).
    file: Option<PathBuf>,
    /// Configuration variables after the file, NAME=VALUE, as Click's
    /// driver takes them (`bricks run router.click DEV=eth1`); the same as
    /// `-D NAME=VALUE`.
    #[arg(value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Configuration given on the command line instead of a file.
    #[arg(short = 'e', long = "expr")]
    expr: Option<String>,
    /// Set a configuration variable, overriding its `define`: NAME=VALUE
    /// (as `click router.click DEV=eth1`). Repeat for each variable.
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    defines: Vec<String>,
    /// Back an interface with capture files: NAME=pcap:IN[,OUT].
    ///
    /// FromDevice(NAME) reads IN, ToDevice(NAME) writes OUT; `host` backs
    /// ToHost. Repeat for each interface.
    #[arg(short = 'd', long = "device", value_name = "NAME=pcap:IN[,OUT]")]
    devices: Vec<String>,
    /// How configuration errors are printed: `rich` (the message, then
    /// file:line:column and the line with the place marked) or `click`
    /// (one `FILE:LINE: message` line each, as Click prints them; what
    /// `click` uses).
    #[arg(long = "error-format", value_enum, default_value = "rich")]
    error_format: ErrorFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum Clock {
    /// Time is the wall clock.
    Wall,
    /// Time follows the timestamps of packets read from captures, so an
    /// offline run produces the same output every time.
    Trace,
}

#[derive(clap::Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("sockets").multiple(true).args(["control", "router_control"]))]
struct RunArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Where time comes from.
    #[arg(long, value_enum, default_value = "wall")]
    clock: Clock,
    /// Run in simulated time, as Click's `--simtime`: the clock starts at
    /// SECONDS since the epoch (default 1000000000, Click's) and jumps to
    /// the next timer whenever nothing else is due, so waits take no real
    /// time and every run prints the same times. Implies `--clock trace`.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1000000000")]
    simtime: Option<f64>,
    /// Do not print the final counters.
    #[arg(long)]
    quiet: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Print the value of read handler ELEMENT.HANDLER at exit, as Click's
    /// `-h` does (repeatable; with more than one, each value follows a
    /// `ELEMENT.HANDLER:` line and ends with a blank line).
    #[arg(short = 'h', long = "handler", value_name = "ELEMENT.HANDLER")]
    handler: Vec<String>,
    /// Quit right after start-up, running nothing (Click's `-q`): with
    /// `-h`, the handlers' initial values.
    #[arg(short = 'q', long = "quit")]
    quit: bool,
    /// Exit with the value of read handler ELEMENT.HANDLER (Click's `-x`):
    /// an integer is the status, true is 0 and false 1.
    #[arg(short = 'x', long = "exit-handler", value_name = "ELEMENT.HANDLER")]
    exit_handler: Option<String>,
    /// Write the flattened configuration to FILE (`-`: standard output)
    /// before running, as Click's `-o`: `require`s, one declaration per
    /// element, then the connections.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Worker threads, each pinned to a core and running its own copy of
    /// the graph; every device queue is owned by exactly one of them.
    /// [default: 1, or the configuration's Settings(THREADS n)]
    #[arg(short = 't', short_alias = 'j', long, value_name = "N")]
    threads: Option<usize>,
    /// Do not pin worker threads to cores (Click's `--no-affinity`).
    #[arg(long, alias = "no-affinity")]
    no_pin: bool,
    /// Stop after this many seconds (packets in flight are still
    /// delivered).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Print live counters every SECONDS (rates per element and worker on
    /// stderr, or JSON lines on stdout with --stats-json).
    #[arg(long, value_name = "SECONDS")]
    stats_interval: Option<f64>,
    /// Live counters as one JSON object per line on stdout:
    /// {"elapsed":S,"workers":[{"worker":0,"elements":{"NAME":{"class":C,"count":N,...}}}]}
    #[arg(long)]
    stats_json: bool,
    /// The longest an idle worker sleeps before polling again, in
    /// microseconds; 0 busy-polls (lowest latency, a whole core per worker).
    /// [default: 50, or the configuration's Settings(IDLE_NAP d)]
    #[arg(long, value_name = "MICROSECONDS")]
    idle_nap: Option<u64>,
    /// How received packets reach the workers: `per-core` (each worker
    /// polls the device queues it owns, run to completion), `pipeline` (a
    /// dispatcher thread polls every queue and hands whole batches to the
    /// workers) or `serial` (a dispatcher thread steers each packet to a
    /// worker in software: Toeplitz hash, MAC and flow rules).
    /// [default: per-core, or the configuration's Settings(MODE m)]
    #[arg(long, value_name = "MODE")]
    mode: Option<bricks_io::live::Spread>,
    /// Answer commands on this Unix socket while running (`bricks ctl
    /// PATH help` lists them): write handlers, steering, counters.
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Let this group use the control sockets too (mode 0660 instead of
    /// 0600); a name or a number.
    #[arg(long, value_name = "GROUP", requires = "sockets")]
    control_group: Option<String>,
    /// Answer commands for virtual router NAME (the compound whose
    /// elements are named NAME/...) on this Unix socket: element names are
    /// relative to NAME (`write rt.add ...` means NAME/rt), and nothing
    /// outside NAME can be read or changed, nor the box steered or
    /// stopped. Repeat for each router; works without --control.
    #[arg(long, value_name = "NAME=PATH", value_parser = router_control_arg)]
    router_control: Vec<(String, PathBuf)>,
    /// Serve Click's ControlSocket protocol (as the configuration's
    /// ControlSocket elements) on TCP PORT of 127.0.0.1; PORT+ takes the
    /// first free port from PORT. `click -p PORT` gives this.
    #[arg(long, value_name = "PORT[+]")]
    click_port: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics while running: every
    /// element's counters, per interface and per worker packets and drops,
    /// queue lengths, route-table sizes (OpenMetrics text). A bare PORT
    /// listens on loopback (127.0.0.1:PORT); give an address
    /// (0.0.0.0:9100) to be reached from elsewhere.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = metrics_addr)]
    metrics: Option<std::net::SocketAddr>,
    /// Count memory references and 32-bit words touched per packet
    /// (Hardekopf et al.'s measure) in every element that can: the MEMREFS
    /// keyword of the QoS elements and the IPv4 route lookups defaults to
    /// true (an element's own `MEMREFS false` still wins). At exit a table
    /// on stderr gives each counting element's packets, references and
    /// words, per packet too, and the router's sums per packet: the
    /// references and words of all counting elements divided by the packets
    /// of the counting element that counted the most (the first counting
    /// block every packet passes). With --stats-json the same as one JSON
    /// line on stdout; printed even with --quiet. Off, the counting code
    /// is compiled out of the elements.
    #[arg(long)]
    memrefs: bool,
}

/// `--router-control NAME=PATH`.
fn router_control_arg(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.trim_end_matches('/').to_string(), PathBuf::from(path)))
        }
        _ => Err(format!(
            "`{s}`: expected NAME=PATH, a virtual router's name and its socket's path"
        )),
    }
}

fn main() -> ExitCode {
    // Installed or linked as `click` (or `click-buildtool`, `click-flatten`,
    // `click-xform`, `click-align`, `click-undead`, `click-combine`,
    // `click-uncombine`), bricks takes Click's
    // command lines.
    let mut args = std::env::args();
    let program = args.next().unwrap_or_default();
    match std::path::Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
    {
        Some("click") => return click_cmd::click(&args.collect::<Vec<_>>(), run_click),
        Some("click-buildtool") => return click_cmd::buildtool(&args.collect::<Vec<_>>()),
        Some("clicktest") => return clicktest_cmd::click_clicktest(&args.collect::<Vec<_>>()),
        Some("click-flatten") => return click_tools::flatten(&args.collect::<Vec<_>>()),
        Some("click-xform") => return click_tools::xform(&args.collect::<Vec<_>>()),
        Some("click-align") => return click_tools::align(&args.collect::<Vec<_>>()),
        Some("click-undead") => return click_tools::undead(&args.collect::<Vec<_>>()),
        Some("click-combine") => return click_tools::combine(&args.collect::<Vec<_>>()),
        Some("click-fastclassifier") => {
            return click_tools::fastclassifier(&args.collect::<Vec<_>>(), run_click)
        }
        Some("click-uncombine") => return click_tools::uncombine(&args.collect::<Vec<_>>()),
        _ => {}
    }
    dispatch(Cli::parse())
}

/// `bricks run` with the arguments Click's driver command line became.
fn run_click(argv: Vec<std::ffi::OsString>) -> ExitCode {
    match Cli::try_parse_from(argv) {
        Ok(cli) => dispatch(cli),
        Err(e) => {
            let _ = e.print();
            ExitCode::from(1)
        }
    }
}

fn dispatch(cli: Cli) -> ExitCode {
    if prints_only(&cli.command) {
        // `bricks elements | head`: end quietly when the reader goes away,
        // as Unix tools do, instead of panicking on the broken pipe.
        // Commands that serve sockets or run routers keep SIGPIPE ignored
        // (Rust's default), so a client that hangs up cannot stop them.
        // SAFETY: setting a signal disposition to its default, before any
        // thread is started.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let r = match cli.command {
        Command::Check(a) => check(&a),
        Command::Run(a) => run(&a),
        Command::Elements { name } => elements_cmd::elements(name.as_deref()),
        Command::Routes { what } => routes_cmd::routes(what),
        Command::Bench { what } => bench_cmd::bench(what),
        Command::Gen(a) => gen_cmd::gen(&a),
        Command::Sink(a) => sink_cmd::sink(&a),
        Command::Demo(a) => demo::demo(a),
        Command::Ctl { socket, command } => control::ctl(&socket, &command),
        Command::Cluster { what } => cluster::cluster(what),
        Command::Vr { what } => vr_cmd::vr(what),
        Command::Multistage { what } => multistage::multistage(what),
        Command::Click { args } => Ok(click_cmd::click(&args, run_click)),
        Command::ClickXform { args } => Ok(click_tools::xform(&args)),
        Command::ClickAlign { args } => Ok(click_tools::align(&args)),
        Command::ClickUndead { args } => Ok(click_tools::undead(&args)),
        Command::ClickFlatten { args } => Ok(click_tools::flatten(&args)),
        Command::ClickCombine { args } => Ok(click_tools::combine(&args)),
        Command::ClickFastclassifier { args } => Ok(click_tools::fastclassifier(&args, run_click)),
        Command::ClickUncombine { args } => Ok(click_tools::uncombine(&args)),
        Command::Clicktest(a) => clicktest_cmd::clicktest(&a),
        Command::Reproduce(a) => {
            match bricks_experiments::reproduce::reproduce(&a, runner::stop_on_signals) {
                Ok(true) => Ok(ExitCode::SUCCESS),
                Ok(false) => Ok(ExitCode::from(1)),
                Err(e) => Err(e.into()),
            }
        }
    };
    match r {
        Ok(code) => code,
        Err(e) if e.is::<runner::Reported>() => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Whether `command` only prints (no router, socket or child process of
/// its own), so that a closed standard output may simply end it.
fn prints_only(command: &Command) -> bool {
    matches!(
        command,
        Command::Check(_) | Command::Elements { .. } | Command::Routes { .. } | Command::Vr { .. }
    )
}

/// How configuration errors are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ErrorFormat {
    Rich,
    Click,
}

/// Exit status for a configuration that does not check.
const CONFIG_ERROR: u8 = 2;

/// Parses, binds devices and checks a configuration; prints diagnostics
/// and returns `None` when it has errors.
fn load(a: &ConfigArgs, build: bricks_runtime::BuildOptions) -> anyhow::Result<Option<Plan>> {
    for spec in &a.devices {
        let (name, b) = bricks_io::binding::Binding::parse(spec).map_err(anyhow::Error::msg)?;
        bricks_io::binding::bind(&name, b);
    }
    // Click's driver reads `NAME=VALUE` words as variables wherever they
    // are, so the first one may stand where the file would.
    let (file, params) = match &a.file {
        Some(f) if is_param(&f.to_string_lossy()) => (None, Some(f.to_string_lossy().into_owned())),
        f => (f.clone(), None),
    };
    let source = match (&file, &a.expr) {
        (Some(f), Some(_)) => anyhow::bail!(
            "give either a configuration file ({}) or -e TEXT, not both",
            f.display()
        ),
        (Some(f), None) if f.as_os_str() == "-" => read_stdin()?,
        (Some(f), _) => Source {
            name: f.display().to_string(),
            text: std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        },
        (None, Some(e)) => Source {
            // Click calls a configuration given with -e `config`.
            name: match a.error_format {
                ErrorFormat::Click => "config".into(),
                ErrorFormat::Rich => "<expr>".into(),
            },
            text: e.clone(),
        },
        (None, None) => read_stdin()?,
    };
    // A Click archive (click-combine's, or one with compiled code) holds
    // the configuration as its `config` member.
    let source = Source {
        text: bricks_config::archive::split_config(&source.text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?
            .0,
        ..source
    };
    let options = config_options(a, params.as_ref())?;
    for warning in unused_defines(&source.text, &options.defines) {
        eprintln!("warning: {warning}");
    }
    match plan_with(source, &options, build, a.error_format) {
        Ok(plan) => Ok(Some(plan)),
        Err(rendered) => {
            eprint!("{rendered}");
            Ok(None)
        }
    }
}

/// The configuration variables of the command line: `-D NAME=VALUE` and
/// the `NAME=VALUE` words after the file (`first`: one that stood where
/// the file would).
fn config_options(
    a: &ConfigArgs,
    first: Option<&String>,
) -> anyhow::Result<bricks_config::Options> {
    let mut options = bricks_config::Options::default();
    for p in first.into_iter().chain(&a.params) {
        anyhow::ensure!(
            is_param(p),
            "`{p}`: after the configuration file only NAME=VALUE variables may follow"
        );
    }
    for d in a.defines.iter().chain(first).chain(&a.params) {
        let (name, value) = d
            .split_once('=')
            .with_context(|| format!("--define `{d}`: expected NAME=VALUE"))?;
        options
            .defines
            .push((name.trim_start_matches('$').to_string(), value.to_string()));
    }
    Ok(options)
}

/// How `bricks run` is hot-swapped: configurations are built with the
/// run's variables and build options, and SIGHUP re-reads the run's
/// configuration file (none when it came from `-e` or standard input).
fn reconfigure(
    a: &ConfigArgs,
    build: bricks_runtime::BuildOptions,
) -> anyhow::Result<hotswap::Reconfigure> {
    let (file, first) = match &a.file {
        Some(f) if is_param(&f.to_string_lossy()) => (None, Some(f.to_string_lossy().into_owned())),
        Some(f) if f.as_os_str() == "-" => (None, None),
        f => (f.clone(), None),
    };
    let options = config_options(a, first.as_ref())?;
    let format = a.error_format;
    let file = file.map(|f| std::path::absolute(&f).unwrap_or(f));
    Ok(hotswap::Reconfigure {
        build: std::sync::Arc::new(move |source: Source, old: &Plan| {
            plan_beside(source, &options, build, format, Some(old))
        }),
        file,
    })
}

/// Whether a command-line word is a variable definition, `NAME=VALUE` with
/// NAME letters, digits and `_` (Click's driver's test).
fn is_param(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }
        None => false,
    }
}

/// The configuration on standard input, unless that is a terminal (where
/// Click would wait for it to be typed).
fn read_stdin() -> anyhow::Result<Source> {
    use std::io::{IsTerminal, Read};
    anyhow::ensure!(
        !std::io::stdin().is_terminal(),
        "give a configuration file, -e TEXT, or the configuration on standard input"
    );
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading the configuration from standard input")?;
    Ok(Source {
        name: "<stdin>".into(),
        text,
    })
}

/// The variables of a configuration: every `$name` and `${name}` in its
/// text (a `define` names its variables the same way). Comments and quotes
/// are not told apart, so a name only mentioned in a comment counts: this
/// serves a warning, which had better be missed than wrong.
fn config_variables(text: &str) -> Vec<&str> {
    let is_var = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut names: Vec<&str> = Vec::new();
    for (i, _) in text.match_indices('$') {
        let rest = &text[i + 1..];
        let rest = rest.strip_prefix('{').unwrap_or(rest);
        let end = rest.find(|c| !is_var(c)).unwrap_or(rest.len());
        if end > 0 && !names.contains(&&rest[..end]) {
            names.push(&rest[..end]);
        }
    }
    names
}

/// A warning for each `-D NAME=VALUE` whose NAME the configuration never
/// defines or uses: a misspelt name would otherwise be ignored in silence.
fn unused_defines(text: &str, defines: &[(String, String)]) -> Vec<String> {
    let known = config_variables(text);
    defines
        .iter()
        .filter(|(name, _)| !known.contains(&name.as_str()))
        .map(|(name, _)| {
            let mut w = format!(
                "-D {name}: the configuration never defines or uses `${name}`, so it has no effect"
            );
            match bricks_config::suggest(name, known.iter().copied()) {
                Some(s) => w.push_str(&format!(" (did you mean {s}?)")),
                None if known.is_empty() => w.push_str(" (it has no variables)"),
                None => w.push_str(&format!(
                    " (its variables: {})",
                    known
                        .iter()
                        .map(|k| format!("${k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
            w
        })
        .collect()
}

/// Parses and checks a configuration against the built-in elements; on
/// errors, returns them rendered (file:line:column, underlined) with a
/// closing count line.
pub(crate) fn plan(source: Source, options: &bricks_config::Options) -> Result<Plan, String> {
    plan_with(source, options, Default::default(), ErrorFormat::Rich)
}

/// [`plan`] with build options (`--memrefs`).
pub(crate) fn plan_with(
    source: Source,
    options: &bricks_config::Options,
    build: bricks_runtime::BuildOptions,
    format: ErrorFormat,
) -> Result<Plan, String> {
    plan_beside(source, options, build, format, None)
}

/// [`plan_with`] for a hot swap of the running plan `old` (see
/// [`bricks_runtime::build_hotswap`]).
pub(crate) fn plan_beside(
    source: Source,
    options: &bricks_config::Options,
    build: bricks_runtime::BuildOptions,
    format: ErrorFormat,
    old: Option<&Plan>,
) -> Result<Plan, String> {
    let mut map = SourceMap::default();
    // Whether the errors, if any, were found after parsing: Click finds
    // those when it initializes the router, and says it could not.
    let mut built = false;
    let result = bricks_config::parse_with(&mut map, source, options).and_then(|router| {
        built = true;
        // Warnings (`require(package ...)`, as Click gives them) go to
        // stderr whether or not the configuration builds.
        for w in &router.warnings {
            match format {
                ErrorFormat::Rich => eprint!("{}", map.render_warning(w)),
                ErrorFormat::Click => eprint!("{}", map.render_click(w, "warning: ")),
            }
        }
        let registry = bricks_elements::registry();
        let plan = match old {
            Some(old) => bricks_runtime::build_hotswap(&router, &registry, build, old)?,
            None => bricks_runtime::build_with(&router, &registry, build)?,
        };
        for (i, message) in &plan.messages {
            let e = &plan.elements[*i];
            match format {
                ErrorFormat::Rich => eprintln!("{message}"),
                // Click's ContextErrorHandler: the element's landmark and
                // name, then the message indented.
                ErrorFormat::Click => {
                    let place = map
                        .click_place(e.config_span)
                        .map_or(String::new(), |(file, line)| format!("{file}:{line}: "));
                    eprintln!("{place}While configuring '{} :: {}':", e.name, e.class.name);
                    for line in message.lines() {
                        eprintln!("  {line}");
                    }
                }
            }
        }
        Ok(plan)
    });
    result.map_err(|diags| {
        if format == ErrorFormat::Click {
            return render_click_errors(&map, &diags, built);
        }
        let mut s = String::new();
        for d in &diags {
            s.push_str(&map.render(d));
            s.push('\n');
        }
        s.push_str(&format!(
            "{} error{} found; the configuration was not run\n",
            diags.len(),
            if diags.len() == 1 { "" } else { "s" }
        ));
        s
    })
}

/// Configuration errors as Click prints them: one `FILE:LINE: message`
/// line each, except an element's several configuration problems, which
/// Click lists under `FILE:LINE: While configuring 'NAME :: CLASS':`;
/// after errors found when the router was put together (`built`: an
/// element's configuration, a port left unconnected), Click's closing line,
/// which its parser's errors (an unknown class) do not get.
fn render_click_errors(
    map: &SourceMap,
    diags: &[bricks_config::Diagnostic],
    built: bool,
) -> String {
    let mut s = String::new();
    let parser_stage = |m: &str| {
        m.starts_with("unknown element class")
            || m.starts_with("undeclared element")
            || m.contains("is a Click element that bricks does not implement")
    };
    let configure = built && !diags.iter().any(|d| parser_stage(&d.message));
    for d in diags {
        match bricks_runtime::split_configure_message(&d.message) {
            Some((name, class, why)) => {
                if why.contains('\n') {
                    let head = bricks_config::Diagnostic {
                        message: format!("While configuring '{name} :: {class}':"),
                        ..d.clone()
                    };
                    s += &map.render_click(&head, "");
                    for line in why.lines() {
                        s += &format!("  {}\n", line.replace('`', "'"));
                    }
                } else {
                    s += &map.render_click(d, "");
                }
            }
            None => s += &map.render_click(d, ""),
        }
    }
    if configure {
        s += "Router could not be initialized!\n";
    }
    s
}

fn check(a: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let offline = bricks_runtime::BuildOptions {
        offline: true,
        ..Default::default()
    };
    let Some(plan) = load(a, offline)? else {
        return Ok(ExitCode::from(CONFIG_ERROR));
    };
    print!("{}", plan.describe());
    println!(
        "ok: {} elements, {} connections",
        plan.elements.len(),
        plan.elements
            .iter()
            .map(|e| e.outputs.iter().map(Vec::len).sum::<usize>())
            .sum::<usize>()
    );
    // The process ends here: a million inline routes take longer to free
    // one by one than the operating system takes to reclaim them.
    std::mem::forget(plan);
    Ok(ExitCode::SUCCESS)
}

/// What the configuration's `Settings` element (if any) says.
fn config_settings(
    plan: &Plan,
) -> anyhow::Result<bricks_elements::standard::settings::RunSettings> {
    let mut found = plan.elements.iter().filter(|e| e.class.name == "Settings");
    let Some(e) = found.next() else {
        return Ok(Default::default());
    };
    anyhow::ensure!(
        found.next().is_none(),
        "the configuration has more than one Settings element"
    );
    bricks_elements::standard::settings::read(&mut bricks_element::Args::from_strs(&e.args))
        .map_err(|err| anyhow::anyhow!("{}: {}", e.name, err.message))
}

fn run(a: &RunArgs) -> anyhow::Result<ExitCode> {
    let build = bricks_runtime::BuildOptions {
        memrefs: a.memrefs,
        ..Default::default()
    };
    let Some(plan) = load(&a.config, build)? else {
        return Ok(ExitCode::from(CONFIG_ERROR));
    };
    let secs = |s: f64, what: &str| {
        anyhow::ensure!(
            s.is_finite() && s > 0.0,
            "--{what} must be a positive number of seconds"
        );
        Ok(std::time::Duration::from_secs_f64(s))
    };
    match &a.output {
        Some(f) if f.as_os_str() == "-" => {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            out.write_all(plan.texts.flatconfig().as_bytes())?;
            out.flush()?;
        }
        Some(f) => std::fs::write(f, plan.texts.flatconfig())
            .with_context(|| format!("writing {}", f.display()))?,
        None => {}
    }
    if let Err(e) = control::check_sockets(&plan, a.control.as_deref(), &a.router_control) {
        eprintln!("error: {e}");
        return Ok(ExitCode::from(CONFIG_ERROR));
    }
    let conf = config_settings(&plan)?;
    let threads = a.threads.or(conf.threads).unwrap_or(1);
    anyhow::ensure!(threads >= 1, "--threads must be at least 1");
    let mode = match (a.mode, conf.mode.as_deref()) {
        (Some(m), _) => m,
        (None, Some(m)) => m.parse().map_err(anyhow::Error::msg)?,
        (None, None) => bricks_io::live::Spread::PerCore,
    };
    let max_nap = match (a.idle_nap, conf.idle_nap) {
        (Some(us), _) => std::time::Duration::from_micros(us),
        (None, Some(d)) => d,
        (None, None) => std::time::Duration::from_micros(50),
    };
    let settings = runner::RunSettings {
        threads,
        pin: !a.no_pin,
        duration: a.duration.map(|d| secs(d, "duration")).transpose()?,
        quiet: a.quiet,
        trace_clock: matches!(a.clock, Clock::Trace) || a.simtime.is_some(),
        clock_start: match a.simtime {
            Some(t) if !(0.0..1.8e10).contains(&t) => {
                anyhow::bail!("--simtime {t}: expected seconds since 1970, before the year 2500")
            }
            Some(t) => bricks_packet::Timestamp((t * 1e9) as u64),
            None => bricks_packet::Timestamp(0),
        },
        stats_interval: a
            .stats_interval
            .map(|d| secs(d, "stats-interval"))
            .transpose()?,
        stats_json: a.stats_json,
        max_nap,
        spread: mode,
        control: a.control.clone(),
        control_group: a.control_group.clone(),
        router_control: a.router_control.clone(),
        click_port: a.click_port.clone(),
        metrics: a.metrics,
        memrefs: a.memrefs,
        handlers: a.handler.clone(),
        quit: a.quit,
        exit_handler: a.exit_handler.clone(),
        reconfigure: Some(reconfigure(&a.config, build)?),
        exits_after: true,
    };
    let summary = runner::run_plan(plan, &settings)?;
    let status = runner::exit_status(&summary);
    match &settings.exit_handler {
        Some(h) if summary.errors.is_empty() => Ok(runner::exit_handler_status(&summary, h)),
        _ => Ok(status),
    }
}

/// `--metrics`: `PORT` (on loopback) or `ADDR:PORT`.
fn metrics_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse()
        .map_err(|_| format!("`{s}`: expected PORT or ADDR:PORT (e.g. 9100 or 127.0.0.1:9100)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "1".into())).collect()
    }

    #[test]
    fn variables_are_found_in_both_spellings() {
        let text = "define($DEV eth0, $RATE 10)\nFromDevice(${DEV}) -> Discard; // $x_2";
        assert_eq!(config_variables(text), ["DEV", "RATE", "x_2"]);
        assert!(config_variables("a $ b $").is_empty());
    }

    #[test]
    fn unused_defines_are_named_with_a_suggestion() {
        let text = "define($DEV eth0)\nFromDevice($DEV) -> Discard;";
        assert!(unused_defines(text, &defines(&["DEV"])).is_empty());
        let w = unused_defines(text, &defines(&["DEVV", "RATE"]));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("-D DEVV: "), "{}", w[0]);
        assert!(w[0].ends_with("(did you mean DEV?)"), "{}", w[0]);
        assert!(w[1].ends_with("(its variables: $DEV)"), "{}", w[1]);
        let w = unused_defines("Idle -> Discard;", &defines(&["X"]));
        assert!(w[0].ends_with("(it has no variables)"), "{}", w[0]);
    }
}
