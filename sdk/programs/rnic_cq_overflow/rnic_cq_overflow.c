/*
 * rnic_cq_overflow: posts more signaled UD SENDs than its CQ holds and
 * never polls, so the RDMA NIC must report the overflow. Exits with the
 * doorbell page's LAST_ERROR (VERBS_ERR_CQ_OVERFLOW = 1 expected), or 100
 * if no error was reported.
 *
 *   rnic_cq_overflow PEER_IP
 */
#include <nanopu.h>
#include <replica.h>
#include <stdio.h>
#include <verbs.h>

static uint8_t cq_ring[4 * 32 + 8] __attribute__((aligned(64)));
static struct verbs_cq cq;

int main(int argc, char **argv)
{
    uint32_t peer = argc == 2 ? replica_parse_ip(argv[1]) : 0;
    if (peer == 0) {
        printf("usage: rnic_cq_overflow PEER_IP\n");
        return 2;
    }
    verbs_create_cq(&cq, cq_ring, 4, 1);
    verbs_create_qp(7, VERBS_UD, 1, 0, 0);
    static struct verbs_wqe w;
    w.opcode = VERBS_OP_SEND;
    w.flags = VERBS_F_SIGNALED | VERBS_F_INLINE;
    w.len = 8;
    w.qpn = 7;
    w.ud_ip = peer;
    w.ud_qpn = 9;
    for (int i = 0; i < 8; i++) {
        w.wr_id = (uint64_t)i;
        verbs_post(&w);
    }
    for (uint64_t t0 = rdcycle(); rdcycle() - t0 < 100000;)
        ;
    printf("errors %lu, last %lu\n", (unsigned long)VERBS_ERRORS, (unsigned long)VERBS_LAST_ERROR);
    return VERBS_ERRORS ? (int)VERBS_LAST_ERROR : 100;
}
