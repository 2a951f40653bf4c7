//! bricks' XDP programs: loading, attaching once per interface, and the
//! two programs `bricks bench io` compares against.
//!
//! The objects are compiled from `crates/io/bpf/*.c` by `build.rs` and
//! embedded in the binary; aya loads them with the `bpf(2)` syscall and
//! attaches them through a BPF link, which the kernel detaches by itself
//! when the link's file descriptor closes (also when the process dies).
//! Nothing is pinned in bpffs, so nothing outlives the process and nothing
//! depends on a bpffs mount (`ip netns exec` hides the host's).
//!
//! A [`FastPath`]'s program is loaded by the fast path itself and attached
//! here in place of `xsk_redirect`; when the interface's last queue closes
//! it is detached but stays loaded, its maps usable, until the fast path
//! is dropped.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;

use aya::maps::{DevMap, MapData, XskMap};
use aya::programs::xdp::XdpLinkId;
use aya::programs::{Xdp, XdpMode as AyaMode};
use aya::{Ebpf, EbpfLoader};

use super::fastpath::FastPath;
use super::netlink;
use super::XdpMode;
use crate::queue::DeviceError;

/// Steers each receive queue's frames to the AF_XDP socket of that queue.
static XSK_REDIRECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xsk_redirect.o"));
/// Forwards every frame to the interface in slot 0 of a DEVMAP.
static DEVMAP_REDIRECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/devmap_redirect.o"));
/// Passes every frame.
static PASS: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/pass.o"));

/// What to tell a user who cannot use AF_XDP on an interface.
const USE_AF_PACKET: &str = "use AF_PACKET (BACKEND packet)";

/// One loaded program, attached to one interface. Dropping it detaches
/// the program (the BPF link closes) and unloads it.
pub(crate) struct Loaded {
    /// Held, not read: its program owns the link.
    _ebpf: Ebpf,
    /// Attached in native (driver) mode, not generic (SKB) mode.
    pub native: bool,
    /// Why native mode was not used, when it was asked for as `Auto`.
    pub fallback_reason: Option<String>,
}

impl Loaded {
    /// `native` or `generic`.
    pub fn mode(&self) -> &'static str {
        if self.native {
            "native"
        } else {
            "generic"
        }
    }
}

/// An error and every error that caused it, on one line (aya's errors keep
/// the errno in their `source`).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// The errno at the bottom of an aya error, if there is one.
pub(crate) fn errno(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return io.raw_os_error();
        }
        cur = c.source();
    }
    None
}

/// The error for an interface that carries a program bricks did not
/// attach.
fn foreign(ifname: &str, a: netlink::Attached) -> DeviceError {
    DeviceError::Io(format!(
        "{ifname} already carries an XDP program (id {}, {}) that bricks did not attach; \
         bricks will not replace it: detach it (`ip link set dev {ifname} {} off`) or {USE_AF_PACKET}",
        a.prog_id,
        a.mode,
        a.ip_keyword()
    ))
}

/// Loads program `prog` of object `obj` without attaching it; `setup`
/// fills its maps first, so that no frame meets an empty map.
/// `sizes` overrides the `max_entries` of maps by name.
pub(crate) fn load(
    ifname: &str,
    obj: &[u8],
    prog: &str,
    sizes: &[(&str, u32)],
    setup: impl FnOnce(&mut Ebpf) -> Result<(), String>,
) -> Result<Ebpf, DeviceError> {
    let cannot = |why: String| {
        DeviceError::Io(format!(
            "cannot load XDP program {prog} for {ifname}: {why}"
        ))
    };
    // No BTF relocation is needed (the programs touch no kernel struct), so
    // the kernel's BTF is not handed to the loader.
    let mut loader = EbpfLoader::new();
    loader.btf(None);
    for &(map, n) in sizes {
        loader.map_max_entries(map, n);
    }
    let mut ebpf = loader.load(obj).map_err(|e| cannot(chain(&e)))?;
    setup(&mut ebpf).map_err(cannot)?;
    let p: &mut Xdp = ebpf
        .program_mut(prog)
        .ok_or_else(|| cannot("not in the object".into()))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| cannot(chain(&e)))?;
    p.load().map_err(|e| cannot(chain(&e)))?;
    Ok(ebpf)
}

/// Takes map `name` out of `ebpf` as a `M`.
pub(crate) fn take<M>(ebpf: &mut Ebpf, name: &str) -> Result<M, String>
where
    M: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf
        .take_map(name)
        .ok_or_else(|| format!("{name} missing from the XDP object"))?;
    M::try_from(map).map_err(|e| format!("{name}: {}", chain(&e)))
}

/// Where [`attach_loaded`] attached a program.
pub(crate) struct Attachment {
    /// The link, owned by the program inside its `Ebpf`: dropping the
    /// `Ebpf` or detaching the link detaches the program.
    pub link: XdpLinkId,
    /// Attached in native (driver) mode, not generic (SKB) mode.
    pub native: bool,
    /// Why native mode was not used, when it was asked for as `Auto`.
    pub fallback_reason: Option<String>,
}

/// Attaches the loaded program `prog` to `ifname`: native mode, generic
/// mode, or native with a fall back to generic for `Auto`. Refuses an
/// interface that already carries a program.
fn attach(
    mut ebpf: Ebpf,
    prog: &str,
    ifname: &str,
    ifindex: u32,
    mode: XdpMode,
) -> Result<Loaded, DeviceError> {
    let a = attach_loaded(&mut ebpf, prog, ifname, ifindex, mode)?;
    Ok(Loaded {
        _ebpf: ebpf,
        native: a.native,
        fallback_reason: a.fallback_reason,
    })
}

/// [`attach`] for a program whose `Ebpf` stays with the caller, who
/// detaches it through the returned link.
pub(crate) fn attach_loaded(
    ebpf: &mut Ebpf,
    prog: &str,
    ifname: &str,
    ifindex: u32,
    mode: XdpMode,
) -> Result<Attachment, DeviceError> {
    if let Some(a) = netlink::attached(ifindex)
        .map_err(|e| DeviceError::from_errno(ifname, "reading its XDP state", e))?
    {
        return Err(foreign(ifname, a));
    }
    let p: &mut Xdp = ebpf
        .program_mut(prog)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| DeviceError::Io(format!("XDP program {prog} missing")))?;
    // EBUSY and EEXIST mean a program arrived since we looked (the kernel
    // allows one per mode and not two modes at once): never a reason to
    // try the other mode.
    let taken =
        |e: &aya::programs::ProgramError| matches!(errno(e), Some(libc::EBUSY | libc::EEXIST));
    let mut fallback_reason = None;
    if matches!(mode, XdpMode::Auto | XdpMode::Native) {
        match p.attach_to_if_index(ifindex, AyaMode::Driver) {
            Ok(link) => {
                return Ok(Attachment {
                    link,
                    native: true,
                    fallback_reason: None,
                })
            }
            Err(e) if taken(&e) => return Err(raced(ifname, ifindex, &e)),
            Err(e) if mode == XdpMode::Native => {
                return Err(DeviceError::Io(format!(
                    "cannot attach XDP to {ifname} in native mode: {}; try MODE generic or {USE_AF_PACKET}",
                    chain(&e)
                )))
            }
            Err(e) => fallback_reason = Some(format!("native XDP refused: {}", chain(&e))),
        }
    }
    match p.attach_to_if_index(ifindex, AyaMode::Skb) {
        Ok(link) => Ok(Attachment {
            link,
            native: false,
            fallback_reason,
        }),
        Err(e) if taken(&e) => Err(raced(ifname, ifindex, &e)),
        Err(e) => Err(DeviceError::Io(format!(
            "cannot attach XDP to {ifname}: {}generic: {}; {USE_AF_PACKET}",
            fallback_reason
                .map(|r| format!("{r}; "))
                .unwrap_or_default(),
            chain(&e)
        ))),
    }
}

/// The error for an attach refused because a program is there after all
/// (one arrived after [`attach`] looked).
fn raced(ifname: &str, ifindex: u32, e: &aya::programs::ProgramError) -> DeviceError {
    match netlink::attached(ifindex) {
        Ok(Some(a)) => foreign(ifname, a),
        _ => DeviceError::Io(format!(
            "cannot attach XDP to {ifname}: {}; {USE_AF_PACKET}",
            chain(e)
        )),
    }
}

/// Identifies an interface across network namespaces: interface indexes
/// are per namespace (every new namespace's first veth is likely index 2),
/// so the namespace's inode is part of the key.
pub(crate) type IfKey = (u64, u64, u32);

fn if_key(ifname: &str, ifindex: u32) -> Result<IfKey, DeviceError> {
    let ns = std::fs::metadata("/proc/thread-self/ns/net").map_err(|e| {
        DeviceError::from_errno(ifname, "reading this thread's network namespace", e)
    })?;
    Ok((ns.dev(), ns.ino(), ifindex))
}

/// The program steering one interface's queues to their sockets.
enum Program {
    /// bricks' own `xsk_redirect` program, loaded for this interface.
    Own {
        /// Held, not read: dropping it detaches the program. Boxed: an
        /// `Ebpf` is large, and a fast path entry holds only a pointer.
        _loaded: Box<Loaded>,
        xsks: XskMap<MapData>,
    },
    /// A fast path, attached while this entry exists.
    Fast(FastPath),
}

/// The redirect program of one interface and how many queues use it.
struct Steering {
    program: Program,
    native: bool,
    fallback_reason: Option<String>,
    users: usize,
}

impl Steering {
    fn mode(&self) -> &'static str {
        if self.native {
            "native"
        } else {
            "generic"
        }
    }
}

/// Every interface this process steers to AF_XDP sockets. A mutex is fine:
/// it is taken when a queue opens or closes, never per packet.
static STEERING: Mutex<BTreeMap<IfKey, Steering>> = Mutex::new(BTreeMap::new());

fn steering() -> std::sync::MutexGuard<'static, BTreeMap<IfKey, Steering>> {
    // A panic elsewhere while the table was held leaves it consistent
    // (every change is one insert, remove or counter step).
    STEERING.lock().unwrap_or_else(|e| e.into_inner())
}

/// One queue's share of an interface's redirect program. The program is
/// attached when the first share is taken and detached when the last is
/// dropped; the queue's socket leaves the XSKMAP when its share drops.
pub(crate) struct SteeringRef {
    key: IfKey,
    queue: Option<u32>,
    /// The program runs in native mode.
    pub native: bool,
    /// Why native mode was not used.
    pub fallback_reason: Option<String>,
}

/// Takes a share of `ifname`'s redirect program, attaching it first if
/// this process has not: bricks' `xsk_redirect`, or `fast_path`'s program
/// when one is given. Every queue of an interface must agree on the mode
/// and on the fast path.
pub(crate) fn acquire(
    ifname: &str,
    ifindex: u32,
    mode: XdpMode,
    fast_path: Option<&FastPath>,
) -> Result<SteeringRef, DeviceError> {
    let key = if_key(ifname, ifindex)?;
    let mut table = steering();
    if let Some(s) = table.get_mut(&key) {
        let wrong = match mode {
            XdpMode::Native => !s.native,
            XdpMode::Generic => s.native,
            XdpMode::Auto => false,
        };
        if wrong {
            return Err(DeviceError::Io(format!(
                "{ifname}: another queue already runs bricks' XDP program in {} mode; \
                 open every queue of an interface in the same mode (or MODE auto)",
                s.mode()
            )));
        }
        let same = match (&s.program, fast_path) {
            (Program::Own { .. }, None) => true,
            (Program::Fast(a), Some(b)) => a == b,
            _ => false,
        };
        if !same {
            let runs = match (&s.program, fast_path) {
                (Program::Own { .. }, _) => "without a fast path, and this one asks for one",
                (Program::Fast(_), None) => "with a fast path, and this one asks for none",
                (Program::Fast(_), Some(_)) => "with a different fast path",
            };
            return Err(DeviceError::Io(format!(
                "{ifname}: another queue already runs bricks' XDP program {runs}; \
                 open every queue of an interface with the same fast path (or none)"
            )));
        }
        s.users += 1;
        return Ok(SteeringRef {
            key,
            queue: None,
            native: s.native,
            fallback_reason: s.fallback_reason.clone(),
        });
    }
    let steering = match fast_path {
        Some(fp) => {
            let (native, fallback_reason) = fp.attach(ifname, ifindex, key, mode)?;
            Steering {
                program: Program::Fast(fp.clone()),
                native,
                fallback_reason,
                users: 1,
            }
        }
        None => {
            let prog = "bricks_xsk_redirect";
            let mut ebpf = load(ifname, XSK_REDIRECT, prog, &[], |_| Ok(()))?;
            let map = ebpf
                .take_map("bricks_xsks")
                .ok_or_else(|| DeviceError::Io("bricks_xsks missing from the XDP object".into()))?;
            let xsks = XskMap::try_from(map).map_err(|e| DeviceError::Io(chain(&e)))?;
            let loaded = attach(ebpf, prog, ifname, ifindex, mode)?;
            Steering {
                native: loaded.native,
                fallback_reason: loaded.fallback_reason.clone(),
                program: Program::Own {
                    _loaded: Box::new(loaded),
                    xsks,
                },
                users: 1,
            }
        }
    };
    let r = SteeringRef {
        key,
        queue: None,
        native: steering.native,
        fallback_reason: steering.fallback_reason.clone(),
    };
    table.insert(key, steering);
    Ok(r)
}

impl SteeringRef {
    /// Sends the frames of receive queue `queue` to socket `fd`.
    pub fn register(&mut self, ifname: &str, queue: u32, fd: i32) -> Result<(), DeviceError> {
        let mut table = steering();
        let s = table
            .get_mut(&self.key)
            .ok_or_else(|| DeviceError::Io(format!("{ifname}: XDP program gone")))?;
        // SAFETY: `fd` is the caller's open AF_XDP socket; the map only
        // reads the number during the call (the kernel takes its own
        // reference to the socket).
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let set = match &mut s.program {
            Program::Own { xsks, .. } => xsks.set(queue, fd, 0).map_err(|e| chain(&e)),
            Program::Fast(fp) => fp.set_xsk(queue, fd),
        };
        set.map_err(|e| {
            DeviceError::Io(format!(
                "{ifname}: cannot steer queue {queue} to its AF_XDP socket: {e}"
            ))
        })?;
        self.queue = Some(queue);
        Ok(())
    }
}

impl Drop for SteeringRef {
    fn drop(&mut self) {
        let mut table = steering();
        let Some(s) = table.get_mut(&self.key) else {
            return;
        };
        if let Some(q) = self.queue {
            // Closing the socket removes it from the map too; this is for a
            // socket that stays open a little longer than its share.
            match &mut s.program {
                Program::Own { xsks, .. } => {
                    let _ = xsks.unset(q);
                }
                Program::Fast(fp) => fp.unset_xsk(q),
            }
        }
        s.users -= 1;
        if s.users == 0 {
            // Dropping bricks' own program closes its link: the kernel
            // detaches it. A fast path outlives its attachment (its maps
            // stay usable), so its link is detached explicitly.
            if let Some(Steering {
                program: Program::Fast(fp),
                ..
            }) = table.remove(&self.key)
            {
                fp.detach();
            }
        }
    }
}

/// The `XDP_REDIRECT` comparison point: every frame received on one
/// interface leaves through another, forwarded by the kernel through a
/// DEVMAP without reaching user space. Detached on drop.
pub struct XdpRedirect {
    from: Loaded,
    _to: Option<XdpPass>,
}

impl XdpRedirect {
    /// `native` or `generic`: where the redirect program runs.
    pub fn mode(&self) -> &'static str {
        self.from.mode()
    }

    /// Why native mode was not used, if it was not.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.from.fallback_reason.as_deref()
    }
}

/// Attaches a program to `from` that redirects every frame to `to` through
/// a DEVMAP (native mode where the driver has it, else generic).
///
/// In native mode the transmitting driver must accept redirected frames
/// (`ndo_xdp_xmit`); several NIC drivers only do while they carry an XDP
/// program themselves, so `to` gets an XDP_PASS program too when it has
/// none. A veth `to` hands redirected frames to its peer, which accepts
/// them only while the peer carries an XDP program: attach one there with
/// [`attach_pass`] (in the peer's namespace).
pub fn redirect(from: &str, to: &str) -> Result<XdpRedirect, DeviceError> {
    let name_err = |e: crate::ifinfo::IfError| DeviceError::Io(e.to_string());
    let from_index = crate::ifinfo::index(from).map_err(name_err)?;
    let to_index = crate::ifinfo::index(to).map_err(name_err)?;
    let prog = "bricks_devmap_redirect";
    let ebpf = load(from, DEVMAP_REDIRECT, prog, &[], |ebpf| {
        let map = ebpf
            .map_mut("bricks_tx_port")
            .ok_or("bricks_tx_port missing from the object")?;
        let mut port = DevMap::try_from(map).map_err(|e| chain(&e))?;
        port.set(0, to_index, None, 0).map_err(|e| chain(&e))
    })?;
    let loaded = attach(ebpf, prog, from, from_index, XdpMode::Auto)?;
    // Best effort: a `to` that already carries a program (bricks' own
    // AF_XDP steering, say) accepts redirected frames already, and a
    // driver that needs none works without.
    let pass = if loaded.native && to_index != from_index {
        attach_pass(to, XdpMode::Native).ok()
    } else {
        None
    };
    Ok(XdpRedirect {
        from: loaded,
        _to: pass,
    })
}

/// An XDP_PASS program attached to one interface. Detached on drop.
pub struct XdpPass {
    loaded: Loaded,
}

impl XdpPass {
    /// `native` or `generic`.
    pub fn mode(&self) -> &'static str {
        self.loaded.mode()
    }
}

/// Attaches a program that passes every frame to `ifname`: a veth accepts
/// frames redirected into its peer (XDP_TX, XDP_REDIRECT) only while it
/// carries an XDP program.
pub fn attach_pass(ifname: &str, mode: XdpMode) -> Result<XdpPass, DeviceError> {
    let ifindex = crate::ifinfo::index(ifname).map_err(|e| DeviceError::Io(e.to_string()))?;
    let prog = "bricks_pass";
    let ebpf = load(ifname, PASS, prog, &[], |_| Ok(()))?;
    Ok(XdpPass {
        loaded: attach(ebpf, prog, ifname, ifindex, mode)?,
    })
}
