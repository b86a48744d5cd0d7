/*
 * kv_table.h: a small MICA-like key-value table for the replicated services
 * (chain_server, raft): 16-byte keys, 64-byte values, a bucketed hash index
 * with 8 slots per bucket and linear probing over buckets. Values are read
 * and written in place, so a request's words go from netRX to the slot (and
 * to netTX) without an intermediate copy.
 *
 * Capacity KV_BUCKETS * KV_SLOTS_PER_BUCKET keys; kv_slot() returns 0 when
 * the table is full.
 */
#ifndef KV_TABLE_H
#define KV_TABLE_H

#include <stdint.h>

#define KV_VALUE_WORDS 8
#define KV_SLOTS_PER_BUCKET 8
#ifndef KV_BUCKETS
#define KV_BUCKETS 128 /* 1024 keys, 96 KB (zeroed at start-up: about 0.1 ms) */
#endif

struct kv_slot {
    uint64_t k0, k1;
    uint64_t used;
    uint64_t value[KV_VALUE_WORDS];
    uint64_t pad;
};

struct kv_table {
    struct kv_slot slots[KV_BUCKETS * KV_SLOTS_PER_BUCKET];
    uint64_t keys;
};

static inline uint64_t kv_hash(uint64_t k0, uint64_t k1)
{
    uint64_t h = (k0 ^ (k1 * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}

/* The slot of key (k0, k1): its own if present; else, with insert, a free
 * slot claimed for it (used = 1, value unchanged: the caller writes it);
 * else 0. */
static inline struct kv_slot *kv_slot(struct kv_table *t, uint64_t k0, uint64_t k1, int insert)
{
    uint64_t b = kv_hash(k0, k1) % KV_BUCKETS;
    for (uint64_t probe = 0; probe < KV_BUCKETS; probe++) {
        struct kv_slot *s = &t->slots[((b + probe) % KV_BUCKETS) * KV_SLOTS_PER_BUCKET];
        for (int i = 0; i < KV_SLOTS_PER_BUCKET; i++, s++) {
            if (!s->used) {
                if (!insert)
                    return 0;
                s->used = 1;
                s->k0 = k0;
                s->k1 = k1;
                t->keys++;
                return s;
            }
            if (s->k0 == k0 && s->k1 == k1)
                return s;
        }
    }
    return 0;
}

#endif /* KV_TABLE_H */
