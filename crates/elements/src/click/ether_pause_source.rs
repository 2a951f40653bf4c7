//! `EtherPauseSource`: makes IEEE 802.3x PAUSE frames (Click's
//! `elements/ethernet/etherpausesource.cc`): MAC Control frames, EtherType
//! 0x8808, opcode 0x0001 and a pause time in quanta of 512 bit times
//! (IEEE 802.3 Annex 31B), pushed on a timer or handed out when pulled.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Processing, Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use bricks_wire::EthernetAddress;
use std::time::Duration;

/// The `EtherPauseSource` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherPauseSource",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "creates and emits Ethernet 802.3x pause frames",
    synopsis: "EtherPauseSource(SRC, PAUSETIME [, DST, LIMIT, INTERVAL, ACTIVE])",
    description: "Makes PAUSE frames (IEEE 802.3 Annex 31B), which ask the receiving \
        device to stop sending for PAUSETIME quanta of 512 bit times (on a 1 Gb/s link, \
        195 quanta are about 100 microseconds): a MAC Control frame from SRC to DST, \
        EtherType 0x8808, opcode 0x0001 (PAUSE), the pause time, and 42 reserved bytes of \
        zero, 60 bytes in all (a NIC adds the FCS). SRC must be the address of the device \
        that sends them. Pushed, it sends a frame every INTERVAL, the first INTERVAL after \
        the router starts; pulled, it hands out a frame per pull. It stops after LIMIT \
        frames (-1: never) and sends none while ACTIVE is false.\n\n\
        Handlers: `count`, the frames made; `limit`, `active`, `src`, `dst` and \
        `pausetime`, read and written; `reset_counts`, which sets the count to 0 (so that \
        LIMIT more may be sent). Writing `limit`, `active` or `reset_counts` to a pushing \
        source that had stopped sends its next frame at once, as in Click. Click makes \
        64-byte frames whose last 4 bytes are left uninitialised; bricks makes the \
        standard 60 bytes. Click's pushing source goes on sending after `active` is \
        written false; bricks' stops until it is written true.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "Ethernet address",
            default: None,
            doc: "source address, the sending device's; positional",
        },
        Keyword {
            name: "PAUSETIME",
            ty: "unsigned, 0 to 65535",
            default: None,
            doc: "pause time in quanta of 512 bit times; positional",
        },
        Keyword {
            name: "DST",
            ty: "Ethernet address",
            default: Some("01-80-C2-00-00-01"),
            doc: "destination, by default the multicast address reserved for PAUSE",
        },
        Keyword {
            name: "LIMIT",
            ty: "integer",
            default: Some("-1 (no limit)"),
            doc: "most frames made",
        },
        Keyword {
            name: "INTERVAL",
            ty: "time",
            default: Some("1 s"),
            doc: "time between pushed frames (kept to the millisecond, as Click's)",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "make frames at all",
        },
    ],
    counters: &[("count", "frames made")],
    example: "EtherPauseSource(00:1e:13:22:48:91, 390, LIMIT 3, INTERVAL 0.01) -> Discard;",
    see_also: &["EtherEncap", "ToDevice"],
};

/// 01-80-C2-00-00-01, the multicast address reserved for PAUSE frames.
const PAUSE_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// A PAUSE frame without its FCS: the minimum frame less 4 bytes.
const FRAME_LEN: usize = 60;

/// A PAUSE frame (IEEE 802.3 Annex 31B), without FCS.
fn pause_frame(dst: [u8; 6], src: [u8; 6], quanta: u16) -> [u8; FRAME_LEN] {
    let mut f = [0u8; FRAME_LEN];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    // MAC Control, opcode PAUSE; the 42 reserved bytes stay zero.
    f[12..16].copy_from_slice(&[0x88, 0x08, 0x00, 0x01]);
    f[16..18].copy_from_slice(&quanta.to_be_bytes());
    f
}

/// Click's `EtherAddress::unparse`: upper case, dashes.
fn unparse(a: &[u8]) -> String {
    a.iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join("-")
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: EthernetAddress = args.read_mp("SRC")?;
    let quanta: u16 = args.read_mp("PAUSETIME")?;
    let dst = args
        .read::<EthernetAddress>("DST")?
        .map_or(PAUSE_DST, |a| a.0);
    let limit: i64 = args.read("LIMIT")?.unwrap_or(-1);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    // Click reads INTERVAL in milliseconds (SecondsArg(3)).
    let interval = args
        .read::<Duration>("INTERVAL")?
        .map_or(1000, |d| d.as_millis().min(u128::from(u32::MAX)) as u64);
    Ok(Box::new(EtherPauseSource {
        frame: pause_frame(dst, src.0, quanta),
        limit,
        active,
        interval_ms: interval,
        push: ports.outputs.first() == Some(&Processing::Push),
        count: 0,
        next: None,
        at_once: false,
    }))
}

/// Makes PAUSE frames.
#[derive(Debug)]
pub struct EtherPauseSource {
    frame: [u8; FRAME_LEN],
    /// Negative: no limit.
    limit: i64,
    active: bool,
    interval_ms: u64,
    /// The output is push: frames leave on a timer.
    push: bool,
    count: u64,
    /// When the next pushed frame is due (ns), once the task has run.
    next: Option<u64>,
    /// The next pushed frame leaves at once (Click's `schedule_now`).
    at_once: bool,
}

impl EtherPauseSource {
    fn below_limit(&self) -> bool {
        u64::try_from(self.limit).map_or(true, |l| self.count < l)
    }

    fn make_frame(&mut self, cx: &Context<'_>) -> Option<Packet> {
        let mut p = Packet::from_slice(&self.frame).ok()?;
        p.anno_mut().timestamp = cx.now();
        self.count += 1;
        Some(p)
    }

    /// After a write that may let a stopped pushing source send again
    /// (Click's `check_awake`).
    fn wake(&mut self) {
        if self.push && self.active {
            self.at_once = true;
        }
    }

    fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        let mismatch = || "type mismatch".to_string();
        match handler {
            "src" | "dst" => {
                let a = EthernetAddress::from_arg(v).map_err(|_| mismatch())?;
                let at = if handler == "src" { 6 } else { 0 };
                self.frame[at..at + 6].copy_from_slice(&a.0);
            }
            "pausetime" => {
                let q = u16::from_arg(v).map_err(|_| mismatch())?;
                self.frame[16..18].copy_from_slice(&q.to_be_bytes());
            }
            "limit" => {
                self.limit = i64::from_arg(v).map_err(|_| mismatch())?;
                self.wake();
            }
            "active" => {
                self.active = bool::from_arg(v).map_err(|_| mismatch())?;
                self.wake();
            }
            "reset_counts" => {
                self.count = 0;
                self.wake();
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (EtherPauseSource has `limit`, `active`, \
                     `src`, `dst`, `pausetime`, `reset_counts`)"
                ))
            }
        }
        Ok(())
    }
}

impl Element for EtherPauseSource {
    fn task_kind(&self) -> TaskKind {
        if self.push {
            TaskKind::Source
        } else {
            TaskKind::None
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.below_limit() {
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let now = cx.now().0;
        let interval = self.interval_ms.saturating_mul(1_000_000);
        let due = if std::mem::take(&mut self.at_once) {
            now
        } else {
            *self.next.get_or_insert(now.saturating_add(interval))
        };
        if now < due {
            cx.schedule_at(Timestamp(due));
            return TaskResult::Waiting;
        }
        self.next = Some(due.saturating_add(interval).max(now));
        let mut b = Batch::new();
        if let Some(p) = self.make_frame(cx) {
            let _ = b.push(p);
        }
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        for _ in 0..max {
            if !self.active || !self.below_limit() || out.is_full() {
                break;
            }
            match self.make_frame(cx) {
                Some(p) => {
                    let _ = out.push(p);
                }
                None => break,
            }
        }
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        Some(self.active && self.below_limit())
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "limit" => Some(self.limit.to_string()),
            "active" => Some(self.active.to_string()),
            "src" => Some(unparse(&self.frame[6..12])),
            "dst" => Some(unparse(&self.frame[0..6])),
            "pausetime" => Some(u16::from_be_bytes([self.frame[16], self.frame[17]]).to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.write(handler, value)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("limit"),
            Handler::rw("active"),
            Handler::rw("src"),
            Handler::rw("dst"),
            Handler::rw("pausetime"),
            Handler::w("reset_counts"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// Click's manual example, `EtherPauseSource(00:1e:13:22:48:91, 390)`,
    /// written out by IEEE 802.3 Annex 31B: DA 01-80-C2-00-00-01, SA, type
    /// 88-08, opcode 00-01, pause_time 390 (01-86), 42 octets of zero.
    fn example() -> Vec<u8> {
        let mut f = vec![
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x00, 0x1e, 0x13, 0x22, 0x48, 0x91, 0x88, 0x08,
            0x00, 0x01, 0x01, 0x86,
        ];
        f.extend_from_slice(&[0u8; 42]);
        f
    }

    fn s(x: u64) -> Timestamp {
        Timestamp(x * 1_000_000_000)
    }

    #[test]
    fn pushes_every_interval_up_to_limit() {
        let mut h = Harness::push(&CLASS, "00:1e:13:22:48:91, 390, LIMIT 2", 0, 1);
        h.advance_to(s(10));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), [s(11)]);
        h.advance_to(s(11));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take_bytes(0), [example()]);
        h.advance_to(s(12));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.read_handler("count").unwrap(), "2");
        // A reset sends at once.
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn pulled_one_per_pull_while_active() {
        let ports = PortInfo {
            inputs: vec![],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(
            &CLASS,
            "00:1e:13:22:48:91, 390, DST 00:11:22:33:44:55, LIMIT 5",
            ports,
        );
        let out = h.pull(0, 3);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].data()[..6], [0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(h.pull(0, 10).len(), 2);
        assert!(h.pull(0, 10).is_empty());
        h.write_handler("reset_counts", "").unwrap();
        h.write_handler("active", "false").unwrap();
        assert!(h.pull(0, 10).is_empty());
        h.write_handler("active", "true").unwrap();
        assert_eq!(h.pull(0, 1).len(), 1);
    }

    #[test]
    fn handlers_rewrite_the_frame() {
        let ports = PortInfo {
            inputs: vec![],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "00:1e:13:22:48:91, 390", ports);
        assert_eq!(h.read_handler("src").unwrap(), "00-1E-13-22-48-91");
        assert_eq!(h.read_handler("dst").unwrap(), "01-80-C2-00-00-01");
        assert_eq!(h.read_handler("pausetime").unwrap(), "390");
        assert_eq!(h.read_handler("limit").unwrap(), "-1");
        h.write_handler("pausetime", "65535").unwrap();
        h.write_handler("src", "02-00-00-00-00-09").unwrap();
        assert!(h.write_handler("pausetime", "65536").is_err());
        assert!(h.write_handler("dst", "nope").is_err());
        let f = h.pull(0, 1)[0].data().to_vec();
        assert_eq!(f[6..12], [2, 0, 0, 0, 0, 9]);
        assert_eq!(f[16..18], [0xff, 0xff]);
        assert_eq!(f.len(), 60);
    }

    #[test]
    fn inactive_and_zero_limit_send_nothing() {
        let mut h = Harness::push(&CLASS, "00:1e:13:22:48:91, 1, ACTIVE false", 0, 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
        let mut h = Harness::push(&CLASS, "00:1e:13:22:48:91, 1, LIMIT 0", 0, 1);
        assert_eq!(h.run_task(), TaskResult::Done);
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("00:1e:13:22:48:91").is_err());
        assert!(m("00:1e:13:22:48:91, 65536").is_err());
        assert!(m("00:1e:13:22:48, 1").is_err());
        assert!(m("00:1e:13:22:48:91, 1, INTERVAL 10ms, LIMIT 4, ACTIVE true").is_ok());
    }
}
