/*
 * nbody: gravitational forces for an N-body simulation on a nanoPU node
 * (nanoPU paper Table 1, "N-Body Sim."). Our own code. The node holds
 * NB_LOCAL bodies, generated at start; a request carries up to NB_MAX_REMOTE
 * remote bodies (position and mass as doubles, read from netRX as they
 * arrive) and the reply carries, for each, the softened gravitational force
 * the node's bodies exert on it (G = 1). Built with -ffp-contract=off
 * (program.mk) so that the oracle, crates/apps/src/nbody.rs, computes the
 * same doubles. Every core serves context 0. Message format: README.md.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>

#define NB_LOCAL 16
#define NB_MAX_REMOTE 4
#define NB_EPS2 0.01
#define NB_OK 0
#define NB_MALFORMED 2

static double lx[NB_LOCAL], ly[NB_LOCAL], lz[NB_LOCAL], lm[NB_LOCAL];

static inline uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

/* A double in [0, 1) from 20 random bits: exact in both languages. */
static inline double unit(uint64_t x)
{
    return (double)(splitmix64(x) >> 44) / 1048576.0;
}

static void build(void)
{
    for (uint64_t i = 0; i < NB_LOCAL; i++) {
        lx[i] = 2.0 * unit(4 * i) - 1.0;
        ly[i] = 2.0 * unit(4 * i + 1) - 1.0;
        lz[i] = 2.0 * unit(4 * i + 2) - 1.0;
        lm[i] = 1.0 + unit(4 * i + 3);
    }
}

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

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    uint64_t n = words > 1 ? lnic_read() : 0;
    uint32_t rest = words > 2 ? words - 2 : 0;
    if (n == 0 || n > NB_MAX_REMOTE || rest != 4 * n || lnic_hdr_len(hdr) != 8 * words) {
        while (rest--)
            (void)lnic_read();
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(NB_MALFORMED);
        return;
    }
    double f[NB_MAX_REMOTE][3];
    for (uint64_t r = 0; r < n; r++) {
        double x = as_double(lnic_read()), y = as_double(lnic_read());
        double z = as_double(lnic_read()), m = as_double(lnic_read());
        double fx = 0.0, fy = 0.0, fz = 0.0;
        for (int j = 0; j < NB_LOCAL; j++) {
            double dx = lx[j] - x, dy = ly[j] - y, dz = lz[j] - z;
            double d2 = dx * dx + dy * dy + dz * dz + NB_EPS2;
            double s = m * lm[j] * (1.0 / (d2 * __builtin_sqrt(d2)));
            fx = fx + s * dx;
            fy = fy + s * dy;
            fz = fz + s * dz;
        }
        f[r][0] = fx;
        f[r][1] = fy;
        f[r][2] = fz;
    }
    lnic_write_r(lnic_reply_hdr(hdr, (uint16_t)(16 + 24 * n)));
    lnic_write_r(tag);
    lnic_write_i(NB_OK);
    for (uint64_t r = 0; r < n; r++)
        for (int k = 0; k < 3; k++)
            lnic_write_r(as_word(f[r][k]));
}

NANOPU_RPC_SERVER(build, serve_one)
