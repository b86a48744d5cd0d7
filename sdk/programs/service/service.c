/*
 * service: a server whose requests say how long to work. Every core runs
 * one thread of context 0 (JBSQ or random core selection spreads requests
 * over them); a request is [number, cycles]: the core spins for `cycles`
 * (reading mcycle) and then answers with the same two words. The nanoPU
 * paper's §5.2.3 core-selection experiment uses such a server with bimodal
 * service times.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

static nanopu_barrier_t registered;

static void serve(int cid, int nc)
{
    lnic_add_context(0, 0);
    nanopu_barrier_wait(&registered, nc);
    if (cid == 0)
        lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t start = rdcycle();
        uint64_t hdr = lnic_read();
        uint64_t number = lnic_read();
        uint64_t cycles = lnic_read();
        /* Words beyond the two are not expected; drain them if any. */
        for (uint32_t n = lnic_hdr_words(hdr); n > 2; n--)
            (void)lnic_read();
        while (rdcycle() - start < cycles)
            ;
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(number);
        lnic_write_r(cycles);
        lnic_msg_done();
    }
}

void thread_entry(int cid, int nc)
{
    serve(cid, nc);
}

int main(void)
{
    serve(0, nanopu_ncores);
    return 0;
}
