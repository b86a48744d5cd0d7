/*
 * nn: NN inference on a nanoPU node (issue 15): a small fully-connected
 * integer network (nn.h) applied to the input vector of each request. The
 * first layer is accumulated as the inputs are read from netRX, one word at
 * a time, without copying the message to memory; the outputs are written
 * to netTX. Every core serves context 0. Message format: README.md.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>
#include "nn.h"

static inline void reply_malformed(uint64_t hdr, uint64_t tag)
{
    lnic_write_r(lnic_reply_hdr(hdr, 16));
    lnic_write_r(tag);
    lnic_write_i(NN_MALFORMED);
}

static void serve_one(void)
{
    int64_t acc1[NN_H1], out[NN_OUT];
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    if (words != 1 + NN_IN || lnic_hdr_len(hdr) != 8 * (1 + NN_IN)) {
        for (uint32_t i = 1; i < words; i++)
            (void)lnic_read();
        reply_malformed(hdr, tag);
        return;
    }
    nn_start(acc1);
    int ok = 1;
    for (int i = 0; i < NN_IN; i++) {
        int64_t x = (int64_t)lnic_read();
        ok &= nn_input_ok(x);
        nn_accumulate_input(acc1, i, x);
    }
    if (!ok) {
        reply_malformed(hdr, tag);
        return;
    }
    unsigned best = nn_finish(acc1, out);
    lnic_write_r(lnic_reply_hdr(hdr, 8 * (3 + NN_OUT)));
    lnic_write_r(tag);
    lnic_write_i(NN_OK);
    lnic_write_r(best);
    for (int j = 0; j < NN_OUT; j++)
        lnic_write_r(out[j]);
}

NANOPU_RPC_SERVER(nn_build, serve_one)
