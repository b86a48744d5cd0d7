/*
 * rpc_server.h - the start-up and request loop shared by the single-context
 * RPC servers (othello, nn, classifier, hdsearch, nbody): hart 0 builds the
 * program's tables, every hart then registers context 0 (priority 0),
 * hart 0 sends the boot message, and each hart serves one message at a time
 * from its netRX forever.
 *
 *     static void build(void) { ... }       // once, on hart 0
 *     static void serve_one(void) { ... }   // one message, netRX to netTX
 *     NANOPU_RPC_SERVER(build, serve_one)
 *
 * A macro, not a function taking pointers: the loop stays a direct call, as
 * if written out in each program, so the cycles a request costs are the
 * program's own.
 */
#ifndef NANOPU_RPC_SERVER_H
#define NANOPU_RPC_SERVER_H

#include <nanopu.h>

#define NANOPU_RPC_SERVER(build_fn, serve_one_fn)                            \
    /* Set by hart 0 once build_fn has run. */                               \
    static volatile int nanopu_rpc_built;                                    \
                                                                             \
    static void nanopu_rpc_serve(int cid)                                    \
    {                                                                        \
        if (cid == 0) {                                                      \
            build_fn();                                                      \
            __atomic_store_n(&nanopu_rpc_built, 1, __ATOMIC_RELEASE);        \
        }                                                                    \
        while (!__atomic_load_n(&nanopu_rpc_built, __ATOMIC_ACQUIRE))        \
            ;                                                                \
        lnic_add_context(0, 0);                                              \
        if (cid == 0)                                                        \
            lnic_boot();                                                     \
        for (;;) {                                                           \
            lnic_wait();                                                     \
            serve_one_fn();                                                  \
            lnic_msg_done();                                                 \
        }                                                                    \
    }                                                                        \
                                                                             \
    void thread_entry(int cid, int nc)                                       \
    {                                                                        \
        (void)nc;                                                            \
        nanopu_rpc_serve(cid);                                               \
    }                                                                        \
                                                                             \
    int main(void)                                                           \
    {                                                                        \
        nanopu_rpc_serve(0);                                                 \
        return 0;                                                            \
    }

#endif
