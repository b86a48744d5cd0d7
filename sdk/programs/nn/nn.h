/*
 * nn.h - a small fully-connected network with integer weights (issue 15's
 * "NN inference"), shared by nn (nanoPU) and trad_nn (IceNIC). Our own code.
 *
 * NN_IN inputs -> NN_H1 -> NN_H2 hidden units (ReLU, then >> NN_SHIFT) ->
 * NN_OUT outputs (the raw sums). Weight i of layer l is
 * splitmix64(l << 32 | i) % 255 - 127, bias j of layer l is
 * splitmix64(l << 32 | 0x10000 | j) % 2047 - 1023; nn_build() generates them
 * at start (crates/apps/src/nn.rs generates the same ones). Weights are
 * stored input-major (w[i][j]: input i to unit j), so that a layer can be
 * accumulated one input at a time, as the input words arrive from netRX.
 * Message format: README.md.
 */
#ifndef NANOPU_NN_H
#define NANOPU_NN_H

#include <stdint.h>

#define NN_IN 16
#define NN_H1 32
#define NN_H2 32
#define NN_OUT 8
#define NN_SHIFT 7
#define NN_OK 0
#define NN_MALFORMED 2

static int64_t nn_w1[NN_IN][NN_H1], nn_b1[NN_H1];
static int64_t nn_w2[NN_H1][NN_H2], nn_b2[NN_H2];
static int64_t nn_w3[NN_H2][NN_OUT], nn_b3[NN_OUT];

static inline uint64_t nn_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static inline int64_t nn_weight(uint64_t layer, uint64_t i)
{
    return (int64_t)(nn_splitmix64(layer << 32 | i) % 255) - 127;
}

static inline int64_t nn_bias(uint64_t layer, uint64_t j)
{
    return (int64_t)(nn_splitmix64(layer << 32 | 0x10000 | j) % 2047) - 1023;
}

/* Weight i of a layer counts output-major (i = unit * inputs + input), as
 * the oracle numbers them; the arrays are input-major. */
static inline void nn_build(void)
{
    for (int j = 0; j < NN_H1; j++) {
        nn_b1[j] = nn_bias(1, j);
        for (int i = 0; i < NN_IN; i++)
            nn_w1[i][j] = nn_weight(1, (uint64_t)(j * NN_IN + i));
    }
    for (int j = 0; j < NN_H2; j++) {
        nn_b2[j] = nn_bias(2, j);
        for (int i = 0; i < NN_H1; i++)
            nn_w2[i][j] = nn_weight(2, (uint64_t)(j * NN_H1 + i));
    }
    for (int j = 0; j < NN_OUT; j++) {
        nn_b3[j] = nn_bias(3, j);
        for (int i = 0; i < NN_H2; i++)
            nn_w3[i][j] = nn_weight(3, (uint64_t)(j * NN_H2 + i));
    }
}

static inline int nn_input_ok(int64_t x)
{
    return x >= -128 && x <= 127;
}

/* Layer 1's accumulators start at the biases; then nn_accumulate_input()
 * for each input in order. */
static inline void nn_start(int64_t *acc1)
{
    for (int j = 0; j < NN_H1; j++)
        acc1[j] = nn_b1[j];
}

static inline void nn_accumulate_input(int64_t *acc1, int i, int64_t x)
{
    const int64_t *w = nn_w1[i];
    for (int j = 0; j < NN_H1; j++)
        acc1[j] += w[j] * x;
}

/* The rest of the network from layer 1's sums: the outputs into out, the
 * index of the first largest output returned. */
static inline unsigned nn_finish(const int64_t *acc1, int64_t *out)
{
    int64_t h1[NN_H1], h2[NN_H2];
    for (int j = 0; j < NN_H1; j++)
        h1[j] = acc1[j] > 0 ? acc1[j] >> NN_SHIFT : 0;
    for (int j = 0; j < NN_H2; j++)
        h2[j] = nn_b2[j];
    for (int i = 0; i < NN_H1; i++) {
        int64_t x = h1[i];
        if (x == 0)
            continue;
        for (int j = 0; j < NN_H2; j++)
            h2[j] += nn_w2[i][j] * x;
    }
    for (int j = 0; j < NN_H2; j++)
        h2[j] = h2[j] > 0 ? h2[j] >> NN_SHIFT : 0;
    for (int j = 0; j < NN_OUT; j++)
        out[j] = nn_b3[j];
    for (int i = 0; i < NN_H2; i++) {
        int64_t x = h2[i];
        if (x == 0)
            continue;
        for (int j = 0; j < NN_OUT; j++)
            out[j] += nn_w3[i][j] * x;
    }
    unsigned best = 0;
    for (unsigned j = 1; j < NN_OUT; j++)
        if (out[j] > out[best])
            best = j;
    return best;
}

#endif
