/*
 * rnic_region: the server of the RDMA NIC's one-sided experiments. It lays
 * out the same 32 KB region as rdma_server (the nanoPU's software one-sided
 * operations, same initial contents), registers it with the RDMA NIC at
 * VERBS_SHARED_BASE with rkey 1, creates QPS RC queue pairs for each of
 * NCLIENTS clients at consecutive addresses from FIRST_IP (client c's
 * connection q: QP 1 + c*QPS + q here, QP 1 + q there), then sleeps: the
 * NIC serves every READ, WRITE and atomic without the cores.
 *
 *   rnic_region QPS FIRST_IP NCLIENTS
 */
#include <nanopu.h>
#include <stdio.h>
#include <replica.h>
#include <verbs.h>

#define REGION_WORDS 4096
#define POINTER_WORDS 256
#define MAX_WORDS 64

static uint8_t cq_ring[64 * 32 + 8] __attribute__((aligned(64)));
static struct verbs_cq cq;

static uint64_t initial_word(uint64_t i)
{
    if (i < POINTER_WORDS)
        return (POINTER_WORDS + (i * 97) % (REGION_WORDS - POINTER_WORDS - MAX_WORDS)) * 8;
    return i * 0x9E3779B97F4A7C15ULL;
}

static uint32_t parse_u32(const char *s)
{
    uint32_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint32_t)(*s++ - '0');
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        printf("usage: rnic_region QPS FIRST_IP NCLIENTS\n");
        return 2;
    }
    uint32_t qps = parse_u32(argv[1]);
    uint32_t first = replica_parse_ip(argv[2]);
    uint32_t clients = parse_u32(argv[3]);
    if (qps == 0 || first == 0 || clients == 0) {
        printf("rnic_region: bad arguments\n");
        return 2;
    }
    uint64_t *region = (uint64_t *)VERBS_SHARED_BASE;
    for (uint64_t i = 0; i < REGION_WORDS; i++)
        region[i] = initial_word(i);
    verbs_create_cq(&cq, cq_ring, 64, 1);
    verbs_reg_mr(region, REGION_WORDS * 8, 1);
    for (uint32_t c = 0; c < clients; c++)
        for (uint32_t q = 0; q < qps; q++)
            verbs_create_qp(1 + c * qps + q, VERBS_RC, 1, first + c, 1 + q);
    for (;;)
        __asm__ volatile("wfi");
}
