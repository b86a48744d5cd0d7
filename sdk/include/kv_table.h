/*
 * kv_table.h: a small MICA-like key-value table for the replicated services
 * (chain_server, raft): 16-byte keys, 64-byte values. As in MICA's index, a
 * bucket is one cache line of 8 tags (a key's hash, never 0; 0 marks a free
 * slot), so a lookup reads one line and then only the slot whose tag
 * matches; a full bucket overflows into the next. Values are read and
 * written in place, so a request's words go from netRX to the slot (and to
 * netTX) without an intermediate copy.
 *
 * Capacity KV_BUCKETS * KV_SLOTS_PER_BUCKET keys; kv_slot() returns 0 when
 * the table is full. Nothing is ever deleted.
 */
#ifndef KV_TABLE_H
#define KV_TABLE_H

#include <stdint.h>

#define KV_VALUE_WORDS 8
#define KV_SLOTS_PER_BUCKET 8
#ifndef KV_BUCKETS
#define KV_BUCKETS 256 /* 2048 keys, 208 KB (zeroed at start-up: about 0.25 ms) */
#endif

struct kv_slot {
    uint64_t k0, k1;
    uint64_t value[KV_VALUE_WORDS];
};

struct kv_bucket {
    uint64_t tags[KV_SLOTS_PER_BUCKET];
} __attribute__((aligned(64)));

struct kv_table {
    struct kv_bucket buckets[KV_BUCKETS];
    struct kv_slot slots[KV_BUCKETS * KV_SLOTS_PER_BUCKET];
    uint64_t keys;
};

static inline uint64_t kv_hash(uint64_t k0, uint64_t k1)
{
    uint64_t h = (k0 ^ (k1 * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}

/* The slot of key (k0, k1): its own if present; else, with insert, a free
 * slot claimed for it (its value unchanged: the caller writes it); else 0. */
static inline struct kv_slot *kv_slot(struct kv_table *t, uint64_t k0, uint64_t k1, int insert)
{
    uint64_t h = kv_hash(k0, k1);
    uint64_t tag = h | 1;
    uint64_t b = (h >> 1) % KV_BUCKETS;
    for (uint64_t probe = 0; probe < KV_BUCKETS; probe++, b = (b + 1) % KV_BUCKETS) {
        struct kv_bucket *bucket = &t->buckets[b];
        for (int i = 0; i < KV_SLOTS_PER_BUCKET; i++) {
            uint64_t have = bucket->tags[i];
            struct kv_slot *s = &t->slots[b * KV_SLOTS_PER_BUCKET + (uint64_t)i];
            if (have == 0) {
                if (!insert)
                    return 0;
                bucket->tags[i] = tag;
                s->k0 = k0;
                s->k1 = k1;
                t->keys++;
                return s;
            }
            if (have == tag && s->k0 == k0 && s->k1 == k1)
                return s;
        }
    }
    return 0;
}

#endif /* KV_TABLE_H */
