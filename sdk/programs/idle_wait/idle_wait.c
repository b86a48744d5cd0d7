/*
 * idle_wait: every hart registers its own context and waits in lnic_wait()
 * for a message that never comes. `nanopu bench` runs it for one simulated
 * second to measure how cheaply the simulator skips idle harts.
 */
#include "nanopu.h"
#include "nanopu_rt.h"

static void wait_forever(int cid)
{
    lnic_add_context(cid, 0);
    for (;;) {
        lnic_wait();
        /* Not reached without network traffic; echo the message if it is. */
        uint64_t header = lnic_read();
        lnic_write_r(header);
        for (uint32_t i = 0; i < lnic_hdr_words(header); i++)
            lnic_copy();
        lnic_msg_done();
    }
}

void thread_entry(int cid, int nc)
{
    (void)nc;
    wait_forever(cid);
}

int main(void)
{
    wait_forever(0);
    return 0;
}
