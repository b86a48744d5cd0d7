/*
 * erpc.h - an eRPC-style RPC library on the traditional DMA NIC (icenic.h),
 * after Kalia et al., "Datacenter RPCs can be General and Fast" (NSDI'19;
 * /work/shared/seeds/001_*.txt lines 1-534). Implementation: lib/erpc.c.
 *
 * What it keeps of eRPC's design (section numbers are the paper's):
 * - An Rpc endpoint per thread (§3.1), owning the NIC's RX and TX queues and
 *   an event loop (erpc_run_event_loop_once) that does all the work: packet
 *   I/O, request handlers, continuations, congestion control, loss
 *   detection. Handlers run in the dispatch thread (§3.2); a handler may
 *   answer later (nested or deferred responses, §3.1).
 * - Sessions (§4.3): one-to-one connections between two Rpcs, set up by a
 *   connect handshake; a session has ERPC_SLOTS slots, one outstanding
 *   request each (more requests wait in a per-session backlog), and a
 *   quota of session credits (§4.3.1): a packet sent consumes one, a packet
 *   received returns one. An Rpc takes part in at most |RQ| / C sessions.
 * - msgbufs in DMA-capable memory whose first packet header sits right
 *   before the data (§4.2.1, Fig. 2), so the NIC reads a small message with
 *   one DMA; requests and responses are sent from them without a copy
 *   (zero-copy TX), and a request handler reads a one-packet request where
 *   the NIC wrote it (zero-copy request processing, §4.2.3). A server slot
 *   keeps a preallocated one-packet response msgbuf (§4.3); a larger
 *   response gets a msgbuf from the pool (erpc_alloc_response).
 * - Multi-packet messages up to ERPC_MAX_MSG_SIZE (§4.2.1, §5.1): the
 *   headers of packets 2..N sit after the msgbuf's data, as in Fig. 2. A
 *   request of N packets uses one session credit per packet; the server
 *   answers each request packet but the last with a credit return (CR)
 *   and the last with the first response packet; the client then sends a
 *   request-for-response (RFR, one credit each) per further response
 *   packet, each answered by that packet. Receivers reassemble in order
 *   into a msgbuf (the server's handler and the client's continuation see
 *   the whole message); out-of-order packets are dropped (§5.3).
 * - A client-driven wire protocol (§5): the server only answers; a client
 *   that suspects a loss (no progress after the RTO, §5.2.3) rolls the
 *   request's wire state back to the last packet it knows arrived
 *   (go-back-N, §5.3), reclaims those credits, retransmits from there and
 *   flushes the TX DMA queue (§4.2.2). The server keeps the last response
 *   of every slot and answers a re-sent request packet with its CR or the
 *   saved response, never running the handler twice (at-most-once, §5.3).
 * - Timely congestion control at the client (§5.2): per-packet RTTs, the
 *   rate computation, a rate limiter; with eRPC's three bypasses (§5.2.2):
 *   no rate update when the RTT is below T_low on an uncongested session,
 *   no rate limiter for an uncongested session, one timestamp per RX or TX
 *   batch (here: per event-loop pass).
 *
 * What differs (sdk/programs/erpc_server/README.md): messages are at most
 * ERPC_MAX_MSG_SIZE bytes (eRPC: 8 MB); the IceNIC reads a frame with one
 * DMA (its "partial" send bit is not modelled), so packets 2..N are copied
 * (their header and data) into a TX staging frame where eRPC's NIC gathers
 * two DMAs; one Rpc per node (the IceNIC has one RX queue, eRPC steers
 * flows to a queue per thread); the rate limiter is a short list scanned
 * every pass rather than Carousel's timing wheel.
 *
 * Wire format: the nanoPU frame headers of icenic.h (Ethernet, IPv4,
 * nanoPU transport: 64 bytes, so switches route it like any frame), then
 * the 16-byte eRPC packet header below, then the packet's share of the
 * message data (ERPC_MAX_DATA bytes in every packet but the last).
 */
#ifndef NANOPU_ERPC_H
#define NANOPU_ERPC_H

#include <icenic.h>
#include <stdint.h>

/* ---- constants, each with its source -------------------------------------- */

/* Concurrent requests per session. eRPC §4.3: "We support a constant number
 * of concurrent requests (default = 8) per session". */
#define ERPC_SLOTS 8
/* Session credits C, default. eRPC §4.3.1-4.3.2: a client session starts
 * with a quota of C packets; small C suits sessions of small messages. We
 * default to one credit per slot (8), so that single-packet requests are
 * limited by the slots; erpc_config.credits changes it. */
#define ERPC_DEFAULT_CREDITS 8
/* Receive queue entries (posted buffers). Source: the IceNIC's queue depth
 * (crates/node/src/icenic.rs DEFAULT_QUEUE_DEPTH = 64, icenet's WithIceNIC);
 * erpc_config.rq_size may ask for more on a NIC configured deeper. */
#define ERPC_DEFAULT_RQ 64
#define ERPC_MAX_RQ 255 /* the IceNIC's COUNTS fields are 8 bits */
/* Sessions an Rpc can hold (client and server mode together): the
 * library's table; the limit that applies is |RQ| / C (§4.3.1). */
#define ERPC_MAX_SESSIONS 24
/* Retransmission timeout. eRPC §5.2.3: "we use a conservative 5 ms RTO". */
#define ERPC_DEFAULT_RTO_US 5000
/* Core cycles per microsecond: the nanoPU's 3.2 GHz target clock (nanoPU
 * §5; crates/node config clock_mhz). */
#define ERPC_DEFAULT_CYCLES_PER_US 3200

/* Timely (§5.2.1), eRPC's parameters (efficient/eRPC src/cc/timely.h):
 * T_low 50 us (eRPC §5.2.2: "the recommended value of 50 us"), T_high
 * 1000 us, EWMA weight 0.02, minimum RTT 2 us (normalizes the gradient),
 * multiplicative decrease factor 0.8, hyperactive increase after 5
 * consecutive falling RTTs. Additive increment: 10 Mbps (Timely, SIGCOMM'15
 * §6: "additive increment of 10 Mbps"). */
#define ERPC_TIMELY_T_LOW_US 50.0
#define ERPC_TIMELY_T_HIGH_US 1000.0
#define ERPC_TIMELY_EWMA_ALPHA 0.02
#define ERPC_TIMELY_MIN_RTT_US 2.0
#define ERPC_TIMELY_BETA 0.8
#define ERPC_TIMELY_HAI_THRESH 5
#define ERPC_TIMELY_ADD_BPS 10e6
/* The lowest rate Timely may set: eRPC's timely.h keeps 5 MB/s (40 Mbps). */
#define ERPC_TIMELY_MIN_BPS 40e6
/* Line rate: the simulated host links' 200 Gb/s (crates/network default). */
#define ERPC_DEFAULT_LINK_GBPS 200

/* ---- wire format ------------------------------------------------------------ */

/* Packet types (eRPC §5.1). CONNECT and CONNECT_RESP are the session
 * handshake; CR and RFR are header-only. */
#define ERPC_PKT_REQ 1
#define ERPC_PKT_RESP 2
#define ERPC_PKT_CONNECT 3
#define ERPC_PKT_CONNECT_RESP 4
#define ERPC_PKT_CR 5  /* credit return: server -> client, per request packet but the last */
#define ERPC_PKT_RFR 6 /* request for response: client -> server, per response packet after the first */

#define ERPC_MAGIC 0xE5

/* The eRPC packet header, after the 64 bytes of frame headers. pkt_num
 * numbers a request's packets in each direction as eRPC does: the
 * client's are request packets 0..Nq-1 then RFRs Nq..Nq+Nr-2, and every
 * server packet carries the number of the client packet it answers (CR i
 * for request packet i < Nq-1, response packet j as Nq-1+j). */
struct erpc_pkthdr {
    uint8_t req_type;      /* the request handler's type */
    uint8_t pkt_type;      /* ERPC_PKT_* */
    uint16_t dest_session; /* the receiver's session number */
    uint16_t src_session;  /* the sender's session number */
    uint8_t magic;         /* ERPC_MAGIC */
    uint8_t pkt_num;       /* above */
    uint32_t msg_size;     /* the whole message's bytes (REQ, RESP) */
    /* slot = req_num % ERPC_SLOTS; a slot's next request adds ERPC_SLOTS.
     * 32 bits (eRPC: 44): 2^29 requests per slot, more than any run here. */
    uint32_t req_num;
};

#define ERPC_PKTHDR_BYTES 16
#define ERPC_HEADROOM (FRAME_HEADER_LEN + ERPC_PKTHDR_BYTES) /* 80 */
/* Data bytes per packet (a frame must fit a 2 KB receive buffer): a
 * one-packet message holds up to this much. */
#define ERPC_MAX_DATA 1024
#define ERPC_BUF_BYTES (ERPC_HEADROOM + ERPC_MAX_DATA)
/* Largest message: 16 packets. Twice the default session credits, so one
 * message alone runs out of credits and depends on CRs and RFRs to finish
 * (the case §4.3.1's credits are for); and its pool msgbufs (17.3 KB each,
 * 16 of them) stay small beside the library's 1 MB of one-packet buffers,
 * which the guest's start-up code zeroes. */
#define ERPC_MAX_MSG_SIZE 16384
#define ERPC_MAX_PKTS (ERPC_MAX_MSG_SIZE / ERPC_MAX_DATA)

/* ---- API --------------------------------------------------------------------- */

struct erpc_rpc;

/* A message buffer in DMA-able memory: the first packet's headers, the
 * data (contiguous), then (multi-packet msgbufs) the headers of packets
 * 2..N at erpc_data(m) + capacity (eRPC Fig. 2). */
struct erpc_msgbuf {
    uint8_t *frame;    /* the data starts at frame + ERPC_HEADROOM */
    uint32_t size;     /* bytes of data */
    uint32_t capacity; /* bytes of data it can hold */
};

static inline uint8_t *erpc_data(const struct erpc_msgbuf *m) { return m->frame + ERPC_HEADROOM; }

/* A server's handle on a request it is answering: session and slot. */
typedef uint32_t erpc_handle;

/* A request handler: the request's data (in the receive buffer, or for a
 * multi-packet request the msgbuf it was reassembled in; valid only until
 * the handler returns) and size. It answers with erpc_response_buf (or
 * erpc_alloc_response) + erpc_enqueue_response, now or later. */
typedef void (*erpc_req_handler)(struct erpc_rpc *rpc, erpc_handle h, const uint8_t *req,
                                 uint32_t size, void *ctx);
/* A continuation: the response is in the response msgbuf given to
 * erpc_enqueue_request (resp, size bytes); req and resp are the
 * application's again. */
typedef void (*erpc_continuation)(struct erpc_rpc *rpc, void *tag, struct erpc_msgbuf *resp);

struct erpc_config {
    uint16_t rpc_id;       /* this Rpc's id (the frames' context) */
    uint32_t credits;      /* session credits C (ERPC_DEFAULT_CREDITS) */
    uint32_t rq_size;      /* receive buffers to keep posted (ERPC_DEFAULT_RQ) */
    uint64_t rto_cycles;   /* retransmission timeout (ERPC_DEFAULT_RTO_US) */
    uint32_t cycles_per_us;
    uint32_t link_gbps;    /* Timely's maximum rate */
    int congestion_control;/* Timely on client sessions (eRPC's default: on, §6) */
    int batch_timestamps;  /* §5.2.2's third optimization (on) */
    int timely_bypass;     /* §5.2.2's first (on) */
    int rate_limiter_bypass; /* §5.2.2's second (on) */
};

/* Counters (for tests and experiments). */
struct erpc_stats {
    uint64_t requests_sent, responses_received, retransmissions, tx_flushes;
    uint64_t requests_handled;  /* handler invocations */
    uint64_t responses_resent;  /* a re-sent request answered with the saved response */
    uint64_t dropped_stale;     /* reordered, duplicate or unknown packets dropped */
    uint64_t dropped_malformed;
    uint64_t backlogged;        /* requests that waited for a slot or a credit */
    uint64_t rate_updates, rate_limited, timely_bypassed;
    uint64_t rx_batches, rx_packets;
    /* Multi-packet messages (§5.1): credit returns and requests for
     * response sent and received (in order, accepted), and multi-packet
     * requests the server dropped for want of a pool msgbuf. */
    uint64_t cr_sent, cr_received, rfr_sent, rfr_received;
    uint64_t dropped_no_msgbuf;
};

/* The defaults above. */
void erpc_default_config(struct erpc_config *cfg);
/* Creates the Rpc: posts the receive buffers. One per node (the IceNIC has
 * one RX queue). Returns 0, or -1 on a bad configuration (printed). */
int erpc_rpc_init(struct erpc_rpc **out, const struct erpc_config *cfg);
/* Registers the handler for req_type. */
void erpc_register_handler(struct erpc_rpc *rpc, uint8_t req_type, erpc_req_handler fn, void *ctx);
/* A client session to Rpc remote_rpc_id at remote_ip (host order): starts
 * the handshake; requests may be enqueued at once (they wait for it).
 * Returns the session number, or -1 when |RQ| / C sessions exist (§4.3.1). */
int erpc_create_session(struct erpc_rpc *rpc, uint32_t remote_ip, uint16_t remote_rpc_id);
int erpc_session_connected(struct erpc_rpc *rpc, int session);
/* A msgbuf for `size` bytes from the Rpc's pools: capacity ERPC_MAX_DATA
 * for size <= ERPC_MAX_DATA, else ERPC_MAX_MSG_SIZE (a smaller pool, also
 * used for the server's reassembly and large responses); 0 if none is left
 * or size > ERPC_MAX_MSG_SIZE. Returns 1 on success. */
int erpc_alloc_msgbuf(struct erpc_rpc *rpc, struct erpc_msgbuf *m, uint32_t size);
void erpc_free_msgbuf(struct erpc_rpc *rpc, struct erpc_msgbuf *m);
/* Queues a request (req->size bytes, up to ERPC_MAX_MSG_SIZE) on a session; it is sent now if a slot
 * and a credit are free, else when one is. The continuation gets resp.
 * Returns 0, or -1 if the session is not a client session or the backlog
 * is full. */
int erpc_enqueue_request(struct erpc_rpc *rpc, int session, uint8_t req_type,
                         struct erpc_msgbuf *req, struct erpc_msgbuf *resp,
                         erpc_continuation cont, void *tag);
/* The preallocated response buffer of request h (ERPC_MAX_DATA bytes). */
uint8_t *erpc_response_buf(struct erpc_rpc *rpc, erpc_handle h);
/* A response buffer of `size` bytes for request h: the preallocated one if
 * size <= ERPC_MAX_DATA, else a msgbuf from the pool, kept (for re-sent
 * requests, at-most-once) until the slot's next request arrives. 0 if size
 * > ERPC_MAX_MSG_SIZE or the pool is empty. */
uint8_t *erpc_alloc_response(struct erpc_rpc *rpc, erpc_handle h, uint32_t size);
/* Sends the response of request h: size bytes written in its buffer
 * (erpc_response_buf, or erpc_alloc_response of at least size). */
void erpc_enqueue_response(struct erpc_rpc *rpc, erpc_handle h, uint32_t size);
/* The IPv4 address (host order) of the client of request h. */
uint32_t erpc_handle_ip(struct erpc_rpc *rpc, erpc_handle h);
/* One pass of the event loop; returns the packets it received. */
unsigned erpc_run_event_loop_once(struct erpc_rpc *rpc);
/* Runs the event loop for `cycles` core cycles. */
void erpc_run_event_loop(struct erpc_rpc *rpc, uint64_t cycles);
const struct erpc_stats *erpc_stats(const struct erpc_rpc *rpc);
/* Requests of a client session outstanding (sent, unanswered) and in its
 * backlog. */
unsigned erpc_outstanding(struct erpc_rpc *rpc, int session);
/* Prints a client session's slots (diagnostics, e.g. when requests go
 * unanswered). */
void erpc_print_state(struct erpc_rpc *rpc, int session);
/* This node's IPv4 address (host order), from the NIC's MAC. */
uint32_t erpc_local_ip(void);

#endif /* NANOPU_ERPC_H */
