//! `setsockopt` and `getsockopt` on a raw descriptor, for the sockets the
//! backends make themselves (AF_PACKET, AF_XDP).

use std::io;
use std::os::fd::RawFd;

/// `setsockopt(fd, level, name)` with `val` as the option's bytes. Every
/// `T` passed is a uapi struct or integer without padding.
pub(crate) fn set<T: Copy>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: `val` points to size_of::<T>() initialised bytes that live
    // for the whole call; the kernel only reads them. The caller holds
    // `fd` open.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getsockopt(fd, level, name)` into `buf`; returns how many bytes the
/// kernel wrote.
pub(crate) fn get(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes and `len` is a valid
    // socklen_t, both for the whole call; the kernel writes at most `len`
    // bytes. The caller holds `fd` open.
    let r = unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// An `int` option of `fd`.
pub(crate) fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut b = [0u8; std::mem::size_of::<libc::c_int>()];
    get(fd, level, name, &mut b)?;
    Ok(libc::c_int::from_ne_bytes(b))
}
