/*
 * setalg: set algebra on a nanoPU node (nanoPU paper §5.3, Fig. 10): every
 * core serves context 0 (the NIC's JBSQ core selection spreads queries over
 * them; run it with --cores 1 for one core). A query's words come from
 * netRX into registers, the posting lists are intersected (setalg.h) and
 * the document ids written to netTX. Hart 0 builds the index, then every
 * hart registers and hart 0 sends the boot message (the others may still
 * be registering: the NIC gives messages to the cores registered). Message format: README.md.
 */
#include <nanopu.h>
#include <nanopu_rt.h>
#include "setalg.h"

/* Set by hart 0 once the index is built. Not a barrier over nanopu_ncores:
 * the node may have fewer harts than the build's default (--cores 1). */
static volatile int built;

static inline void reply_malformed(uint64_t hdr, uint64_t tag)
{
    lnic_write_r(lnic_reply_hdr(hdr, 16));
    lnic_write_r(tag);
    lnic_write_i(SETALG_MALFORMED);
}

static void serve_one(void)
{
    uint64_t out[SETALG_DOCS];
    uint64_t q[SETALG_MAX_QUERY];
    uint64_t hdr = lnic_read();
    unsigned len = lnic_hdr_len(hdr);
    uint32_t words = lnic_hdr_words(hdr);
    if (len < 16) {
        uint64_t tag = 0;
        if (words > 0) {
            tag = lnic_read();
            for (uint32_t i = 1; i < words; i++)
                (void)lnic_read();
        }
        reply_malformed(hdr, len >= 8 ? tag : 0);
        return;
    }
    uint64_t tag = lnic_read();
    uint64_t n = lnic_read();
    uint32_t rest = words - 2;
    if (n == 0 || n > SETALG_MAX_QUERY || rest != n) {
        while (rest--)
            (void)lnic_read();
        reply_malformed(hdr, tag);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        q[i] = lnic_read();
    if (!setalg_query_ok(n, len, q)) {
        reply_malformed(hdr, tag);
        return;
    }
    unsigned k = setalg_query(q, (unsigned)n, out);
    lnic_write_r(lnic_reply_hdr(hdr, (uint16_t)(16 + 8 * k)));
    lnic_write_r(tag);
    lnic_write_i(SETALG_OK);
    for (unsigned i = 0; i < k; i++)
        lnic_write_m(out[i]);
}

static void serve(int cid, int nc)
{
    (void)nc;
    if (cid == 0) {
        setalg_build();
        __atomic_store_n(&built, 1, __ATOMIC_RELEASE);
    }
    while (!__atomic_load_n(&built, __ATOMIC_ACQUIRE))
        ;
    lnic_add_context(0, 0);
    if (cid == 0)
        lnic_boot();
    for (;;) {
        lnic_wait();
        serve_one();
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
