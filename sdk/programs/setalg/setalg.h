/*
 * setalg.h - set algebra on an inverted index (nanoPU paper §5.3, Fig. 10),
 * shared by setalg (nanoPU) and trad_setalg (IceNIC). Our own code.
 *
 * The corpus (crates/apps/src/setalg.rs builds the same one): SETALG_DOCS
 * documents over SETALG_WORDS words; document d holds word w iff
 * splitmix64(d * SETALG_WORDS + w) % 1000000 < 900000 / (w + 1), so word
 * frequencies fall as 1/rank (Zipf). setalg_build() makes each word's
 * posting list (ascending document ids); setalg_query() intersects the
 * lists of a query's words, shortest first. Message format: README.md.
 */
#ifndef NANOPU_SETALG_H
#define NANOPU_SETALG_H

#include <stdint.h>

#define SETALG_DOCS 100
#define SETALG_WORDS 200
#define SETALG_MAX_QUERY 4
#define SETALG_OK 0
#define SETALG_MALFORMED 2

static uint16_t setalg_postings[SETALG_WORDS][SETALG_DOCS];
static uint16_t setalg_len[SETALG_WORDS];

static inline uint64_t setalg_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static inline void setalg_build(void)
{
    for (uint64_t w = 0; w < SETALG_WORDS; w++) {
        uint64_t threshold = 900000 / (w + 1);
        uint16_t n = 0;
        for (uint64_t d = 0; d < SETALG_DOCS; d++)
            if (setalg_splitmix64(d * SETALG_WORDS + w) % 1000000 < threshold)
                setalg_postings[w][n++] = (uint16_t)d;
        setalg_len[w] = n;
    }
}

/* Whether a query of n words (message length len) is well formed. */
static inline int setalg_query_ok(uint64_t n, unsigned len, const uint64_t *words)
{
    if (n == 0 || n > SETALG_MAX_QUERY || len != 16 + 8 * n)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        if (words[i] >= SETALG_WORDS)
            return 0;
    return 1;
}

/* The documents holding every one of the n (valid) words, ascending, into
 * out (room for SETALG_DOCS); returns how many. */
static inline unsigned setalg_query(const uint64_t *words, unsigned n, uint64_t *out)
{
    uint64_t q[SETALG_MAX_QUERY];
    for (unsigned i = 0; i < n; i++) {
        /* Insertion by posting length: the shortest list first. */
        unsigned j = i;
        while (j > 0 && setalg_len[q[j - 1]] > setalg_len[words[i]]) {
            q[j] = q[j - 1];
            j--;
        }
        q[j] = words[i];
    }
    unsigned k = setalg_len[q[0]];
    for (unsigned i = 0; i < k; i++)
        out[i] = setalg_postings[q[0]][i];
    for (unsigned i = 1; i < n && k > 0; i++) {
        const uint16_t *p = setalg_postings[q[i]];
        unsigned m = setalg_len[q[i]], a = 0, b = 0, kept = 0;
        while (a < k && b < m) {
            if (out[a] < p[b])
                a++;
            else if (out[a] > p[b])
                b++;
            else {
                out[kept++] = out[a];
                a++;
                b++;
            }
        }
        k = kept;
    }
    return k;
}

#endif
