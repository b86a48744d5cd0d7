/*
 * erpc.c - the eRPC-style RPC library (include/erpc.h says what it is and
 * where each design point comes from).
 */
#include <erpc.h>
#include <nanopu.h>
#include <stdio.h>

/* Requests waiting for a slot or a credit, per session. */
#define BACKLOG 64
/* Message buffers of the pool (erpc_alloc_msgbuf). */
#define POOL 160
/* A buffer's stride: ERPC_BUF_BYTES rounded up to whole cache lines. */
#define BUF_STRIDE (((ERPC_BUF_BYTES) + 63) & ~63)
/* Bytes of a session's control frame (connect handshake). */
#define CTL_BYTES 128
/* How often the event loop looks for lost packets: a tenth of the RTO.
 * Assumption (eRPC scans periodically; the paper gives no period). */
#define LOSS_SCANS_PER_RTO 10
#define NO_SESSION 0xffff
/* The multi-packet code stays out of the one-packet path's way: out of
 * line, in .text.unlikely, its branches laid out as not taken. */
#define COLD __attribute__((noinline, cold))
#define unlikely(x) __builtin_expect(!!(x), 0)
/* write_packet_headers' packet number and message size in one argument,
 * so that all its arguments travel in registers. */
#define PKT_NUM_SIZE(pkt_num, msg_size) (((uint64_t)(pkt_num) << 32) | (uint32_t)(msg_size))
/* Multi-packet msgbufs (erpc_alloc_msgbuf above ERPC_MAX_DATA, server
 * reassembly and large responses): headers, ERPC_MAX_MSG_SIZE of data, the
 * headers of packets 2..N. */
#define LARGE_POOL 16
#define LARGE_STRIDE \
    (((ERPC_HEADROOM + ERPC_MAX_MSG_SIZE + (ERPC_MAX_PKTS - 1) * ERPC_HEADROOM) + 63) & ~63)
/* TX staging frames for packets 2..N, CRs and RFRs (the IceNIC reads a
 * frame with one DMA). A frame is reused STAGE sends later; the library
 * keeps fewer than STAGE sends in the NIC's queue, so by then it was read. */
#define STAGE 72

enum role { FREE = 0, CLIENT, SERVER };
enum sslot_state { SS_NONE = 0, SS_RUNNING, SS_RESPONDED, SS_RECEIVING };

struct cslot {
    uint64_t req_num; /* the slot's current (or next) request number */
    struct erpc_msgbuf *req, *resp;
    erpc_continuation cont;
    void *tag;
    uint64_t tx_cycle; /* when last sent: RTT sample and RTO */
    uint8_t busy;      /* a request occupies the slot */
    uint8_t in_wire;   /* sent (its credit used), unanswered */
    uint8_t in_limiter;/* waiting in the rate limiter (packets, when multi) */
    uint8_t req_type;
    /* The request or the response spans packets: the slot's state is in
     * cmulti (kept apart so one-packet slots stay small in the cache), and
     * tx_cycle is the last progress (the RTO's reference). */
    uint8_t multi;
};

/* A client slot's multi-packet state: packets sent and received in eRPC's
 * numbering (erpc.h), packets of the request and of the response (0: not
 * known yet), the response's size, and when each outstanding packet left
 * (Timely's RTT per packet). */
struct cmulti {
    uint8_t num_tx, num_rx, req_pkts, resp_pkts;
    uint32_t resp_msg_size;
    uint64_t tx_ts[ERPC_MAX_PKTS];
};

struct sslot {
    uint64_t req_num;
    uint8_t state;
    uint8_t req_pkts; /* packets of the request */
    uint8_t bufs;     /* holds pool msgbufs (smulti) */
    uint32_t resp_size;
};

/* A server slot's multi-packet state. */
struct smulti {
    uint8_t num_rx;              /* the next client packet expected (eRPC's numbering) */
    struct erpc_msgbuf req_buf;  /* reassembly of a multi-packet request */
    struct erpc_msgbuf resp_buf; /* a large response (erpc_alloc_response) */
};

struct pending {
    struct erpc_msgbuf *req, *resp;
    erpc_continuation cont;
    void *tag;
    uint8_t req_type;
};

struct session {
    uint8_t role;
    uint8_t connected;
    uint16_t remote_session;
    uint32_t remote_ip;
    uint16_t remote_rpc;
    uint8_t multi_active; /* client slots in multi-packet state */
    uint32_t credits;
    uint32_t ip_sum_base; /* IPv4 header sum without the total length */
    uint64_t hdr[FRAME_HEADER_LEN / 8] __attribute__((aligned(8)));
    uint64_t connect_tx_cycle;
    struct cslot c[ERPC_SLOTS];
    struct sslot s[ERPC_SLOTS];
    struct pending backlog[BACKLOG];
    unsigned backlog_head, backlog_count;
    /* Timely */
    double rate_bps, prev_rtt_us, avg_rtt_diff;
    unsigned neg_count;
    uint64_t next_tx_cycle; /* rate limiter: the session's next send time */
};

struct limited {
    uint16_t session;
    uint8_t slot;
    uint64_t at;
};
/* Entries of the rate limiter: one per packet waiting. A waiting packet
 * holds a session credit; with C <= ERPC_SLOTS (the default) the sessions
 * hold at most this many (|RQ| / C sessions of C credits, §4.3.1). With
 * more, a packet finding the limiter full is sent unpaced. */
#define LIMITER_ENTRIES (ERPC_MAX_SESSIONS * ERPC_SLOTS)

struct erpc_rpc {
    struct erpc_config cfg;
    struct erpc_stats stats;
    uint32_t local_ip;
    uint8_t local_mac[6];
    unsigned rx_idx;
    unsigned tx_outstanding, tx_depth;
    uint64_t now;
    uint64_t last_scan, scan_interval;
    double max_rate_bps;
    unsigned max_sessions;
    unsigned limited_count;
    struct limited limiter[LIMITER_ENTRIES];
    erpc_req_handler handlers[256];
    void *handler_ctx[256];
    uint8_t pool_free[POOL];
    struct session sessions[ERPC_MAX_SESSIONS];
};

/* Multi-packet state and buffers. Defined before the rest so that GCC
 * places them after it in .bss (it emits statics in reverse): the
 * one-packet path's data keep their addresses, and so their cache sets. */
static struct cmulti cmulti[ERPC_MAX_SESSIONS][ERPC_SLOTS];
static struct smulti smulti[ERPC_MAX_SESSIONS][ERPC_SLOTS];
static uint8_t large_pool[LARGE_POOL][LARGE_STRIDE] __attribute__((aligned(64)));
static uint8_t stage_frames[STAGE][BUF_STRIDE] __attribute__((aligned(64)));
static uint8_t large_free[LARGE_POOL];
static unsigned stage_next;

static struct erpc_rpc the_rpc;
static uint8_t rx_bufs[ERPC_MAX_RQ][ICENIC_RECV_BUF_BYTES] __attribute__((aligned(64)));
static uint8_t resp_frames[ERPC_MAX_SESSIONS][ERPC_SLOTS][BUF_STRIDE] __attribute__((aligned(64)));
static uint8_t ctl_frames[ERPC_MAX_SESSIONS][CTL_BYTES] __attribute__((aligned(64)));
static uint8_t pool[POOL][BUF_STRIDE] __attribute__((aligned(64)));

/* ---- small helpers ---------------------------------------------------------- */

static inline uint64_t stamp(struct erpc_rpc *rpc)
{
    return rpc->cfg.batch_timestamps ? rpc->now : rdcycle();
}

static void mac_of_ip(uint8_t mac[6], uint32_t ip)
{
    mac[0] = 0x02;
    mac[1] = 0x00;
    mac[2] = (uint8_t)(ip >> 24);
    mac[3] = (uint8_t)(ip >> 16);
    mac[4] = (uint8_t)(ip >> 8);
    mac[5] = (uint8_t)ip;
}

static void ip_bytes(uint8_t b[4], uint32_t ip)
{
    b[0] = (uint8_t)(ip >> 24);
    b[1] = (uint8_t)(ip >> 16);
    b[2] = (uint8_t)(ip >> 8);
    b[3] = (uint8_t)ip;
}

static uint32_t be32_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

uint32_t erpc_local_ip(void)
{
    uint64_t w = nic_macaddr();
    uint8_t mac[8];
    memcpy(mac, &w, 8);
    return be32_at(mac + 2);
}

static void reap_sends(struct erpc_rpc *rpc)
{
    unsigned n = nic_send_comp_avail();
    for (unsigned i = 0; i < n; i++)
        (void)nic_send_comp();
    rpc->tx_outstanding -= n;
}

/* One DMA read per packet: headers and data are contiguous. */
static void nic_tx(struct erpc_rpc *rpc, uint8_t *frame, unsigned len)
{
    while (rpc->tx_outstanding >= rpc->tx_depth)
        reap_sends(rpc);
    nic_send(frame, len);
    rpc->tx_outstanding++;
}

/* §4.2.2: after queueing a retransmission, wait until the NIC has read
 * every queued packet, so no DMA queue entry refers to a request whose
 * response the application may get next. */
static void flush_tx(struct erpc_rpc *rpc)
{
    rpc->stats.tx_flushes++;
    while (rpc->tx_outstanding > 0)
        reap_sends(rpc);
}

/* The session's header template: addresses, contexts; lengths and
 * checksum are filled per packet (write_headers). */
static void session_template(struct erpc_rpc *rpc, struct session *s)
{
    uint8_t *h = (uint8_t *)s->hdr;
    uint8_t dmac[6], dip[4], sip[4];
    mac_of_ip(dmac, s->remote_ip);
    ip_bytes(dip, s->remote_ip);
    ip_bytes(sip, rpc->local_ip);
    nt_build_headers(h, dmac, rpc->local_mac, dip, sip, s->remote_rpc, rpc->cfg.rpc_id, 0, 0);
    put_be16(h + IP_TOTAL_LEN, 0);
    put_be16(h + IP_CHECKSUM, 0);
    uint32_t sum = 0;
    for (int i = 0; i < IP_HEADER_LEN; i += 2)
        sum += get_be16(h + IP_OFF + i);
    s->ip_sum_base = sum;
}

static unsigned write_packet_headers(struct session *s, uint8_t *frame, uint8_t pkt_type,
                                     uint8_t req_type, uint16_t src_session, uint64_t req_num,
                                     uint32_t size, uint64_t num_size);

/* Frame headers and the eRPC header of a packet carrying `size` data
 * bytes; returns the frame's length. */
static unsigned write_headers(struct session *s, uint8_t *frame, uint8_t pkt_type, uint8_t req_type,
                              uint16_t src_session, uint64_t req_num, uint32_t size)
{
    return write_packet_headers(s, frame, pkt_type, req_type, src_session, req_num, size,
                                PKT_NUM_SIZE(0, size));
}

/* The same for packet pkt_num of a message of msg_size bytes, both in
 * num_size (PKT_NUM_SIZE). */
static unsigned write_packet_headers(struct session *s, uint8_t *frame, uint8_t pkt_type,
                                     uint8_t req_type, uint16_t src_session, uint64_t req_num,
                                     uint32_t size, uint64_t num_size)
{
    uint64_t *w = (uint64_t *)frame;
    for (int i = 0; i < FRAME_HEADER_LEN / 8; i++)
        w[i] = s->hdr[i];
    unsigned payload = ERPC_PKTHDR_BYTES + size;
    unsigned total = IP_HEADER_LEN + NT_HEADER_LEN + payload;
    uint32_t sum = s->ip_sum_base + total;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    put_be16(frame + IP_TOTAL_LEN, (uint16_t)total);
    put_be16(frame + IP_CHECKSUM, (uint16_t)~sum);
    put_be16(frame + NT_MSG_LEN, (uint16_t)payload);
    struct erpc_pkthdr *ph = (struct erpc_pkthdr *)(frame + FRAME_HEADER_LEN);
    ph->req_type = req_type;
    ph->pkt_type = pkt_type;
    ph->dest_session = s->remote_session;
    ph->src_session = src_session;
    ph->magic = ERPC_MAGIC;
    ph->pkt_num = (uint8_t)(num_size >> 32);
    ph->msg_size = (uint32_t)num_size;
    ph->req_num = (uint32_t)req_num;
    return FRAME_HEADER_LEN + payload;
}

static inline uint16_t session_num(struct erpc_rpc *rpc, struct session *s)
{
    return (uint16_t)(s - rpc->sessions);
}

/* ---- multi-packet messages (§4.2.1, §5.1) ------------------------------------- */

static inline unsigned pkts_of(uint32_t msg_size)
{
    return msg_size <= ERPC_MAX_DATA ? 1 : (msg_size + ERPC_MAX_DATA - 1) / ERPC_MAX_DATA;
}

/* Data bytes of packet j of a message of msg_size bytes. */
static inline uint32_t chunk_of(uint32_t msg_size, unsigned j)
{
    uint32_t left = msg_size - j * ERPC_MAX_DATA;
    return left < ERPC_MAX_DATA ? left : ERPC_MAX_DATA;
}

/* The headers of packet j >= 1 of a msgbuf: after its data (Fig. 2). */
static inline uint8_t *trailer_headers(uint8_t *frame, uint32_t capacity, unsigned j)
{
    return frame + ERPC_HEADROOM + capacity + (j - 1) * ERPC_HEADROOM;
}

static uint8_t *stage_frame(struct erpc_rpc *rpc)
{
    (void)rpc;
    uint8_t *f = stage_frames[stage_next];
    stage_next = stage_next + 1 == STAGE ? 0 : stage_next + 1;
    return f;
}

/* Writes the headers of every packet of a message of msg_size bytes in
 * msgbuf `frame`; packet 0 is numbered first_pkt_num on the wire. */
COLD static void write_msg_headers(struct session *s, uint8_t *frame, uint32_t capacity, uint8_t pkt_type,
                              uint8_t req_type, uint16_t src_session, uint64_t req_num,
                              uint32_t msg_size, unsigned first_pkt_num)
{
    unsigned n = pkts_of(msg_size);
    for (unsigned j = 0; j < n; j++)
        write_packet_headers(s, j == 0 ? frame : trailer_headers(frame, capacity, j), pkt_type,
                             req_type, src_session, req_num, chunk_of(msg_size, j),
                             PKT_NUM_SIZE(first_pkt_num + j, msg_size));
}

/* Sends packet j of a message in a msgbuf: the first from the msgbuf
 * itself (zero-copy), the others as their headers and data copied into a
 * staging frame (where eRPC's NIC does two DMAs). */
COLD static void tx_msg_packet(struct erpc_rpc *rpc, uint8_t *frame, uint32_t capacity, uint32_t msg_size,
                          unsigned j)
{
    uint32_t n = chunk_of(msg_size, j);
    if (j == 0) {
        nic_tx(rpc, frame, ERPC_HEADROOM + n);
        return;
    }
    uint8_t *f = stage_frame(rpc);
    memcpy(f, trailer_headers(frame, capacity, j), ERPC_HEADROOM);
    memcpy(f + ERPC_HEADROOM, frame + ERPC_HEADROOM + j * ERPC_MAX_DATA, n);
    nic_tx(rpc, f, ERPC_HEADROOM + n);
}

/* A header-only packet (CR, RFR). */
COLD static void tx_control(struct erpc_rpc *rpc, struct session *s, uint8_t pkt_type, uint8_t req_type,
                       uint64_t req_num, unsigned pkt_num)
{
    uint8_t *f = stage_frame(rpc);
    unsigned len = write_packet_headers(s, f, pkt_type, req_type, (uint16_t)(s - rpc->sessions),
                                        req_num, 0, PKT_NUM_SIZE(pkt_num, 0));
    nic_tx(rpc, f, len);
}

static unsigned sessions_in_use(struct erpc_rpc *rpc)
{
    unsigned n = 0;
    for (unsigned i = 0; i < ERPC_MAX_SESSIONS; i++)
        n += rpc->sessions[i].role != FREE;
    return n;
}

static struct session *new_session(struct erpc_rpc *rpc, uint8_t role, uint32_t ip, uint16_t rpc_id)
{
    if (sessions_in_use(rpc) >= rpc->max_sessions)
        return 0;
    for (unsigned i = 0; i < ERPC_MAX_SESSIONS; i++) {
        struct session *s = &rpc->sessions[i];
        if (s->role != FREE)
            continue;
        memset(s, 0, sizeof *s);
        s->role = role;
        s->remote_ip = ip;
        s->remote_rpc = rpc_id;
        s->remote_session = NO_SESSION;
        s->credits = rpc->cfg.credits;
        s->rate_bps = rpc->max_rate_bps;
        for (unsigned k = 0; k < ERPC_SLOTS; k++) {
            s->c[k].req_num = k;
            s->s[k].req_num = k;
        }
        session_template(rpc, s);
        return s;
    }
    return 0;
}

/* ---- congestion control (§5.2) ----------------------------------------------- */

static void timely_update(struct erpc_rpc *rpc, struct session *s, uint64_t rtt_cycles)
{
    double rtt = (double)rtt_cycles / rpc->cfg.cycles_per_us;
    /* §5.2.2 Timely bypass: an uncongested session with a low RTT keeps
     * the line rate without computing anything. */
    if (rpc->cfg.timely_bypass && rtt < ERPC_TIMELY_T_LOW_US && s->rate_bps >= rpc->max_rate_bps) {
        rpc->stats.timely_bypassed++;
        return;
    }
    rpc->stats.rate_updates++;
    if (s->prev_rtt_us == 0.0)
        s->prev_rtt_us = rtt;
    double diff = rtt - s->prev_rtt_us;
    s->neg_count = diff < 0 ? s->neg_count + 1 : 0;
    s->avg_rtt_diff = (1 - ERPC_TIMELY_EWMA_ALPHA) * s->avg_rtt_diff + ERPC_TIMELY_EWMA_ALPHA * diff;
    s->prev_rtt_us = rtt;
    double grad = s->avg_rtt_diff / ERPC_TIMELY_MIN_RTT_US;
    double rate = s->rate_bps;
    if (rtt < ERPC_TIMELY_T_LOW_US)
        rate += ERPC_TIMELY_ADD_BPS;
    else if (rtt > ERPC_TIMELY_T_HIGH_US)
        rate *= 1 - ERPC_TIMELY_BETA * (1 - ERPC_TIMELY_T_HIGH_US / rtt);
    else if (grad <= 0)
        rate += (s->neg_count >= ERPC_TIMELY_HAI_THRESH ? 5 : 1) * ERPC_TIMELY_ADD_BPS;
    else
        rate *= 1 - ERPC_TIMELY_BETA * grad;
    if (rate < ERPC_TIMELY_MIN_BPS)
        rate = ERPC_TIMELY_MIN_BPS;
    if (rate > rpc->max_rate_bps)
        rate = rpc->max_rate_bps;
    s->rate_bps = rate;
}

/* ---- client side ---------------------------------------------------------------- */

static void transmit_request(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct cslot *c = &s->c[slot];
    unsigned len = FRAME_HEADER_LEN + ERPC_PKTHDR_BYTES + c->req->size;
    c->in_wire = 1;
    s->credits--;
    rpc->stats.requests_sent++;
    if (rpc->cfg.congestion_control &&
        (!rpc->cfg.rate_limiter_bypass || s->rate_bps < rpc->max_rate_bps)) {
        /* The rate limiter: the session's packets leave rate_bps apart. */
        uint64_t now = stamp(rpc);
        uint64_t at = s->next_tx_cycle > now ? s->next_tx_cycle : now;
        double gap = (double)len * 8.0 * rpc->cfg.cycles_per_us * 1e6 / s->rate_bps;
        s->next_tx_cycle = at + (uint64_t)gap;
        if (at > now) {
            struct limited *l = &rpc->limiter[rpc->limited_count++];
            l->session = session_num(rpc, s);
            l->slot = (uint8_t)slot;
            l->at = at;
            c->in_limiter = 1;
            rpc->stats.rate_limited++;
            return;
        }
    }
    c->tx_cycle = rpc->cfg.congestion_control ? stamp(rpc) : rpc->now;
    nic_tx(rpc, c->req->frame, len);
}

/* Sends client packet i of a multi-packet slot: request packet i, or the
 * RFR for response packet i - req_pkts + 1. */
COLD static void client_emit(struct erpc_rpc *rpc, struct session *s, unsigned slot, unsigned i)
{
    struct cslot *c = &s->c[slot];
    struct cmulti *m = &cmulti[session_num(rpc, s)][slot];
    uint64_t t = rpc->cfg.congestion_control ? stamp(rpc) : rpc->now;
    m->tx_ts[i % ERPC_MAX_PKTS] = t;
    c->tx_cycle = t;
    if (i < m->req_pkts) {
        tx_msg_packet(rpc, c->req->frame, c->req->capacity, c->req->size, i);
    } else {
        rpc->stats.rfr_sent++;
        tx_control(rpc, s, ERPC_PKT_RFR, c->req_type, c->req_num, i);
    }
}

/* The slot's next packet: one credit; through the rate limiter as
 * transmit_request does. */
COLD static void client_send(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct cslot *c = &s->c[slot];
    struct cmulti *m = &cmulti[session_num(rpc, s)][slot];
    unsigned i = m->num_tx++;
    s->credits--;
    /* Behind the slot's packets already in the limiter even if the rate
     * is back to the line rate, to keep them in order. */
    if (c->in_limiter || (rpc->cfg.congestion_control &&
                          (!rpc->cfg.rate_limiter_bypass || s->rate_bps < rpc->max_rate_bps))) {
        unsigned len = ERPC_HEADROOM + (i < m->req_pkts ? chunk_of(c->req->size, i) : 0);
        uint64_t now = stamp(rpc);
        uint64_t at = s->next_tx_cycle > now ? s->next_tx_cycle : now;
        double gap = (double)len * 8.0 * rpc->cfg.cycles_per_us * 1e6 / s->rate_bps;
        s->next_tx_cycle = at + (uint64_t)gap;
        if ((at > now || c->in_limiter) && rpc->limited_count < LIMITER_ENTRIES) {
            /* The limiter sends a slot's waiting packets oldest first
             * (run_limiter), so they stay in order on the wire. */
            struct limited *l = &rpc->limiter[rpc->limited_count++];
            l->session = session_num(rpc, s);
            l->slot = (uint8_t)slot;
            l->at = at;
            c->in_limiter++;
            rpc->stats.rate_limited++;
            return;
        }
    }
    client_emit(rpc, s, slot, i);
}

/* Sends what the slot may: request packets, then (once the response's
 * first packet told its size) RFRs, while credits last. */
COLD static void client_kick(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct cmulti *m = &cmulti[session_num(rpc, s)][slot];
    unsigned wire = m->resp_pkts ? m->req_pkts + m->resp_pkts - 1u : m->req_pkts;
    while (s->credits > 0 && m->num_tx < wire && (unsigned)(m->num_tx - m->num_rx) < ERPC_MAX_PKTS)
        client_send(rpc, s, slot);
}

COLD static void kick_multi(struct erpc_rpc *rpc, struct session *s)
{
    for (unsigned k = 0; k < ERPC_SLOTS && s->credits > 0; k++)
        if (s->c[k].busy && s->c[k].multi)
            client_kick(rpc, s, k);
}

COLD static void start_multi(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct cslot *c = &s->c[slot];
    struct cmulti *m = &cmulti[session_num(rpc, s)][slot];
    struct erpc_msgbuf *q = c->req;
    write_msg_headers(s, q->frame, q->capacity, ERPC_PKT_REQ, c->req_type, session_num(rpc, s),
                      c->req_num, q->size, 0);
    c->multi = 1;
    m->req_pkts = (uint8_t)pkts_of(q->size);
    m->resp_pkts = 0;
    m->num_tx = m->num_rx = 0;
    c->in_wire = 0;
    s->multi_active++;
    rpc->stats.requests_sent++;
    /* An application may enqueue long after the last event-loop pass (it
     * just wrote up to 16 KB): its packets' RTTs start now, not then. */
    rpc->now = rdcycle();
    client_kick(rpc, s, slot);
}

static void start_request(struct erpc_rpc *rpc, struct session *s, unsigned slot,
                          const struct pending *p)
{
    struct cslot *c = &s->c[slot];
    c->busy = 1;
    c->req = p->req;
    c->resp = p->resp;
    c->cont = p->cont;
    c->tag = p->tag;
    c->req_type = p->req_type;
    if (unlikely(p->req->size > ERPC_MAX_DATA)) {
        start_multi(rpc, s, slot);
        return;
    }
    write_headers(s, p->req->frame, ERPC_PKT_REQ, p->req_type, session_num(rpc, s), c->req_num,
                  p->req->size);
    transmit_request(rpc, s, slot);
}

static int free_slot(struct session *s)
{
    for (int k = 0; k < ERPC_SLOTS; k++)
        if (!s->c[k].busy)
            return k;
    return -1;
}

/* Starts backlogged requests while a slot and a credit are free. */
static void kick_backlog(struct erpc_rpc *rpc, struct session *s)
{
    /* Multi-packet requests waiting for credits go first. */
    if (unlikely(s->multi_active))
        kick_multi(rpc, s);
    while (s->backlog_count > 0 && s->connected && s->credits > 0) {
        int slot = free_slot(s);
        if (slot < 0)
            return;
        struct pending p = s->backlog[s->backlog_head];
        s->backlog_head = (s->backlog_head + 1) % BACKLOG;
        s->backlog_count--;
        start_request(rpc, s, (unsigned)slot, &p);
    }
}

int erpc_enqueue_request(struct erpc_rpc *rpc, int session, uint8_t req_type,
                         struct erpc_msgbuf *req, struct erpc_msgbuf *resp,
                         erpc_continuation cont, void *tag)
{
    if (session < 0 || session >= ERPC_MAX_SESSIONS || req->size > req->capacity)
        return -1;
    struct session *s = &rpc->sessions[session];
    if (s->role != CLIENT)
        return -1;
    struct pending p = {req, resp, cont, tag, req_type};
    if (s->backlog_count == 0 && s->connected && s->credits > 0) {
        int slot = free_slot(s);
        if (slot >= 0) {
            start_request(rpc, s, (unsigned)slot, &p);
            return 0;
        }
    }
    if (s->backlog_count == BACKLOG)
        return -1;
    s->backlog[(s->backlog_head + s->backlog_count) % BACKLOG] = p;
    s->backlog_count++;
    rpc->stats.backlogged++;
    return 0;
}

/* A CR or response packet of a multi-packet slot, or the first packet of a
 * multi-packet response to a one-packet request (which puts the slot in
 * multi-packet state). Accepted in order only (§5.3). */
COLD static void client_rx(struct erpc_rpc *rpc, struct session *s, struct cslot *c,
                      const struct erpc_pkthdr *ph, const uint8_t *data, uint32_t size)
{
    if (!c->busy || c->req_num != ph->req_num) {
        rpc->stats.dropped_stale++;
        return;
    }
    struct cmulti *m = &cmulti[session_num(rpc, s)][c - s->c];
    if (!c->multi) {
        if (!c->in_wire || c->in_limiter || ph->pkt_type != ERPC_PKT_RESP || ph->pkt_num != 0) {
            rpc->stats.dropped_stale++;
            return;
        }
        c->multi = 1;
        m->req_pkts = 1;
        m->resp_pkts = 0;
        m->num_tx = 1;
        m->num_rx = 0;
        c->in_wire = 0;
        m->tx_ts[0] = c->tx_cycle;
        s->multi_active++;
    }
    unsigned p = ph->pkt_num;
    /* In order, and not answering a packet whose re-sent copy waits in the
     * rate limiter (Appendix C: the limiter holds a slot's newest packets). */
    if (p != m->num_rx || p >= (unsigned)(m->num_tx - c->in_limiter)) {
        rpc->stats.dropped_stale++;
        return;
    }
    if (ph->pkt_type == ERPC_PKT_CR) {
        if (p + 1 >= m->req_pkts || size != 0) {
            rpc->stats.dropped_malformed++;
            return;
        }
        rpc->stats.cr_received++;
    } else {
        if (p + 1 < m->req_pkts) {
            rpc->stats.dropped_malformed++;
            return;
        }
        unsigned j = p + 1 - m->req_pkts;
        if (j == 0) {
            if (ph->msg_size > ERPC_MAX_MSG_SIZE) {
                rpc->stats.dropped_malformed++;
                return;
            }
            m->resp_msg_size = ph->msg_size;
            m->resp_pkts = (uint8_t)pkts_of(ph->msg_size);
        }
        if (ph->msg_size != m->resp_msg_size || j >= m->resp_pkts ||
            size != chunk_of(m->resp_msg_size, j)) {
            rpc->stats.dropped_malformed++;
            return;
        }
        struct erpc_msgbuf *resp = c->resp;
        uint32_t off = j * ERPC_MAX_DATA;
        if (resp && off < resp->capacity) {
            uint32_t room = resp->capacity - off;
            memcpy(erpc_data(resp) + off, data, size < room ? size : room);
        }
        if (resp && j == 0)
            resp->size = m->resp_msg_size < resp->capacity ? m->resp_msg_size : resp->capacity;
    }
    m->num_rx++;
    s->credits++;
    uint64_t t = stamp(rpc);
    if (rpc->cfg.congestion_control)
        timely_update(rpc, s, t - m->tx_ts[p % ERPC_MAX_PKTS]);
    c->tx_cycle = t;
    if (m->resp_pkts && m->num_rx == m->req_pkts + m->resp_pkts - 1u) {
        erpc_continuation cont = c->cont;
        void *tag = c->tag;
        struct erpc_msgbuf *resp = c->resp;
        c->multi = 0;
        s->multi_active--;
        c->busy = 0;
        c->req_num += ERPC_SLOTS;
        rpc->stats.responses_received++;
        kick_backlog(rpc, s);
        if (cont)
            cont(rpc, tag, resp);
        return;
    }
    kick_backlog(rpc, s);
}

static void on_response(struct erpc_rpc *rpc, struct session *s, const struct erpc_pkthdr *ph,
                        const uint8_t *data, uint32_t size)
{
    unsigned slot = ph->req_num % ERPC_SLOTS;
    struct cslot *c = &s->c[slot];
    if (unlikely(c->multi || ph->msg_size > ERPC_MAX_DATA)) {
        client_rx(rpc, s, c, ph, data, size);
        return;
    }
    /* Not the request this slot waits for (a duplicate, a reordered or
     * stale packet), or its re-sent copy still sits in the rate limiter
     * (Appendix C): dropped. */
    if (!c->busy || !c->in_wire || c->in_limiter || c->req_num != ph->req_num) {
        rpc->stats.dropped_stale++;
        return;
    }
    s->credits++;
    c->in_wire = 0;
    if (rpc->cfg.congestion_control)
        timely_update(rpc, s, stamp(rpc) - c->tx_cycle);
    struct erpc_msgbuf *resp = c->resp;
    if (resp) {
        uint32_t n = size < resp->capacity ? size : resp->capacity;
        memcpy(erpc_data(resp), data, n);
        resp->size = n;
    }
    erpc_continuation cont = c->cont;
    void *tag = c->tag;
    c->busy = 0;
    c->req_num += ERPC_SLOTS;
    rpc->stats.responses_received++;
    kick_backlog(rpc, s);
    if (cont)
        cont(rpc, tag, resp);
}

/* Go-back-N for one-packet requests (§5.3): reclaim the credit and send
 * the request again; then flush the TX DMA queue (§4.2.2). */
static void retransmit(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    s->credits++;
    rpc->stats.retransmissions++;
    rpc->stats.requests_sent--; /* counted again by transmit_request */
    transmit_request(rpc, s, slot);
    flush_tx(rpc);
}

/* Go-back-N for a multi-packet slot (§5.3): back to the last packet known
 * to have arrived, its credits reclaimed, resent from there; then flush the
 * TX DMA queue (§4.2.2). */
COLD static void go_back_n(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct cmulti *m = &cmulti[session_num(rpc, s)][slot];
    s->credits += (uint32_t)(m->num_tx - m->num_rx);
    m->num_tx = m->num_rx;
    rpc->stats.retransmissions++;
    client_kick(rpc, s, slot);
    flush_tx(rpc);
}

static void send_connect(struct erpc_rpc *rpc, struct session *s)
{
    uint8_t *f = ctl_frames[session_num(rpc, s)];
    unsigned len = write_headers(s, f, ERPC_PKT_CONNECT, 0, session_num(rpc, s), 0, 0);
    s->connect_tx_cycle = rpc->now;
    nic_tx(rpc, f, len);
}

static void loss_scan(struct erpc_rpc *rpc)
{
    for (unsigned i = 0; i < ERPC_MAX_SESSIONS; i++) {
        struct session *s = &rpc->sessions[i];
        if (s->role != CLIENT)
            continue;
        if (!s->connected) {
            if (rpc->now - s->connect_tx_cycle > rpc->cfg.rto_cycles) {
                rpc->stats.retransmissions++;
                send_connect(rpc, s);
                flush_tx(rpc);
            }
            continue;
        }
        for (unsigned k = 0; k < ERPC_SLOTS; k++) {
            struct cslot *c = &s->c[k];
            if (c->busy && c->in_wire && !c->in_limiter &&
                rpc->now - c->tx_cycle > rpc->cfg.rto_cycles)
                retransmit(rpc, s, k);
            else if (c->busy && c->multi && cmulti[i][k].num_tx != cmulti[i][k].num_rx &&
                     !c->in_limiter && rpc->now - c->tx_cycle > rpc->cfg.rto_cycles)
                go_back_n(rpc, s, k);
        }
    }
}

static void run_limiter(struct erpc_rpc *rpc)
{
    uint64_t now = rpc->now;
    for (unsigned i = 0; i < rpc->limited_count;) {
        struct limited *l = &rpc->limiter[i];
        if (l->at > now) {
            i++;
            continue;
        }
        struct session *s = &rpc->sessions[l->session];
        struct cslot *c = &s->c[l->slot];
        if (unlikely(c->multi)) {
            /* The slot's oldest waiting packet. */
            unsigned pkt = (unsigned)(cmulti[l->session][l->slot].num_tx - c->in_limiter);
            c->in_limiter--;
            client_emit(rpc, s, l->slot, pkt);
            *l = rpc->limiter[--rpc->limited_count];
            continue;
        }
        c->in_limiter = 0;
        c->tx_cycle = stamp(rpc);
        nic_tx(rpc, c->req->frame, FRAME_HEADER_LEN + ERPC_PKTHDR_BYTES + c->req->size);
        *l = rpc->limiter[--rpc->limited_count];
    }
}

/* ---- server side --------------------------------------------------------------- */

uint8_t *erpc_response_buf(struct erpc_rpc *rpc, erpc_handle h)
{
    (void)rpc;
    return resp_frames[h / ERPC_SLOTS][h % ERPC_SLOTS] + ERPC_HEADROOM;
}

uint32_t erpc_handle_ip(struct erpc_rpc *rpc, erpc_handle h)
{
    return rpc->sessions[h / ERPC_SLOTS].remote_ip;
}

/* Sends the response's first packet (numbered after the request's
 * packets, erpc.h). */
COLD static void send_response_multi(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct smulti *sm = &smulti[session_num(rpc, s)][slot];
    tx_msg_packet(rpc, sm->resp_buf.frame, sm->resp_buf.capacity, s->s[slot].resp_size, 0);
}

static void send_response(struct erpc_rpc *rpc, struct session *s, unsigned slot)
{
    struct sslot *ss = &s->s[slot];
    if (unlikely(ss->resp_size > ERPC_MAX_DATA)) {
        send_response_multi(rpc, s, slot);
        return;
    }
    uint8_t *f = resp_frames[session_num(rpc, s)][slot];
    unsigned len = write_packet_headers(s, f, ERPC_PKT_RESP, 0, session_num(rpc, s), ss->req_num,
                                        ss->resp_size,
                                        PKT_NUM_SIZE(ss->req_pkts - 1u, ss->resp_size));
    nic_tx(rpc, f, len);
}

/* The slot's request is over: its msgbufs go back to the pool (eRPC buries
 * the response when the slot's next request arrives). */
COLD static void bury_slot(struct erpc_rpc *rpc, struct sslot *ss, struct smulti *sm)
{
    ss->bufs = 0;
    if (sm->resp_buf.frame)
        erpc_free_msgbuf(rpc, &sm->resp_buf);
    if (sm->req_buf.frame)
        erpc_free_msgbuf(rpc, &sm->req_buf);
}

uint8_t *erpc_alloc_response(struct erpc_rpc *rpc, erpc_handle h, uint32_t size)
{
    if (size <= ERPC_MAX_DATA)
        return erpc_response_buf(rpc, h);
    struct smulti *sm = &smulti[h / ERPC_SLOTS][h % ERPC_SLOTS];
    if (size > ERPC_MAX_MSG_SIZE || (!sm->resp_buf.frame && !erpc_alloc_msgbuf(rpc, &sm->resp_buf, size)))
        return 0;
    rpc->sessions[h / ERPC_SLOTS].s[h % ERPC_SLOTS].bufs = 1;
    return erpc_data(&sm->resp_buf);
}

/* Writes the headers of a multi-packet response; 0 if it has no msgbuf. */
COLD static int prepare_multi_response(struct erpc_rpc *rpc, erpc_handle h, uint32_t size)
{
    struct session *s = &rpc->sessions[h / ERPC_SLOTS];
    struct sslot *ss = &s->s[h % ERPC_SLOTS];
    struct smulti *sm = &smulti[h / ERPC_SLOTS][h % ERPC_SLOTS];
    if (!sm->resp_buf.frame || size > sm->resp_buf.capacity) {
        printf("erpc: a response of %u bytes needs erpc_alloc_response\n", (unsigned)size);
        return 0;
    }
    write_msg_headers(s, sm->resp_buf.frame, sm->resp_buf.capacity, ERPC_PKT_RESP, 0,
                      (uint16_t)(h / ERPC_SLOTS), ss->req_num, size, ss->req_pkts - 1u);
    /* The client's next packet is the RFR for response packet 1. */
    sm->num_rx = ss->req_pkts;
    return 1;
}

void erpc_enqueue_response(struct erpc_rpc *rpc, erpc_handle h, uint32_t size)
{
    struct session *s = &rpc->sessions[h / ERPC_SLOTS];
    struct sslot *ss = &s->s[h % ERPC_SLOTS];
    if (ss->state != SS_RUNNING)
        return;
    if (unlikely(size > ERPC_MAX_DATA) && !prepare_multi_response(rpc, h, size))
        return;
    ss->resp_size = size;
    ss->state = SS_RESPONDED;
    send_response(rpc, s, h % ERPC_SLOTS);
}

static void on_request_multi(struct erpc_rpc *rpc, struct session *s, const struct erpc_pkthdr *ph,
                             const uint8_t *data, uint32_t size);

static void on_request(struct erpc_rpc *rpc, struct session *s, const struct erpc_pkthdr *ph,
                       const uint8_t *data, uint32_t size)
{
    unsigned slot = ph->req_num % ERPC_SLOTS;
    struct sslot *ss = &s->s[slot];
    if (ss->state != SS_NONE) {
        if (ph->req_num == ss->req_num && ss->state == SS_RESPONDED) {
            /* A re-sent request: its saved response, not the handler again. */
            rpc->stats.responses_resent++;
            send_response(rpc, s, slot);
            return;
        }
        if (ph->req_num <= ss->req_num) {
            rpc->stats.dropped_stale++;
            return;
        }
    } else if (ph->req_num < ss->req_num) {
        rpc->stats.dropped_stale++;
        return;
    }
    erpc_req_handler fn = rpc->handlers[ph->req_type];
    if (!fn) {
        rpc->stats.dropped_malformed++;
        return;
    }
    if (unlikely(ss->bufs))
        bury_slot(rpc, ss, &smulti[session_num(rpc, s)][slot]);
    ss->req_num = ph->req_num;
    ss->req_pkts = 1;
    ss->state = SS_RUNNING;
    rpc->stats.requests_handled++;
    fn(rpc, session_num(rpc, s) * ERPC_SLOTS + slot, data, size, rpc->handler_ctx[ph->req_type]);
}

/* A packet of a multi-packet request: reassembled in order into a pool
 * msgbuf; CR for each but the last; the last runs the handler. A re-sent
 * packet (the client went back, §5.3) gets its CR again, or for the last
 * the saved response; the handler never runs twice. */
COLD static void on_request_multi(struct erpc_rpc *rpc, struct session *s, const struct erpc_pkthdr *ph,
                             const uint8_t *data, uint32_t size)
{
    unsigned slot = ph->req_num % ERPC_SLOTS;
    struct sslot *ss = &s->s[slot];
    struct smulti *sm = &smulti[session_num(rpc, s)][slot];
    unsigned p = ph->pkt_num, n = pkts_of(ph->msg_size);
    if (ph->msg_size > ERPC_MAX_MSG_SIZE || p >= n || size != chunk_of(ph->msg_size, p)) {
        rpc->stats.dropped_malformed++;
        return;
    }
    erpc_req_handler fn = rpc->handlers[ph->req_type];
    if (ss->state != SS_NONE && ph->req_num == ss->req_num) {
        if (n != ss->req_pkts) {
            rpc->stats.dropped_malformed++;
            return;
        }
        if (p < sm->num_rx && p + 1 < n) {
            rpc->stats.cr_sent++;
            tx_control(rpc, s, ERPC_PKT_CR, 0, ss->req_num, p);
            return;
        }
        if (p < sm->num_rx && ss->state == SS_RESPONDED) {
            rpc->stats.responses_resent++;
            send_response(rpc, s, slot);
            return;
        }
        if (ss->state != SS_RECEIVING || p != sm->num_rx) {
            rpc->stats.dropped_stale++;
            return;
        }
    } else {
        int newer = ss->state == SS_NONE ? ph->req_num >= ss->req_num : ph->req_num > ss->req_num;
        if (!newer || p != 0) {
            rpc->stats.dropped_stale++;
            return;
        }
        if (!fn) {
            rpc->stats.dropped_malformed++;
            return;
        }
        bury_slot(rpc, ss, sm);
        if (!erpc_alloc_msgbuf(rpc, &sm->req_buf, ph->msg_size)) {
            /* Dropped like a lost packet: the client sends it again. */
            rpc->stats.dropped_no_msgbuf++;
            return;
        }
        ss->bufs = 1;
        ss->req_num = ph->req_num;
        ss->req_pkts = (uint8_t)n;
        sm->num_rx = 0;
        ss->state = SS_RECEIVING;
    }
    memcpy(erpc_data(&sm->req_buf) + p * ERPC_MAX_DATA, data, size);
    sm->num_rx++;
    if (p + 1 < n) {
        rpc->stats.cr_sent++;
        tx_control(rpc, s, ERPC_PKT_CR, 0, ss->req_num, p);
        return;
    }
    ss->state = SS_RUNNING;
    sm->req_buf.size = ph->msg_size;
    rpc->stats.requests_handled++;
    fn(rpc, session_num(rpc, s) * ERPC_SLOTS + slot, erpc_data(&sm->req_buf), ph->msg_size,
       rpc->handler_ctx[ph->req_type]);
    erpc_free_msgbuf(rpc, &sm->req_buf);
}

/* An RFR: the response packet it asks for, in order (a re-sent RFR gets
 * its packet again). */
COLD static void on_rfr(struct erpc_rpc *rpc, struct session *s, const struct erpc_pkthdr *ph)
{
    struct sslot *ss = &s->s[ph->req_num % ERPC_SLOTS];
    struct smulti *sm = &smulti[session_num(rpc, s)][ph->req_num % ERPC_SLOTS];
    unsigned p = ph->pkt_num;
    if (ss->state != SS_RESPONDED || ph->req_num != ss->req_num || ss->resp_size <= ERPC_MAX_DATA ||
        p < ss->req_pkts || p + 1 - ss->req_pkts >= pkts_of(ss->resp_size) || p > sm->num_rx) {
        rpc->stats.dropped_stale++;
        return;
    }
    if (p == sm->num_rx) {
        sm->num_rx++;
        rpc->stats.rfr_received++;
    } else {
        rpc->stats.responses_resent++;
    }
    tx_msg_packet(rpc, sm->resp_buf.frame, sm->resp_buf.capacity, ss->resp_size,
                  p + 1 - ss->req_pkts);
}

static void on_connect(struct erpc_rpc *rpc, uint32_t src_ip, uint16_t src_rpc,
                       const struct erpc_pkthdr *ph)
{
    struct session *s = 0;
    for (unsigned i = 0; i < ERPC_MAX_SESSIONS; i++) {
        struct session *x = &rpc->sessions[i];
        if (x->role == SERVER && x->remote_ip == src_ip && x->remote_session == ph->src_session &&
            x->remote_rpc == src_rpc) {
            s = x;
            break;
        }
    }
    if (!s) {
        s = new_session(rpc, SERVER, src_ip, src_rpc);
        if (!s) {
            /* |RQ| / C sessions already (§4.3.1): no answer; the client
             * keeps trying. */
            rpc->stats.dropped_malformed++;
            return;
        }
        s->remote_session = ph->src_session;
        s->connected = 1;
    }
    uint8_t *f = ctl_frames[session_num(rpc, s)];
    unsigned len = write_headers(s, f, ERPC_PKT_CONNECT_RESP, 0, session_num(rpc, s), 0, 0);
    nic_tx(rpc, f, len);
}

/* ---- the event loop ------------------------------------------------------------ */

static void process(struct erpc_rpc *rpc, const uint8_t *f, unsigned len)
{
    rpc->stats.rx_packets++;
    if (len < ERPC_HEADROOM || get_be16(f + ETH_TYPE) != ETHERTYPE_IPV4 || f[IP_PROTO] != NT_PROTOCOL) {
        rpc->stats.dropped_malformed++;
        return;
    }
    const struct erpc_pkthdr *ph = (const struct erpc_pkthdr *)(f + FRAME_HEADER_LEN);
    unsigned payload = get_be16(f + NT_MSG_LEN);
    /* A message longer than a msgbuf holds is no eRPC packet of ours. */
    if (ph->magic != ERPC_MAGIC || payload < ERPC_PKTHDR_BYTES || FRAME_HEADER_LEN + payload > len ||
        payload - ERPC_PKTHDR_BYTES > ERPC_MAX_DATA) {
        rpc->stats.dropped_malformed++;
        return;
    }
    uint32_t size = payload - ERPC_PKTHDR_BYTES;
    uint32_t src_ip = be32_at(f + IP_SRC);
    if (ph->pkt_type == ERPC_PKT_CONNECT) {
        on_connect(rpc, src_ip, get_be16(f + NT_SRC_CONTEXT), ph);
        return;
    }
    if (ph->dest_session >= ERPC_MAX_SESSIONS) {
        rpc->stats.dropped_stale++;
        return;
    }
    struct session *s = &rpc->sessions[ph->dest_session];
    if (s->remote_ip != src_ip) {
        rpc->stats.dropped_stale++;
        return;
    }
    const uint8_t *data = f + ERPC_HEADROOM;
    switch (ph->pkt_type) {
    case ERPC_PKT_REQ:
        if (unlikely(ph->msg_size > ERPC_MAX_DATA) && s->role == SERVER &&
            s->remote_session == ph->src_session)
            on_request_multi(rpc, s, ph, data, size);
        else if (s->role == SERVER && s->remote_session == ph->src_session)
            on_request(rpc, s, ph, data, size);
        else
            rpc->stats.dropped_stale++;
        break;
    case ERPC_PKT_RESP:
        if (s->role == CLIENT && s->connected)
            on_response(rpc, s, ph, data, size);
        else
            rpc->stats.dropped_stale++;
        break;
    case ERPC_PKT_CR:
        if (s->role == CLIENT && s->connected)
            client_rx(rpc, s, &s->c[ph->req_num % ERPC_SLOTS], ph, data, size);
        else
            rpc->stats.dropped_stale++;
        break;
    case ERPC_PKT_RFR:
        if (s->role == SERVER && s->remote_session == ph->src_session)
            on_rfr(rpc, s, ph);
        else
            rpc->stats.dropped_stale++;
        break;
    case ERPC_PKT_CONNECT_RESP:
        if (s->role == CLIENT && !s->connected) {
            s->remote_session = ph->src_session;
            s->connected = 1;
            kick_backlog(rpc, s);
        } else {
            rpc->stats.dropped_stale++;
        }
        break;
    default:
        rpc->stats.dropped_malformed++;
        break;
    }
}

unsigned erpc_run_event_loop_once(struct erpc_rpc *rpc)
{
    uint32_t c = nic_counts();
    unsigned done = NIC_COUNTS_SEND_COMP(c);
    for (unsigned i = 0; i < done; i++)
        (void)nic_send_comp();
    rpc->tx_outstanding -= done;
    unsigned ready = NIC_COUNTS_RECV_COMP(c);
    /* §5.2.2: one timestamp for the whole RX batch (and what it sends). */
    rpc->now = rdcycle();
    if (ready)
        rpc->stats.rx_batches++;
    for (unsigned i = 0; i < ready; i++) {
        unsigned len = nic_recv_len();
        uint8_t *f = rx_bufs[rpc->rx_idx];
        rpc->rx_idx = rpc->rx_idx + 1 == rpc->cfg.rq_size ? 0 : rpc->rx_idx + 1;
        /* Zero-copy: handlers read the request in the receive buffer,
         * which goes back to the NIC only afterwards (§4.2.3). */
        process(rpc, f, len);
        nic_post_recv(f);
    }
    if (rpc->limited_count)
        run_limiter(rpc);
    if (rpc->now - rpc->last_scan >= rpc->scan_interval) {
        rpc->last_scan = rpc->now;
        loss_scan(rpc);
    }
    return ready;
}

void erpc_run_event_loop(struct erpc_rpc *rpc, uint64_t cycles)
{
    uint64_t start = rdcycle();
    while (rdcycle() - start < cycles)
        erpc_run_event_loop_once(rpc);
}

/* ---- set-up ------------------------------------------------------------------- */

void erpc_default_config(struct erpc_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->rpc_id = 0;
    cfg->credits = ERPC_DEFAULT_CREDITS;
    cfg->rq_size = ERPC_DEFAULT_RQ;
    cfg->cycles_per_us = ERPC_DEFAULT_CYCLES_PER_US;
    cfg->rto_cycles = (uint64_t)ERPC_DEFAULT_RTO_US * ERPC_DEFAULT_CYCLES_PER_US;
    cfg->link_gbps = ERPC_DEFAULT_LINK_GBPS;
    cfg->congestion_control = 1;
    cfg->batch_timestamps = 1;
    cfg->timely_bypass = 1;
    cfg->rate_limiter_bypass = 1;
}

int erpc_rpc_init(struct erpc_rpc **out, const struct erpc_config *cfg)
{
    struct erpc_rpc *rpc = &the_rpc;
    if (cfg->credits == 0 || cfg->rq_size == 0 || cfg->rq_size > ERPC_MAX_RQ ||
        cfg->cycles_per_us == 0 || cfg->link_gbps == 0 || cfg->rto_cycles == 0) {
        printf("erpc: bad configuration (credits %u, rq_size %u)\n", (unsigned)cfg->credits,
               (unsigned)cfg->rq_size);
        return -1;
    }
    uint32_t counts = nic_counts();
    if (NIC_COUNTS_RECV_REQ(counts) < cfg->rq_size) {
        printf("erpc: rq_size %u exceeds the NIC's %u free receive requests\n",
               (unsigned)cfg->rq_size, (unsigned)NIC_COUNTS_RECV_REQ(counts));
        return -1;
    }
    rpc->cfg = *cfg;
    rpc->tx_depth = NIC_COUNTS_SEND_REQ(counts);
    rpc->tx_outstanding = 0;
    rpc->local_ip = erpc_local_ip();
    mac_of_ip(rpc->local_mac, rpc->local_ip);
    rpc->max_rate_bps = (double)cfg->link_gbps * 1e9;
    rpc->max_sessions = cfg->rq_size / cfg->credits;
    if (rpc->max_sessions > ERPC_MAX_SESSIONS)
        rpc->max_sessions = ERPC_MAX_SESSIONS;
    rpc->scan_interval = cfg->rto_cycles / LOSS_SCANS_PER_RTO;
    for (unsigned i = 0; i < POOL; i++)
        rpc->pool_free[i] = 1;
    for (unsigned i = 0; i < LARGE_POOL; i++)
        large_free[i] = 1;
    /* Staging frames are reused STAGE sends later (tx_msg_packet). */
    if (rpc->tx_depth > STAGE - 1)
        rpc->tx_depth = STAGE - 1;
    for (unsigned i = 0; i < cfg->rq_size; i++)
        nic_post_recv(rx_bufs[i]);
    rpc->rx_idx = 0;
    rpc->now = rpc->last_scan = rdcycle();
    *out = rpc;
    return 0;
}

void erpc_register_handler(struct erpc_rpc *rpc, uint8_t req_type, erpc_req_handler fn, void *ctx)
{
    rpc->handlers[req_type] = fn;
    rpc->handler_ctx[req_type] = ctx;
}

int erpc_create_session(struct erpc_rpc *rpc, uint32_t remote_ip, uint16_t remote_rpc_id)
{
    struct session *s = new_session(rpc, CLIENT, remote_ip, remote_rpc_id);
    if (!s)
        return -1;
    rpc->now = rdcycle();
    send_connect(rpc, s);
    return session_num(rpc, s);
}

int erpc_session_connected(struct erpc_rpc *rpc, int session)
{
    return session >= 0 && session < ERPC_MAX_SESSIONS && rpc->sessions[session].connected;
}

int erpc_alloc_msgbuf(struct erpc_rpc *rpc, struct erpc_msgbuf *m, uint32_t size)
{
    if (size > ERPC_MAX_DATA) {
        if (size > ERPC_MAX_MSG_SIZE)
            return 0;
        for (unsigned i = 0; i < LARGE_POOL; i++) {
            if (large_free[i]) {
                large_free[i] = 0;
                m->frame = large_pool[i];
                m->size = size;
                m->capacity = ERPC_MAX_MSG_SIZE;
                return 1;
            }
        }
        return 0;
    }
    for (unsigned i = 0; i < POOL; i++) {
        if (rpc->pool_free[i]) {
            rpc->pool_free[i] = 0;
            m->frame = pool[i];
            m->size = size;
            m->capacity = ERPC_MAX_DATA;
            return 1;
        }
    }
    return 0;
}

void erpc_free_msgbuf(struct erpc_rpc *rpc, struct erpc_msgbuf *m)
{
    uintptr_t off = (uintptr_t)(m->frame - pool[0]);
    uintptr_t large_off = (uintptr_t)(m->frame - large_pool[0]);
    if (m->frame >= pool[0] && off / BUF_STRIDE < POOL)
        rpc->pool_free[off / BUF_STRIDE] = 1;
    else if (m->frame >= large_pool[0] && large_off / LARGE_STRIDE < LARGE_POOL)
        large_free[large_off / LARGE_STRIDE] = 1;
    m->frame = 0;
}

const struct erpc_stats *erpc_stats(const struct erpc_rpc *rpc) { return &rpc->stats; }

unsigned erpc_outstanding(struct erpc_rpc *rpc, int session)
{
    if (session < 0 || session >= ERPC_MAX_SESSIONS)
        return 0;
    struct session *s = &rpc->sessions[session];
    unsigned n = s->backlog_count;
    for (unsigned k = 0; k < ERPC_SLOTS; k++)
        n += s->c[k].busy;
    return n;
}

void erpc_print_state(struct erpc_rpc *rpc, int session)
{
    if (session < 0 || session >= ERPC_MAX_SESSIONS)
        return;
    struct session *s = &rpc->sessions[session];
    printf("erpc session %d: credits %u backlog %u multi %u limited %u rate %lu Mbps next_tx in %ld\n",
           session, (unsigned)s->credits, s->backlog_count, (unsigned)s->multi_active,
           rpc->limited_count, (unsigned long)(s->rate_bps / 1e6),
           (long)(s->next_tx_cycle - rdcycle()));
    for (unsigned k = 0; k < ERPC_SLOTS; k++) {
        struct cslot *c = &s->c[k];
        struct cmulti *m = &cmulti[session][k];
        if (c->busy)
            printf("  slot %u: req %lu in_wire %u in_limiter %u multi %u tx %u rx %u req_pkts %u "
                   "resp_pkts %u idle %lu\n",
                   k, (unsigned long)c->req_num, c->in_wire, c->in_limiter, c->multi, m->num_tx,
                   m->num_rx, m->req_pkts, m->resp_pkts, (unsigned long)(rdcycle() - c->tx_cycle));
    }
}
