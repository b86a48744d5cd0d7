/*
 * trad_mica: the MICA key-value store on a core with the traditional DMA NIC
 * (icenic.h; nanoPU paper §5.3, Fig. 9's "traditional"): the driver keeps
 * ICENIC_BATCH receive buffers posted and handles the frames received in
 * batches (icenic_serve); each request is served by the memory-to-memory
 * store (mica_process in ../mica/mica.h) in its receive buffer, which
 * becomes the reply frame (addresses and contexts swapped). Message format:
 * ../mica/README.md. Requests and replies are one packet each (they fit the
 * default 1024-byte MTU payload).
 */
#include <icenic.h>
#include "../mica/mica.h"

static unsigned serve(uint8_t *f, unsigned frame_len)
{
    unsigned len = get_be16(f + NT_MSG_LEN);
    unsigned carried = frame_len > FRAME_HEADER_LEN ? frame_len - FRAME_HEADER_LEN : 0;
    /* A message of several packets is not one the store takes: what this
     * packet carries is judged (MALFORMED unless it is a whole request). */
    if (len > carried)
        len = carried;
    uint64_t *msg = (uint64_t *)(f + FRAME_HEADER_LEN);
    return nt_reply_headers(f, mica_process(msg, len, msg));
}

int main(void)
{
    mica_preload();
    icenic_serve(serve);
}
