#!/usr/bin/env bash
# Installs what building and testing nanopu need, when missing (Debian):
# the RISC-V bare-metal toolchain and picolibc for the guest programs, and,
# with --test, qemu-user and the RISC-V Linux cross compiler used by the
# differential tests, and gdb-multiarch for the debugger tests. Then the
# Python package: a project virtual environment (.venv, python3-venv from apt
# if missing) with python/requirements.txt and the package built into it
# (maturin develop; with --test, the ci profile), rebuilt when a crate
# changed (--no-python skips this). Safe to run again: it installs only what
# is absent.
set -euo pipefail

python=1
test=0
for arg in "$@"; do
    case "$arg" in
        --test) test=1 ;;
        --no-python) python=0 ;;
        *) echo "setup: unknown option $arg (expected --test, --no-python)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."

need=()
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-unknown-elf)
[ -d /usr/lib/picolibc/riscv64-unknown-elf ] || need+=(picolibc-riscv64-unknown-elf)
command -v make >/dev/null 2>&1 || need+=(make)
if [ "$python" = 1 ]; then
    command -v python3 >/dev/null 2>&1 || need+=(python3)
    # Debian's python3 leaves venv (ensurepip) and the headers to packages.
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
    python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
        >/dev/null 2>&1 || need+=(python3-dev)
fi
if [ "$test" = 1 ]; then
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

if [ "$python" = 1 ]; then
    venv=.venv
    if [ ! -x "$venv/bin/python" ]; then
        echo "setup: creating the Python virtual environment $venv"
        python3 -m venv "$venv"
    fi
    # Install the pinned packages when the list changed.
    if ! cmp -s python/requirements.txt "$venv/.requirements.txt"; then
        echo "setup: installing python/requirements.txt into $venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
        "$venv/bin/python" -m pip install -q -r python/requirements.txt
        cp python/requirements.txt "$venv/.requirements.txt"
    fi
    # Build the package (crates/python and the simulator) when a crate changed,
    # with the profile the make target builds the rest with: `release` (fat
    # LTO) for users, `ci` for the tests, which any up-to-date build serves.
    # The stamp holds the profile of the build in .venv.
    stamp="$venv/.nanopu-built"
    profile=release accept=release
    [ "$test" = 1 ] && profile=ci accept="ci release"
    built="$(cat "$stamp" 2>/dev/null || true)"
    if [ ! -e "$stamp" ] || [[ " $accept " != *" $built "* ]] \
        || [ -n "$(find crates Cargo.toml Cargo.lock python/pyproject.toml -newer "$stamp" -print -quit)" ]; then
        echo "setup: building the nanopu Python package into $venv (maturin develop --profile $profile)"
        (cd python && VIRTUAL_ENV="$PWD/../$venv" "../$venv/bin/maturin" develop --profile "$profile" --quiet)
        echo "$profile" >"$stamp"
    fi
fi
