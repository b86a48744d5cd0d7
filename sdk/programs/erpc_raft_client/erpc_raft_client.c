/*
 * erpc_raft_client: a client of erpc_raft (Raft over eRPC; messages in
 * ../raft/README.md) that is itself an eRPC client, as in eRPC §7.1: one
 * write outstanding at a time to the server it believes leads, redirected
 * by "not leader, ask X" answers; 16 B keys drawn uniformly from KEYS keys,
 * 64 B values. Every answer is checked (the id it names, status OK); at
 * the end every key written is read back through the log and compared
 * with the last value written.
 *
 *   erpc_raft_client N SERVER_IP... [start_us=US]
 *
 * Prints `sample CYCLES` per write after the first N/20 (warm-up, as the
 * nanoPU experiment leaves out; the first election falls in it), from the
 * first send to the answer, then `result ok` (exit 0) or
 * `result FAILED: why` (exit 1).
 */
#include <erpc.h>
#include <nanopu.h>
#include <replica.h>
#include <kv_table.h>
#include <stdio.h>
#include <stdlib.h>

#define RAFT_REQ 1
#define KEYS 1000
#define MAX_SAMPLES 100000

static uint32_t samples[MAX_SAMPLES];
static uint64_t last_value[KEYS];
static uint8_t written[KEYS];
static struct erpc_msgbuf req, resp;
static int answered;

static void on_answer(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *r)
{
    (void)rpc;
    (void)tag;
    (void)r;
    answered = 1;
}

static int sessions[REPLICA_MAX];
static int n_servers, leader;
static struct erpc_rpc *rpc;
static uint64_t redirects;

/* Sends the request in `req` until a server that leads answers it; returns
 * the answer's words (in resp) or 0 if none came. */
static uint32_t call(uint64_t limit)
{
    uint64_t start = rdcycle();
    for (;;) {
        answered = 0;
        if (erpc_enqueue_request(rpc, sessions[leader], RAFT_REQ, &req, &resp, on_answer, 0))
            return 0;
        while (!answered) {
            erpc_run_event_loop_once(rpc);
            if (rdcycle() - start > limit)
                return 0;
        }
        uint64_t *w = (uint64_t *)erpc_data(&resp);
        if (resp.size == 32 && w[1] == KV_WRONG_NODE) {
            redirects++;
            leader = w[3] < (uint64_t)n_servers && (int)w[3] != leader ? (int)w[3]
                                                                        : (leader + 1) % n_servers;
            continue;
        }
        return resp.size / 8;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        printf("erpc_raft_client: arguments: N SERVER_IP...\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[1]);
    uint32_t ips[REPLICA_MAX];
    unsigned start_us = 100;
    for (int i = 2; i < argc; i++) {
        if (!strncmp(argv[i], "start_us=", 9)) {
            start_us = (unsigned)atoi(argv[i] + 9);
            continue;
        }
        if (n_servers == REPLICA_MAX || !(ips[n_servers++] = replica_parse_ip(argv[i]))) {
            printf("erpc_raft_client: bad server address %s\n", argv[i]);
            return 2;
        }
    }
    if (n == 0 || n > MAX_SAMPLES || n_servers == 0) {
        printf("erpc_raft_client: bad arguments\n");
        return 2;
    }
    struct erpc_config cfg;
    erpc_default_config(&cfg);
    if (erpc_rpc_init(&rpc, &cfg))
        return 2;
    uint64_t t0 = rdcycle();
    while (rdcycle() - t0 < (uint64_t)start_us * cfg.cycles_per_us)
        ;
    for (int i = 0; i < n_servers; i++)
        if ((sessions[i] = erpc_create_session(rpc, ips[i], 0)) < 0) {
            printf("result FAILED: no session to server %d\n", i);
            return 1;
        }
    erpc_alloc_msgbuf(rpc, &req, 0);
    erpc_alloc_msgbuf(rpc, &resp, 0);
    /* A write may wait for an election (40-80 us) and a loss for the RTO. */
    uint64_t limit = 4 * cfg.rto_cycles;
    unsigned warm = n / 20 ? n / 20 : 1;
    uint64_t rng = 0x2545F4914F6CDD1DULL;
    for (unsigned i = 0; i < n + warm; i++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned key = (unsigned)((rng >> 33) % KEYS);
        uint64_t *w = (uint64_t *)erpc_data(&req);
        w[0] = i;
        w[1] = KV_OP_WRITE;
        w[2] = key;
        w[3] = ~(uint64_t)key;
        for (int k = 0; k < KV_VALUE_WORDS; k++)
            w[4 + k] = ((uint64_t)i << 8) | (uint64_t)k;
        req.size = 8 * (4 + KV_VALUE_WORDS);
        uint64_t start = rdcycle();
        uint32_t words = call(limit);
        uint64_t took = rdcycle() - start;
        uint64_t *a = (uint64_t *)erpc_data(&resp);
        if (words != 2 || a[0] != i || a[1] != KV_OK) {
            printf("result FAILED: write %u answered with %u words (%lu, %lu)\n", i, (unsigned)words,
                   (unsigned long)(words ? a[0] : 0), (unsigned long)(words > 1 ? a[1] : 0));
            return 1;
        }
        last_value[key] = (uint64_t)i << 8;
        written[key] = 1;
        if (i >= warm)
            samples[i - warm] = (uint32_t)took;
    }
    /* Read back every key written: reads go through the log. */
    unsigned checked = 0;
    for (unsigned key = 0; key < KEYS; key++) {
        if (!written[key])
            continue;
        uint64_t *w = (uint64_t *)erpc_data(&req);
        w[0] = n + warm + key;
        w[1] = KV_OP_READ;
        w[2] = key;
        w[3] = ~(uint64_t)key;
        req.size = 32;
        uint32_t words = call(limit);
        uint64_t *a = (uint64_t *)erpc_data(&resp);
        if (words != 2 + KV_VALUE_WORDS || a[1] != KV_OK) {
            printf("result FAILED: read of key %u answered with %u words\n", key, (unsigned)words);
            return 1;
        }
        for (int k = 0; k < KV_VALUE_WORDS; k++)
            if (a[2 + k] != (last_value[key] | (uint64_t)k)) {
                printf("result FAILED: key %u holds %lx, last written %lx\n", key,
                       (unsigned long)a[2 + k], (unsigned long)(last_value[key] | (uint64_t)k));
                return 1;
            }
        checked++;
    }
    for (unsigned i = 0; i < n; i++)
        printf("sample %u\n", (unsigned)samples[i]);
    const struct erpc_stats *st = erpc_stats(rpc);
    printf("stats writes=%u reads_checked=%u redirects=%lu retransmissions=%lu\n", n + warm, checked,
           (unsigned long)redirects, (unsigned long)st->retransmissions);
    printf("result ok\n");
    return 0;
}
