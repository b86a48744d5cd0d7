/*
 * erpc_raft: sdk/programs/raft (the same Raft code, the same arguments and
 * client messages: ../raft/README.md) over the eRPC-style library on the
 * traditional NIC (erpc.h), through the messaging layer raft_net_erpc.h.
 *
 * One Rpc; request type RAFT_REQ carries every message. A request from an
 * address that is not a server's is a client's (as on the nanoPU).
 */
#define RAFT_ERPC 1
#include "raft_net_erpc.h"
#include "../raft/raft.c"

#define RAFT_REQ 1
/* Outstanding requests to peers (each holds two msgbufs of the pool). */
#define MAX_PEER_REQS 40

static struct erpc_rpc *rpc;
static int session_of[REPLICA_MAX];

const uint64_t *raft_rx_ptr;
uint64_t *raft_tx_ptr;
/* Where a message whose buffer could not be had is written (and dropped:
 * Raft re-sends what a lost message carried). */
static uint64_t scratch[ERPC_MAX_DATA / 8];

/* The message being built. */
enum { OUT_NONE, OUT_REQUEST, OUT_RESPONSE, OUT_DROP };
static int out_kind;
static uint64_t *out_start;
static erpc_handle out_handle;
static int out_peer, out_req;

/* Requests to peers in flight. */
struct peer_req {
    struct erpc_msgbuf req, resp;
    int peer;
    int used;
};
static struct peer_req peer_reqs[MAX_PEER_REQS];

/* The request being handled, and whether it was answered. */
static erpc_handle current;
static int answered;

void net_request(int p, uint32_t words)
{
    (void)words;
    for (int i = 0; i < MAX_PEER_REQS; i++) {
        struct peer_req *r = &peer_reqs[i];
        if (r->used)
            continue;
        if (!erpc_alloc_msgbuf(rpc, &r->req, 0))
            break;
        if (!erpc_alloc_msgbuf(rpc, &r->resp, 0)) {
            erpc_free_msgbuf(rpc, &r->req);
            break;
        }
        r->used = 1;
        r->peer = p;
        out_kind = OUT_REQUEST;
        out_req = i;
        out_peer = p;
        out_start = raft_tx_ptr = (uint64_t *)erpc_data(&r->req);
        return;
    }
    out_kind = OUT_DROP;
    out_start = raft_tx_ptr = scratch;
}

void net_reply_peer(int p, uint32_t words)
{
    (void)p;
    (void)words;
    out_kind = OUT_RESPONSE;
    out_handle = current;
    out_start = raft_tx_ptr = (uint64_t *)erpc_response_buf(rpc, current);
}

void net_reply(uint64_t client, uint32_t bytes)
{
    (void)bytes;
    out_kind = OUT_RESPONSE;
    out_handle = (erpc_handle)client;
    out_start = raft_tx_ptr = (uint64_t *)erpc_response_buf(rpc, out_handle);
}

static void on_peer_response(struct erpc_rpc *r, void *tag, struct erpc_msgbuf *resp);

void net_end(void)
{
    uint32_t size = (uint32_t)((raft_tx_ptr - out_start) * 8);
    if (out_kind == OUT_REQUEST) {
        struct peer_req *r = &peer_reqs[out_req];
        r->req.size = size;
        if (erpc_enqueue_request(rpc, session_of[out_peer], RAFT_REQ, &r->req, &r->resp,
                                 on_peer_response, r)) {
            erpc_free_msgbuf(rpc, &r->req);
            erpc_free_msgbuf(rpc, &r->resp);
            r->used = 0;
        }
    } else if (out_kind == OUT_RESPONSE) {
        if (out_handle == current)
            answered = 1;
        erpc_enqueue_response(rpc, out_handle, size);
    }
    out_kind = OUT_NONE;
}

/* An answer from a peer: a vote or an AppendEntries reply, read as the
 * nanoPU build reads a message from netRX. */
static void on_peer_response(struct erpc_rpc *r, void *tag, struct erpc_msgbuf *resp)
{
    (void)r;
    struct peer_req *pr = tag;
    int p = pr->peer;
    uint32_t words = resp->size / 8;
    raft_rx_ptr = (const uint64_t *)erpc_data(resp);
    if (words > 0) {
        uint64_t type = net_rx();
        if (type == MSG_VOTE)
            on_vote(words);
        else if (type == MSG_APPENDED)
            on_appended(p, words);
    }
    erpc_free_msgbuf(rpc, &pr->req);
    erpc_free_msgbuf(rpc, &pr->resp);
    pr->used = 0;
}

static void on_request(struct erpc_rpc *r, erpc_handle h, const uint8_t *req, uint32_t size, void *ctx)
{
    (void)ctx;
    uint32_t words = size / 8;
    current = h;
    answered = 0;
    raft_rx_ptr = (const uint64_t *)req;
    int p = peer_of(erpc_handle_ip(r, h));
    if (p < 0) {
        on_client(h, words);
        /* A leader answers once the entry commits (net_reply later). */
        return;
    }
    if (words > 0) {
        uint64_t type = net_rx();
        if (type == MSG_REQUEST_VOTE)
            on_request_vote(p, words);
        else if (type == MSG_APPEND)
            on_append(p, words);
    }
    /* Every request gets a response, or its slot would stay taken. */
    if (!answered)
        erpc_enqueue_response(r, h, 0);
}

int main(int argc, char **argv)
{
    n_servers = replica_args(argc, argv, ips, &self);
    if (n_servers == 0) {
        printf("erpc_raft: arguments: OWN_IP SERVER_IP...\n");
        return 2;
    }
    uintptr_t heap = (uintptr_t)_end + ((uintptr_t)NANOPU_MAX_HARTS << NANOPU_STACK_SHIFT);
    log_ = (struct entry *)((heap + 4095) & ~(uintptr_t)4095);
    log_[0].term = 0;
    rng_state = 0x9E3779B97F4A7C15ULL * (uint64_t)(self + 1) ^ ips[self];
    for (int i = 0; i < 4; i++)
        rng_next();
    struct erpc_config cfg;
    erpc_default_config(&cfg);
    if (erpc_rpc_init(&rpc, &cfg))
        return 2;
    erpc_register_handler(rpc, RAFT_REQ, on_request, 0);
    for (int p = 0; p < n_servers; p++) {
        session_of[p] = -1;
        if (p != self && (session_of[p] = erpc_create_session(rpc, ips[p], 0)) < 0) {
            printf("erpc_raft: no session to server %d\n", p);
            return 2;
        }
    }
    reset_election_deadline(now_ticks());
    arm_timer();
    set_csr(mie, MIP_MTIP);
    set_csr(mstatus, MSTATUS_MIE);
    icenic_boot();
    for (;;) {
        unsigned got = erpc_run_event_loop_once(rpc);
        if (timer_fired) {
            timer_fired = 0;
            on_timer();
            arm_timer();
        } else if (got) {
            arm_timer();
        }
    }
}
