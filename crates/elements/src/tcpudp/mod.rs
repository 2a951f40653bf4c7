//! Click's TCP and UDP elements (Click's `elements/tcpudp` and `elements/app`),
//! and the experimental TCP elements of Click's `elements/local` that
//! Click's `conf/test-tcp.click`, `conf/test-toytcp.click` and
//! `conf/webgen.click` use.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Packet, PortInfo, Stats,
};
use std::sync::{Arc, Mutex, MutexGuard};

pub mod bufconv;
pub mod copyflowid;
pub mod copytcpseq;
pub mod dynudpipencap;
pub(crate) mod segment;
pub mod statelesstcpresp;
pub mod tcpack;
pub mod tcpbuffer;
pub mod tcpconn;
pub mod tcpdemux;
pub mod tcpfragmenter;
pub mod tcpipsend;
pub mod tcpreflector;
pub mod toytcp;
pub mod webgen;

/// The manuals' example for the TCP stack of Click's `conf/test-tcp.click`
/// (TCPDemux, TCPConn, TCPAck, TCPBuffer, BufferConverter, CopyFlowID,
/// CopyTCPSeq): that configuration on the host's stack through a TUN
/// device, with a Script for the application.
pub(crate) const STACK_EXAMPLE: &str = "tun :: KernelTun(10.9.0.1/24);\n\
    tun -> CheckIPHeader -> is_tcp :: IPClassifier(tcp src host 10.9.0.1, -);\n\
    is_tcp[1] -> Discard;\n\
    ack :: TCPAck; con :: TCPConn; dmx :: TCPDemux; rob :: TCPBuffer(false);\n\
    b2p :: BufferConverter(1400); fid :: CopyFlowID; seq :: CopyTCPSeq;\n\
    out :: SetTCPChecksum -> SetIPChecksum -> tun;\n\
    is_tcp[0] -> CheckTCPHeader -> dmx -> [0] ack [0] -> [0] con [0] -> rob -> [0] b2p;\n\
    b2p -> Queue -> [1] con [1] -> Unqueue -> [1] ack [1] -> [0] fid [0] -> [0] seq [0] \
    -> out;\n\
    con [2] -> [0] fid;\n\
    ack [2] -> [1] fid [1] -> [1] seq [1] -> out;\n\
    Idle -> [1] b2p;\n\
    Script(write con.ctrl connect 10.9.0.2 4000 10.9.0.1 5000, wait 0.5s, \
    write b2p.data hello, wait 0.5s, print $(b2p.data));";

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &tcpfragmenter::CLASS,
    &statelesstcpresp::CLASS,
    &tcpipsend::CLASS,
    &dynudpipencap::CLASS,
    &tcpdemux::CLASS,
    &tcpconn::CLASS,
    &tcpack::CLASS,
    &tcpbuffer::CLASS,
    &bufconv::CLASS,
    &copyflowid::CLASS,
    &copytcpseq::CLASS,
    &tcpreflector::CLASS,
    &toytcp::CLASS,
    &webgen::CLASS,
];

/// What one of Click's learn-and-copy elements (CopyFlowID, CopyTCPSeq)
/// remembers from the packets on input 0 and writes into those on input 1;
/// [`LearnAndCopy`] does the rest, the same for both.
pub trait CopyRule: Send + 'static {
    /// What is remembered: one value for all workers.
    type Value: Copy + Send + std::fmt::Debug + 'static;
    /// The class name, for the error of an unknown handler.
    const CLASS: &'static str;
    /// What is remembered once `p` went by on input 0, `old` before.
    fn learn(p: &Packet, old: Option<Self::Value>) -> Option<Self::Value>;
    /// Writes `value` (`None`: nothing learnt yet) into `p` from input 1.
    fn write(p: &mut Packet, value: Option<Self::Value>) -> Copied;
}

/// What became of a packet on input 1 of a [`LearnAndCopy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// The value is written in.
    Written,
    /// Nothing learnt yet: it goes on unchanged (counted as `unset`).
    Unset,
    /// It holds no header to write into: dropped (counted as `drops`).
    Dropped,
}

/// The value of a [`LearnAndCopy`] element, shared by every worker's
/// instance; `reset` forgets it.
#[derive(Debug)]
struct Remembered<T>(Mutex<Option<T>>);

impl<T> Remembered<T> {
    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Makes a [`LearnAndCopy`] element: no arguments, the value shared.
fn make_copy<R: CopyRule>(
    args: &mut Args<'_>,
    _ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let value = args.shared(|_| Ok(Remembered::<R::Value>(Mutex::new(None))))?;
    Ok(Box::new(LearnAndCopy::<R> {
        value,
        unset: 0,
        drops: 0,
    }))
}

/// A learn-and-copy element of two agnostic ports: packets on input 0 go
/// out of output 0 unchanged and teach the value; packets on input 1 go
/// out of output 1 with it written in; a write to `reset` forgets it.
#[derive(Debug)]
pub struct LearnAndCopy<R: CopyRule> {
    value: Arc<Remembered<R::Value>>,
    unset: u64,
    drops: u64,
}

impl<R: CopyRule> LearnAndCopy<R> {
    fn set(&mut self, p: &mut Packet) -> bool {
        let value = *self.value.lock();
        match R::write(p, value) {
            Copied::Written => true,
            Copied::Unset => {
                self.unset += 1;
                true
            }
            Copied::Dropped => {
                self.drops += 1;
                false
            }
        }
    }

    fn apply(&mut self, port: usize, b: &mut Batch) {
        if port == 0 {
            for p in b.iter() {
                let mut m = self.value.lock();
                *m = R::learn(p, *m);
            }
        } else {
            b.retain(|p| self.set(p));
        }
    }
}

impl<R: CopyRule> Element for LearnAndCopy<R> {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(port, batch);
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(port, &mut b, max);
        self.apply(port, &mut b);
        out.append(&mut b);
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                *self.value.lock() = None;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` ({} has reset)",
                R::CLASS
            )),
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("reset")];
        H
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("unset", self.unset);
        s.counter("drops", self.drops);
    }
}
