/*
 * nebula.h - the RPC interface of NEBULA (Sutherland et al., ISCA'20,
 * Fig. 4) over the NIC's memory-mapped queues (crates/node/src/
 * nebula_queues.rs has the register map):
 *
 *   nebula_init()                 give the NIC its receive buffer (software
 *                                 allocates it, the NIC manages it, §V-B)
 *   nebula_wait_for_rpc(&rpc)     poll this core's completion queue
 *   nebula_free_buffer(p, len)    let the NIC reclaim the RPC's buffer
 *   nebula_rpc_send(p, len, tok)  send a reply (the NIC reads it from memory)
 *   nebula_next_rpc()             the next RPC's payload, if one waits (for a
 *                                 software prefetch, NEBULA §VII-C)
 *
 * One thread per core; each core has its own queues.
 */
#ifndef NANOPU_NEBULA_H
#define NANOPU_NEBULA_H

#include <stdint.h>
#include <nanopu_rt.h>

#define NEBULA_BASE 0x10020000UL
#define NEBULA_CORE_BLOCK 0x100UL
#define NEBULA_GLOBAL (NEBULA_BASE + 0x8000UL)

struct nebula_rpc {
    uint64_t *payload; /* the RPC's message in the receive buffer */
    uint32_t len;      /* its length in bytes */
    uint32_t token;    /* names the RPC for nebula_rpc_send */
};

static inline volatile uint64_t *nebula_regs(void)
{
    return (volatile uint64_t *)(NEBULA_BASE + NEBULA_CORE_BLOCK * nanopu_hartid());
}

/* Registers `base` (aligned to 64 B) as the receive buffer; returns the
 * bytes the NIC needs there (ask first with nebula_buffer_bytes). */
static inline uint64_t nebula_buffer_bytes(void)
{
    return *(volatile uint64_t *)NEBULA_GLOBAL;
}

static inline void nebula_register_buffer(void *base)
{
    __asm__ volatile("fence" ::: "memory");
    *(volatile uint64_t *)(NEBULA_GLOBAL + 8) = (uint64_t)(uintptr_t)base;
}

static inline void nebula_wait_for_rpc(struct nebula_rpc *rpc)
{
    volatile uint64_t *q = nebula_regs();
    while (q[0] == 0)
        ;
    rpc->payload = (uint64_t *)(uintptr_t)q[1];
    rpc->len = (uint32_t)q[2];
    rpc->token = (uint32_t)q[3];
}

static inline void nebula_free_buffer(const void *p, uint32_t len)
{
    volatile uint64_t *q = nebula_regs();
    q[8] = (uint64_t)(uintptr_t)p;
    q[9] = len;
}

static inline void nebula_rpc_send(const void *p, uint32_t len, uint32_t token)
{
    volatile uint64_t *q = nebula_regs();
    __asm__ volatile("fence" ::: "memory");
    q[4] = (uint64_t)(uintptr_t)p;
    q[5] = len;
    q[6] = token;
}

static inline const void *nebula_next_rpc(void)
{
    return (const void *)(uintptr_t)nebula_regs()[10];
}

#endif
