/*
 * nb_nanopu_mica: the same store as nb_mica (mica.h sized for 1.6 M pairs,
 * 64 partitions behind spin locks) served by 16 nanoPU cores: every core
 * registers context 0, the NIC's JBSQ core selection spreads the requests
 * and messages arrive in the register file (the optimized `mica` program's
 * serving loop: values stream between the log and netRX/netTX).
 *
 *   nb_nanopu_mica [PAIRS [VALUE_BYTES]]
 *
 * What nb-mica sets beside NEBULA's designs.
 */
#include <nanopu.h>
#include <nanopu_rt.h>
#include <stdio.h>
#include <stdlib.h>
#include "../mica/mica.h"

const int nanopu_ncores = 16;

static nanopu_spinlock_t part_lock[MICA_PARTITIONS];
static volatile int ready;

static inline void drain(uint32_t n)
{
    while (n--)
        (void)lnic_read();
}

static inline void reply_status(uint64_t rx_hdr, uint64_t tag, uint64_t status)
{
    lnic_write_r(lnic_reply_hdr(rx_hdr, MICA_REPLY_HEADER));
    lnic_write_r(tag);
    lnic_write_r(status);
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    unsigned len = lnic_hdr_len(hdr);
    uint32_t words = lnic_hdr_words(hdr);
    if (len < MICA_REQ_HEADER) {
        uint64_t tag = 0;
        if (words > 0) {
            tag = lnic_read();
            drain(words - 1);
        }
        reply_status(hdr, len >= 8 ? tag : 0, MICA_MALFORMED);
        return;
    }
    uint64_t tag = lnic_read();
    uint64_t op = lnic_read();
    uint64_t k0 = lnic_read();
    uint64_t k1 = lnic_read();
    uint32_t rest = words - 4;
    uint64_t h = mica_hash(k0, k1);
    nanopu_spinlock_t *l = &part_lock[h >> (64 - MICA_PARTITION_BITS)];
    nanopu_spin_lock(l);
    if (op == MICA_OP_GET && len == MICA_REQ_HEADER) {
        struct mica_entry *e = mica_entry(k0, k1, h);
        if (!e) {
            reply_status(hdr, tag, MICA_NOT_FOUND);
        } else {
            lnic_write_r(lnic_reply_hdr(hdr, MICA_REPLY_HEADER + e->value_len));
            lnic_write_r(tag);
            lnic_write_i(MICA_OK);
            const uint64_t *v = e->value;
            for (uint32_t n = e->value_len / 8; n > 0; n--, v++)
                lnic_write_m(v[0]);
        }
    } else if (op == MICA_OP_SET && mica_value_ok(len - MICA_REQ_HEADER)) {
        struct mica_entry *e = mica_alloc(k0, k1, h, len - MICA_REQ_HEADER);
        if (!e) {
            drain(rest);
            reply_status(hdr, tag, MICA_FULL);
        } else {
            uint64_t *v = e->value;
            for (; rest > 0; rest--, v++)
                v[0] = lnic_read();
            reply_status(hdr, tag, MICA_OK);
        }
    } else {
        drain(rest);
        reply_status(hdr, tag, MICA_MALFORMED);
    }
    nanopu_spin_unlock(l);
}

static void serve(void)
{
    lnic_add_context(0, 0);
    for (;;) {
        lnic_wait();
        serve_one();
        lnic_msg_done();
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
    for (uint64_t i = 0; i < pairs; i++) {
        uint64_t k0 = mica_splitmix64(2 * i), k1 = mica_splitmix64(2 * i + 1);
        uint64_t h = mica_hash(k0, k1);
        struct mica_entry *e = mica_alloc(k0, k1, h, value_bytes);
        if (!e) {
            printf("nb_nanopu_mica: the index is full at pair %lu\n", (unsigned long)i);
            return 2;
        }
        for (uint64_t j = 0; j < value_bytes / 8; j++)
            e->value[j] = (i << 32) + j * 0x9E3779B97F4A7C15UL;
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    lnic_boot();
    serve();
    return 0;
}
