/*
 * raft: one server of a Raft cluster (Ongaro and Ousterhout, ATC'14;
 * nanoPU §5.3 and Table 1) replicating a key-value state machine
 * (kv_table.h: 16 B keys, 64 B values): leader election with randomized
 * timeouts on the CLINT timer, AppendEntries log replication, commit on a
 * majority. The leader answers a client's request once the entry is
 * committed and held by every server it has heard from recently (all three
 * in the steady state: the paper's "fully replicated and committed across
 * all three Raft servers"; the ones still alive when a server has failed).
 * Any other server answers "not leader, ask X".
 *
 * Arguments: own IPv4 address, then every server's (replica.h).
 * Message formats: README.md in this directory.
 * Never exits: it is driven by the simulator's NIC (exit 2 on bad arguments).
 *
 * Messages go through a thin layer (raft_net.h: the register file);
 * ../erpc_raft builds this same file over eRPC on the traditional NIC.
 */
#include <nanopu.h>
#include <kv_table.h>
#include <replica.h>
#include <stdio.h>
#include <stdlib.h>
/* The messaging layer: the register file here; eRPC's when erpc_raft
 * includes this file (it defines RAFT_ERPC and its layer first). */
#ifndef RAFT_ERPC
#include "raft_net.h"
#endif

/* Timing, in microseconds of mtime. */
#ifndef HEARTBEAT_US
#define HEARTBEAT_US 10
#endif
#ifndef ELECTION_MIN_US
#define ELECTION_MIN_US 40
#endif
#ifndef ELECTION_SPREAD_US
#define ELECTION_SPREAD_US 40
#endif
/* A follower not heard from for this long is not waited for. */
#ifndef ALIVE_US
#define ALIVE_US 30
#endif
#define US_TICKS(us) ((uint64_t)(us) * NK_MTIME_HZ / 1000000UL)

/* Messages between servers: word 0. */
#define MSG_REQUEST_VOTE 1 /* term, candidate, last_index, last_term */
#define MSG_VOTE 2         /* term, granted */
#define MSG_APPEND 3       /* term, leader, prev_index, prev_term, commit, n, n entries */
#define MSG_APPENDED 4     /* term, success, match_index (or a hint on failure) */

#define ENTRY_WORDS 14
#define APPEND_HEADER_WORDS 7
#define MAX_ENTRIES_PER_APPEND 8
#define LOG_CAPACITY 32768 /* entries; index 0 is a sentinel */
#define OP_NOOP 0          /* a new leader's first entry */

struct entry {
    uint64_t term;
    uint64_t client; /* the request's RX header: client address and context */
    uint64_t id;
    uint64_t op;
    uint64_t k0, k1;
    uint64_t value[KV_VALUE_WORDS];
};

enum role { FOLLOWER, CANDIDATE, LEADER };

static struct kv_table table;
/* The log lives in free memory above the harts' stacks rather than in
 * .bss: start-up code zeroes .bss word by word, which for 3.6 MB would
 * delay the server's boot by milliseconds. An entry is always written
 * before it is read (the sentinel, entry 0, in main). */
extern char _end[];
static struct entry *log_;

static uint32_t ips[REPLICA_MAX];
static int n_servers, self;
static enum role role;
static uint64_t term;
static int voted_for = -1, leader = -1, votes;
static uint64_t last_index, commit_index, applied_index;
/* Leader: entries up to here have been answered (or were not ours). */
static uint64_t replied_index;
static uint64_t next_index[REPLICA_MAX], match_index[REPLICA_MAX], heard_at[REPLICA_MAX];
static uint64_t election_deadline, heartbeat_deadline;
static uint64_t rng_state;
static volatile int timer_fired;

static uint64_t rng_next(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_state >> 33;
}

static uint64_t now_ticks(void) { return clint_mtime(); }

static void reset_election_deadline(uint64_t now)
{
    election_deadline = now + US_TICKS(ELECTION_MIN_US) + rng_next() % (US_TICKS(ELECTION_SPREAD_US) + 1);
}

static void arm_timer(void)
{
    clint_set_mtimecmp(nanopu_hartid(), role == LEADER ? heartbeat_deadline : election_deadline);
}

uintptr_t handle_trap(uintptr_t cause, uintptr_t epc, uintptr_t regs[32])
{
    (void)regs;
    if (cause == MCAUSE_MTIMER_IRQ) {
        clint_set_mtimecmp(nanopu_hartid(), UINT64_MAX);
        timer_fired = 1;
        return epc;
    }
    printf("raft: unexpected trap mcause=0x%lx mepc=0x%lx mtval=0x%lx\n", (unsigned long)cause,
           (unsigned long)epc, (unsigned long)read_csr(mtval));
    exit(128 + (int)(cause & 0xff));
}

static int peer_of(uint32_t ip)
{
    for (int i = 0; i < n_servers; i++)
        if (ips[i] == ip && i != self)
            return i;
    return -1;
}

#ifndef RAFT_ERPC
static uint64_t peer_hdr(int p, uint32_t words) { return lnic_hdr(ips[p], 0, (uint16_t)(words * 8)); }
#endif

static void drain(uint32_t left)
{
    for (; left > 0; left--)
        (void)net_rx();
}

static void become_follower(uint64_t new_term)
{
    if (new_term > term) {
        term = new_term;
        voted_for = -1;
    }
    if (role == LEADER)
        reset_election_deadline(now_ticks());
    role = FOLLOWER;
}

/* AppendEntries to peer p from its next index (at most a few entries). */
static void send_append(int p)
{
    uint64_t from = next_index[p];
    uint64_t n = last_index >= from ? last_index - from + 1 : 0;
    if (n > MAX_ENTRIES_PER_APPEND)
        n = MAX_ENTRIES_PER_APPEND;
    net_request(p, APPEND_HEADER_WORDS + (uint32_t)n * ENTRY_WORDS);
    net_tx_i(MSG_APPEND);
    net_tx(term);
    net_tx((uint64_t)self);
    net_tx(from - 1);
    net_tx(log_[from - 1].term);
    net_tx(commit_index);
    net_tx(n);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t *w = (const uint64_t *)&log_[from + i];
        for (int k = 0; k < ENTRY_WORDS; k++)
            net_tx(w[k]);
    }
    net_end();
    /* Optimistically: the next append starts after these (a failure
     * resets it). */
    next_index[p] = from + n;
}

static void broadcast_append(void)
{
    for (int p = 0; p < n_servers; p++)
        if (p != self)
            send_append(p);
}

static void apply(struct entry *e, int answer)
{
    if (e->op == KV_OP_WRITE) {
        struct kv_slot *s = kv_slot(&table, e->k0, e->k1, 1);
        if (s)
            for (int i = 0; i < KV_VALUE_WORDS; i++)
                s->value[i] = e->value[i];
        if (answer) {
            net_reply(e->client, 16);
            net_tx(e->id);
            net_tx(s ? KV_OK : KV_FULL);
            net_end();
        }
    } else if (e->op == KV_OP_READ && answer) {
        struct kv_slot *s = kv_slot(&table, e->k0, e->k1, 0);
        net_reply(e->client, s ? 16 + 8 * KV_VALUE_WORDS : 16);
        net_tx(e->id);
        if (!s) {
            net_tx_i(KV_NOT_FOUND);
        } else {
            net_tx_i(KV_OK);
            for (int i = 0; i < KV_VALUE_WORDS; i++)
                net_tx(s->value[i]);
        }
        net_end();
    }
}

/* Leader: applies and answers what is committed and held by every server
 * heard from within ALIVE_US. */
static void leader_apply(uint64_t now)
{
    uint64_t limit = commit_index;
    for (int p = 0; p < n_servers; p++)
        if (p != self && now - heard_at[p] <= US_TICKS(ALIVE_US) && match_index[p] < limit)
            limit = match_index[p];
    while (applied_index < limit) {
        applied_index++;
        struct entry *e = &log_[applied_index];
        apply(e, applied_index > replied_index && e->term == term);
    }
    if (replied_index < applied_index)
        replied_index = applied_index;
}

static void follower_apply(void)
{
    while (applied_index < commit_index)
        apply(&log_[++applied_index], 0);
}

static void advance_commit(void)
{
    for (uint64_t N = last_index; N > commit_index; N--) {
        if (log_[N].term != term)
            break;
        int count = 1;
        for (int p = 0; p < n_servers; p++)
            if (p != self && match_index[p] >= N)
                count++;
        if (2 * count > n_servers) {
            commit_index = N;
            break;
        }
    }
}

static void become_leader(uint64_t now)
{
#ifdef RAFT_VERBOSE
    printf("raft: %d leads term %lu at mtime %lu\n", self, (unsigned long)term, (unsigned long)now);
#endif
    role = LEADER;
    leader = self;
    replied_index = last_index;
    for (int p = 0; p < n_servers; p++) {
        next_index[p] = last_index + 1;
        match_index[p] = 0;
        heard_at[p] = now;
    }
    /* A no-op of the new term commits what earlier terms left. */
    if (last_index + 1 < LOG_CAPACITY) {
        struct entry *e = &log_[++last_index];
        e->term = term;
        e->op = OP_NOOP;
        e->client = 0;
        e->id = 0;
    }
    broadcast_append();
    heartbeat_deadline = now + US_TICKS(HEARTBEAT_US);
}

static void start_election(uint64_t now)
{
    role = CANDIDATE;
    term++;
    voted_for = self;
    votes = 1;
    leader = -1;
    reset_election_deadline(now);
    for (int p = 0; p < n_servers; p++) {
        if (p == self)
            continue;
        net_request(p, 5);
        net_tx_i(MSG_REQUEST_VOTE);
        net_tx(term);
        net_tx((uint64_t)self);
        net_tx(last_index);
        net_tx(log_[last_index].term);
        net_end();
    }
    if (2 * votes > n_servers)
        become_leader(now);
}

static void on_timer(void)
{
    uint64_t now = now_ticks();
    if (role == LEADER) {
        if (now >= heartbeat_deadline) {
            broadcast_append();
            heartbeat_deadline = now + US_TICKS(HEARTBEAT_US);
        }
        leader_apply(now);
    } else if (now >= election_deadline) {
        start_election(now);
    }
    arm_timer();
}

static void on_request_vote(int p, uint32_t words)
{
    if (words != 5) {
        drain(words - 1);
        return;
    }
    uint64_t t = net_rx(), cand = net_rx(), li = net_rx(), lt = net_rx();
    if (t > term)
        become_follower(t);
    uint64_t my_lt = log_[last_index].term;
    int up_to_date = lt > my_lt || (lt == my_lt && li >= last_index);
    int granted = t == term && (voted_for < 0 || voted_for == (int)cand) && up_to_date &&
                  (int)cand == p;
    if (granted) {
        voted_for = p;
        reset_election_deadline(now_ticks());
    }
    net_reply_peer(p, 3);
    net_tx_i(MSG_VOTE);
    net_tx(term);
    net_tx((uint64_t)granted);
    net_end();
}

static void on_vote(uint32_t words)
{
    if (words != 3) {
        drain(words - 1);
        return;
    }
    uint64_t t = net_rx(), granted = net_rx();
    if (t > term) {
        become_follower(t);
        return;
    }
    if (role == CANDIDATE && t == term && granted && 2 * ++votes > n_servers)
        become_leader(now_ticks());
}

static void on_append(int p, uint32_t words)
{
    if (words < APPEND_HEADER_WORDS) {
        drain(words - 1);
        return;
    }
    uint64_t t = net_rx(), from = net_rx(), prev = net_rx(), prev_term = net_rx();
    uint64_t leader_commit = net_rx(), n = net_rx();
    uint32_t left = words - APPEND_HEADER_WORDS;
    if (left != n * ENTRY_WORDS || (int)from != p) {
        drain(left);
        return;
    }
    uint64_t success = 0, match = 0;
    if (t >= term) {
        become_follower(t);
        leader = p;
        reset_election_deadline(now_ticks());
        if (prev <= last_index && log_[prev].term == prev_term && prev + n < LOG_CAPACITY) {
            for (uint64_t i = 0; i < n; i++) {
                uint64_t idx = prev + 1 + i;
                uint64_t et = net_rx();
                if (idx <= last_index && log_[idx].term == et) {
                    drain(ENTRY_WORDS - 1); /* already held */
                    continue;
                }
                last_index = idx; /* a conflicting suffix is dropped */
                uint64_t *w = (uint64_t *)&log_[idx];
                w[0] = et;
                for (int k = 1; k < ENTRY_WORDS; k++)
                    w[k] = net_rx();
            }
            left = 0;
            success = 1;
            match = prev + n;
            uint64_t c = leader_commit < match ? leader_commit : match;
            if (c > commit_index)
                commit_index = c;
        } else {
            match = prev - 1 < last_index ? prev - 1 : last_index; /* a hint */
            if (prev == 0)
                match = 0;
        }
    }
    drain(left);
    net_reply_peer(p, 4);
    net_tx_i(MSG_APPENDED);
    net_tx(term);
    net_tx(success);
    net_tx(match);
    net_end();
    follower_apply();
}

static void on_appended(int p, uint32_t words)
{
    if (words != 4) {
        drain(words - 1);
        return;
    }
    uint64_t t = net_rx(), success = net_rx(), match = net_rx();
    if (t > term) {
        become_follower(t);
        return;
    }
    if (role != LEADER || t != term)
        return;
    uint64_t now = now_ticks();
    heard_at[p] = now;
    if (success) {
        if (match > match_index[p])
            match_index[p] = match;
        if (next_index[p] <= match_index[p])
            next_index[p] = match_index[p] + 1;
        advance_commit();
        if (next_index[p] <= last_index)
            send_append(p);
    } else {
        next_index[p] = match + 1;
        send_append(p);
    }
    leader_apply(now);
}

static void on_client(uint64_t hdr, uint32_t words)
{
    uint64_t id = words ? net_rx() : 0;
    uint64_t op = words > 1 ? net_rx() : 0;
    int ok = (op == KV_OP_WRITE && words == 4 + KV_VALUE_WORDS) || (op == KV_OP_READ && words == 4);
    if (!ok || role != LEADER || last_index + 1 >= LOG_CAPACITY) {
        drain(words > 2 ? words - 2 : 0);
        uint64_t status = !ok ? KV_MALFORMED : role != LEADER ? KV_WRONG_NODE : KV_FULL;
        net_reply(hdr, status == KV_WRONG_NODE ? 32 : 16);
        net_tx(id);
        net_tx(status);
        if (status == KV_WRONG_NODE) {
            net_tx(leader >= 0 ? ips[leader] : 0);
            net_tx(leader >= 0 ? (uint64_t)leader : UINT64_MAX);
        }
        net_end();
        return;
    }
    struct entry *e = &log_[++last_index];
    e->term = term;
    e->client = hdr;
    e->id = id;
    e->op = op;
    e->k0 = net_rx();
    e->k1 = net_rx();
    if (op == KV_OP_WRITE)
        for (int i = 0; i < KV_VALUE_WORDS; i++)
            e->value[i] = net_rx();
    broadcast_append();
    if (n_servers == 1) {
        commit_index = last_index;
        leader_apply(now_ticks());
    }
}

#ifndef RAFT_ERPC
int main(int argc, char **argv)
{
    n_servers = replica_args(argc, argv, ips, &self);
    if (n_servers == 0) {
        printf("raft: arguments: OWN_IP SERVER_IP...\n");
        return 2;
    }
    uintptr_t heap = (uintptr_t)_end + ((uintptr_t)NANOPU_MAX_HARTS << NANOPU_STACK_SHIFT);
    log_ = (struct entry *)((heap + 4095) & ~(uintptr_t)4095);
    log_[0].term = 0;
    rng_state = 0x9E3779B97F4A7C15ULL * (uint64_t)(self + 1) ^ ips[self];
    for (int i = 0; i < 4; i++)
        rng_next();
    reset_election_deadline(now_ticks());
    arm_timer();
    set_csr(mie, MIP_MTIP);
    set_csr(mstatus, MSTATUS_MIE);
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        while (!lnic_has_msg()) {
            if (timer_fired) {
                timer_fired = 0;
                on_timer();
            } else {
                lnic_idle();
            }
        }
        uint64_t hdr = lnic_read();
        uint32_t words = lnic_hdr_words(hdr);
        int p = peer_of(lnic_hdr_ip(hdr));
        if (p < 0) {
            on_client(hdr, words);
        } else if (words == 0) {
            /* nothing to read */
        } else {
            uint64_t type = lnic_read();
            switch (type) {
            case MSG_REQUEST_VOTE: on_request_vote(p, words); break;
            case MSG_VOTE: on_vote(words); break;
            case MSG_APPEND: on_append(p, words); break;
            case MSG_APPENDED: on_appended(p, words); break;
            default: drain(words - 1); break;
            }
        }
        lnic_msg_done();
        arm_timer();
    }
}
#endif /* !RAFT_ERPC */
