/*
 * hd_distance: the nanoPU paper's Table 1 "HD Search" row as the prototype
 * measured it (l-nic/chipyard tag nanoPU-artifact-v1.0,
 * software/euclidean-dist/lnic-euclidean-dist.cc, driven by the
 * EUCLIDEAN_DIST load type of l-nic/firesim's switch model): the squared
 * Euclidean distance from a query of 64 16-bit dimensions to each of 2-5
 * candidate vectors named in the request, out of 10,000 held by the
 * server, and the id of the closest. Our own code, with the prototype's
 * sizes, message format and loop; its vectors are generated (the
 * prototype's are all ones), so the answer depends on the data and the
 * oracle checks a real search. The exact k-nearest-neighbour search over
 * the whole set is sdk/programs/hdsearch.
 *
 * Messages (8-byte little-endian words; README.md):
 *   request: [service, tag, q_0 .. q_15, n, id_1 .. id_n] (n in 1..=16,
 *            ids in 1..=10000; dimension 4w + j of the query is the 16-bit
 *            field j, least significant first, of word q_w, each 0-255)
 *   reply:   [service, tag, id of the closest candidate (the first of equals)]
 *            or [service, tag, 0] for a malformed request.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>

#define HD_VECTORS 10000
#define HD_DIMS 64
#define HD_QUERY_WORDS (HD_DIMS / 4)
#define HD_MAX_CANDIDATES 16

static uint16_t vectors[HD_VECTORS][HD_DIMS];

static inline uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

/* Dimension d of vector i (0-based; the oracle's `vector_coord`): 0-255 in
 * a 16-bit field, so a step's four squares fit an int, as in the
 * prototype's loop. */
static inline uint16_t vector_coord(uint64_t i, uint64_t d)
{
    return (uint16_t)(splitmix64(i * HD_DIMS + d) & 0xff);
}

static void build(void)
{
    for (uint64_t i = 0; i < HD_VECTORS; i++)
        for (uint64_t d = 0; d < HD_DIMS; d++)
            vectors[i][d] = vector_coord(i, d);
}

/* The prototype's compute_dist_squared: four dimensions a step, in int
 * (a query's fields are 0-255 too; larger ones are masked by the client). */
static inline uint64_t dist_squared(const uint16_t *a, const uint16_t *b)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < HD_DIMS; i += 4) {
        int d1 = a[i] - b[i];
        int d2 = a[i + 1] - b[i + 1];
        int d3 = a[i + 2] - b[i + 2];
        int d4 = a[i + 3] - b[i + 3];
        s += d1 * d1 + d2 * d2 + d3 * d3 + d4 * d4;
    }
    return s;
}

static void reply(uint64_t hdr, uint64_t service, uint64_t tag, uint64_t id)
{
    lnic_write_r(lnic_reply_hdr(hdr, 24));
    lnic_write_r(service);
    lnic_write_r(tag);
    lnic_write_r(id);
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr), got = 0;
    uint64_t head[2] = {0, 0};
    while (got < 2 && got < words)
        head[got++] = lnic_read();
    uint64_t query[HD_QUERY_WORDS];
    uint64_t n = 0;
    if (words >= 3 + HD_QUERY_WORDS) {
        for (unsigned w = 0; w < HD_QUERY_WORDS; w++)
            query[w] = lnic_read();
        n = lnic_read();
        got += HD_QUERY_WORDS + 1;
    }
    if (n == 0 || n > HD_MAX_CANDIDATES || words != 3 + HD_QUERY_WORDS + n ||
        lnic_hdr_len(hdr) != 8 * words) {
        for (; got < words; got++)
            (void)lnic_read();
        reply(hdr, head[0], head[1], 0);
        return;
    }
    uint64_t closest = 0, closest_dist = 0;
    int bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t id = lnic_read();
        if (id == 0 || id > HD_VECTORS) {
            bad = 1;
            continue;
        }
        uint64_t dist = dist_squared((const uint16_t *)query, vectors[id - 1]);
        if (closest == 0 || dist < closest_dist) {
            closest = id;
            closest_dist = dist;
        }
    }
    reply(hdr, head[0], head[1], bad ? 0 : closest);
}

NANOPU_RPC_SERVER(build, serve_one)
