/*
 * nb_mica: the MICA key-value store (mica.h, the message format of
 * programs/mica/README.md) on 16 cores behind NEBULA's NIC (nebula.h), the
 * RPC-handling loop of NEBULA Fig. 4 on every core:
 *
 *   nb_mica [PAIRS [VALUE_BYTES [SWPREF]]]
 *
 * Hart 0 preloads PAIRS keys (default 1.6 M, NEBULA §VI) with VALUE_BYTES
 * values (default 512) as crates/apps/src/mica.rs expects, puts the NIC's
 * receive buffer above the store's logs and registers it; then every core
 * serves. 64 partitions, each behind a spin lock (any core may get any
 * key: the NIC balances load, so MICA runs CREW-style with locks). With
 * SWPREF = 1 a core touches the next waiting RPC's payload before serving
 * the current one (NEBULA_SWPref, §VII-C).
 */
#include <nanopu_rt.h>
#include <nebula.h>
#include <stdio.h>
#include <stdlib.h>
#include "../mica/mica.h"

const int nanopu_ncores = 16;

static nanopu_spinlock_t part_lock[MICA_PARTITIONS];
static uint64_t reply[NANOPU_MAX_HARTS][(MICA_REPLY_HEADER + MICA_MAX_VALUE) / 8]
    __attribute__((aligned(64)));
static volatile int ready;
static int swpref;

static void preload(uint64_t pairs, uint64_t value_bytes)
{
    for (uint64_t i = 0; i < pairs; i++) {
        uint64_t k0 = mica_splitmix64(2 * i), k1 = mica_splitmix64(2 * i + 1);
        uint64_t h = mica_hash(k0, k1);
        struct mica_entry *e = mica_alloc(k0, k1, h, value_bytes);
        if (!e) {
            printf("nb_mica: the index is full at pair %lu\n", (unsigned long)i);
            exit(2);
        }
        uint64_t base = i << 32;
        for (uint64_t j = 0; j < value_bytes / 8; j++)
            e->value[j] = base + j * 0x9E3779B97F4A7C15UL;
    }
}

static void serve(void)
{
    uint64_t *resp = reply[nanopu_hartid()];
    struct nebula_rpc rpc;
    for (;;) {
        nebula_wait_for_rpc(&rpc);
        if (swpref) {
            const volatile uint64_t *next = nebula_next_rpc();
            if (next)
                (void)next[0];
        }
        const uint64_t *req = rpc.payload;
        unsigned len;
        if (rpc.len >= MICA_REQ_HEADER) {
            uint64_t h = mica_hash(req[2], req[3]);
            nanopu_spinlock_t *l = &part_lock[h >> (64 - MICA_PARTITION_BITS)];
            nanopu_spin_lock(l);
            len = mica_process(req, rpc.len, resp);
            nanopu_spin_unlock(l);
        } else {
            len = mica_process(req, rpc.len, resp);
        }
        nebula_free_buffer(rpc.payload, rpc.len);
        nebula_rpc_send(resp, len, rpc.token);
    }
}

void thread_entry(int cid, int nc)
{
    (void)cid;
    (void)nc;
    while (!ready)
        ;
    serve();
}

int main(int argc, char **argv)
{
    uint64_t pairs = argc > 1 ? strtoul(argv[1], 0, 0) : 1600000;
    uint64_t value_bytes = argc > 2 ? strtoul(argv[2], 0, 0) : 512;
    swpref = argc > 3 ? atoi(argv[3]) : 0;
    if (!mica_value_ok(value_bytes)) {
        printf("nb_mica: VALUE_BYTES = %lu: must be 8..1024, a multiple of 8\n",
               (unsigned long)value_bytes);
        return 2;
    }
    preload(pairs, value_bytes);
    uintptr_t buf = (MICA_LOGS_BASE + MICA_PARTITIONS * MICA_LOG_BYTES + 4095) & ~4095UL;
    (void)nebula_buffer_bytes();
    nebula_register_buffer((void *)buf);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    serve();
    return 0;
}
