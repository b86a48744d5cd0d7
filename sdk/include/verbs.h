/*
 * verbs.h: a small verbs SDK for the RDMA NIC (`[nic] kind = "rdma"`,
 * crates/system/src/nics/rdma). As with ibverbs on a ConnectX card, a
 * program builds a work-queue element (WQE) in its memory and rings the
 * NIC's doorbell (an MMIO store of the WQE's address); the NIC reads the
 * WQE by DMA over PCIe, executes it and, for signaled verbs and receives,
 * writes a completion (CQE) into the program's CQ ring by DMA. The
 * program polls the ring's `seq` words.
 *
 *   verbs_reg_mr(addr, len, rkey)                 register memory for remote access
 *   verbs_create_cq(&cq, ring, entries, cqn)      a CQ whose ring is `ring`
 *   verbs_create_qp(qpn, VERBS_RC|UC|UD, cqn, remote_ip, remote_qpn)
 *   verbs_post_recv(qpn, wr_id, addr, len)        a receive buffer
 *   verbs_post(&wqe)                              WRITE, READ, SEND, CAS, FAA
 *   verbs_poll_cq(&cq, &cqe)                      1 if a completion was taken
 *
 * Layouts (little-endian) are those of crates/nics/src/rdma/verbs.rs.
 * Set-up verbs (MR, CQ, QP) are executed by the NIC without network
 * traffic, standing in for the out-of-band connection manager.
 */
#ifndef VERBS_H
#define VERBS_H

#include <stdint.h>

#define VERBS_DOORBELL_BASE 0x10020000UL
#define VERBS_DOORBELL (*(volatile uint64_t *)(VERBS_DOORBELL_BASE + 0x00))
#define VERBS_ERRORS (*(volatile uint64_t *)(VERBS_DOORBELL_BASE + 0x08))
#define VERBS_LAST_ERROR (*(volatile uint64_t *)(VERBS_DOORBELL_BASE + 0x10))

/* Registered regions clients reach live at agreed addresses (the
 * out-of-band exchange of addresses and keys, by convention). */
#define VERBS_SHARED_BASE 0x88000000UL

enum {
    VERBS_OP_WRITE = 1,
    VERBS_OP_READ = 2,
    VERBS_OP_SEND = 3,
    VERBS_OP_CAS = 4,
    VERBS_OP_FAA = 5,
    VERBS_OP_RECV = 6,
    VERBS_OP_REG_MR = 0x10,
    VERBS_OP_CREATE_CQ = 0x11,
    VERBS_OP_CREATE_QP = 0x12,
};

#define VERBS_F_SIGNALED 1
#define VERBS_F_INLINE 2
#define VERBS_MAX_INLINE 256

enum { VERBS_RC = 0, VERBS_UC = 1, VERBS_UD = 2 };

enum {
    VERBS_WC_SUCCESS = 0,
    VERBS_WC_REMOTE_ACCESS = 1,
    VERBS_WC_RETRY_EXCEEDED = 2,
    VERBS_WC_LOCAL_ERROR = 3,
    VERBS_WC_LENGTH = 4,
    VERBS_WC_FLUSHED = 5,
};

/* Errors in VERBS_LAST_ERROR. */
enum {
    VERBS_ERR_CQ_OVERFLOW = 1,
    VERBS_ERR_BAD_WQE = 2,
    VERBS_ERR_NO_SUCH_QP = 3,
    VERBS_ERR_NO_SUCH_CQ = 4,
};

struct verbs_wqe {
    uint8_t opcode;
    uint8_t flags;
    uint16_t len;
    uint32_t qpn;
    uint64_t wr_id;
    uint64_t local_addr;
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t lkey;
    uint64_t compare_add;
    uint64_t swap;
    uint32_t ud_ip;
    uint32_t ud_qpn;
    uint8_t inline_data[VERBS_MAX_INLINE];
};

struct verbs_cqe {
    uint64_t wr_id;
    uint32_t byte_len;
    uint8_t opcode;
    uint8_t status;
    uint16_t pad;
    uint32_t qpn;
    uint32_t src_qpn;
    uint32_t src_ip;
    volatile uint32_t seq;
};

/* A CQ: its ring (entries CQEs, then the consumer index the NIC reads to
 * detect overflow) and how many completions the program has taken. */
struct verbs_cq {
    struct verbs_cqe *ring;
    volatile uint64_t *consumed;
    uint32_t entries;
    uint32_t cqn;
};

/* The WQEs a hart posts from: a ring much longer than the NIC takes to
 * fetch one, so a slot is never rewritten before the NIC has read it. */
#ifndef VERBS_WQE_SLOTS
#define VERBS_WQE_SLOTS 32
#endif
#ifndef VERBS_MAX_HARTS
#define VERBS_MAX_HARTS 4
#endif
static struct verbs_wqe verbs_wqes[VERBS_MAX_HARTS][VERBS_WQE_SLOTS] __attribute__((aligned(64)));
static uint32_t verbs_wqe_next[VERBS_MAX_HARTS];

static inline unsigned long verbs_hart(void)
{
    unsigned long id;
    __asm__ volatile("csrr %0, mhartid" : "=r"(id));
    return id % VERBS_MAX_HARTS;
}

static inline struct verbs_wqe *verbs_wqe_slot(void)
{
    unsigned long h = verbs_hart();
    struct verbs_wqe *w = &verbs_wqes[h][verbs_wqe_next[h]++ % VERBS_WQE_SLOTS];
    return w;
}

/* Rings the doorbell with a filled WQE (the fence orders its stores first). */
static inline void verbs_ring(struct verbs_wqe *w)
{
    __asm__ volatile("fence w, o" ::: "memory");
    VERBS_DOORBELL = (uint64_t)(uintptr_t)w;
}

/* Posts a copy of *wqe (copy the inline payload with it). */
static inline void verbs_post(const struct verbs_wqe *wqe)
{
    struct verbs_wqe *w = verbs_wqe_slot();
    uint32_t n = 64 + ((wqe->flags & VERBS_F_INLINE) ? wqe->len : 0);
    const uint64_t *s = (const uint64_t *)wqe;
    uint64_t *d = (uint64_t *)w;
    for (uint32_t i = 0; i < (n + 7) / 8; i++)
        d[i] = s[i];
    verbs_ring(w);
}

static inline void verbs_control(uint8_t opcode, uint32_t qpn, uint64_t local, uint64_t remote, uint32_t len,
                                 uint32_t rkey, uint32_t lkey, uint32_t ip, uint32_t rqpn)
{
    struct verbs_wqe *w = verbs_wqe_slot();
    w->opcode = opcode;
    w->flags = 0;
    w->len = (uint16_t)len;
    w->qpn = qpn;
    w->wr_id = 0;
    w->local_addr = local;
    w->remote_addr = remote;
    w->rkey = rkey;
    w->lkey = lkey;
    w->ud_ip = ip;
    w->ud_qpn = rqpn;
    verbs_ring(w);
}

static inline void verbs_reg_mr(void *addr, uint64_t len, uint32_t rkey)
{
    verbs_control(VERBS_OP_REG_MR, 0, (uint64_t)(uintptr_t)addr, len, 0, rkey, 0, 0, 0);
}

/* ring: entries * 32 bytes followed by 8 for the consumer index. */
static inline void verbs_create_cq(struct verbs_cq *cq, void *ring, uint32_t entries, uint32_t cqn)
{
    cq->ring = (struct verbs_cqe *)ring;
    cq->entries = entries;
    cq->cqn = cqn;
    cq->consumed = (volatile uint64_t *)((char *)ring + (uint64_t)entries * 32);
    for (uint32_t i = 0; i < entries; i++)
        cq->ring[i].seq = 0;
    *cq->consumed = 0;
    verbs_control(VERBS_OP_CREATE_CQ, cqn, (uint64_t)(uintptr_t)ring, 0, entries, 0, 0, 0, 0);
}

static inline void verbs_create_qp(uint32_t qpn, uint32_t transport, uint32_t cqn, uint32_t remote_ip,
                                   uint32_t remote_qpn)
{
    verbs_control(VERBS_OP_CREATE_QP, qpn, 0, 0, 0, cqn, transport, remote_ip, remote_qpn);
}

static inline void verbs_post_recv(uint32_t qpn, uint64_t wr_id, void *addr, uint32_t len)
{
    struct verbs_wqe *w = verbs_wqe_slot();
    w->opcode = VERBS_OP_RECV;
    w->flags = 0;
    w->len = (uint16_t)len;
    w->qpn = qpn;
    w->wr_id = wr_id;
    w->local_addr = (uint64_t)(uintptr_t)addr;
    verbs_ring(w);
}

/* Takes the next completion into *out; 0 if there is none yet. */
static inline int verbs_poll_cq(struct verbs_cq *cq, struct verbs_cqe *out)
{
    uint64_t n = *cq->consumed;
    struct verbs_cqe *e = &cq->ring[n % cq->entries];
    if (e->seq != (uint32_t)(n + 1))
        return 0;
    __asm__ volatile("fence r, r" ::: "memory");
    *out = *e;
    *cq->consumed = n + 1;
    return 1;
}

#endif /* VERBS_H */
