/*
 * mica_naive: the MICA key-value store on a nanoPU core, naive port (nanoPU
 * paper §5.3, Fig. 9): the request is copied from netRX into a buffer in
 * memory, the unchanged memory-to-memory store (mica_process in
 * ../mica/mica.h: GET copies the value out of the log, SET copies it in)
 * builds the reply in a second buffer, which is then copied to netTX.
 * Same store, same message format (../mica/README.md) as `mica`.
 */
#include <nanopu.h>
#include "../mica/mica.h"

/* The longest request mica_process reads: header and the largest value. */
#define RX_WORDS ((MICA_REQ_HEADER + MICA_MAX_VALUE) / 8)
#define TX_WORDS ((MICA_REPLY_HEADER + MICA_MAX_VALUE) / 8)

static uint64_t rx[RX_WORDS] __attribute__((aligned(64)));
static uint64_t tx[TX_WORDS] __attribute__((aligned(64)));

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    unsigned len = lnic_hdr_len(hdr);
    uint32_t words = lnic_hdr_words(hdr);
    uint32_t n = words < RX_WORDS ? words : RX_WORDS;
    uint64_t *p = rx;
    for (uint32_t k = n; k >= 8; k -= 8, p += 8) {
        p[0] = lnic_read();
        p[1] = lnic_read();
        p[2] = lnic_read();
        p[3] = lnic_read();
        p[4] = lnic_read();
        p[5] = lnic_read();
        p[6] = lnic_read();
        p[7] = lnic_read();
    }
    for (uint32_t k = n % 8; k > 0; k--, p++)
        p[0] = lnic_read();
    for (uint32_t k = words - n; k > 0; k--)
        (void)lnic_read();
    /* Longer than any request the store takes: mica_process answers
     * MALFORMED from the header alone. */
    unsigned rlen = mica_process(rx, len, tx);
    lnic_write_r(lnic_reply_hdr(hdr, rlen));
    const uint64_t *v = tx;
    uint32_t m = rlen / 8;
    for (; m >= 8; m -= 8, v += 8) {
        lnic_write_m(v[0]);
        lnic_write_m(v[1]);
        lnic_write_m(v[2]);
        lnic_write_m(v[3]);
        lnic_write_m(v[4]);
        lnic_write_m(v[5]);
        lnic_write_m(v[6]);
        lnic_write_m(v[7]);
    }
    for (; m > 0; m--, v++)
        lnic_write_m(v[0]);
}

int main(void)
{
    mica_preload();
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        serve_one();
        lnic_msg_done();
    }
}
