/*
 * loopback_16core: the loopback server (loopback.c) on every core of a
 * 16-core node: each core registers context 0 (the NIC's core selection
 * spreads requests over them), hart 0 sends the boot message once all have,
 * and each core echoes every message it receives to its sender. The
 * message-heavy `nanopu bench` node: run it with 16 cores and the built-in
 * load (`nanopu run --cores 16 --load ...`); on fewer cores it never boots.
 * Only the first NANOPU_MAX_HARTS harts get a stack from the runtime (the
 * others park in wfi), so as many cores serve: all 16 once the SDK's limit
 * is 16 or more.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

/* Built for a 16-core node (the runtime's default is NCORES). */
const int nanopu_ncores = 16;

static nanopu_barrier_t registered;

static void serve(int cid, int nc)
{
    int serving = nc < NANOPU_MAX_HARTS ? nc : NANOPU_MAX_HARTS;
    lnic_add_context(0, 0);
    nanopu_barrier_wait(&registered, serving);
    if (cid == 0)
        lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        lnic_write_r(hdr);
        for (uint32_t n = lnic_hdr_words(hdr); n > 0; n--)
            lnic_copy();
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
