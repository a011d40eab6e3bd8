//! Links the `lockstep` binary with packed relative relocations (`DT_RELR`) where the
//! linker and the C library take them.
//!
//! Why: a position-independent binary of this size carries about 13,500 relative
//! relocations (vtables, string tables, clap's metadata), 330 KB that the dynamic loader
//! reads and applies before `main` at every start. Packed, the table is 4 KB and the loader's
//! work before `main` falls from about 460,000 to 210,000 cycles (`LD_DEBUG=statistics`):
//! 0.1 ms of every run, 4% of a `lockstep fingerprint` of a small file. Every byte the
//! program writes is the same.
//!
//! The flag needs GNU ld 2.38 or lld 15 and glibc 2.36. A link of an empty C program with it
//! (warnings fatal, so an old ld that ignores the flag says no) decides; without a C compiler,
//! or when cross-compiling, the binary is linked as before.

use std::path::PathBuf;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Another linker is probed again.
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if linker_takes_packed_relocations() {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

fn linker_takes_packed_relocations() -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr_probe.c");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    Command::new(linker)
        .arg(&source)
        .arg("-o")
        .arg(out.join("relr_probe"))
        .arg(FLAG)
        .arg("-Wl,--fatal-warnings")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
