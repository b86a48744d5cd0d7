/*
 * dot_product_naive: the "naive" nanoPU dot product of the paper (section
 * 5.2.1, Fig. 6): the whole message is first copied from netRX into a
 * buffer in memory, then the dot product is computed from memory, then
 * answered. Same formats as `dot_product` (the "optimal" version, which
 * computes straight out of netRX):
 *
 * Request (context 0):  header | DATA_TYPE | n | n x (index, value)
 * Response:             header (to the sender, 16 bytes) | RESP_TYPE | sum
 * where sum = sum(value * weights[index % NUM_WEIGHTS]) mod 2^64 and
 * weights[i] = i + 1. A request whose type word is not DATA_TYPE (or that
 * has fewer than two words) is answered with ERROR_TYPE, 0. Pairs beyond
 * the message's length are not read (n is capped by it); words beyond
 * MAX_WORDS (a 2 KB message, the prototype's largest) are drained unread.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

#define DATA_TYPE 1
#define RESP_TYPE 2
#define ERROR_TYPE 3
#define RESP_MSG_LEN 16
#define NUM_WEIGHTS 2048 /* 16 KB: the L1 data cache of the prototype */
#define MAX_WORDS 256    /* 2 KB */

static uint64_t weights[NUM_WEIGHTS];
static uint64_t msg[MAX_WORDS];

int main(void)
{
    for (int i = 0; i < NUM_WEIGHTS; i++)
        weights[i] = (uint64_t)i + 1;
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t app_hdr = lnic_read();
        uint32_t words = lnic_hdr_words(app_hdr);
        uint32_t kept = words < MAX_WORDS ? words : MAX_WORDS;
        for (uint32_t i = 0; i < kept; i++)
            msg[i] = lnic_read();
        for (uint32_t i = kept; i < words; i++)
            (void)lnic_read();

        uint64_t type = ERROR_TYPE, result = 0;
        if (kept >= 2 && msg[0] == DATA_TYPE) {
            uint64_t n = msg[1];
            if (n > (kept - 2) / 2)
                n = (kept - 2) / 2;
            const uint64_t *p = msg + 2;
            for (uint64_t i = 0; i < n; i++, p += 2)
                result += p[1] * weights[p[0] % NUM_WEIGHTS];
            type = RESP_TYPE;
        }
        lnic_write_r(lnic_reply_hdr(app_hdr, RESP_MSG_LEN));
        lnic_write_r(type);
        lnic_write_r(result);
        lnic_msg_done();
    }
}
