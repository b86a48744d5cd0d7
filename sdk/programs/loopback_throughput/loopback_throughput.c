/*
 * loopback_throughput: the message conventions of the nanoPU artifact's
 * lnic-loopback-throughput.c (l-nic/chipyard, tag nanoPU-artifact-v1.0,
 * tests-lnic/; our own code). Context 0 waits for a CONFIG message
 * [0, number of messages, start timestamp], then echoes that many DATA
 * messages [1, ..., timestamp] to their senders with the last word replaced
 * by the start timestamp, then waits for the next CONFIG. A message that is
 * not a CONFIG when one is expected ends the program with exit code -1
 * (as the artifact's does; `nanopu run` reports 255), after printing why. DATA messages
 * are at least 16 bytes. The simulator drives it with the scripted client
 * (`[load] app = { kind = "script", ... }`, crates/apps/src/script.rs).
 */
#include <nanopu.h>
#include <stdio.h>

#define CONFIG_TYPE 0
#define DATA_TYPE 1

int main(void)
{
    lnic_add_context(0, 0);
    printf("Ready!\n");
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        uint32_t words = lnic_hdr_words(hdr);
        uint64_t type = words > 0 ? lnic_read() : ~0UL;
        if (type != CONFIG_TYPE || words < 3) {
            printf("Expected Config msg.\n");
            return -1;
        }
        uint64_t num_msgs = lnic_read();
        uint64_t start_time = lnic_read();
        for (uint32_t i = 3; i < words; i++)
            (void)lnic_read();
        lnic_msg_done();
        for (uint64_t m = 0; m < num_msgs; m++) {
            lnic_wait();
            uint64_t h = lnic_read();
            uint32_t n = lnic_hdr_words(h);
            lnic_write_r(h);
            /* Every word but the last (the timestamp) back as it came. */
            for (uint32_t i = 1; i < n; i++)
                lnic_copy();
            (void)lnic_read();
            lnic_write_r(start_time);
            lnic_msg_done();
        }
    }
}
