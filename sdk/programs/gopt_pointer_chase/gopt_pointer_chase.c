/*
 * gopt_pointer_chase: G-Opt's pointer-chasing microbenchmark (NSDI'15 §2.5
 * and §3.3, depth D = 100): each lookup follows a chain of 100 dependent
 * loads through a table L of 2^SIZE 32-bit indices, H = L[H].
 *
 * L is one cycle through all its entries, L[i] = (A i + C) mod 2^SIZE with
 * A = 1 mod 4 and C odd (Hull-Dobell: a single cycle), built with one add
 * and one store per entry; the paper uses a random permutation, which needs
 * random swaps to build. Successive entries of a chain are A apart modulo
 * the table, far more than a line, so every step is a cache miss unless the
 * line is still in a cache: with SIZE = 21 (8 MB, 16x the 512 KB L2) and
 * more, almost never. Chains start at random entries.
 *
 * Usage: gopt_pointer_chase [SIZE_LOG2 [LOOKUPS [B1,B2,...]]] (default 21 128 8).
 * Output and exit codes: see gopt.h. Checksum: the sum of the chains' ends.
 */
#include <gopt.h>

#define DEPTH 100
#define MAX_LOOKUPS 65536

static uint32_t *L;
static uint32_t starts[MAX_LOOKUPS];

static uint64_t chase_naive(unsigned n)
{
    uint64_t sum = 0;
    for (unsigned j = 0; j < n; j++) {
        uint32_t p = starts[j];
        for (unsigned d = 0; d < DEPTH; d++)
            p = L[p];
        sum += p;
    }
    return sum;
}

/* The lookups first..first+n-1, G-Opt style. */
static uint64_t chase_batch(unsigned first, unsigned n)
{
    uint32_t p[GOPT_MAX_BATCH];
    unsigned d[GOPT_MAX_BATCH];
    uint64_t sum = 0;
    G_STATE(n);
g_label_0:
    p[I] = starts[first + I];
    d[I] = 0;
g_step:
    G_PSS(&L[p[I]], g_label_1);
g_label_1:
    p[I] = L[p[I]];
    if (++d[I] < DEPTH)
        goto g_step;
    sum += p[I];
    G_END(done);
done:
    return sum;
}

static uint64_t chase_gopt(unsigned n, unsigned batch)
{
    uint64_t sum = 0;
    for (unsigned first = 0; first < n; first += batch)
        sum += chase_batch(first, n - first < batch ? n - first : batch);
    return sum;
}

int main(int argc, char **argv)
{
    struct gopt_args a;
    if (gopt_parse(argc, argv, &a, 21, 128, 28, MAX_LOOKUPS))
        return 2;
    uint32_t entries = 1u << a.size, mask = entries - 1;
    const uint32_t A = (0x9e3779b9u & ~3u) | 1u, C = 0x7f4a7c15u;
    L = gopt_arena();
    for (uint32_t i = 0, x = C & mask; i < entries; i++, x = (x + A) & mask)
        L[i] = x;
    uint64_t rng = 42;
    for (unsigned j = 0; j < a.lookups; j++)
        starts[j] = (uint32_t)gopt_rand(&rng) & mask;
    const void *flush = (const char *)L + ((size_t)entries << 2);
    return GOPT_RUN_ALL("gopt_pointer_chase", &a, flush, chase_naive(a.lookups),
                        chase_gopt(a.lookups, B));
}
