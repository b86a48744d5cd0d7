//! Helpers shared by the integration tests of several crates (a
//! dev-dependency only): finding and building the guest programs,
//! assembling small bare-metal ones, and the junk frames the ingress
//! fuzzers feed the NIC and the transport.

use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The names in the second column of the devices table of
/// `docs/devices.md` (the `| device | name |` table), in its order: what
/// the devices doc tests of the node and of the NIC designs check against.
pub fn documented_devices() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/devices.md")).expect("docs/devices.md");
    let mut rows = doc
        .lines()
        .skip_while(|l| !l.starts_with("| device | name |"));
    rows.next()
        .expect("the devices table has a `| device | name |` header");
    rows.skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let name = l.split('|').nth(2).expect("a name column").trim();
            name.trim_matches('`').to_string()
        })
        .collect()
}

/// Builds the SDK's guest programs (once per test binary); returns their
/// directory.
pub fn sdk_build() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let sdk = repo().join("sdk");
            let ok = std::process::Command::new("make")
                .args(["-s", "-C"])
                .arg(&sdk)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "building the guest programs failed: run scripts/setup.sh --test (installs gcc-riscv64-unknown-elf)"
            );
            sdk.join("build")
        })
        .clone()
}

/// The ELF of the SDK's program `name` (built if needed).
pub fn program(name: &str) -> PathBuf {
    let p = sdk_build().join(format!("{name}.elf"));
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// `body` as a bare-metal program: `_start` at the start of the text, then
/// `tohost` and `fromhost` in the data (link it with
/// `-Wl,-Ttext=0x80000000`, and `-Wl,-N` to keep the data right after).
pub fn bare_metal(body: &str) -> String {
    format!(
        ".section .text.init,\"ax\"\n.globl _start\n_start:\n{body}\n.data\n.align 6\n\
         .globl tohost\ntohost: .dword 0\n.globl fromhost\nfromhost: .dword 0\n"
    )
}

/// A [`bare_metal`] body that floods netTX: one-word messages to 10.0.0.3
/// (a host nobody is at), as fast as the core writes them (two netTX
/// writes and a branch a message).
pub const NET_TX_FLOOD: &str = "
    li t0, 0x0a000003
    slli t0, t0, 32
    addi t0, t0, 8
1:  mv x31, t0
    mv x31, zero
    j 1b
";

/// [`bare_metal`]`(body)` assembled and linked at 0x80000000 (data right
/// after the text): the ELF image.
pub fn bare_metal_elf(name: &str, body: &str) -> Vec<u8> {
    assemble(
        name,
        &bare_metal(body),
        None,
        &["-Wl,-N", "-Wl,-Ttext=0x80000000"],
    )
}

/// Assembles and links `source` (a whole RV64GC assembly file) with
/// `riscv64-unknown-elf-gcc -nostdlib -nostartfiles -static`, the linker
/// script `script` if any, and `flags`; returns the ELF image. Works in a
/// temporary directory of its own, removed afterwards; a failure panics
/// with the assembler's messages.
pub fn assemble(name: &str, source: &str, script: Option<&str>, flags: &[&str]) -> Vec<u8> {
    let dir = tempfile::Builder::new()
        .prefix("nanopu-asm-")
        .tempdir()
        .expect("a temporary directory");
    let src = dir.path().join(format!("{name}.S"));
    let elf = dir.path().join(format!("{name}.elf"));
    std::fs::write(&src, source).unwrap();
    let mut gcc = std::process::Command::new("riscv64-unknown-elf-gcc");
    gcc.args([
        "-march=rv64gc",
        "-mabi=lp64d",
        "-nostdlib",
        "-nostartfiles",
        "-static",
        "-Wl,--no-warn-rwx-segments",
    ]);
    if let Some(script) = script {
        let path = dir.path().join("link.ld");
        std::fs::write(&path, script).unwrap();
        gcc.arg("-T").arg(path);
    }
    let out = gcc
        .args(flags)
        .arg("-o")
        .arg(&elf)
        .arg(&src)
        .output()
        .expect("riscv64-unknown-elf-gcc: run scripts/setup.sh --test");
    assert!(
        out.status.success(),
        "assembling {name} failed:\n{}\n{source}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&elf).unwrap()
}

/// `PROPTEST_CASES`, else `default` (a short pass).
pub fn proptest_cases(default: u32) -> u32 {
    env_count("PROPTEST_CASES", default)
}

/// The number in environment variable `var`, else `default`: how many
/// cases a test runs (a short pass in the suite, a long one on request).
pub fn env_count(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A nanoPU frame from `src_ip` to `dst_ip` with transport `flags`, the
/// header fields given and `payload` bytes of payload.
pub fn frame(src_ip: u32, dst_ip: u32, nt: NanoTransportRepr, payload: usize) -> Vec<u8> {
    let r = FrameRepr::new(
        EthernetRepr {
            src_addr: EthernetAddress::for_ipv4(src_ip),
            dst_addr: EthernetAddress::for_ipv4(dst_ip),
            ethertype: 0,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(src_ip),
            dst_addr: Ipv4Address::from_bits(dst_ip),
            protocol: 0,
            payload_len: 0,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: true,
        },
        nt,
        payload,
    );
    let mut f = vec![0u8; r.frame_len()];
    r.emit(&vec![7u8; payload], &mut f)
        .expect("sized for the frame");
    f
}

/// Junk for an ingress fuzzer: random bytes, or a frame from `src_ip` to
/// `dst_ip` with random flags, length, offset, destination context (0-2),
/// message id (0-7) and payload size, perhaps with one byte changed and
/// perhaps cut short.
pub fn junk_frames(src_ip: u32, dst_ip: u32) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        (
            (any::<u8>(), 0u16..5000, 0u16..6, 0u16..3, 0u16..8),
            0usize..1100,
            prop::option::of(0usize..1200),
            prop::option::of((0usize..1200, any::<u8>()))
        )
            .prop_map(
                move |((flags, msg_len, pkt_offset, ctx, id), payload, cut, flip)| {
                    let nt = NanoTransportRepr {
                        flags: Flags::from_bits_retain(flags),
                        msg_len,
                        pkt_offset,
                        dst_context: ctx,
                        tx_msg_id: id,
                        ..Default::default()
                    };
                    let mut f = frame(src_ip, dst_ip, nt, payload);
                    if let Some((i, v)) = flip {
                        let i = i % f.len();
                        f[i] = v;
                    }
                    if let Some(c) = cut {
                        f.truncate(c.min(f.len()));
                    }
                    f
                }
            ),
    ]
}
