/*
 * trad_setalg: set algebra on a core with the traditional DMA NIC (icenic.h;
 * nanoPU paper Fig. 10's "traditional"): the driver batches up to 30
 * receive buffers (icenic_serve); each query is answered in its buffer,
 * which becomes the reply frame. Same index and messages as setalg
 * (../setalg/setalg.h, ../setalg/README.md).
 */
#include <icenic.h>
#include "../setalg/setalg.h"

static unsigned serve(uint8_t *f, unsigned frame_len)
{
    unsigned len = get_be16(f + NT_MSG_LEN);
    unsigned carried = frame_len > FRAME_HEADER_LEN ? frame_len - FRAME_HEADER_LEN : 0;
    if (len > carried)
        len = carried;
    uint64_t *msg = (uint64_t *)(f + FRAME_HEADER_LEN);
    uint64_t tag = len >= 8 ? msg[0] : 0;
    if (len >= 16 && setalg_query_ok(msg[1], len, msg + 2)) {
        uint64_t out[SETALG_DOCS];
        unsigned k = setalg_query(msg + 2, (unsigned)msg[1], out);
        msg[0] = tag;
        msg[1] = SETALG_OK;
        for (unsigned i = 0; i < k; i++)
            msg[2 + i] = out[i];
        return nt_reply_headers(f, 16 + 8 * k);
    }
    msg[0] = tag;
    msg[1] = SETALG_MALFORMED;
    return nt_reply_headers(f, 16);
}

int main(void)
{
    setalg_build();
    icenic_serve(serve);
}
