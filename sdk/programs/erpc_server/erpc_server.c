/*
 * erpc_server: an eRPC server (erpc.h) on the traditional NIC, for the
 * `erpc` experiment and the library's tests. One Rpc, request types:
 *
 *   1 ECHO   any bytes            -> the same bytes
 *   2 EXEC   u64 id               -> id, times id was executed (a counter:
 *                                    executing a request twice shows)
 *   3 TOTAL  (nothing)            -> executions in all, the largest count of
 *                                    one id (and prints the library's
 *                                    counters: `server handled= resent= ...`)
 *   4 DEFER  (nothing)            -> answered only once no DEFER request has
 *                                    arrived for DEFER_IDLE_US: the most
 *                                    requests it held unanswered at once
 *   5 SIZED  u64 id, u32 size, any -> `size` (>= 16) bytes: id, times id was
 *            bytes (up to                executed (counted with EXEC's), then
 *            ERPC_MAX_MSG_SIZE)          byte k = sized_byte(sum, k), sum the
 *                                        request's byte sum (so the client
 *                                        checks the whole request arrived)
 *
 * ECHO and SIZED take and give messages of up to ERPC_MAX_MSG_SIZE bytes
 * (multi-packet above ERPC_MAX_DATA).
 *
 * Arguments: none, or `rq=N` (receive buffers to post). Never exits.
 */
#include <erpc.h>
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>

#define REQ_ECHO 1
#define REQ_EXEC 2
#define REQ_TOTAL 3
#define REQ_DEFER 4
#define REQ_SIZED 5

#define MAX_IDS 65536
/* DEFER answers after this long without a new DEFER request. */
#define DEFER_IDLE_US 3

static uint16_t exec_count[MAX_IDS];
static uint64_t total_exec, max_count;
static erpc_handle deferred[ERPC_MAX_SESSIONS * ERPC_SLOTS];
static unsigned n_deferred, max_deferred;
static uint64_t last_defer;

static void on_echo(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    if (size > ERPC_MAX_DATA) {
        uint8_t *out = erpc_alloc_response(rpc, h, size);
        if (!out) {
            printf("server: no msgbuf for a %u-byte response\n", (unsigned)size);
            return;
        }
        memcpy(out, req, size);
        erpc_enqueue_response(rpc, h, size);
        return;
    }
    memcpy(erpc_response_buf(rpc, h), req, size);
    erpc_enqueue_response(rpc, h, size);
}

/* Byte k of a SIZED response to a request whose bytes sum to `sum` (the
 * client computes the same). */
static uint8_t sized_byte(uint32_t sum, uint32_t k) { return (uint8_t)(sum + k + (k >> 10) * 37); }

static void on_sized(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    uint64_t id = 0;
    uint32_t want = 16, sum = 0;
    if (size >= 12) {
        memcpy(&id, req, 8);
        memcpy(&want, req + 8, 4);
    }
    for (uint32_t k = 0; k < size; k++)
        sum += req[k];
    if (want < 16)
        want = 16;
    uint8_t *out = erpc_alloc_response(rpc, h, want);
    if (!out) {
        printf("server: no msgbuf for a %u-byte response\n", (unsigned)want);
        return;
    }
    uint64_t c = ++exec_count[id % MAX_IDS];
    total_exec++;
    if (c > max_count)
        max_count = c;
    memcpy(out, &id, 8);
    memcpy(out + 8, &c, 8);
    for (uint32_t k = 16; k < want; k++)
        out[k] = sized_byte(sum, k);
    erpc_enqueue_response(rpc, h, want);
}

static void on_exec(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    uint64_t id = 0;
    if (size >= 8)
        memcpy(&id, req, 8);
    uint64_t c = ++exec_count[id % MAX_IDS];
    total_exec++;
    if (c > max_count)
        max_count = c;
    uint64_t *out = (uint64_t *)erpc_response_buf(rpc, h);
    out[0] = id;
    out[1] = c;
    erpc_enqueue_response(rpc, h, 16);
}

static void on_total(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    (void)req;
    (void)size;
    uint64_t *out = (uint64_t *)erpc_response_buf(rpc, h);
    out[0] = total_exec;
    out[1] = max_count;
    erpc_enqueue_response(rpc, h, 16);
    const struct erpc_stats *st = erpc_stats(rpc);
    printf("server handled=%lu resent=%lu stale=%lu malformed=%lu cr_sent=%lu rfr_received=%lu "
           "no_msgbuf=%lu\n",
           (unsigned long)st->requests_handled, (unsigned long)st->responses_resent,
           (unsigned long)st->dropped_stale, (unsigned long)st->dropped_malformed,
           (unsigned long)st->cr_sent, (unsigned long)st->rfr_received,
           (unsigned long)st->dropped_no_msgbuf);
}

static void on_defer(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)rpc;
    (void)ctx;
    (void)req;
    (void)size;
    deferred[n_deferred++] = h;
    if (n_deferred > max_deferred)
        max_deferred = n_deferred;
    last_defer = rdcycle();
}

int main(int argc, char **argv)
{
    struct erpc_config cfg;
    erpc_default_config(&cfg);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], "rq=", 3))
            cfg.rq_size = (uint32_t)atoi(argv[i] + 3);
    struct erpc_rpc *rpc;
    if (erpc_rpc_init(&rpc, &cfg))
        return 2;
    erpc_register_handler(rpc, REQ_ECHO, on_echo, 0);
    erpc_register_handler(rpc, REQ_EXEC, on_exec, 0);
    erpc_register_handler(rpc, REQ_TOTAL, on_total, 0);
    erpc_register_handler(rpc, REQ_DEFER, on_defer, 0);
    erpc_register_handler(rpc, REQ_SIZED, on_sized, 0);
    icenic_boot();
    for (;;) {
        erpc_run_event_loop_once(rpc);
        if (n_deferred && rdcycle() - last_defer > (uint64_t)DEFER_IDLE_US * cfg.cycles_per_us) {
            for (unsigned i = 0; i < n_deferred; i++) {
                uint64_t *out = (uint64_t *)erpc_response_buf(rpc, deferred[i]);
                out[0] = max_deferred;
                erpc_enqueue_response(rpc, deferred[i], 8);
            }
            n_deferred = 0;
        }
    }
}
