#!/bin/sh
# check-regs.sh - prove that an SDK program touches x30 (netRX) / x31 (netTX)
# only where it means to.
#
# usage: check-regs.sh [-v] RUNTIME_SYMS ELF...
#   RUNTIME_SYMS  file with the names of the SDK runtime's functions, one a line
#
# Every lnic_* macro (include/nanopu.h) records the address of its single
# instruction in the non-allocated section .nanopu.netregs.  This script
# disassembles the ELF (objdump -d -M numeric) and fails when
#   1. an instruction names x30 or x31 but its address is not recorded
#      (e.g. code compiled without -ffixed-x30 -ffixed-x31, or hand-written
#      asm that did not use the NETREG macro), or
#   2. a recorded address lies in a function of the SDK runtime (the runtime
#      must never touch the network registers; the one exception is the
#      nanokernel's nk_discard_message, which reads and drops messages for a
#      context no thread will ever read: an exited thread's, or one
#      registered without a thread), or
#   3. a recorded address does not hold an instruction naming x30/x31 (the
#      record is stale: something went wrong with the mechanism itself).
# Any use of x30/x31 counts, reads of x31 and writes of x30 included.
set -eu

OBJDUMP=${OBJDUMP:-riscv64-unknown-elf-objdump}
OBJCOPY=${OBJCOPY:-riscv64-unknown-elf-objcopy}
verbose=0
if [ "${1:-}" = "-v" ]; then verbose=1; shift; fi
runtime_syms=$1
shift

status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for elf in "$@"; do
    : > "$tmp/allowed"
    rm -f "$tmp/netregs.bin"
    if "$OBJCOPY" --dump-section .nanopu.netregs="$tmp/netregs.bin" "$elf" "$tmp/dummy.elf" 2>/dev/null \
        && [ -f "$tmp/netregs.bin" ]; then
        od -An -v -tx8 "$tmp/netregs.bin" | tr -s ' ' '\n' | sed '/^$/d; s/^0*//' > "$tmp/allowed"
    fi
    "$OBJDUMP" -d -M numeric "$elf" > "$tmp/disasm"
    if ! awk -v elf="$elf" -v verbose="$verbose" \
        -v allowed_file="$tmp/allowed" -v runtime_file="$runtime_syms" '
        BEGIN {
            while ((getline a < allowed_file) > 0) { allowed[a] = 1; nallowed++ }
            while ((getline s < runtime_file) > 0) runtime[s] = 1
            bad = 0
        }
        /^[0-9a-f]+ <.*>:$/ {
            fn = $2; gsub(/[<>:]/, "", fn); next
        }
        /^ *[0-9a-f]+:\t/ {
            line = $0
            addr = line; sub(/^ */, "", addr); sub(/:.*/, "", addr)
            n = split(line, f, "\t")
            if (n < 3) next
            ops = f[3]; for (i = 4; i <= n; i++) ops = ops " " f[i]
            sub(/[<#].*/, "", ops)
            a = addr; sub(/^0*/, "", a)
            uses = (ops ~ /(^|[^0-9a-z])x3[01]([^0-9]|$)/)
            if (uses) {
                if (!(a in allowed)) {
                    printf("%s: %s in %s: unrecorded use of x30/x31: %s\n", elf, addr, fn, ops)
                    bad = 1
                } else if ((fn in runtime) && fn != "nk_discard_message") {
                    printf("%s: %s in SDK runtime function %s uses x30/x31: %s\n", elf, addr, fn, ops)
                    bad = 1
                } else {
                    seen[a] = 1; users[fn]++
                }
            }
        }
        END {
            for (a in allowed) if (!(a in seen)) {
                printf("%s: recorded netreg address 0x%s holds no x30/x31 instruction\n", elf, a)
                bad = 1
            }
            if (verbose) {
                msg = ""
                for (u in users) msg = msg " " u "(" users[u] ")"
                printf("%s: %d netreg instructions%s%s\n", elf, nallowed, msg == "" ? "" : " in", msg)
            }
            exit bad
        }' "$tmp/disasm"; then
        status=1
    fi
done
exit $status
