/*
 * mica: the MICA key-value store on a nanoPU core, optimized (nanoPU paper
 * §5.3, Fig. 9): GET streams the value from the log straight to netTX and
 * SET from netRX straight into the log, with no message buffer in memory.
 * The store is mica.h; the message format is README.md. Preloads the
 * MICA_PAIRS pairs, registers context 0, sends the boot message and serves
 * forever.
 */
#include <nanopu.h>
#include "mica.h"

/* Pops n words from netRX and drops them. */
static inline void drain(uint32_t n)
{
    while (n--)
        (void)lnic_read();
}

static inline void reply_status(uint64_t rx_hdr, uint64_t tag, uint64_t status)
{
    lnic_write_r(lnic_reply_hdr(rx_hdr, MICA_REPLY_HEADER));
    lnic_write_r(tag);
    lnic_write_r(status);
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    unsigned len = lnic_hdr_len(hdr);
    uint32_t words = lnic_hdr_words(hdr);
    if (len < MICA_REQ_HEADER) {
        uint64_t tag = 0;
        if (words > 0) {
            tag = lnic_read();
            drain(words - 1);
        }
        reply_status(hdr, len >= 8 ? tag : 0, MICA_MALFORMED);
        return;
    }
    uint64_t tag = lnic_read();
    uint64_t op = lnic_read();
    uint64_t k0 = lnic_read();
    uint64_t k1 = lnic_read();
    uint32_t rest = words - 4;
    uint64_t h = mica_hash(k0, k1);
    if (op == MICA_OP_GET && len == MICA_REQ_HEADER) {
        struct mica_entry *e = mica_entry(k0, k1, h);
        if (!e) {
            reply_status(hdr, tag, MICA_NOT_FOUND);
            return;
        }
        lnic_write_r(lnic_reply_hdr(hdr, MICA_REPLY_HEADER + e->value_len));
        lnic_write_r(tag);
        lnic_write_i(MICA_OK);
        const uint64_t *v = e->value;
        uint32_t n = e->value_len / 8;
        for (; n >= 8; n -= 8, v += 8) {
            lnic_write_m(v[0]);
            lnic_write_m(v[1]);
            lnic_write_m(v[2]);
            lnic_write_m(v[3]);
            lnic_write_m(v[4]);
            lnic_write_m(v[5]);
            lnic_write_m(v[6]);
            lnic_write_m(v[7]);
        }
        for (; n > 0; n--, v++)
            lnic_write_m(v[0]);
    } else if (op == MICA_OP_SET && mica_value_ok(len - MICA_REQ_HEADER)) {
        struct mica_entry *e = mica_alloc(k0, k1, h, len - MICA_REQ_HEADER);
        if (!e) {
            drain(rest);
            reply_status(hdr, tag, MICA_FULL);
            return;
        }
        uint64_t *v = e->value;
        for (; rest >= 8; rest -= 8, v += 8) {
            v[0] = lnic_read();
            v[1] = lnic_read();
            v[2] = lnic_read();
            v[3] = lnic_read();
            v[4] = lnic_read();
            v[5] = lnic_read();
            v[6] = lnic_read();
            v[7] = lnic_read();
        }
        for (; rest > 0; rest--, v++)
            v[0] = lnic_read();
        reply_status(hdr, tag, MICA_OK);
    } else {
        drain(rest);
        reply_status(hdr, tag, MICA_MALFORMED);
    }
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
