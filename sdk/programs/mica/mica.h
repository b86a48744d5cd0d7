/*
 * mica.h - a MICA-style key-value store (Lim et al., NSDI'14) for the nanoPU
 * application programs (mica, mica_naive, trad_mica; message format in
 * README.md). Our own code, after the MICA paper's design:
 *
 *  - the store is split into MICA_PARTITIONS partitions by the key hash's
 *    top bits (MICA's EREW partitioning: a core may own a partition; these
 *    programs serve all of them from one core);
 *  - each partition has a *hash index* of 64-byte buckets (7 slots and a
 *    link to an extra bucket when all 7 are taken; an index slot is a 16-bit
 *    tag of the hash and the entry's 48-bit log offset) and a *circular
 *    log* of entries [value length, key (16 B), value] appended at the
 *    tail (the logs are in the free memory above the program's image). An entry whose offset has fallen more than the log's size behind
 *    the tail is overwritten: its key is gone (MICA's lossy cache mode).
 *    A SET of a key whose entry holds a value of the same length updates it
 *    in place (MICA's in-place update), so a fixed key set never wraps;
 *  - keys are 16 bytes (two words), values up to MICA_MAX_VALUE bytes,
 *    multiples of 8.
 *
 * The "library" is mica_find / mica_get / mica_set (memory to memory, what
 * a traditional server and the naive nanoPU server call) plus mica_entry /
 * mica_alloc, which let the optimized nanoPU server stream values between
 * the log and the register file itself.
 *
 * The preloaded pairs and values follow crates/apps/src/mica.rs: key i is
 * (splitmix64(2i), splitmix64(2i+1)), word j of its value is
 * (i << 32) + j * 0x9E3779B97F4A7C15 (version 0).
 */
#ifndef NANOPU_MICA_H
#define NANOPU_MICA_H

#include <nanopu.h>
#include <stdint.h>
#include <string.h>

#define MICA_OP_GET 0
#define MICA_OP_SET 1
#define MICA_OK 0
#define MICA_NOT_FOUND 1
#define MICA_MALFORMED 2
#define MICA_FULL 3 /* a SET of a new key found its bucket chain full */

#ifndef MICA_PAIRS
#define MICA_PAIRS 10000
#endif
#ifndef MICA_VALUE_BYTES
#define MICA_VALUE_BYTES 512
#endif
#define MICA_MAX_VALUE 1024
#define MICA_REQ_HEADER 32   /* tag, op, key */
#define MICA_REPLY_HEADER 16 /* tag, status */

/* Partitions by the hash's top MICA_PARTITION_BITS bits; the sizes below
 * may be raised by a program that holds more pairs (nb_mica). */
#ifndef MICA_PARTITION_BITS
#define MICA_PARTITION_BITS 2
#endif
#define MICA_PARTITIONS (1 << MICA_PARTITION_BITS)
#ifndef MICA_BUCKETS
#define MICA_BUCKETS 1024       /* per partition (power of two) */
#endif
#ifndef MICA_EXTRA_BUCKETS
#define MICA_EXTRA_BUCKETS 256  /* per partition, for full buckets */
#endif
#define MICA_SLOTS 7
#ifndef MICA_LOG_BYTES
#define MICA_LOG_BYTES (4UL << 20) /* per partition */
#endif
#define MICA_OFFSET_MASK ((1UL << 48) - 1)

struct mica_bucket {
    uint64_t next; /* 1 + index of the extra bucket, 0 if none */
    uint64_t slot[MICA_SLOTS]; /* tag << 48 | (log offset + 1), 0 if empty */
};

struct mica_partition {
    struct mica_bucket buckets[MICA_BUCKETS];
    struct mica_bucket extra[MICA_EXTRA_BUCKETS];
    uint32_t extra_used;
    uint64_t tail; /* bytes appended to the log so far */
};

/* An entry in the log: header word (value length), key, value. */
struct mica_entry {
    uint64_t value_len;
    uint64_t key[2];
    uint64_t value[];
};


/* The logs live in the free memory above the per-hart areas (lib/link.ld),
 * not in .bss: a log needs no zeroing (what is live is what lies within
 * MICA_LOG_BYTES of the tail), and start-up code zeroing megabytes of .bss
 * would take milliseconds. */
extern char _end[];
#define MICA_FREE_BASE \
    ((((uintptr_t)_end + ((uintptr_t)NANOPU_MAX_HARTS << NANOPU_STACK_SHIFT)) + 4095) & ~4095UL)
#ifdef MICA_INDEX_IN_FREE_MEMORY
/* The index lives in free memory below the logs, not in .bss: a program
 * holding millions of pairs (nb_mica) skips clearing tens of megabytes at
 * start-up. It relies on memory above the image being zero at start, as
 * the simulator's DRAM is. */
#define mica_parts ((struct mica_partition *)MICA_FREE_BASE)
#define MICA_LOGS_BASE \
    ((MICA_FREE_BASE + sizeof(struct mica_partition) * MICA_PARTITIONS + 4095) & ~4095UL)
#else
static struct mica_partition mica_parts[MICA_PARTITIONS];
#define MICA_LOGS_BASE MICA_FREE_BASE
#endif

static inline uint64_t mica_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static inline uint64_t mica_hash(uint64_t k0, uint64_t k1)
{
    uint64_t h = (k0 ^ (k1 * 0x9E3779B97F4A7C15UL)) * 0xBF58476D1CE4E5B9UL;
    return h ^ (h >> 31);
}

static inline struct mica_partition *mica_part(uint64_t h)
{
    return &mica_parts[h >> (64 - MICA_PARTITION_BITS)];
}

static inline struct mica_entry *mica_at(struct mica_partition *p, uint64_t off)
{
    uintptr_t log = MICA_LOGS_BASE + (uintptr_t)(p - mica_parts) * MICA_LOG_BYTES;
    return (struct mica_entry *)(log + off % MICA_LOG_BYTES);
}

static inline int mica_live(const struct mica_partition *p, uint64_t off)
{
    return p->tail - off <= MICA_LOG_BYTES;
}

/* The slot holding key (k0, k1) of hash h, or 0. */
static inline uint64_t *mica_find(uint64_t k0, uint64_t k1, uint64_t h)
{
    struct mica_partition *p = mica_part(h);
    struct mica_bucket *b = &p->buckets[h & (MICA_BUCKETS - 1)];
    uint64_t tag = (h >> 32) & 0xffff;
    for (;;) {
        for (int i = 0; i < MICA_SLOTS; i++) {
            uint64_t s = b->slot[i];
            if (s != 0 && (s >> 48) == tag) {
                uint64_t off = (s & MICA_OFFSET_MASK) - 1;
                struct mica_entry *e = mica_at(p, off);
                if (mica_live(p, off) && e->key[0] == k0 && e->key[1] == k1)
                    return &b->slot[i];
            }
        }
        if (b->next == 0)
            return 0;
        b = &p->extra[b->next - 1];
    }
}

/* The live entry of a key, or 0. */
static inline struct mica_entry *mica_entry(uint64_t k0, uint64_t k1, uint64_t h)
{
    uint64_t *s = mica_find(k0, k1, h);
    return s ? mica_at(mica_part(h), (*s & MICA_OFFSET_MASK) - 1) : 0;
}

/* A free slot for a new key of hash h (reusing one whose entry was
 * overwritten), or 0 if the bucket chain is full and no extra bucket is left. */
static inline uint64_t *mica_free_slot(uint64_t h)
{
    struct mica_partition *p = mica_part(h);
    struct mica_bucket *b = &p->buckets[h & (MICA_BUCKETS - 1)];
    for (;;) {
        for (int i = 0; i < MICA_SLOTS; i++) {
            uint64_t s = b->slot[i];
            if (s == 0 || !mica_live(p, (s & MICA_OFFSET_MASK) - 1))
                return &b->slot[i];
        }
        if (b->next == 0) {
            if (p->extra_used == MICA_EXTRA_BUCKETS)
                return 0;
            b->next = ++p->extra_used;
        }
        b = &p->extra[b->next - 1];
    }
}

/* The entry a SET of value_len bytes writes: the key's own if its value has
 * the same length (in place), else a new one appended to the log (key and
 * length filled, the value left to the caller). 0 if the index is full. */
static inline struct mica_entry *mica_alloc(uint64_t k0, uint64_t k1, uint64_t h,
                                            uint64_t value_len)
{
    struct mica_partition *p = mica_part(h);
    uint64_t *s = mica_find(k0, k1, h);
    if (s) {
        struct mica_entry *e = mica_at(p, (*s & MICA_OFFSET_MASK) - 1);
        if (e->value_len == value_len)
            return e;
    } else {
        s = mica_free_slot(h);
        if (!s)
            return 0;
    }
    uint64_t size = sizeof(struct mica_entry) + value_len;
    /* An entry never straddles the log's end: skip to the start. */
    uint64_t room = MICA_LOG_BYTES - p->tail % MICA_LOG_BYTES;
    if (room < size)
        p->tail += room;
    uint64_t off = p->tail;
    p->tail += size;
    struct mica_entry *e = mica_at(p, off);
    e->value_len = value_len;
    e->key[0] = k0;
    e->key[1] = k1;
    *s = (((h >> 32) & 0xffff) << 48) | (off + 1);
    return e;
}

/* GET into memory: copies the value to out; its length, or -1 if missing. */
static inline long mica_get(uint64_t k0, uint64_t k1, uint64_t h, uint64_t *out)
{
    struct mica_entry *e = mica_entry(k0, k1, h);
    if (!e)
        return -1;
    memcpy(out, e->value, e->value_len);
    return (long)e->value_len;
}

/* SET from memory; 0, or -1 if the index is full. */
static inline int mica_set(uint64_t k0, uint64_t k1, uint64_t h, const uint64_t *value,
                           uint64_t value_len)
{
    struct mica_entry *e = mica_alloc(k0, k1, h, value_len);
    if (!e)
        return -1;
    memcpy(e->value, value, value_len);
    return 0;
}

/* Whether a SET's value length is one the store takes. */
static inline int mica_value_ok(uint64_t value_len)
{
    return value_len > 0 && value_len <= MICA_MAX_VALUE && value_len % 8 == 0;
}

/* The pairs every server holds at start (crates/apps/src/mica.rs). */
static inline void mica_preload(void)
{
    for (uint64_t i = 0; i < MICA_PAIRS; i++) {
        uint64_t k0 = mica_splitmix64(2 * i), k1 = mica_splitmix64(2 * i + 1);
        uint64_t h = mica_hash(k0, k1);
        struct mica_entry *e = mica_alloc(k0, k1, h, MICA_VALUE_BYTES);
        uint64_t base = i << 32;
        for (uint64_t j = 0; j < MICA_VALUE_BYTES / 8; j++)
            e->value[j] = base + j * 0x9E3779B97F4A7C15UL;
    }
}

/*
 * One request in memory (len bytes at req), the reply written to resp
 * (which may be req itself); returns the reply's length. What the
 * traditional and the naive servers run.
 */
static inline unsigned mica_process(const uint64_t *req, unsigned len, uint64_t *resp)
{
    uint64_t tag = len >= 8 ? req[0] : 0;
    uint64_t status = MICA_MALFORMED;
    if (len >= MICA_REQ_HEADER) {
        uint64_t op = req[1], k0 = req[2], k1 = req[3];
        uint64_t h = mica_hash(k0, k1);
        if (op == MICA_OP_GET && len == MICA_REQ_HEADER) {
            long n = mica_get(k0, k1, h, resp + 2);
            resp[0] = tag;
            if (n >= 0) {
                resp[1] = MICA_OK;
                return MICA_REPLY_HEADER + (unsigned)n;
            }
            status = MICA_NOT_FOUND;
        } else if (op == MICA_OP_SET && mica_value_ok(len - MICA_REQ_HEADER)) {
            status = mica_set(k0, k1, h, req + 4, len - MICA_REQ_HEADER) == 0 ? MICA_OK
                                                                              : MICA_FULL;
        }
    }
    resp[0] = tag;
    resp[1] = status;
    return MICA_REPLY_HEADER;
}

#endif
