#!/usr/bin/env bash
# Installs what building and testing nanopu need, when missing (Debian):
# the RISC-V bare-metal toolchain and picolibc for the guest programs, and,
# with --test, qemu-user and the RISC-V Linux cross compiler used by the
# differential tests, and gdb-multiarch for the debugger tests. Safe to run
# again: it installs only what is absent.
set -euo pipefail

need=()
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-unknown-elf)
[ -d /usr/lib/picolibc/riscv64-unknown-elf ] || need+=(picolibc-riscv64-unknown-elf)
command -v make >/dev/null 2>&1 || need+=(make)
if [ "${1:-}" = "--test" ]; then
    command -v qemu-riscv64 >/dev/null 2>&1 || need+=(qemu-user)
    command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)
    command -v tshark >/dev/null 2>&1 || need+=(tshark)
    command -v gdb-multiarch >/dev/null 2>&1 || need+=(gdb-multiarch)
fi

if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${need[*]}"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo (Rust stable) is required; install it with rustup or 'apt-get install cargo'" >&2
    exit 1
fi
