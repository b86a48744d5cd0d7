/*
 * service: a server whose requests say how long to work. Every core runs
 * one thread of context 0 (JBSQ or random core selection spreads requests
 * over them); a request is [number, cycles]: the core works for `cycles`
 * (see service.h) and then answers with the same two words. The nanoPU
 * paper's §5.2.3 core-selection experiment uses such a server with bimodal
 * service times.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <service.h>

static nanopu_barrier_t registered;

static void serve(int cid, int nc)
{
    lnic_add_context(0, 0);
    nanopu_barrier_wait(&registered, nc);
    if (cid == 0)
        lnic_boot();
    for (;;) {
        lnic_wait();
        service_one();
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
