//! Compiles the XDP programs in `bpf/*.c` to BPF objects in `OUT_DIR`,
//! which `src/xdp` embeds with `include_bytes!` and loads with aya.
//!
//! The programs are a few lines of C each; clang is the one compiler that
//! targets BPF on every distribution, and keeping them in C (rather than a
//! second Rust toolchain for `bpfel-unknown-none`) keeps the build to one
//! `clang` call per file.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs, by file stem (`bpf/<stem>.c` becomes `<stem>.o`).
const PROGRAMS: &[&str] = &[
    "xsk_redirect",
    "devmap_redirect",
    "pass",
    "fastpath",
    "gen_live",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-changed=bpf");

    // `-target bpf` drops the host's multiarch include directory, where
    // <asm/types.h> (pulled in by <linux/bpf.h>) lives on Debian.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");

    for stem in PROGRAMS {
        let src = manifest.join("bpf").join(format!("{stem}.c"));
        println!("cargo:rerun-if-changed={}", src.display());
        let obj = out.join(format!("{stem}.o"));
        let mut cmd = Command::new(&clang);
        cmd.args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"]);
        if Path::new(&multiarch).is_dir() {
            cmd.arg("-I").arg(&multiarch);
        }
        cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => fail(&format!(
                "`{clang}` not found: the AF_XDP backend compiles its XDP programs \
                 (crates/io/bpf/*.c) with clang. Run `scripts/setup` as root (it installs \
                 clang, llvm and libbpf-dev), or set CLANG to a clang that targets BPF."
            )),
            Err(e) => fail(&format!("cannot run `{clang}`: {e}")),
            Ok(o) if !o.status.success() => {
                let stderr = String::from_utf8_lossy(&o.stderr);
                let hint = if stderr.contains("bpf_helpers.h") || stderr.contains("asm/types.h") {
                    " (missing BPF headers: run `scripts/setup` as root, which installs \
                     libbpf-dev)"
                } else {
                    ""
                };
                fail(&format!(
                    "compiling {} failed{hint}:\n{stderr}",
                    src.display()
                ))
            }
            Ok(_) => {}
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}
