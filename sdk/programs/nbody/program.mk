# The oracle (crates/apps/src/nbody.rs) rounds after every multiply and add:
# no fused multiply-adds, so that both compute the same doubles bit for bit.
nbody_CFLAGS := -ffp-contract=off -fno-math-errno
