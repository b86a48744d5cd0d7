/*
 * loopback_inc: loopback with increment (nanoPU paper Listing 1): like
 * loopback, but every payload word is sent back plus one (addi x31, x30, 1).
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
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
            lnic_add_int_i(1);
        }
        for (; n > 0; n--)
            lnic_add_int_i(1);
        lnic_msg_done();
    }
}
