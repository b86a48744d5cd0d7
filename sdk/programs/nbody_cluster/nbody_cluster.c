/*
 * nbody_cluster: an N-body simulation spread over the nodes of a `nanopu
 * net` cluster (nanoPU paper Table 1, "N-Body Sim.": "computes gravitational
 * force for simulated bodies"). Our own code. Each node owns NB_LOCAL
 * bodies; every step it sends its bodies, NB_CHUNK at a time, to every other
 * node, which answers with the force its own bodies exert on them (the
 * request and reply formats of sdk/programs/nbody), serves the same
 * requests from the others, then adds up the forces in a fixed order and
 * moves its bodies (semi-implicit Euler). A node answers a request only
 * with the positions of the request's step (requests for the next step that
 * arrive early are kept until then), so the result does not depend on
 * timing: at the end each node prints a checksum of its bodies' positions
 * and velocities that crates/apps/src/nbody.rs (`cluster_checksums`)
 * computes the same, bit for bit (-ffp-contract=off, see program.mk).
 *
 * Arguments: STEPS OWN_IP NODE_IP... (every node's address, in one order
 * shared by all; `args = ["4", "{ip}", "10.0.0.1", "10.0.0.2", ...]`).
 * Message format and output: README.md.
 */
#include <nanopu.h>
#include <nanopu_rt.h>
#include <replica.h>
#include <stdio.h>
#include <stdlib.h>

#define NB_LOCAL 16
#define NB_CHUNK 4
#define NB_CHUNKS (NB_LOCAL / NB_CHUNK)
#define NB_MAX_NODES 16
#define NB_EPS2 0.01
#define NB_DT 0.001
#define NB_OK 0
#define NB_REQUEST_WORDS (2 + 4 * NB_CHUNK)
#define NB_REPLY_WORDS (2 + 3 * NB_CHUNK)
/* Every node registers its context a few cycles after reset; waiting this
 * long before the first request means no request reaches a node before it
 * listens (the NIC drops messages to unregistered contexts). */
#define NB_START_DELAY_TICKS 5 /* us: mtime ticks at 1 MHz */

static double px[NB_LOCAL], py[NB_LOCAL], pz[NB_LOCAL], pm[NB_LOCAL];
static double vx[NB_LOCAL], vy[NB_LOCAL], vz[NB_LOCAL];
/* ext[p][i]: the force node p's bodies exert on our body i this step. */
static double ext[NB_MAX_NODES][NB_LOCAL][3];
static uint32_t ips[NB_MAX_NODES];
static int nodes, self;
static uint64_t step;
static int replies_left, requests_left;

/* Requests for the next step that arrived before we finished this one. */
struct early {
    uint64_t hdr, tag;
    double body[NB_CHUNK][4];
};
static struct early early[NB_MAX_NODES * NB_CHUNKS];
static int n_early;

static inline uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static inline double unit(uint64_t x) { return (double)(splitmix64(x) >> 44) / 1048576.0; }

static inline double as_double(uint64_t w)
{
    union { uint64_t u; double d; } v = {.u = w};
    return v.d;
}

static inline uint64_t as_word(double d)
{
    union { double d; uint64_t u; } v = {.d = d};
    return v.u;
}

static void fail(const char *what, uint64_t a, uint64_t b)
{
    printf("nbody_cluster node %d: %s (%lu, %lu)\n", self, what, (unsigned long)a, (unsigned long)b);
    exit(3);
}

static int node_of(uint32_t ip)
{
    for (int p = 0; p < nodes; p++)
        if (ips[p] == ip)
            return p;
    return -1;
}

/* The force our bodies exert on a body at (x, y, z) of mass m, summed over
 * our bodies in order (the nbody program's loop). */
static void force_on(double x, double y, double z, double m, double f[3])
{
    double fx = 0.0, fy = 0.0, fz = 0.0;
    for (int j = 0; j < NB_LOCAL; j++) {
        double dx = px[j] - x, dy = py[j] - y, dz = pz[j] - z;
        double d2 = dx * dx + dy * dy + dz * dz + NB_EPS2;
        double s = m * pm[j] * (1.0 / (d2 * __builtin_sqrt(d2)));
        fx = fx + s * dx;
        fy = fy + s * dy;
        fz = fz + s * dz;
    }
    f[0] = fx;
    f[1] = fy;
    f[2] = fz;
}

static void answer(uint64_t hdr, uint64_t tag, double body[NB_CHUNK][4])
{
    double f[NB_CHUNK][3];
    for (int r = 0; r < NB_CHUNK; r++)
        force_on(body[r][0], body[r][1], body[r][2], body[r][3], f[r]);
    lnic_write_r(lnic_reply_hdr(hdr, 8 * NB_REPLY_WORDS));
    lnic_write_r(tag);
    lnic_write_i(NB_OK);
    for (int r = 0; r < NB_CHUNK; r++)
        for (int k = 0; k < 3; k++)
            lnic_write_r(as_word(f[r][k]));
    requests_left--;
}

/* Handles one received message (header already read). */
static void on_message(uint64_t hdr)
{
    uint32_t words = lnic_hdr_words(hdr);
    int p = node_of(lnic_hdr_ip(hdr));
    if (p < 0 || p == self || words < 2)
        fail("message from an unknown node or too short", lnic_hdr_ip(hdr), words);
    uint64_t tag = lnic_read();
    uint64_t kind = lnic_read();
    uint64_t tag_step = tag >> 16;
    if (kind == NB_OK && words == NB_REPLY_WORDS) {
        int chunk = (int)(tag & 0xff);
        if (tag_step != step || chunk >= NB_CHUNKS || (int)((tag >> 8) & 0xff) != self)
            fail("reply that is not ours", tag, step);
        for (int r = 0; r < NB_CHUNK; r++)
            for (int k = 0; k < 3; k++)
                ext[p][chunk * NB_CHUNK + r][k] = as_double(lnic_read());
        replies_left--;
    } else if (kind == NB_CHUNK && words == NB_REQUEST_WORDS) {
        double body[NB_CHUNK][4];
        for (int r = 0; r < NB_CHUNK; r++)
            for (int k = 0; k < 4; k++)
                body[r][k] = as_double(lnic_read());
        if (tag_step == step) {
            answer(hdr, tag, body);
        } else if (tag_step == step + 1 && n_early < NB_MAX_NODES * NB_CHUNKS) {
            struct early *e = &early[n_early++];
            e->hdr = hdr;
            e->tag = tag;
            for (int r = 0; r < NB_CHUNK; r++)
                for (int k = 0; k < 4; k++)
                    e->body[r][k] = body[r][k];
        } else {
            fail("request for another step", tag_step, step);
        }
    } else {
        fail("malformed message", kind, words);
    }
    lnic_msg_done();
}

static void poll_messages(void)
{
    while (lnic_has_msg())
        on_message(lnic_read());
}

static void send_bodies(int p)
{
    for (int c = 0; c < NB_CHUNKS; c++) {
        poll_messages(); /* keep our RX queue moving while we send */
        lnic_write_r(lnic_hdr(ips[p], 0, 8 * NB_REQUEST_WORDS));
        lnic_write_r((step << 16) | ((uint64_t)self << 8) | (uint64_t)c);
        lnic_write_i(NB_CHUNK);
        for (int r = c * NB_CHUNK; r < (c + 1) * NB_CHUNK; r++) {
            lnic_write_r(as_word(px[r]));
            lnic_write_r(as_word(py[r]));
            lnic_write_r(as_word(pz[r]));
            lnic_write_r(as_word(pm[r]));
        }
    }
}

static void integrate(void)
{
    double f[NB_LOCAL][3];
    for (int i = 0; i < NB_LOCAL; i++)
        force_on(px[i], py[i], pz[i], pm[i], f[i]);
    for (int i = 0; i < NB_LOCAL; i++) {
        for (int p = 0; p < nodes; p++) {
            if (p == self)
                continue;
            f[i][0] = f[i][0] + ext[p][i][0];
            f[i][1] = f[i][1] + ext[p][i][1];
            f[i][2] = f[i][2] + ext[p][i][2];
        }
        vx[i] = vx[i] + (f[i][0] / pm[i]) * NB_DT;
        vy[i] = vy[i] + (f[i][1] / pm[i]) * NB_DT;
        vz[i] = vz[i] + (f[i][2] / pm[i]) * NB_DT;
        px[i] = px[i] + vx[i] * NB_DT;
        py[i] = py[i] + vy[i] * NB_DT;
        pz[i] = pz[i] + vz[i] * NB_DT;
    }
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? strtol(argv[1], 0, 10) : 0;
    nodes = argc - 3;
    if (steps <= 0 || nodes < 2 || nodes > NB_MAX_NODES) {
        printf("nbody_cluster: arguments: STEPS OWN_IP NODE_IP... (2 to %d nodes)\n", NB_MAX_NODES);
        return 2;
    }
    uint32_t me = replica_parse_ip(argv[2]);
    self = -1;
    for (int p = 0; p < nodes; p++) {
        ips[p] = replica_parse_ip(argv[3 + p]);
        if (ips[p] == 0) {
            printf("nbody_cluster: %s is not an IPv4 address\n", argv[3 + p]);
            return 2;
        }
        if (ips[p] == me)
            self = p;
    }
    if (me == 0 || self < 0) {
        printf("nbody_cluster: own address %s is not in the node list\n", argv[2]);
        return 2;
    }
    uint64_t base = (uint64_t)(self + 1) << 32;
    for (uint64_t i = 0; i < NB_LOCAL; i++) {
        px[i] = 2.0 * unit(base + 4 * i) - 1.0;
        py[i] = 2.0 * unit(base + 4 * i + 1) - 1.0;
        pz[i] = 2.0 * unit(base + 4 * i + 2) - 1.0;
        pm[i] = 1.0 + unit(base + 4 * i + 3);
        vx[i] = vy[i] = vz[i] = 0.0;
    }
    lnic_add_context(0, 0);
    lnic_boot();
    uint64_t start = clint_mtime() + NB_START_DELAY_TICKS;
    while (clint_mtime() < start)
        ;
    for (step = 0; step < (uint64_t)steps; step++) {
        replies_left = (nodes - 1) * NB_CHUNKS;
        requests_left = (nodes - 1) * NB_CHUNKS;
        int held = n_early;
        n_early = 0;
        for (int e = 0; e < held; e++)
            answer(early[e].hdr, early[e].tag, early[e].body);
        for (int d = 1; d < nodes; d++)
            send_bodies((self + d) % nodes);
        while (replies_left > 0 || requests_left > 0) {
            if (lnic_has_msg())
                on_message(lnic_read());
        }
        integrate();
    }
    /* The next step's requests can only come from nodes that are done. */
    uint64_t h = 0;
    for (int i = 0; i < NB_LOCAL; i++) {
        h = splitmix64(h ^ as_word(px[i]));
        h = splitmix64(h ^ as_word(py[i]));
        h = splitmix64(h ^ as_word(pz[i]));
        h = splitmix64(h ^ as_word(vx[i]));
        h = splitmix64(h ^ as_word(vy[i]));
        h = splitmix64(h ^ as_word(vz[i]));
    }
    printf("nbody_cluster node %d of %d: %ld steps, checksum %016lx\n", self, nodes, steps,
           (unsigned long)h);
    return 0;
}
