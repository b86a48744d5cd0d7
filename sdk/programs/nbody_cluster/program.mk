# The oracle (crates/apps/src/nbody.rs, cluster_checksums) rounds after every
# multiply and add: no fused multiply-adds, so both compute the same doubles.
nbody_cluster_CFLAGS := -ffp-contract=off -fno-math-errno
