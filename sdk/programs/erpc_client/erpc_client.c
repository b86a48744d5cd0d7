/*
 * erpc_client: an eRPC client (erpc.h) on the traditional NIC, for the
 * `erpc` experiment and the library's tests; its server is erpc_server.
 *
 *   erpc_client SERVER_IP latency N SIZE [options]
 *       N ECHO requests of SIZE bytes (up to ERPC_MAX_MSG_SIZE), one
 *       outstanding; each reply is checked; prints `sample CYCLES` per
 *       request (enqueue to continuation, core cycles), after the first
 *       N/10 (warm-up).
 *   erpc_client SERVER_IP echo N MIN MAX WINDOW [options]
 *       N ECHO requests of sizes spread over MIN..MAX bytes, WINDOW (<= 8)
 *       outstanding, each with its own content; every reply checked.
 *   erpc_client SERVER_IP sized N REQ RESP WINDOW [options]
 *       N SIZED requests of REQ bytes asking for RESP bytes, distinct ids,
 *       WINDOW (<= 8) outstanding; each answer must have RESP bytes, say
 *       its id was executed once and carry the content computed from the
 *       whole request; then TOTAL must count N executions, none twice.
 *   erpc_client SERVER_IP exec N WINDOW [options]
 *       N EXEC requests with distinct ids, WINDOW outstanding; each answer
 *       must say its id was executed once; then TOTAL must count N
 *       executions, none twice (at-most-once under loss, duplication,
 *       reordering).
 *   erpc_client SERVER_IP credits N [options]
 *       N DEFER requests queued at once; the server answers them only when
 *       they stop coming, with the most it held at once, which must be the
 *       session's credits (never more).
 *
 * Options: rto_us=US (retransmission timeout), credits=C, nocc (no
 * congestion control), start_us=US (wait before connecting; default 100,
 * time for the server to post its buffers).
 * Prints `result ok` and exits 0, or `result FAILED: why` and exits 1;
 * `stats ...` gives the library's counters.
 */
#include <erpc.h>
#include <nanopu.h>
#include <replica.h>
#include <stdio.h>
#include <stdlib.h>

#define REQ_ECHO 1
#define REQ_EXEC 2
#define REQ_TOTAL 3
#define REQ_DEFER 4
#define REQ_SIZED 5
/* Multi-packet modes: requests outstanding at most (each holds two pool
 * msgbufs of the library's 16). */
#define MAX_BIG_WINDOW 8

#define MAX_SAMPLES 100000
#define MAX_WINDOW 64

static uint32_t samples[MAX_SAMPLES];
static struct erpc_msgbuf reqs[MAX_WINDOW], resps[MAX_WINDOW];
static unsigned done_count, failed;
static uint64_t max_seen;
static char why[128];

static void fail_with(const char *msg, uint64_t a, uint64_t b)
{
    if (!failed)
        snprintf(why, sizeof why, "%s (%lu, %lu)", msg, (unsigned long)a, (unsigned long)b);
    failed = 1;
}

static void on_done(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    (void)rpc;
    (void)tag;
    (void)resp;
    done_count++;
}

static void wait_done(struct erpc_rpc *rpc, unsigned target, uint64_t limit_cycles)
{
    uint64_t start = rdcycle();
    while (done_count < target && rdcycle() - start < limit_cycles)
        erpc_run_event_loop_once(rpc);
    if (done_count < target) {
        fail_with("requests unanswered", target - done_count, target);
        erpc_print_state(rpc, 0);
    }
}

static void print_stats(struct erpc_rpc *rpc)
{
    const struct erpc_stats *s = erpc_stats(rpc);
    printf("stats sent=%lu received=%lu retransmissions=%lu flushes=%lu stale=%lu malformed=%lu "
           "backlogged=%lu rate_updates=%lu bypassed=%lu limited=%lu cr_received=%lu rfr_sent=%lu\n",
           (unsigned long)s->requests_sent, (unsigned long)s->responses_received,
           (unsigned long)s->retransmissions, (unsigned long)s->tx_flushes,
           (unsigned long)s->dropped_stale, (unsigned long)s->dropped_malformed,
           (unsigned long)s->backlogged, (unsigned long)s->rate_updates,
           (unsigned long)s->timely_bypassed, (unsigned long)s->rate_limited,
           (unsigned long)s->cr_received, (unsigned long)s->rfr_sent);
}

/* ---- exec: at-most-once ---- */
static unsigned exec_next, exec_n;
static int exec_session;

static void on_exec(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    unsigned i = (unsigned)(uintptr_t)tag;
    uint64_t id, count;
    memcpy(&id, erpc_data(&reqs[i]), 8);
    if (resp->size != 16)
        fail_with("EXEC answer of the wrong size", resp->size, 16);
    uint64_t *w = (uint64_t *)erpc_data(resp);
    count = w[1];
    if (w[0] != id)
        fail_with("EXEC answer for another id", w[0], id);
    if (count != 1)
        fail_with("a request was executed more than once", id, count);
    done_count++;
    if (exec_next < exec_n) {
        uint64_t nid = exec_next++;
        memcpy(erpc_data(&reqs[i]), &nid, 8);
        erpc_enqueue_request(rpc, exec_session, REQ_EXEC, &reqs[i], &resps[i], on_exec, tag);
    }
}

/* ---- echo and sized: multi-packet messages ---- */
static unsigned big_next, big_n, big_min, big_max, big_req, big_resp;
static int big_session;
static uint32_t big_sum[MAX_BIG_WINDOW];

/* Byte k of message i: differs between the 1 KB packets of a message. */
static uint8_t pattern(unsigned i, uint32_t k) { return (uint8_t)(i * 101 + k + (k >> 10) * 37); }
/* As erpc_server's sized_byte. */
static uint8_t sized_byte(uint32_t sum, uint32_t k) { return (uint8_t)(sum + k + (k >> 10) * 37); }

static unsigned echo_size(unsigned i) { return big_min + (unsigned)((i * 7919u) % (big_max - big_min + 1)); }

static void on_echo(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp);
static void on_sized(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp);

/* Fills window slot w with message i and enqueues it. */
static void big_send(struct erpc_rpc *rpc, unsigned w, unsigned i, int sized)
{
    struct erpc_msgbuf *q = &reqs[w];
    uint8_t *d = erpc_data(q);
    q->size = sized ? big_req : echo_size(i);
    for (uint32_t k = 0; k < q->size; k++)
        d[k] = pattern(i, k);
    if (sized) {
        uint64_t id = i;
        uint32_t want = big_resp;
        memcpy(d, &id, 8);
        memcpy(d + 8, &want, 4);
        uint32_t sum = 0;
        for (uint32_t k = 0; k < q->size; k++)
            sum += d[k];
        big_sum[w] = sum;
    }
    if (erpc_enqueue_request(rpc, big_session, sized ? REQ_SIZED : REQ_ECHO, q, &resps[w],
                             sized ? on_sized : on_echo, (void *)(uintptr_t)(w | (i << 8))))
        fail_with("enqueue refused", i, q->size);
}

static void on_echo(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    unsigned w = (unsigned)(uintptr_t)tag & 0xff, i = (unsigned)(uintptr_t)tag >> 8;
    if (resp->size != reqs[w].size || memcmp(erpc_data(resp), erpc_data(&reqs[w]), resp->size))
        fail_with("wrong echo (request, size)", i, resp->size);
    done_count++;
    if (big_next < big_n)
        big_send(rpc, w, big_next++, 0);
}

static void on_sized(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    unsigned w = (unsigned)(uintptr_t)tag & 0xff, i = (unsigned)(uintptr_t)tag >> 8;
    const uint8_t *d = erpc_data(resp);
    uint64_t id, count;
    memcpy(&id, d, 8);
    memcpy(&count, d + 8, 8);
    if (resp->size != big_resp)
        fail_with("SIZED answer of the wrong size", resp->size, big_resp);
    else if (id != i)
        fail_with("SIZED answer for another id", id, i);
    else if (count != 1)
        fail_with("a request was executed more than once", id, count);
    else
        for (uint32_t k = 16; k < resp->size; k++)
            if (d[k] != sized_byte(big_sum[w], k)) {
                fail_with("SIZED answer with wrong content (id, byte)", id, k);
                break;
            }
    done_count++;
    if (big_next < big_n)
        big_send(rpc, w, big_next++, 1);
}

static void on_defer(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    (void)rpc;
    (void)tag;
    uint64_t m = *(uint64_t *)erpc_data(resp);
    if (m > max_seen)
        max_seen = m;
    done_count++;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        printf("erpc_client: arguments: SERVER_IP latency|exec|credits ...\n");
        return 2;
    }
    uint32_t server = replica_parse_ip(argv[1]);
    const char *mode = argv[2];
    int nargs = !strcmp(mode, "credits") ? 1 : !strcmp(mode, "echo") || !strcmp(mode, "sized") ? 4 : 2;
    if (server == 0 || argc < 3 + nargs) {
        printf("erpc_client: bad arguments\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[3]);
    unsigned arg2 = nargs > 1 ? (unsigned)atoi(argv[4]) : 0;
    struct erpc_config cfg;
    erpc_default_config(&cfg);
    unsigned start_us = 100;
    for (int i = 3 + nargs; i < argc; i++) {
        if (!strncmp(argv[i], "rto_us=", 7))
            cfg.rto_cycles = (uint64_t)atoi(argv[i] + 7) * cfg.cycles_per_us;
        else if (!strncmp(argv[i], "credits=", 8))
            cfg.credits = (uint32_t)atoi(argv[i] + 8);
        else if (!strcmp(argv[i], "nocc"))
            cfg.congestion_control = 0;
        else if (!strncmp(argv[i], "start_us=", 9))
            start_us = (unsigned)atoi(argv[i] + 9);
        else {
            printf("erpc_client: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    struct erpc_rpc *rpc;
    if (erpc_rpc_init(&rpc, &cfg))
        return 2;
    uint64_t t0 = rdcycle();
    while (rdcycle() - t0 < (uint64_t)start_us * cfg.cycles_per_us)
        ;
    int s = erpc_create_session(rpc, server, 0);
    if (s < 0) {
        printf("result FAILED: no session\n");
        return 1;
    }
    /* A generous limit: every request may need several RTOs. */
    uint64_t limit = (uint64_t)(n + 10) * cfg.rto_cycles * 4;

    if (!strcmp(mode, "latency")) {
        unsigned size = arg2;
        if (size > ERPC_MAX_MSG_SIZE || n > MAX_SAMPLES) {
            printf("erpc_client: size above %u or too many requests\n", ERPC_MAX_MSG_SIZE);
            return 2;
        }
        erpc_alloc_msgbuf(rpc, &reqs[0], size);
        erpc_alloc_msgbuf(rpc, &resps[0], size);
        unsigned warm = n / 10;
        for (unsigned i = 0; i < n + warm && !failed; i++) {
            uint8_t *d = erpc_data(&reqs[0]);
            for (unsigned k = 0; k < size; k++)
                d[k] = (uint8_t)(i + k);
            reqs[0].size = size;
            unsigned before = done_count;
            uint64_t start = rdcycle();
            erpc_enqueue_request(rpc, s, REQ_ECHO, &reqs[0], &resps[0], on_done, 0);
            while (done_count == before && rdcycle() - start < limit)
                erpc_run_event_loop_once(rpc);
            uint64_t took = rdcycle() - start;
            if (done_count == before) {
                fail_with("request unanswered", i, 0);
                break;
            }
            if (resps[0].size != size || memcmp(erpc_data(&resps[0]), d, size))
                fail_with("wrong echo", i, resps[0].size);
            if (i >= warm)
                samples[i - warm] = (uint32_t)took;
        }
        if (!failed)
            for (unsigned i = 0; i < n; i++)
                printf("sample %u\n", (unsigned)samples[i]);
    } else if (!strcmp(mode, "exec")) {
        unsigned window = arg2 < 1 ? 1 : arg2 > MAX_WINDOW ? MAX_WINDOW : arg2;
        exec_n = n;
        exec_session = s;
        for (unsigned i = 0; i < window && exec_next < n; i++) {
            erpc_alloc_msgbuf(rpc, &reqs[i], 8);
            erpc_alloc_msgbuf(rpc, &resps[i], 16);
            uint64_t id = exec_next++;
            memcpy(erpc_data(&reqs[i]), &id, 8);
            erpc_enqueue_request(rpc, s, REQ_EXEC, &reqs[i], &resps[i], on_exec, (void *)(uintptr_t)i);
        }
        wait_done(rpc, n, limit);
        /* Then the server's own count. */
        reqs[0].size = 0;
        unsigned before = done_count;
        erpc_enqueue_request(rpc, s, REQ_TOTAL, &reqs[0], &resps[0], on_done, 0);
        wait_done(rpc, before + 1, limit);
        uint64_t *w = (uint64_t *)erpc_data(&resps[0]);
        if (!failed && (w[0] != n || w[1] != 1))
            fail_with("server executed (total, most of one id)", w[0], w[1]);
        printf("executed total=%lu max_per_id=%lu\n", (unsigned long)w[0], (unsigned long)w[1]);
    } else if (!strcmp(mode, "echo") || !strcmp(mode, "sized")) {
        int sized = mode[0] == 's';
        unsigned a = arg2, b = (unsigned)atoi(argv[5]), window = (unsigned)atoi(argv[6]);
        big_min = big_req = a;
        big_max = big_resp = b;
        if (a > ERPC_MAX_MSG_SIZE || b > ERPC_MAX_MSG_SIZE || (!sized && a > b) ||
            (sized && (a < 12 || b < 16)) || window < 1 || window > MAX_BIG_WINDOW) {
            printf("erpc_client: bad sizes or window (sizes up to %u, window up to %u)\n",
                   ERPC_MAX_MSG_SIZE, MAX_BIG_WINDOW);
            return 2;
        }
        big_n = n;
        big_session = s;
        for (unsigned w = 0; w < window; w++)
            if (!erpc_alloc_msgbuf(rpc, &reqs[w], ERPC_MAX_MSG_SIZE) ||
                !erpc_alloc_msgbuf(rpc, &resps[w], ERPC_MAX_MSG_SIZE)) {
                printf("erpc_client: no msgbuf\n");
                return 2;
            }
        for (unsigned w = 0; w < window && big_next < n; w++)
            big_send(rpc, w, big_next++, sized);
        wait_done(rpc, n, limit);
        /* TOTAL also makes the server print its counters. */
        reqs[0].size = 0;
        unsigned before = done_count;
        erpc_enqueue_request(rpc, s, REQ_TOTAL, &reqs[0], &resps[0], on_done, 0);
        wait_done(rpc, before + 1, limit);
        if (sized) {
            uint64_t *w = (uint64_t *)erpc_data(&resps[0]);
            if (!failed && (w[0] != n || w[1] != 1))
                fail_with("server executed (total, most of one id)", w[0], w[1]);
            printf("executed total=%lu max_per_id=%lu\n", (unsigned long)w[0], (unsigned long)w[1]);
        }
    } else if (!strcmp(mode, "credits")) {
        if (n > MAX_WINDOW) {
            printf("erpc_client: at most %u requests\n", MAX_WINDOW);
            return 2;
        }
        for (unsigned i = 0; i < n; i++) {
            erpc_alloc_msgbuf(rpc, &reqs[i], 0);
            erpc_alloc_msgbuf(rpc, &resps[i], 8);
            erpc_enqueue_request(rpc, s, REQ_DEFER, &reqs[i], &resps[i], on_defer, 0);
        }
        wait_done(rpc, n, limit);
        printf("held_at_once=%lu credits=%u\n", (unsigned long)max_seen, (unsigned)cfg.credits);
        uint64_t expect = cfg.credits < ERPC_SLOTS ? cfg.credits : ERPC_SLOTS;
        if (!failed && max_seen != expect)
            fail_with("the server held (requests at once, expected)", max_seen, expect);
    } else {
        printf("erpc_client: unknown mode %s\n", mode);
        return 2;
    }
    print_stats(rpc);
    if (failed) {
        printf("result FAILED: %s\n", why);
        return 1;
    }
    printf("result ok\n");
    return 0;
}
