/*
 * herd: the HERD key-value server (Kalia et al., SIGCOMM'14, §4) on the
 * RDMA NIC. Clients WRITE requests over UC into a request region in this
 * node's memory (registered with rkey 2 at VERBS_SHARED_BASE); each server
 * core polls its own chunk of the region, executes the request on its own
 * partition of a MICA-style index (kv_table.h: EREW, one table per core),
 * and replies with an inlined, unsignaled UD SEND. Never exits.
 *
 *   herd NCLIENTS FIRST_CLIENT_IP WINDOW
 *
 * Request slot (HERD_SLOT bytes), the key last so that it lands last
 * (HERD §4.2: the NIC's DMA writes go left to right):
 *   0..64 value (PUT), 96 op (1 GET, 2 PUT), 104 request id, 112 key k0 (never 0), 120 k1
 * Server core s, client c, request r: slot s*(WINDOW*NCLIENTS) + c*WINDOW + r % WINDOW.
 * Reply (UD SEND to the client's QP 100 + s from QP 1000 + s):
 *   0 request id, 8 status (0 found / stored, 1 not found, 2 full), 16..80 value (GET)
 * Connections: UC QP 1 + c here to client c's QP 1.
 */
#include <nanopu.h>
#include <replica.h>
#include <stdio.h>
#include <verbs.h>

#define KV_BUCKETS 128
#include <kv_table.h>

#define HERD_SLOT 128
#define HERD_MAX_CORES 4
#define HERD_MAX_CLIENTS 32
#define OP_GET 1
#define OP_PUT 2

const int nanopu_ncores = HERD_MAX_CORES;

static struct kv_table tables[HERD_MAX_CORES];
static uint8_t cq_ring[64 * 32 + 8] __attribute__((aligned(64)));
static struct verbs_cq cq;
static uint32_t nclients, first_ip, window;
static volatile int ready;

static uint32_t parse_u32(const char *s)
{
    uint32_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint32_t)(*s++ - '0');
    return v;
}

static void serve(int core)
{
    struct kv_table *t = &tables[core];
    uint8_t *region = (uint8_t *)VERBS_SHARED_BASE;
    uint32_t slots = window * nclients;
    uint32_t seen[HERD_MAX_CLIENTS] = {0};
    struct verbs_wqe w;
    w.opcode = VERBS_OP_SEND;
    w.flags = VERBS_F_INLINE;
    w.qpn = 1000 + (uint32_t)core;
    w.remote_addr = 0;
    w.rkey = 0;
    w.lkey = 0;
    w.ud_qpn = 100 + (uint32_t)core;
    for (;;) {
        for (uint32_t c = 0; c < nclients; c++) {
            uint32_t idx = (uint32_t)core * slots + c * window + seen[c] % window;
            volatile uint64_t *slot = (volatile uint64_t *)(region + (uint64_t)idx * HERD_SLOT);
            uint64_t k0 = slot[14];
            if (k0 == 0)
                continue;
            uint64_t k1 = slot[15];
            uint64_t op = slot[12];
            uint64_t id = slot[13];
            uint64_t *reply = (uint64_t *)w.inline_data;
            reply[0] = id;
            w.len = 16;
            if (op == OP_PUT) {
                struct kv_slot *s = kv_slot(t, k0, k1, 1);
                if (s) {
                    for (int i = 0; i < KV_VALUE_WORDS; i++)
                        s->value[i] = slot[i];
                    reply[1] = 0;
                } else {
                    reply[1] = 2;
                }
            } else {
                struct kv_slot *s = kv_slot(t, k0, k1, 0);
                if (s) {
                    reply[1] = 0;
                    for (int i = 0; i < KV_VALUE_WORDS; i++)
                        reply[2 + i] = s->value[i];
                    w.len = 16 + 8 * KV_VALUE_WORDS;
                } else {
                    reply[1] = 1;
                }
            }
            w.wr_id = id;
            w.ud_ip = first_ip + c;
            /* Free the slot before replying: the client reuses it only
             * after the reply. */
            slot[14] = 0;
            verbs_post(&w);
            seen[c]++;
        }
    }
}

void thread_entry(int cid, int nc)
{
    (void)nc;
    while (!ready)
        ;
    serve(cid);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        printf("usage: herd NCLIENTS FIRST_CLIENT_IP WINDOW\n");
        return 2;
    }
    nclients = parse_u32(argv[1]);
    first_ip = replica_parse_ip(argv[2]);
    window = parse_u32(argv[3]);
    if (nclients == 0 || nclients > HERD_MAX_CLIENTS || first_ip == 0 || window == 0) {
        printf("herd: bad arguments\n");
        return 2;
    }
    uint64_t bytes = (uint64_t)HERD_MAX_CORES * window * nclients * HERD_SLOT;
    uint64_t *region = (uint64_t *)VERBS_SHARED_BASE;
    for (uint64_t i = 0; i < bytes / 8; i++)
        region[i] = 0;
    verbs_create_cq(&cq, cq_ring, 64, 1);
    verbs_reg_mr(region, bytes, 2);
    for (uint32_t c = 0; c < nclients; c++)
        verbs_create_qp(1 + c, VERBS_UC, 1, first_ip + c, 1);
    for (uint32_t s = 0; s < HERD_MAX_CORES; s++)
        verbs_create_qp(1000 + s, VERBS_UD, 1, 0, 0);
    __asm__ volatile("fence" ::: "memory");
    ready = 1;
    serve(0);
    return 0;
}
