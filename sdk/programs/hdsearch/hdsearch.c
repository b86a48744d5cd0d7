/*
 * hdsearch: k-nearest-neighbour search over high-dimensional feature
 * vectors on a nanoPU node (nanoPU paper Table 1, "HD Search", after
 * uSuite's HDSearch). Our own code. Hart 0 generates HD_POINTS points of
 * HD_DIMS one-byte dimensions at start, in HD_CLUSTERS clusters, and a
 * bounding box per cluster. A query's dimensions come from netRX; the
 * program bounds each cluster's squared distance from below by its box,
 * scans clusters nearest-box first, abandons a point's distance as soon as
 * it exceeds the k-th best, and stops when no box can hold a nearer point:
 * the result is exact, the k nearest by (squared distance, id), which the
 * oracle (crates/apps/src/hdsearch.rs) finds by brute force. Every core
 * serves context 0. Message format: README.md.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>

#define HD_POINTS 2048
#define HD_DIMS 64
#define HD_CLUSTERS 64
#define HD_PER_CLUSTER (HD_POINTS / HD_CLUSTERS)
#define HD_K 4
#define HD_BOUND_DIMS 8
#define HD_OK 0
#define HD_MALFORMED 2
#define HD_FAR 0xffffffffu

/* Point p is in cluster p % HD_CLUSTERS; stored cluster by cluster. */
static uint8_t points[HD_CLUSTERS][HD_PER_CLUSTER][HD_DIMS];
static uint8_t box_lo[HD_CLUSTERS][HD_DIMS], box_hi[HD_CLUSTERS][HD_DIMS];

static inline uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

/* Dimension d of point p (the oracle's `point_coord`): its cluster's
 * centre plus noise in -20..=20, clamped to 0..255. */
static inline uint8_t point_coord(uint64_t p, uint64_t d)
{
    uint64_t c = p % HD_CLUSTERS;
    int64_t centre = (int64_t)(splitmix64(c * HD_DIMS + d) % 256);
    int64_t noise = (int64_t)(splitmix64((1UL << 40) | (p * HD_DIMS + d)) % 41) - 20;
    int64_t v = centre + noise;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void build(void)
{
    for (unsigned c = 0; c < HD_CLUSTERS; c++)
        for (unsigned d = 0; d < HD_DIMS; d++) {
            box_lo[c][d] = 255;
            box_hi[c][d] = 0;
        }
    for (uint64_t p = 0; p < HD_POINTS; p++) {
        unsigned c = p % HD_CLUSTERS, i = p / HD_CLUSTERS;
        for (unsigned d = 0; d < HD_DIMS; d++) {
            uint8_t v = point_coord(p, d);
            points[c][i][d] = v;
            if (v < box_lo[c][d])
                box_lo[c][d] = v;
            if (v > box_hi[c][d])
                box_hi[c][d] = v;
        }
    }
}

struct best {
    uint32_t dist[HD_K], id[HD_K];
};

/* Inserts (dist, id) if it beats the k-th best; kept sorted by (dist, id). */
static inline void offer(struct best *b, uint32_t dist, uint32_t id)
{
    int i = HD_K - 1;
    if (dist > b->dist[i] || (dist == b->dist[i] && id > b->id[i]))
        return;
    while (i > 0 && (dist < b->dist[i - 1] || (dist == b->dist[i - 1] && id < b->id[i - 1]))) {
        b->dist[i] = b->dist[i - 1];
        b->id[i] = b->id[i - 1];
        i--;
    }
    b->dist[i] = dist;
    b->id[i] = id;
}

/* The squared distance from q to cluster c's box over dimensions [from, to):
 * a lower bound of q's squared distance to any point of c. */
static inline uint32_t box_bound(const int32_t *q, unsigned c, unsigned from, unsigned to)
{
    uint32_t s = 0;
    for (unsigned d = from; d < to; d++) {
        int32_t lo = box_lo[c][d], hi = box_hi[c][d], x = q[d];
        int32_t gap = x < lo ? lo - x : x > hi ? x - hi : 0;
        s += (uint32_t)(gap * gap);
    }
    return s;
}

static void search(const int32_t *q, struct best *b)
{
    /* A cheap bound first, over HD_BOUND_DIMS dimensions only (a partial sum
     * is a lower bound too); a cluster's bound is completed over every
     * dimension just before it would be scanned. */
    uint32_t lower[HD_CLUSTERS];
    uint8_t complete[HD_CLUSTERS];
    for (unsigned c = 0; c < HD_CLUSTERS; c++) {
        lower[c] = box_bound(q, c, 0, HD_BOUND_DIMS);
        complete[c] = 0;
    }
    for (int i = 0; i < HD_K; i++) {
        b->dist[i] = HD_FAR;
        b->id[i] = HD_FAR;
    }
    for (;;) {
        /* The unscanned cluster with the smallest bound. */
        unsigned next = 0;
        uint32_t bound = HD_FAR;
        for (unsigned c = 0; c < HD_CLUSTERS; c++)
            if (lower[c] < bound) {
                bound = lower[c];
                next = c;
            }
        if (bound == HD_FAR || bound > b->dist[HD_K - 1])
            return;
        if (!complete[next]) {
            lower[next] += box_bound(q, next, HD_BOUND_DIMS, HD_DIMS);
            complete[next] = 1;
            continue;
        }
        lower[next] = HD_FAR;
        for (unsigned i = 0; i < HD_PER_CLUSTER; i++) {
            const uint8_t *x = points[next][i];
            uint32_t limit = b->dist[HD_K - 1], s = 0;
            for (unsigned d = 0; d < HD_DIMS && s <= limit; d += 8)
                for (unsigned e = d; e < d + 8; e++) {
                    int32_t g = q[e] - x[e];
                    s += (uint32_t)(g * g);
                }
            if (s <= limit)
                offer(b, s, i * HD_CLUSTERS + next);
        }
    }
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    if (words != 1 + HD_DIMS / 8 || lnic_hdr_len(hdr) != 8 * (1 + HD_DIMS / 8)) {
        for (uint32_t i = 1; i < words; i++)
            (void)lnic_read();
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(HD_MALFORMED);
        return;
    }
    int32_t q[HD_DIMS];
    for (unsigned w = 0; w < HD_DIMS / 8; w++) {
        uint64_t v = lnic_read();
        for (unsigned j = 0; j < 8; j++)
            q[8 * w + j] = (int32_t)((v >> (8 * j)) & 0xff);
    }
    struct best b;
    search(q, &b);
    lnic_write_r(lnic_reply_hdr(hdr, 16 + 8 * HD_K));
    lnic_write_r(tag);
    lnic_write_i(HD_OK);
    for (int i = 0; i < HD_K; i++)
        lnic_write_r((uint64_t)b.id[i]);
}

NANOPU_RPC_SERVER(build, serve_one)
