//! Click's TCP and UDP elements (Click's `elements/tcpudp` and `elements/app`),
//! and the experimental TCP elements of Click's `elements/local` that
//! Click's `conf/test-tcp.click`, `conf/test-toytcp.click` and
//! `conf/webgen.click` use.

use bricks_element::ElementClass;

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
