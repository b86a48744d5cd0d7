/*
 * gopt_cuckoo: G-Opt's cuckoo-hashing microbenchmark (NSDI'15 §3.3): a 2-8
 * cuckoo hash table (two candidate buckets per key, 8 slots per bucket; MemC3's
 * terminology) mapping 32-bit keys to 32-bit values. A bucket is one 64-byte
 * line: 8 keys, then their 8 values. Computation: hashing a key (one multiply
 * per hash); memory: reading the candidate buckets (1.5 a lookup on average).
 *
 * The table has 2^SIZE buckets (SIZE = 17: 8 MB, 16x the 512 KB L2) and is
 * built full without cuckoo insertion (whose random displacements would make
 * the build slow): with multiplicative hashing, h1(k) = (k H1) >> s and
 * h2(k) = ((k ^ M) H2) >> s (s = 32 - SIZE), the key that hashes to bucket b
 * with low bits r is k = ((b << s) | r) H1^-1 (mod 2^32), or
 * (((b << s) | r) H2^-1) ^ M for h2. Slots 0-3 of each bucket hold keys
 * whose first bucket it is, slots 4-7 keys whose second bucket it is (their
 * lookups read their first bucket in vain first). The slot number is part of
 * r, so keys are distinct within each half. Lookups are keys of random slots;
 * the value of key k is k * 0x9e3779b1 + 1.
 *
 * Usage: gopt_cuckoo [SIZE_LOG2 [LOOKUPS [B1,B2,...]]] (default 17 2048 8).
 * Output and exit codes: see gopt.h. Checksum: the sum of the values found.
 */
#include <gopt.h>

#define MAX_LOOKUPS 65536
#define SLOTS 8
#define H1 0x9e3779b1u
#define H2 0x85ebca6bu
#define M2 0x5bd1e995u

struct bucket {
    uint32_t key[SLOTS];
    uint32_t val[SLOTS];
};

static struct bucket *T;
static unsigned shift;
static uint32_t keys[MAX_LOOKUPS];

static inline uint32_t hash1(uint32_t k) { return (k * H1) >> shift; }
static inline uint32_t hash2(uint32_t k) { return ((k ^ M2) * H2) >> shift; }
static inline uint32_t value_of(uint32_t k) { return k * 0x9e3779b1u + 1; }

/* The inverse of odd x modulo 2^32 (Newton's iteration). */
static uint32_t inverse(uint32_t x)
{
    uint32_t y = x;
    for (int i = 0; i < 5; i++)
        y *= 2 - x * y;
    return y;
}

static uint32_t inv1, inv2;

/* The key stored in slot s of bucket b. */
static inline uint32_t key_at(uint32_t b, unsigned s)
{
    uint32_t low = ((uint32_t)s << (shift - 3)) | ((b * 0x2545f491u) & ((1u << (shift - 3)) - 1));
    uint32_t y = (b << shift) | low;
    return s < SLOTS / 2 ? y * inv1 : (y * inv2) ^ M2;
}

static uint64_t cuckoo_naive(unsigned n)
{
    uint64_t sum = 0;
    for (unsigned j = 0; j < n; j++) {
        uint32_t k = keys[j], v = 0;
        const struct bucket *b = &T[hash1(k)];
        for (unsigned s = 0; s < SLOTS; s++)
            if (b->key[s] == k) {
                v = b->val[s];
                goto found;
            }
        b = &T[hash2(k)];
        for (unsigned s = 0; s < SLOTS; s++)
            if (b->key[s] == k) {
                v = b->val[s];
                goto found;
            }
    found:
        sum += v;
    }
    return sum;
}

static uint64_t cuckoo_batch(unsigned first, unsigned n)
{
    uint32_t k[GOPT_MAX_BATCH];
    const struct bucket *b[GOPT_MAX_BATCH];
    uint64_t sum = 0;
    uint32_t v;
    G_STATE(n);
g_label_0:
    k[I] = keys[first + I];
    b[I] = &T[hash1(k[I])];
    G_PSS(b[I], g_label_1);
g_label_1:
    for (unsigned s = 0; s < SLOTS; s++)
        if (b[I]->key[s] == k[I]) {
            v = b[I]->val[s];
            goto g_found;
        }
    b[I] = &T[hash2(k[I])];
    G_PSS(b[I], g_label_2);
g_label_2:
    v = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        if (b[I]->key[s] == k[I]) {
            v = b[I]->val[s];
            break;
        }
g_found:
    sum += v;
    G_END(done);
done:
    return sum;
}

static uint64_t cuckoo_gopt(unsigned n, unsigned batch)
{
    uint64_t sum = 0;
    for (unsigned first = 0; first < n; first += batch)
        sum += cuckoo_batch(first, n - first < batch ? n - first : batch);
    return sum;
}

int main(int argc, char **argv)
{
    struct gopt_args a;
    if (gopt_parse(argc, argv, &a, 17, 2048, 24, MAX_LOOKUPS))
        return 2;
    uint32_t buckets = 1u << a.size;
    shift = 32 - a.size;
    inv1 = inverse(H1);
    inv2 = inverse(H2);
    T = gopt_arena();
    for (uint32_t b = 0; b < buckets; b++)
        for (unsigned s = 0; s < SLOTS; s++) {
            uint32_t k = key_at(b, s);
            T[b].key[s] = k;
            T[b].val[s] = value_of(k);
        }
    uint64_t rng = 7;
    for (unsigned j = 0; j < a.lookups; j++) {
        uint64_t r = gopt_rand(&rng);
        keys[j] = key_at((uint32_t)r & (buckets - 1), (unsigned)(r >> 32) % SLOTS);
    }
    const void *flush = &T[buckets];
    return GOPT_RUN_ALL("gopt_cuckoo", &a, flush, cuckoo_naive(a.lookups),
                        cuckoo_gopt(a.lookups, B));
}
