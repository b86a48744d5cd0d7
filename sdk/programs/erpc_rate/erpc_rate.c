/*
 * erpc_rate: eRPC §6.2's small-RPC rate benchmark on one node of several:
 * one thread per node that is both server and client; it issues batches of
 * B requests of 32 B, each to a randomly chosen other node, and keeps up
 * to 60 requests in flight across its sessions; the servers echo.
 *
 *   erpc_rate SELF_INDEX B WARM_US MEASURE_US LINGER_US IP... [nocc] [rq=N]
 *             [no-batched-timestamps] [no-timely-bypass] [no-rate-limiter-bypass]
 *
 * The last three disable one of eRPC §5.2.2's optimizations each (Table 3).
 *
 * Counts the requests completed during MEASURE_US after WARM_US, prints
 * `rate completed=N cycles=C` and the library's counters, then serves for
 * LINGER_US more (the other nodes are still measuring) and exits 0.
 */
#include <erpc.h>
#include <nanopu.h>
#include <replica.h>
#include <stdio.h>
#include <stdlib.h>

#define REQ_ECHO 1
#define RPC_BYTES 32
/* eRPC §6.2: "Each thread keeps up to 60 requests in flight". */
#define IN_FLIGHT 60
#define MAX_NODES 16

static struct erpc_msgbuf reqs[IN_FLIGHT], resps[IN_FLIGHT];
static int free_list[IN_FLIGHT], n_free;
static int sessions[MAX_NODES];
static int n_remote;
static uint64_t completed;
static int measuring;
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static void on_echo(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    memcpy(erpc_response_buf(rpc, h), req, size);
    erpc_enqueue_response(rpc, h, size);
}

static void on_done(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp)
{
    (void)rpc;
    (void)resp;
    free_list[n_free++] = (int)(uintptr_t)tag;
    completed += measuring;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        printf("erpc_rate: arguments: SELF_INDEX B WARM_US MEASURE_US LINGER_US IP...\n");
        return 2;
    }
    int self = atoi(argv[1]);
    unsigned batch = (unsigned)atoi(argv[2]);
    uint64_t warm = (uint64_t)atoi(argv[3]), measure = (uint64_t)atoi(argv[4]);
    uint64_t linger = (uint64_t)atoi(argv[5]);
    struct erpc_config cfg;
    erpc_default_config(&cfg);
    uint32_t ips[MAX_NODES];
    int n = 0;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "nocc"))
            cfg.congestion_control = 0;
        else if (!strcmp(argv[i], "no-batched-timestamps"))
            cfg.batch_timestamps = 0;
        else if (!strcmp(argv[i], "no-timely-bypass"))
            cfg.timely_bypass = 0;
        else if (!strcmp(argv[i], "no-rate-limiter-bypass"))
            cfg.rate_limiter_bypass = 0;
        else if (!strncmp(argv[i], "rq=", 3))
            cfg.rq_size = (uint32_t)atoi(argv[i] + 3);
        else if (n < MAX_NODES && (ips[n] = replica_parse_ip(argv[i])) != 0)
            n++;
        else {
            printf("erpc_rate: bad argument %s\n", argv[i]);
            return 2;
        }
    }
    if (self < 0 || self >= n || batch == 0 || batch > IN_FLIGHT || n < 2) {
        printf("erpc_rate: bad arguments\n");
        return 2;
    }
    rng ^= (uint64_t)self * 0x2545F4914F6CDD1DULL;
    struct erpc_rpc *rpc;
    if (erpc_rpc_init(&rpc, &cfg))
        return 2;
    erpc_register_handler(rpc, REQ_ECHO, on_echo, 0);
    uint64_t us = cfg.cycles_per_us;
    uint64_t t0 = rdcycle();
    while (rdcycle() - t0 < 100 * us)
        ;
    for (int i = 0; i < n; i++)
        if (i != self && (sessions[n_remote++] = erpc_create_session(rpc, ips[i], 0)) < 0) {
            printf("erpc_rate: no session to node %d\n", i);
            return 2;
        }
    for (int i = 0; i < IN_FLIGHT; i++) {
        erpc_alloc_msgbuf(rpc, &reqs[i], RPC_BYTES);
        erpc_alloc_msgbuf(rpc, &resps[i], RPC_BYTES);
        memset(erpc_data(&reqs[i]), (int)i, RPC_BYTES);
        free_list[n_free++] = i;
    }
    uint64_t start = rdcycle();
    uint64_t begin = start + warm * us, end = begin + measure * us, stop = end + linger * us;
    uint64_t measured_from = 0, measured_to = 0;
    for (;;) {
        /* Another batch once B requests may go without exceeding 60. */
        while ((unsigned)n_free >= batch) {
            for (unsigned b = 0; b < batch; b++) {
                int i = free_list[--n_free];
                rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                int s = sessions[(rng >> 33) % (uint64_t)n_remote];
                erpc_enqueue_request(rpc, s, REQ_ECHO, &reqs[i], &resps[i], on_done, (void *)(uintptr_t)i);
            }
        }
        erpc_run_event_loop_once(rpc);
        uint64_t now = rdcycle();
        if (!measuring && !measured_to && now >= begin) {
            measuring = 1;
            measured_from = now;
        } else if (measuring && now >= end) {
            measuring = 0;
            measured_to = now;
            const struct erpc_stats *st = erpc_stats(rpc);
            printf("rate completed=%lu cycles=%lu\n", (unsigned long)completed,
                   (unsigned long)(measured_to - measured_from));
            printf("stats sent=%lu handled=%lu retransmissions=%lu rate_updates=%lu bypassed=%lu "
                   "limited=%lu stale=%lu\n",
                   (unsigned long)st->requests_sent, (unsigned long)st->requests_handled,
                   (unsigned long)st->retransmissions, (unsigned long)st->rate_updates,
                   (unsigned long)st->timely_bypassed, (unsigned long)st->rate_limited,
                   (unsigned long)st->dropped_stale);
        } else if (measured_to && now >= stop) {
            return 0;
        }
    }
}
