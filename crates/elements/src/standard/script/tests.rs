use super::*;
use crate::standard::testrun;
use bricks_runtime::{Engine, StopReason};

fn lines(ls: &[&str]) -> Vec<(String, bricks_config::Span)> {
    ls.iter()
        .map(|l| (l.to_string(), Default::default()))
        .collect()
}

fn parse(ls: &[&str]) -> Result<Script, String> {
    Script::parse(Kind::Active, "Script", &lines(ls)).map_err(|e| e.to_string())
}

/// Runs `config` on one engine with the trace clock (waits take no real
/// time) and reads `handlers` at exit.
fn run(config: &str, handlers: &[&str]) -> (StopReason, Vec<String>) {
    let plan = testrun::plan(config).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = Engine::new(&plan).unwrap();
    engine.idle_sleep = false;
    engine.set_trace_clock(true);
    engine.set_clock(Timestamp(1_000_000_000_000_000_000));
    engine.read_at_exit(handlers.iter().map(|h| h.to_string()).collect());
    let s = engine.run();
    let values = s
        .reads
        .into_iter()
        .map(|r| match r.value {
            Ok(v) => v.into_text(),
            Err(e) => format!("error: {e}"),
        })
        .collect();
    (s.reason, values)
}

#[test]
fn instructions_parse_as_click_s() {
    let s = parse(&[
        "set x 1",
        "label a",
        "print $x",
        "goto a $(lt $x 1)",
        "stop",
    ])
    .unwrap();
    let ops: Vec<Op> = s.insns.iter().map(|i| i.op).collect();
    // An implicit first step, then the instructions, then an implicit end.
    assert_eq!(
        ops,
        [
            Op::Initial,
            Op::Set,
            Op::Label,
            Op::Print,
            Op::Goto,
            Op::Stop,
            Op::End
        ]
    );
    assert_eq!(s.insns[4].target, Target::At(2));
    assert_eq!(s.insns[4].text, "$(lt $x 1)");
    // A leading wait needs no implicit first step.
    let s = parse(&["wait 1s", "wait", "pause 3", "wait_stop 2"]).unwrap();
    let ops: Vec<(Op, i64)> = s.insns.iter().map(|i| (i.op, i.arg)).collect();
    assert_eq!(
        ops,
        [
            (Op::WaitTime, 0),
            (Op::WaitStep, 1),
            (Op::WaitStep, 3),
            (Op::WaitStep, 2),
            (Op::End, 0)
        ]
    );
    let s = parse(&["goto exit", "goto stop $c", "loop", "goto begin"]).unwrap();
    assert_eq!(s.insns[1].target, Target::Finish(Op::Exit));
    assert_eq!(s.insns[2].target, Target::Finish(Op::Stop));
    assert_eq!(s.insns[3].target, Target::At(0));
    assert_eq!(s.insns[4].target, Target::At(0));
    // Comments and empty arguments are benign.
    assert!(parse(&["", "/* nothing */", "print x // comment"]).is_ok());
    // A driver script with nothing to do waits for one stop.
    let d = Script::parse(Kind::Driver, "DriverManager", &lines(&[])).unwrap();
    let ops: Vec<Op> = d.insns.iter().map(|i| i.op).collect();
    assert_eq!(ops, [Op::WaitStep, Op::Stop]);
}

#[test]
fn bad_instructions_are_refused_with_click_s_words() {
    for (ls, want) in [
        (&["bogus 1"][..], "syntax error at `bogus'"),
        (&["goto nowhere"], "no such label `nowhere'"),
        (&["set x"], "syntax error at `set'"),
        (&["label"], "syntax error at `label'"),
        (&["label a b"], "syntax error at `label'"),
        (&["end now"], "syntax error at `end'"),
        (&["pause x"], "syntax error at `pause'"),
        (&["pause -1"], "syntax error at `pause'"),
        (&["loop 3"], "syntax error at `loop'"),
    ] {
        let e = parse(ls).err().unwrap_or_else(|| panic!("{ls:?} parsed"));
        assert!(e.contains(want), "{ls:?}: {e}");
    }
}

#[test]
fn configuration_errors_name_the_problem() {
    for (config, want) in [
        ("Script(TYPE SIGNAL, print x)", "bad signal number"),
        ("Script(TYPE SIGNAL KILL, print x)", "bad signal number"),
        ("Script(TYPE SIGNAL 9, print x)", "bad signal number"),
        ("Script(TYPE SIGNAL USR1 BOGUS)", "bad signal number"),
        ("Script(TYPE BOGUS)", "bad TYPE"),
        (
            "Idle -> Script(TYPE ACTIVE) -> Discard",
            "ports allowed only on PACKET",
        ),
        (
            "Script(TYPE PACKET) -> Discard",
            "PACKET script must have inputs",
        ),
        ("Script(goto x)", "no such label"),
    ] {
        let e = testrun::plan(config)
            .err()
            .unwrap_or_else(|| panic!("{config} built"));
        assert!(e.contains(want), "{config}: {e}");
    }
}

#[test]
fn expressions_and_variables() {
    let (_, v) = run(
        "s :: Script(export x, set x $(add 1 2 3), export y, \
         set y $(if $(lt $x 10) small big), export q, setq q \"$x apples\", \
         export r, set r \"$x apples\", export f, set f $(sprintf \"%05x\" 127), \
         export n, set n $(div 1 4))",
        &["s.x", "s.y", "s.q", "s.r", "s.f", "s.n"],
    );
    assert_eq!(
        v,
        ["6", "small", "6 apples", "\"6 apples\"", "0007f", "0.25"]
    );
}

#[test]
fn goto_loops_and_counts() {
    let (_, v) = run(
        "s :: Script(export n 0, label a, set n $(add $n 1), goto a $(lt $n 5), \
         export after, set after done)",
        &["s.n", "s.after"],
    );
    assert_eq!(v, ["5", "done"]);
}

#[test]
fn a_loop_without_a_wait_gives_up_after_1000_jumps() {
    let (reason, v) = run(
        "s :: Script(export n 0, label a, set n $(add $n 1), goto a)",
        &["s.n"],
    );
    assert_eq!(reason, StopReason::SourcesDone);
    assert_eq!(v, ["1000"]);
}

#[test]
fn waits_follow_the_clock_and_steps_cut_them_short() {
    let (reason, v) = run(
        "s :: Script(export t0, set t0 $(now), export n 0, wait 1, set n 1, \
         wait 2.5s, set n $(add $n 1), export t1, set t1 $(now), stop)",
        &["s.t0", "s.n", "s.t1"],
    );
    assert_eq!(reason, StopReason::Requested);
    assert_eq!(v[1], "2");
    let t0: f64 = v[0].parse().unwrap();
    let t1: f64 = v[2].parse().unwrap();
    assert_eq!((t1 - t0).round(), 4.0);
    // A step ends a long wait early; `pause` waits for steps only.
    let (_, v) = run(
        "s :: Script(export n 0, wait 1000, set n 1, pause 2, set n 2); \
         Script(write s.step, write s.step 2)",
        &["s.n"],
    );
    assert_eq!(v, ["2"]);
}

#[test]
fn handlers_of_other_elements() {
    let (_, v) = run(
        "InfiniteSource(LIMIT 5) -> c :: Counter -> Discard; \
         s :: Script(export a, export b, export ok, export bad, wait 0.001, \
         set a $(c.count), write c.reset, set b $(c.count), \
         write nosuch.reset, set bad $?, write c.reset, set ok $?)",
        &["s.a", "s.b", "s.ok", "s.bad"],
    );
    assert_eq!(v, ["5", "0", "0", "-22"]);
}

#[test]
fn passive_and_proxy_scripts_answer_calls() {
    let (_, v) = run(
        "s :: Script(TYPE PASSIVE, return $(add $1 $2)); \
         p :: Script(TYPE PROXY, goto nota $(ne $0 a), returnq \"you called '$0'\", \
         label nota, error bad handler); \
         t :: Script(export r, set r $(s.run 2 3), export pa, set pa $(p.a), \
         export n, set n $#, export sh, set sh $(shift), export rd, set rd $(readable s.run c.nope))",
        &["t.r", "t.pa", "s.run", "t.rd"],
    );
    assert_eq!(v[0], "5");
    assert_eq!(v[1], "you called 'a'");
    assert_eq!(v[3], "false");
}

#[test]
fn packet_scripts_choose_the_output() {
    let s = testrun::run(
        "InfiniteSource(LIMIT 7, BURST 3) \
         -> sx :: Script(TYPE PACKET, init i 0, set j $i, set i $(if $(eq $i 0) 1 0), return $j); \
         sx[0] -> c0 :: Counter -> Discard; sx[1] -> c1 :: Counter -> Discard; \
         InfiniteSource(LIMIT 4) -> Script(TYPE PACKET, exit) -> c2 :: Counter -> Discard; \
         InfiniteSource(LIMIT 2) -> Script(TYPE PACKET, return 5) -> c3 :: Counter -> Discard;",
    );
    assert_eq!(testrun::count(&s, "c0", "count"), 4);
    assert_eq!(testrun::count(&s, "c1", "count"), 3);
    assert_eq!(testrun::count(&s, "c2", "count"), 0);
    assert_eq!(testrun::count(&s, "c3", "count"), 0);
}

#[test]
fn a_packet_script_on_a_pull_path() {
    let s = testrun::run(
        "InfiniteSource(LIMIT 6) -> Queue -> p :: Script(TYPE PACKET, init i 0, \
         set i $(add $i 1), return $(mod $i 2)) -> u :: Unqueue -> c0 :: Counter -> Discard; \
         p[1] -> c1 :: Counter -> Discard;",
    );
    assert_eq!(testrun::count(&s, "c0", "count"), 3);
    assert_eq!(testrun::count(&s, "c1", "count"), 3);
}

#[test]
fn driver_manager_waits_for_two_stops() {
    let (reason, v) = run(
        "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard; \
         InfiniteSource(LIMIT 3000, STOP true) -> c2 :: Counter -> Discard; \
         d :: DriverManager(export first, export second, wait_stop, set first $(c2.count), \
         wait_stop, set second $(c2.count))",
        &["d.first", "d.second", "c.count", "c2.count"],
    );
    assert_eq!(reason, StopReason::Requested);
    assert_ne!(
        v[0], "3000",
        "the first stop came before the second source ended"
    );
    assert_eq!(v[1], "3000");
    assert_eq!(v[2], "3");
}

#[test]
fn driver_manager_runs_its_first_instructions_then_ends_the_run() {
    // No stop request ever comes: the end of the sources steps it.
    let (reason, v) = run(
        "InfiniteSource(LIMIT 5) -> c :: Counter -> Discard; \
         d :: DriverManager(export a, set a $(c.count), pause, export b, set b $(c.count), \
         wait 0.5, export c, set c $(add $b 1))",
        &["d.a", "d.b", "d.c"],
    );
    assert_eq!(reason, StopReason::Requested);
    assert_eq!(v, ["0", "5", "6"]);
}

#[test]
fn a_stop_from_a_script_steps_the_driver_manager() {
    let (reason, v) = run(
        "Idle -> Discard; \
         Script(wait 1, stop); Script(wait 2, write stop); \
         d :: DriverManager(export n 0, wait_stop, set n 1, wait_stop, set n 2, wait_stop, set n 3)",
        &["d.n"],
    );
    assert_eq!(reason, StopReason::Requested);
    // Two stop requests, then the idle router's own end: the third.
    assert_eq!(v, ["3"]);
}

#[test]
fn driver_manager_on_two_workers_ends() {
    let s = testrun::run_workers(
        "InfiniteSource(LIMIT 100, STOP true) -> c :: Counter -> Discard; \
         DriverManager(wait_stop, write c.reset);",
        2,
    );
    assert!(s.total.elements.iter().any(|e| e.name == "c"));
}

#[test]
fn recursion_through_run_handlers_ends() {
    let (_, v) = run(
        "a :: Script(TYPE PASSIVE, return $(b.run)); b :: Script(TYPE PASSIVE, return $(a.run)); \
         t :: Script(export r, set r x$(a.run))",
        &["t.r"],
    );
    // `a` is busy when `b` calls it back: the inner call fails and is left
    // as written.
    assert!(v[0].starts_with('x'), "{v:?}");
}

#[test]
fn print_writes_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out");
    let f = f.to_string_lossy();
    let (_, _) = run(
        &format!(
            "s :: Script(TYPE PASSIVE, returnq $1); \
             Script(printn >{f} $(s.run \"\\<0a 09 01>\"), print >>{f} \"a b\", save \"x\" {f}x, \
             append \"y\" {f}x, set v 2, append $v {f}x, append length {f}x)"
        ),
        &[],
    );
    assert_eq!(std::fs::read(&*f).unwrap(), b"\n\t\x01a b\n");
    assert_eq!(
        std::fs::read_to_string(format!("{f}x")).unwrap(),
        "x\ny\n2\n0\n"
    );
}

/// Click's test/standard/Unqueue-01.clicktest: the script writes to the
/// `Unqueue` whose push is running it; the write is made when that push
/// returns.
#[test]
fn a_packet_script_writes_to_the_element_that_pushed_to_it() {
    let (_, v) = run(
        "InfiniteSource(LIMIT 5, STOP true) -> SimpleQueue -> unqueue :: Unqueue(LIMIT 1) \
         -> s :: Script(TYPE PACKET, export count 0, set count $(add $count 1), \
         write unqueue.reset); DriverManager(pause, wait 0.1s)",
        &["s.count"],
    );
    assert_eq!(v, ["5"]);
}

proptest::proptest! {
    /// Hostile instructions are refused or accepted, never a panic; the
    /// accepted ones run (bounded by the jump limit) without one either.
    #[test]
    fn hostile_scripts_do_not_panic(
        ls in proptest::collection::vec(
            "(set x|print|goto a|label a|wait|pause|return|error|stop|setq y|write s.step|read s.get x|printn >/dev/null) ?[ a$(){}\\\\\"'0-9x.é]{0,12}",
            0..6,
        )
    ) {
        let ls: Vec<&str> = ls.iter().map(String::as_str).collect();
        if parse(&ls).is_ok() {
            let args = ls.join(", ").replace('\n', " ");
            let config = format!("s :: Script(TYPE PASSIVE, {args}); Script(write s.run, write s.step 3)");
            if let Ok(plan) = testrun::plan(&config) {
                let mut engine = Engine::new(&plan).unwrap();
                engine.idle_sleep = false;
                engine.set_trace_clock(true);
                let _ = engine.run();
            }
        }
    }
}

#[test]
fn signal_scripts_run_on_their_signal() {
    // USR2 to this process: raised on the calling thread, so the signal
    // script runs in the same round, before the waiting script goes on.
    let (_, v) = run(
        "s :: Script(TYPE SIGNAL USR2, init n 0, set n $(add $n 1), end); \
         t :: Script(export before, export after, set y $(kill USR2 $$), \
         set before $(s.get n), wait 0.001, set after $(s.get n))",
        &["t.after"],
    );
    assert_eq!(v, ["1"]);
    assert!(kill("BOGUS 1").is_err());
    assert!(kill("USR2 x").is_err());
    assert!(kill("USR2 0").is_err());
}
