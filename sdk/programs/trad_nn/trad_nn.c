/*
 * trad_nn: NN inference on a core with the traditional DMA NIC (icenic.h):
 * the driver batches up to 30 receive buffers (icenic_serve); each request
 * is answered in its buffer, which becomes the reply frame. Same network
 * and messages as nn (../nn/nn.h, ../nn/README.md).
 */
#include <icenic.h>
#include "../nn/nn.h"

static unsigned serve(uint8_t *f, unsigned frame_len)
{
    unsigned len = get_be16(f + NT_MSG_LEN);
    unsigned carried = frame_len > FRAME_HEADER_LEN ? frame_len - FRAME_HEADER_LEN : 0;
    if (len > carried)
        len = carried;
    uint64_t *msg = (uint64_t *)(f + FRAME_HEADER_LEN);
    uint64_t tag = len >= 8 ? msg[0] : 0;
    int ok = len == 8 * (1 + NN_IN);
    for (int i = 0; ok && i < NN_IN; i++)
        ok = nn_input_ok((int64_t)msg[1 + i]);
    msg[0] = tag;
    if (!ok) {
        msg[1] = NN_MALFORMED;
        return nt_reply_headers(f, 16);
    }
    int64_t acc1[NN_H1], out[NN_OUT];
    nn_start(acc1);
    for (int i = 0; i < NN_IN; i++)
        nn_accumulate_input(acc1, i, (int64_t)msg[1 + i]);
    unsigned best = nn_finish(acc1, out);
    msg[1] = NN_OK;
    msg[2] = best;
    for (int j = 0; j < NN_OUT; j++)
        msg[3 + j] = (uint64_t)out[j];
    return nt_reply_headers(f, 8 * (3 + NN_OUT));
}

int main(void)
{
    nn_build();
    icenic_serve(serve);
}
