/*
 * loopback: the nanoPU loopback server (nanoPU paper §3.4, Listing 1 without
 * the increment).  Registers context 0 at priority 0, sends the boot message,
 * then forever: wait for a message, copy its RX header to netTX as the TX
 * header (answering the sender with the same length) and copy every payload
 * word (length / 8, rounded up) from netRX to netTX; then lnic_msg_done().
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

int main(void)
{
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        lnic_write_r(hdr);
        uint32_t n = lnic_hdr_words(hdr);
        /* Eight words per iteration: the loop overhead is paid once per
         * eight register-to-register moves. */
        for (; n >= 8; n -= 8) {
            lnic_copy();
            lnic_copy();
            lnic_copy();
            lnic_copy();
            lnic_copy();
            lnic_copy();
            lnic_copy();
            lnic_copy();
        }
        for (; n > 0; n--)
            lnic_copy();
        lnic_msg_done();
    }
}
