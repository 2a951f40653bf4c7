//! Elements: the unit a bricks router is built from.
//!
//! An element is a Rust type implementing [`Element`]. It declares its ports
//! and their push/pull processing up front in an [`ElementClass`] (Click's
//! `port_count` and `processing` strings), reads its arguments by keyword
//! with [`Args`], carries its manual in a [`Manual`] next to its code, and
//! reports its counters through [`Stats`].
//!
//! Elements exchange whole [`Batch`]es: a push element gets one call per
//! batch and hands packets on with [`Context::push`], so there is no virtual
//! call per packet (FastClick's batching). Pull is the reverse: a task or a
//! pull element asks its upstream for up to `max` packets with
//! [`Context::pull`]. Each worker owns its own instance of the whole graph
//! ([`Graph`]), so an element never shares mutable state with another core
//! and needs no lock of its own (RouteBricks §4.2, one core per packet).

#![forbid(unsafe_code)]

pub mod addresses;
pub mod args;
pub mod click_random;
mod graph;
mod info;
pub mod peers;
mod registry;
mod stats;

pub use args::{ArgError, Args, ElementRefs, FixedRefs, FromArg, SharedSlot};
pub use bricks_packet::{Batch, Packet};
pub use graph::{
    Context, Edge, ElementMeta, Graph, TaskInfo, WorkerState, MAX_PULL_DEPTH, MAX_PUSH_DEPTH,
};
pub use info::{
    ElementClass, Keyword, Manual, PortCount, PortInfo, PortRange, Processing, ProcessingSpec,
};
pub use registry::Registry;
pub use stats::Stats;

/// What a task did when the engine ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskResult {
    /// It moved packets or otherwise made progress; run it again soon.
    Worked,
    /// It had nothing to do this time.
    Idle,
    /// A source that has finished for good (its LIMIT reached, its file
    /// read). The engine stops running it.
    Done,
    /// It made no progress now but holds packets it will move once the
    /// clock reaches a timer it has asked for ([`Context::schedule_at`]): a
    /// rate limiter out of tokens. A run does not end while a task waits
    /// (unless it is stopped from outside), and with `--clock trace` the
    /// clock jumps to the next timer instead of ending the run.
    Waiting,
}

/// What a scheduling information element (`ScheduleInfo`,
/// `StaticThreadSched`) says about another element's task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TaskSetting {
    /// A scheduling parameter: the task (or, for a compound element's
    /// name, every task inside it) gets this many times the default
    /// tickets (Click's `ScheduleInfo`).
    Tickets(f64),
    /// The task runs on this worker only, counted from 0 (Click's
    /// `StaticThreadSched`); `-1` means it never runs.
    Thread(i64),
}

/// One `ELEMENT VALUE` argument of a scheduling information element.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskDirective {
    /// The element named, as written: relative to the compound element
    /// the information element sits in.
    pub element: String,
    /// Where the argument is, for errors.
    pub span: bricks_config::Span,
    /// What it says.
    pub setting: TaskSetting,
}

/// How the engine should treat an element's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// No task: the element only reacts to pushes and pulls.
    None,
    /// A source of packets. A run ends when every source is done and the
    /// graph has drained.
    Source,
    /// A task that moves packets already in the graph (Unqueue, a pulling
    /// sink). It keeps running while sources run and while it finds work.
    Pump,
}

impl TaskKind {
    /// [`TaskKind::Pump`] for an element whose input resolved to pull (a
    /// sink after a Queue), no task otherwise.
    pub fn pump_if(pull: bool) -> TaskKind {
        if pull {
            TaskKind::Pump
        } else {
            TaskKind::None
        }
    }
}

/// An element of the router graph.
///
/// Every method has a default so that an element implements only what its
/// ports need: a push element `push`, a pull output `pull`, a source or a
/// pulling sink `run_task` (and returns its [`TaskKind`] from `task_kind`).
pub trait Element: Send + AsAny {
    /// A batch arrives on push input `port`. The element takes every packet
    /// out of `batch`: it forwards them with [`Context::push`], keeps them
    /// (a queue), or drops them and counts why.
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let _ = (port, cx);
        batch.clear();
    }

    /// A downstream element pulls up to `max` packets from output `port`
    /// into `out`. Leaving `out` unchanged means there is nothing now.
    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let _ = (port, out, max, cx);
    }

    /// Which task, if any, this element runs. Asked once, after the element
    /// is configured.
    fn task_kind(&self) -> TaskKind {
        TaskKind::None
    }

    /// Called once on each worker before its first round: take per-worker
    /// resources (a device's queues) so that they are owned from the start.
    fn start(&mut self, cx: &mut Context<'_>) {
        let _ = cx;
    }

    /// Whether a [`TaskKind::Source`] task runs on every worker. By default
    /// a source runs on worker 0 only: the graph is instantiated once per
    /// worker, and a generator or a capture reader on every worker would
    /// produce its traffic N times. A device receiver answers `true`: each
    /// worker reads the device queues it owns.
    fn task_on_every_worker(&self) -> bool {
        false
    }

    /// Scheduling directives this element gives other elements' tasks
    /// (`ScheduleInfo`, `StaticThreadSched`). Asked once, when the plan is
    /// checked.
    fn task_directives(&self) -> Vec<TaskDirective> {
        Vec::new()
    }

    /// A message the element gives when it is configured (Click's
    /// `Message`), which the front end prints once under the element's
    /// name and place. Asked once, when the plan is checked.
    fn configure_message(&self) -> Option<String> {
        None
    }

    /// Runs the element's task once.
    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let _ = cx;
        TaskResult::Done
    }

    /// A timer set with [`Context::schedule_at`] has expired.
    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let _ = cx;
    }

    /// The input a pull on output `port` always pulls from, whatever the
    /// element's state, for an element that only passes such pulls on
    /// (Bypass's return output). The graph follows it when the element is
    /// busy further up the same pull: Click's pulls may come back into an
    /// element, bricks' cannot borrow it twice. `None` (the default): a
    /// pull into a busy element is refused.
    fn pull_passes_to(&self, port: usize) -> Option<usize> {
        let _ = port;
        None
    }

    /// Click's empty notifier for pull output `port`: `Some(true)` when a
    /// pull may find packets, `Some(false)` when it will find none until
    /// something changes (an empty notifier queue, `Idle`, a `PullSwitch`
    /// switched off, a pull source at its limit), `None` for an element
    /// that does not know and passes the question to its pull inputs (the
    /// default). An element with neither an answer nor pull inputs may
    /// always have packets. Only the `scheduled` handler of the tasks
    /// pulling from it reads this (bricks' tasks do not sleep).
    fn empty_signal(&self, port: usize) -> Option<bool> {
        let _ = port;
        None
    }

    /// How many more packets push input `port` takes before it drops them,
    /// for an element that stores packets (a `Queue`); `None` for every
    /// other element. Sources ask through [`Context::downstream_room`] and
    /// hold back instead of pushing into a full queue (Click's full-queue
    /// notifier, `Notifier::downstream_full_signal`).
    fn push_room(&self, port: usize) -> Option<usize> {
        let _ = port;
        None
    }

    /// Reports the element's counters.
    fn stats(&self, stats: &mut Stats) {
        let _ = stats;
    }

    /// Called once on each worker when the router begins to stop (a
    /// signal, a stop request, `--duration`, or the end of a run whose
    /// sources are done), after the sources have stopped and before the
    /// graph drains for the last time. Unlike in [`Element::shutdown`]
    /// the element may still push: its last packets (a router's final
    /// advertisement, RFC 4861 section 6.2.5) go through queues and pull
    /// tasks like any others and reach devices and capture files before
    /// those close. Timers that come due while the graph drains still
    /// run, and [`Context::stopping`] is true.
    ///
    /// Also called, with [`Context::stopping`] false, when a hot swap
    /// drops the element (the new configuration has none of its name and
    /// class): before the new elements take the old ones' state, so that
    /// a packet it pushes into a queue the new configuration keeps is
    /// sent from there.
    fn stopping(&mut self, cx: &mut Context<'_>) {
        let _ = cx;
    }

    /// Called once when the router stops, after the graph has drained:
    /// flush files, count packets that can no longer be delivered. Packets
    /// pushed here may never leave: devices are closing.
    fn shutdown(&mut self, cx: &mut Context<'_>) {
        let _ = cx;
    }

    /// Hot swap (Click's `take_state`): this element replaces `old`, an
    /// element of the running configuration with the same name and class,
    /// and takes what it holds: a queue's packets, a table, its counters,
    /// a device's open queues. Called on each worker between rounds, when
    /// no packet is inside the graph but in queues and devices, after this
    /// element was configured and before its [`Element::start`]. `old` is
    /// dropped afterwards (its [`Element::shutdown`] is not called).
    /// Reach `old`'s own type with [`taken_from`]. Does nothing by
    /// default: the element starts afresh.
    fn take_state(&mut self, old: &mut dyn Element, cx: &mut Context<'_>) {
        let _ = (old, cx);
    }

    /// Whether write handler `handler` changes state that every worker's
    /// instance shares (a route table): such a call goes to one worker
    /// only. Other handlers are called on every worker's instance.
    fn handler_is_shared(&self, handler: &str) -> bool {
        let _ = handler;
        false
    }

    /// Whether handler `handler` may be called only from inside the
    /// router (Click's private handlers: a `Script`'s `cat` reads files,
    /// its `kill` sends signals). Control sockets, `bricks ctl` and the
    /// handler mailbox refuse such handlers as if they did not exist.
    fn handler_is_private(&self, handler: &str) -> bool {
        let _ = handler;
        false
    }

    /// Handles a write handler (Click's `element.handler value`).
    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let _ = value;
        Err(format!("no write handler `{handler}`"))
    }

    /// For a write handler that sets one of the element's arguments (Click's
    /// `reconfigure_keyword_handler`), the argument as Click names it:
    /// `"0 CAPACITY"` is the keyword CAPACITY, or positional argument 0
    /// when that is how the configuration gives it. After a successful
    /// write the element's `config` read handler shows the new value as
    /// Click's does.
    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        let _ = handler;
        None
    }

    /// How AddressInfo names in a value written to handler `handler`, or
    /// in a read handler's parameters, are read: with `Some(reading)` the
    /// names the configuration defines (`a`, `a:ipnet`, `b:eth`) become
    /// their addresses before the element sees the value, as in its
    /// arguments (a bare name of several kinds as `reading`). `None`, the
    /// default: the value is passed as written.
    fn handler_addresses(&self, handler: &str) -> Option<addresses::Reading> {
        let _ = handler;
        None
    }

    /// Answers one of the element's own read handlers (Click's
    /// `element.handler`), or `None` when it has no such handler. The
    /// handlers every element has (`name`, `class`, `config`, `ports`,
    /// `handlers`) and its counters by name ([`Element::stats`]) are
    /// answered by the engine and need not be handled here. A value of
    /// several lines ends each with a newline, as Click's do.
    fn read_handler(&self, handler: &str) -> Option<String> {
        let _ = handler;
        None
    }

    /// [`Element::read_handler`] for a handler whose text depends on when
    /// it is read (a rate that decays while no packet comes): `now` is the
    /// router's clock at the read, a trace's or the simulated clock's
    /// where the run has one.
    fn read_handler_at(&self, handler: &str, now: bricks_packet::Timestamp) -> Option<String> {
        let _ = now;
        self.read_handler(handler)
    }

    /// The numbers behind read handlers whose text is made from a number
    /// that adds up over workers (a Counter's `rate`), as this copy has
    /// them now, by handler name. With several workers, a read of such a
    /// handler (Click's one element) adds every worker's number and has
    /// [`Element::read_summed`] write the sum.
    fn summed_reads(&self, s: &mut Stats) {
        let _ = s;
    }

    /// The text of read handler `handler` when the numbers of every
    /// worker's copy ([`Element::summed_reads`]) add up to `total`.
    fn read_summed(&self, handler: &str, total: u64) -> Option<String> {
        let _ = (handler, total);
        None
    }

    /// The element's own read and write handlers, for Click's `handlers`
    /// handler and `bricks ctl list`. Counters need not be listed.
    fn handlers(&self) -> &'static [Handler] {
        &[]
    }

    /// Calls one of the element's handlers that needs the rest of the
    /// graph or takes parameters: a read handler with parameters (Click's
    /// `f_read_param`, as `s.add 1 2`) or a handler that runs code calling
    /// other handlers (a `Script`'s `run` and `step`). `value` is the
    /// read's parameters or the value written, `write` says which. `None`
    /// means no such handler here: [`Element::read_handler`] and
    /// [`Element::write_handler`] answer instead. Reached through
    /// [`Context::call_handler`].
    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        let _ = (handler, value, write, cx);
        None
    }
}

/// An element as [`std::any::Any`], so that [`Element::take_state`] can
/// reach the old element's own type. Every element has it.
pub trait AsAny {
    /// `self` as `Any`, for downcasting.
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// The old element of a hot swap as its own type `T`, or `None` when it
/// is of another type (a class implemented by several types: a live
/// `FromDevice` and one reading a capture).
pub fn taken_from<T: Element + 'static>(old: &mut dyn Element) -> Option<&mut T> {
    <dyn Element as AsAny>::as_any_mut(old).downcast_mut::<T>()
}

/// One handler an element offers: its name and whether it is read, written
/// or both (Click's `handlers` output: `name<TAB>rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handler {
    /// The handler's name.
    pub name: &'static str,
    /// It can be read.
    pub read: bool,
    /// It can be written.
    pub write: bool,
}

impl Handler {
    /// A read handler.
    pub const fn r(name: &'static str) -> Handler {
        Handler {
            name,
            read: true,
            write: false,
        }
    }

    /// A write handler.
    pub const fn w(name: &'static str) -> Handler {
        Handler {
            name,
            read: false,
            write: true,
        }
    }

    /// A handler that is read and written.
    pub const fn rw(name: &'static str) -> Handler {
        Handler {
            name,
            read: true,
            write: true,
        }
    }
}

/// A read handler's value as a worker answers it: a counter, which the
/// workers' values add up to, or text, which is one worker's (the first
/// that answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerValue {
    /// A counter of [`Element::stats`].
    Count(u64),
    /// Anything else.
    Text(String),
}

impl HandlerValue {
    /// The value as Click prints it.
    pub fn into_text(self) -> String {
        match self {
            HandlerValue::Count(n) => n.to_string(),
            HandlerValue::Text(s) => s,
        }
    }
}

impl core::fmt::Debug for dyn Element {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("<element>")
    }
}
