/*
 * herd_readkv: the READ-based key-value store HERD compares itself with
 * (Pilaf, NSDI'13, as HERD §5.2 emulates it): clients GET by RDMA READs of
 * the index and then of the value; the server's cores take no part. The
 * server fills an index of 32-byte buckets (linear probing, at most half
 * full) with keys 1..NKEYS and their values, registers it (rkey 3), creates
 * an RC QP per client and sleeps.
 *
 *   herd_readkv NKEYS FIRST_CLIENT_IP NCLIENTS
 *
 * At VERBS_SHARED_BASE: BUCKETS buckets {k0, k1, value offset, 0}
 * (k0 = 0: empty), then 64-byte values; offsets are from the base.
 * Bucket of a key: readkv_hash(k0) % BUCKETS, then the next ones.
 * Key i: k0 = i, k1 = i * 0x9E3779B97F4A7C15; value word j:
 * (k0 * 1000003 + j) ^ k1. Connections: RC QP 1 + c here, client c's QP 1.
 */
#include <nanopu.h>
#include <replica.h>
#include <stdio.h>
#include <verbs.h>

#define BUCKETS 4096
#define VALUE_WORDS 8

static uint8_t cq_ring[64 * 32 + 8] __attribute__((aligned(64)));
static struct verbs_cq cq;

static uint32_t parse_u32(const char *s)
{
    uint32_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint32_t)(*s++ - '0');
    return v;
}

static uint64_t readkv_hash(uint64_t k0)
{
    uint64_t h = k0 * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        printf("usage: herd_readkv NKEYS FIRST_CLIENT_IP NCLIENTS\n");
        return 2;
    }
    uint32_t nkeys = parse_u32(argv[1]);
    uint32_t first = replica_parse_ip(argv[2]);
    uint32_t clients = parse_u32(argv[3]);
    if (nkeys == 0 || nkeys > BUCKETS / 2 || first == 0 || clients == 0) {
        printf("herd_readkv: bad arguments\n");
        return 2;
    }
    uint64_t *base = (uint64_t *)VERBS_SHARED_BASE;
    uint64_t *values = base + BUCKETS * 4;
    for (uint64_t i = 0; i < BUCKETS * 4; i++)
        base[i] = 0;
    for (uint64_t i = 1; i <= nkeys; i++) {
        uint64_t k1 = i * 0x9E3779B97F4A7C15ULL;
        uint64_t b = readkv_hash(i) % BUCKETS;
        while (base[b * 4] != 0)
            b = (b + 1) % BUCKETS;
        uint64_t *v = values + (i - 1) * VALUE_WORDS;
        for (uint64_t j = 0; j < VALUE_WORDS; j++)
            v[j] = (i * 1000003 + j) ^ k1;
        base[b * 4] = i;
        base[b * 4 + 1] = k1;
        base[b * 4 + 2] = (uint64_t)((uint8_t *)v - (uint8_t *)base);
    }
    uint64_t bytes = BUCKETS * 32 + (uint64_t)nkeys * VALUE_WORDS * 8;
    verbs_create_cq(&cq, cq_ring, 64, 1);
    verbs_reg_mr(base, bytes, 3);
    for (uint32_t c = 0; c < clients; c++)
        verbs_create_qp(1 + c, VERBS_RC, 1, first + c, 1);
    for (;;)
        __asm__ volatile("wfi");
}
