/*
 * gopt_ipv6: G-Opt's IPv6 lookup microbenchmark (NSDI'15 §3.3): longest
 * prefix match in a DPDK-style multibit trie (rte_lpm6's layout): a first
 * table indexed by the address's top 24 bits, then groups of 256 entries,
 * one per further byte. An entry is a next hop, a pointer to a group, or
 * empty. As in the paper, the table holds random prefixes of 48 to 64 bits
 * and lookups are random addresses inside random prefixes, so a lookup makes
 * 4 to 6 dependent accesses (the first table, then groups for bytes 3, 4, 5
 * and, past 48 bits, 6 and 7).
 *
 * Differences from DPDK (not what G-Opt measures): only the top 64 bits of
 * an address are kept (the prefixes are at most 64 bits long); a prefix that
 * meets a shorter route already in its path is not inserted (random
 * prefixes of 48+ bits share paths only below /24, so almost never).
 * SIZE is the number of prefixes (the paper: 200,000; default 4096). The
 * first table is 64 MB (2^24 4-byte entries), the groups 1 KB each, about
 * four a prefix; both live in never-written memory (zero = empty).
 *
 * Usage: gopt_ipv6 [PREFIXES [LOOKUPS [B1,B2,...]]] (default 4096 1024 8).
 * Output and exit codes: see gopt.h. Checksum: the sum of the next hops found.
 */
#include <gopt.h>

#define MAX_LOOKUPS 65536
#define MAX_PREFIXES 65536
#define EXT 0x80000000u   /* the entry points to group (entry & INDEX) */
#define VALID 0x40000000u /* the entry is next hop (entry & INDEX) */
#define INDEX 0x3fffffffu

typedef uint32_t group_t[256];

static uint32_t *tbl24;
static group_t *groups;
static uint32_t ngroups;
static uint64_t prefix[MAX_PREFIXES];
static uint8_t prefix_len[MAX_PREFIXES];
static uint64_t addrs[MAX_LOOKUPS];

static inline unsigned byte_at(uint64_t a, unsigned j) { return (a >> (56 - 8 * j)) & 0xff; }

static void insert(uint64_t a, unsigned len, uint32_t nh)
{
    uint32_t *e = &tbl24[a >> 40];
    for (unsigned j = 3; j < 8; j++) {
        if (!(*e & EXT)) {
            if (*e & VALID)
                return; /* a shorter route on the path: skipped (see above) */
            *e = EXT | ngroups++;
        }
        uint32_t *g = groups[*e & INDEX];
        unsigned byte = byte_at(a, j);
        if (len > 8 * (j + 1)) {
            e = &g[byte];
            continue;
        }
        unsigned range = 1u << (8 * (j + 1) - len), from = byte & ~(range - 1);
        for (unsigned r = from; r < from + range; r++)
            if (!(g[r] & (EXT | VALID)))
                g[r] = VALID | nh;
        return;
    }
}

static inline uint32_t hop(uint32_t e) { return e & VALID ? e & INDEX : 0; }

static uint64_t ipv6_naive(unsigned n)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = addrs[i];
        uint32_t e = tbl24[a >> 40];
        for (unsigned j = 3; e & EXT; j++)
            e = groups[e & INDEX][byte_at(a, j)];
        sum += hop(e);
    }
    return sum;
}

static uint64_t ipv6_batch(unsigned first, unsigned n)
{
    uint64_t a[GOPT_MAX_BATCH];
    const uint32_t *ep[GOPT_MAX_BATCH];
    unsigned j[GOPT_MAX_BATCH];
    uint64_t sum = 0;
    uint32_t e;
    G_STATE(n);
g_label_0:
    a[I] = addrs[first + I];
    ep[I] = &tbl24[a[I] >> 40];
    j[I] = 3;
    G_PSS(ep[I], g_label_1);
g_label_1:
    e = *ep[I];
    if (e & EXT) {
        ep[I] = &groups[e & INDEX][byte_at(a[I], j[I]++)];
        G_PSS(ep[I], g_label_1);
    }
    sum += hop(e);
    G_END(done);
done:
    return sum;
}

static uint64_t ipv6_gopt(unsigned n, unsigned batch)
{
    uint64_t sum = 0;
    for (unsigned first = 0; first < n; first += batch)
        sum += ipv6_batch(first, n - first < batch ? n - first : batch);
    return sum;
}

int main(int argc, char **argv)
{
    struct gopt_args a;
    if (gopt_parse(argc, argv, &a, 4096, 1024, MAX_PREFIXES, MAX_LOOKUPS))
        return 2;
    tbl24 = gopt_arena();
    groups = (group_t *)(tbl24 + (1u << 24));
    uint64_t rng = 11;
    for (unsigned i = 0; i < a.size; i++) {
        unsigned len = 48 + (unsigned)(gopt_rand(&rng) % 17);
        uint64_t p = gopt_rand(&rng);
        if (len < 64)
            p &= ~(~0ULL >> len);
        prefix[i] = p;
        prefix_len[i] = (uint8_t)len;
        insert(p, len, 1 + i);
    }
    for (unsigned i = 0; i < a.lookups; i++) {
        uint64_t r = gopt_rand(&rng);
        unsigned p = (unsigned)(r % a.size), len = prefix_len[p];
        uint64_t host = gopt_rand(&rng);
        addrs[i] = prefix[p] | (len < 64 ? host & (~0ULL >> len) : 0);
    }
    const void *flush = &groups[ngroups];
    return GOPT_RUN_ALL("gopt_ipv6", &a, flush, ipv6_naive(a.lookups), ipv6_gopt(a.lookups, B));
}
