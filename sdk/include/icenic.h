/*
 * icenic.h - driver for the traditional DMA NIC (a model of FireSim/Chipyard's
 * IceNIC), the baseline of the nanoPU paper (section 5.1): software posts
 * buffer descriptors through memory-mapped queues and polls for completions;
 * the NIC moves whole Ethernet frames between the wire and memory by DMA.
 *
 * The simulator attaches it only when asked ([node.icenic] enabled = true);
 * the device model and its timing are in crates/node/src/icenic.rs.
 *
 * Registers (offsets from ICENIC_BASE):
 *   0x00 SEND_REQ  64-bit write  (len << 48) | addr: send the frame at addr
 *   0x08 RECV_REQ  64-bit write  addr: post a receive buffer of
 *                                ICENIC_RECV_BUF_BYTES (2048) bytes
 *   0x10 SEND_COMP 16-bit read   pops a send completion: 1, or 0 if none
 *   0x12 RECV_COMP 16-bit read   pops a receive completion: the frame's
 *                                length in bytes, or 0 if none
 *   0x14 COUNTS    32-bit read   7..0 send requests the NIC can accept,
 *                                15..8 receive requests it can accept,
 *                                23..16 send completions, 31..24 receive
 *                                completions available
 *   0x18 MACADDR   64-bit read   the node's MAC, first byte in bits 7..0
 *
 * Requests and completions are in order: the n-th receive completion is for
 * the n-th buffer posted, the n-th send completion for the n-th send. A
 * frame that arrives with no buffer posted is dropped. A buffer may be
 * touched again only after its completion.
 *
 * Frames are the nanoPU's (crates/wire): Ethernet (14 bytes), IPv4 without
 * options (20), nanoPU transport (30), then the message bytes: 64 bytes of
 * headers, all fields big-endian. This file has helpers to build them.
 *
 * Nothing here touches x30/x31.
 */
#ifndef NANOPU_ICENIC_H
#define NANOPU_ICENIC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ICENIC_BASE      0x10016000UL
#define ICENIC_SEND_REQ  (ICENIC_BASE + 0x00)
#define ICENIC_RECV_REQ  (ICENIC_BASE + 0x08)
#define ICENIC_SEND_COMP (ICENIC_BASE + 0x10)
#define ICENIC_RECV_COMP (ICENIC_BASE + 0x12)
#define ICENIC_COUNTS    (ICENIC_BASE + 0x14)
#define ICENIC_MACADDR   (ICENIC_BASE + 0x18)

/* Size of a receive buffer (the convention the device model assumes). */
#define ICENIC_RECV_BUF_BYTES 2048
/* Largest frame a send request may name. */
#define ICENIC_MAX_FRAME_BYTES 9000

/* ---- frame layout (crates/wire: ethernet.rs, ipv4.rs, nanotransport.rs) ---- */
#define ETH_DST         0  /* 6 bytes */
#define ETH_SRC         6  /* 6 bytes */
#define ETH_TYPE        12 /* 0x0800 */
#define ETH_HEADER_LEN  14
#define IP_OFF          14
#define IP_TOTAL_LEN    (IP_OFF + 2)
#define IP_IDENT        (IP_OFF + 4)
#define IP_FLAGS_FRAG   (IP_OFF + 6)
#define IP_TTL          (IP_OFF + 8)
#define IP_PROTO        (IP_OFF + 9)
#define IP_CHECKSUM     (IP_OFF + 10)
#define IP_SRC          (IP_OFF + 12)
#define IP_DST          (IP_OFF + 16)
#define IP_HEADER_LEN   20
#define NT_OFF          34
#define NT_FLAGS        (NT_OFF + 0)
#define NT_SRC_CONTEXT  (NT_OFF + 1)
#define NT_DST_CONTEXT  (NT_OFF + 3)
#define NT_MSG_LEN      (NT_OFF + 5)
#define NT_PKT_OFFSET   (NT_OFF + 7)
#define NT_PULL_OFFSET  (NT_OFF + 9)
#define NT_TX_MSG_ID    (NT_OFF + 11)
#define NT_HEADER_LEN   30
#define FRAME_HEADER_LEN 64 /* payload offset */

#define ETHERTYPE_IPV4  0x0800
#define NT_PROTOCOL     0x99 /* nanoPU transport in IPv4 */
#define NT_FLAG_DATA    0x01

/* ---- MMIO ---- */
static inline void icenic_write64(uintptr_t addr, uint64_t v)
{
    *(volatile uint64_t *)addr = v;
}

static inline uint16_t icenic_read16(uintptr_t addr)
{
    return *(volatile uint16_t *)addr;
}

static inline uint32_t icenic_read32(uintptr_t addr)
{
    return *(volatile uint32_t *)addr;
}

static inline uint64_t icenic_read64(uintptr_t addr)
{
    return *(volatile uint64_t *)addr;
}

/* The COUNTS register, to read all four counts with one access. */
static inline uint32_t nic_counts(void) { return icenic_read32(ICENIC_COUNTS); }
#define NIC_COUNTS_SEND_REQ(c)  ((c) & 0xff)
#define NIC_COUNTS_RECV_REQ(c)  (((c) >> 8) & 0xff)
#define NIC_COUNTS_SEND_COMP(c) (((c) >> 16) & 0xff)
#define NIC_COUNTS_RECV_COMP(c) ((c) >> 24)

static inline unsigned nic_send_req_avail(void) { return NIC_COUNTS_SEND_REQ(nic_counts()); }
static inline unsigned nic_recv_req_avail(void) { return NIC_COUNTS_RECV_REQ(nic_counts()); }
static inline unsigned nic_send_comp_avail(void) { return NIC_COUNTS_SEND_COMP(nic_counts()); }
static inline unsigned nic_recv_comp_avail(void) { return NIC_COUNTS_RECV_COMP(nic_counts()); }

/* Posts a receive buffer of ICENIC_RECV_BUF_BYTES (no check for space:
 * see nic_recv_req_avail). */
static inline void nic_post_recv(void *buf)
{
    icenic_write64(ICENIC_RECV_REQ, (uintptr_t)buf);
}

/* Queues the frame of len bytes at buf for sending (no check for space: see
 * nic_send_req_avail). The fence orders the frame's stores before the
 * request. */
static inline void nic_send(void *buf, unsigned len)
{
    uint64_t addr = (uintptr_t)buf & ((1UL << 48) - 1);
    __asm__ volatile("fence w,o" ::: "memory");
    icenic_write64(ICENIC_SEND_REQ, ((uint64_t)len << 48) | addr);
}

/* Pops one receive completion: the received frame's length (0 if none).
 * The fence orders the buffer's loads after the completion. */
static inline unsigned nic_recv_len(void)
{
    unsigned len = icenic_read16(ICENIC_RECV_COMP);
    __asm__ volatile("fence i,r" ::: "memory");
    return len;
}

/* Pops one send completion: 1, or 0 if none was available. */
static inline unsigned nic_send_comp(void) { return icenic_read16(ICENIC_SEND_COMP); }

/* Pops every send completion available; returns how many. */
static inline unsigned nic_complete_sends(void)
{
    unsigned n = nic_send_comp_avail();
    for (unsigned i = 0; i < n; i++)
        (void)nic_send_comp();
    return n;
}

/* The MAC address, first byte in bits 7..0 (memcpy it to get the bytes). */
static inline uint64_t nic_macaddr(void) { return icenic_read64(ICENIC_MACADDR); }

/* ---- frame helpers ---- */
static inline void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint16_t get_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

/* The IPv4 header checksum of the 20-byte header at ip (its checksum
 * field is included: zero it first). */
static inline uint16_t ipv4_checksum(const uint8_t *ip)
{
    uint32_t sum = 0;
    for (int i = 0; i < IP_HEADER_LEN; i += 2)
        sum += get_be16(ip + i);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Recomputes the IPv4 checksum of frame f. */
static inline void ipv4_fill_checksum(uint8_t *f)
{
    put_be16(f + IP_CHECKSUM, 0);
    put_be16(f + IP_CHECKSUM, ipv4_checksum(f + IP_OFF));
}

/*
 * Writes the 64 bytes of headers of a one-packet DATA frame carrying
 * payload_len bytes (msg_len = payload_len, pkt_offset 0) into f: MACs,
 * IPv4 addresses (4 bytes each, network order), contexts and message id.
 * IPv4: no options, DF, TTL 64, ident 0, protocol 0x99, checksum filled.
 */
static inline void nt_build_headers(uint8_t *f, const uint8_t dst_mac[6],
                                    const uint8_t src_mac[6], const uint8_t dst_ip[4],
                                    const uint8_t src_ip[4], uint16_t dst_context,
                                    uint16_t src_context, uint16_t tx_msg_id,
                                    unsigned payload_len)
{
    memset(f, 0, FRAME_HEADER_LEN);
    memcpy(f + ETH_DST, dst_mac, 6);
    memcpy(f + ETH_SRC, src_mac, 6);
    put_be16(f + ETH_TYPE, ETHERTYPE_IPV4);
    f[IP_OFF] = 0x45;
    put_be16(f + IP_TOTAL_LEN, (uint16_t)(IP_HEADER_LEN + NT_HEADER_LEN + payload_len));
    put_be16(f + IP_FLAGS_FRAG, 0x4000);
    f[IP_TTL] = 64;
    f[IP_PROTO] = NT_PROTOCOL;
    memcpy(f + IP_SRC, src_ip, 4);
    memcpy(f + IP_DST, dst_ip, 4);
    ipv4_fill_checksum(f);
    f[NT_FLAGS] = NT_FLAG_DATA;
    put_be16(f + NT_SRC_CONTEXT, src_context);
    put_be16(f + NT_DST_CONTEXT, dst_context);
    put_be16(f + NT_MSG_LEN, (uint16_t)payload_len);
    put_be16(f + NT_TX_MSG_ID, tx_msg_id);
}

/*
 * Turns the one-packet request frame f in place into the headers of its
 * reply carrying payload_len bytes (the payload itself is the caller's, at
 * f + FRAME_HEADER_LEN): Ethernet and IPv4 addresses and the two contexts
 * swapped, IPv4 total length, checksum and message length set. A server
 * that answers requests from anywhere (through switches that route by IPv4
 * address) uses it. Returns the reply frame's length.
 */
static inline unsigned nt_reply_headers(uint8_t *f, unsigned payload_len)
{
    uint8_t tmp[6];
    memcpy(tmp, f + ETH_DST, 6);
    memcpy(f + ETH_DST, f + ETH_SRC, 6);
    memcpy(f + ETH_SRC, tmp, 6);
    memcpy(tmp, f + IP_DST, 4);
    memcpy(f + IP_DST, f + IP_SRC, 4);
    memcpy(f + IP_SRC, tmp, 4);
    memcpy(tmp, f + NT_SRC_CONTEXT, 2);
    memcpy(f + NT_SRC_CONTEXT, f + NT_DST_CONTEXT, 2);
    memcpy(f + NT_DST_CONTEXT, tmp, 2);
    put_be16(f + IP_TOTAL_LEN, (uint16_t)(IP_HEADER_LEN + NT_HEADER_LEN + payload_len));
    ipv4_fill_checksum(f);
    f[NT_FLAGS] = NT_FLAG_DATA;
    put_be16(f + NT_MSG_LEN, (uint16_t)payload_len);
    put_be16(f + NT_PKT_OFFSET, 0);
    return FRAME_HEADER_LEN + payload_len;
}

/*
 * The boot frame: a 72-byte DATA frame from this node (context 0) to
 * 0.0.0.0 (MAC 02:00:00:00:00:00), context 0, carrying one zero word, the
 * IceNIC counterpart of lnic_boot(): the simulator's client starts sending
 * when it sees it. The node's IPv4 address is the MAC's last four bytes
 * (02:00:a.b.c.d). Sends it and waits for its send completion (so call it
 * with no other send outstanding).
 */
static inline void icenic_boot(void)
{
    static uint64_t boot[(FRAME_HEADER_LEN + 8) / 8];
    uint8_t *f = (uint8_t *)boot;
    uint64_t mac_word = nic_macaddr();
    uint8_t mac[8];
    static const uint8_t zero_mac[6] = {0x02, 0x00, 0, 0, 0, 0};
    static const uint8_t zero_ip[4] = {0, 0, 0, 0};
    memcpy(mac, &mac_word, 8);
    nt_build_headers(f, zero_mac, mac, zero_ip, mac + 2, 0, 0, 0, 8);
    boot[FRAME_HEADER_LEN / 8] = 0;
    while (nic_send_req_avail() == 0)
        ;
    nic_send(f, FRAME_HEADER_LEN + 8);
    while (nic_send_comp() == 0)
        ;
}

/*
 * A request/response server loop over the NIC, the traditional counterpart
 * of lnic_wait()/lnic_msg_done(). Keeps up to ICENIC_BATCH (30, the batch of
 * the paper's traditional baseline, section 5.2.1) receive buffers posted.
 * Each pass reads COUNTS once, pops the send completions, then handles every
 * frame received so far (up to the send requests the NIC can take):
 * `process(frame, len)` turns the request in place into the reply and
 * returns its length (1..ICENIC_RECV_BUF_BYTES), which is sent from the same
 * buffer; finally reposts the buffers whose sends have completed. Requests,
 * sends and completions are all in order, so a ring of buffers and two
 * counts say where each buffer is. Sends the boot frame once the first
 * buffers are posted; never returns.
 */
#define ICENIC_BATCH 30

typedef unsigned (*icenic_handler)(uint8_t *frame, unsigned len);

static inline __attribute__((always_inline, noreturn)) void icenic_serve(icenic_handler process)
{
    static uint64_t bufs[ICENIC_BATCH][ICENIC_RECV_BUF_BYTES / 8] __attribute__((aligned(64)));
    unsigned post_idx = 0, recv_idx = 0; /* ring positions */
    unsigned posted = 0;                 /* posted, not yet received */
    unsigned sending = 0;                /* received, send not yet completed */

    while (posted < ICENIC_BATCH && nic_recv_req_avail() > 0) {
        nic_post_recv(bufs[post_idx]);
        post_idx = post_idx + 1 == ICENIC_BATCH ? 0 : post_idx + 1;
        posted++;
    }
    icenic_boot();
    for (;;) {
        uint32_t c = nic_counts();
        unsigned done = NIC_COUNTS_SEND_COMP(c);
        unsigned ready = NIC_COUNTS_RECV_COMP(c);
        unsigned send_space = NIC_COUNTS_SEND_REQ(c);
        unsigned recv_space = NIC_COUNTS_RECV_REQ(c);
        for (unsigned i = 0; i < done; i++)
            (void)nic_send_comp();
        sending -= done;
        if (ready > send_space)
            ready = send_space;
        for (unsigned i = 0; i < ready; i++) {
            unsigned len = nic_recv_len();
            uint8_t *f = (uint8_t *)bufs[recv_idx];
            recv_idx = recv_idx + 1 == ICENIC_BATCH ? 0 : recv_idx + 1;
            nic_send(f, process(f, len));
        }
        posted -= ready;
        sending += ready;
        while (posted + sending < ICENIC_BATCH && recv_space > 0) {
            nic_post_recv(bufs[post_idx]);
            post_idx = post_idx + 1 == ICENIC_BATCH ? 0 : post_idx + 1;
            posted++;
            recv_space--;
        }
    }
}

#endif
