/*
 * dot_product: the nanoPU paper's Listing 2 (§3.5, and the "dot-product"
 * experiment of §5.2.1): the dot product of a vector carried in a request
 * message with weights held in memory, computed straight out of netRX.
 *
 * Request (context 0):  header | DATA_TYPE | n | n x (index, value)
 * Response:             header (to the sender, 16 bytes) | RESP_TYPE | sum
 * where sum = sum(value * weights[index % NUM_WEIGHTS]) mod 2^64 and
 * weights[i] = i + 1.  A request whose type word is not DATA_TYPE is drained
 * (by its length) and answered with ERROR_TYPE, 0.  The type test uses
 * lnic_branch, a branch straight on netRX.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

#define DATA_TYPE 1
#define RESP_TYPE 2
#define ERROR_TYPE 3
#define RESP_MSG_LEN 16
#define NUM_WEIGHTS 2048 /* 16 KB: the L1 data cache of the prototype */

static uint64_t weights[NUM_WEIGHTS];

int main(void)
{
    for (int i = 0; i < NUM_WEIGHTS; i++)
        weights[i] = (uint64_t)i + 1;
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t app_hdr = lnic_read();
        lnic_branch("bne", DATA_TYPE, bad_type); /* pops the type word */
        uint64_t num_words = lnic_read();
        uint64_t result = 0;
        for (uint64_t i = 0; i < num_words; i++) {
            uint64_t idx = lnic_read();
            uint64_t word = lnic_read();
            result += word * weights[idx % NUM_WEIGHTS];
        }
        lnic_write_r(lnic_reply_hdr(app_hdr, RESP_MSG_LEN));
        lnic_write_i(RESP_TYPE);
        lnic_write_r(result);
        lnic_msg_done();
        continue;
    bad_type:
        /* header and type word consumed: drain the rest of the payload */
        for (uint32_t n = lnic_hdr_words(app_hdr); n > 1; n--)
            (void)lnic_read();
        lnic_write_r(lnic_reply_hdr(app_hdr, RESP_MSG_LEN));
        lnic_write_i(ERROR_TYPE);
        lnic_write_i(0);
        lnic_msg_done();
    }
}
