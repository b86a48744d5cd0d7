/*
 * trad_dot_product: the dot-product microbenchmark of the nanoPU paper
 * (section 5.2.1, Fig. 6) on the traditional DMA NIC, for comparison with
 * `dot_product` (the nanoPU's optimal version, straight from netRX) and
 * `dot_product_naive`. Same formats, carried in one packet each:
 *
 * Request payload (words):  DATA_TYPE (1) | n | n x (index, value)
 * Reply payload:            RESP_TYPE (2) | sum
 * where sum = sum(value * weights[index % NUM_WEIGHTS]) mod 2^64 and
 * weights[i] = i + 1; a request whose type word is not DATA_TYPE (or that is
 * shorter than two words) gets ERROR_TYPE (3) | 0. Pairs beyond the frame's
 * length are not read (n is capped by it).
 *
 * The reply is a new 80-byte frame to the requester, built in the request's
 * buffer once the sum is computed: Ethernet and IPv4 addresses and the
 * transport contexts swapped, IPv4 total length 20 + 30 + 16 with its
 * checksum recomputed, msg_len 16, pkt_offset 0, the request's tx_msg_id.
 * The message is read from the buffer the NIC wrote (L1 misses served by
 * the L2); frames are handled in batches of up to 30 (icenic_serve).
 * Never exits: it is driven by the simulator's client.
 */
#include <icenic.h>

#define DATA_TYPE 1
#define RESP_TYPE 2
#define ERROR_TYPE 3
#define RESP_MSG_LEN 16
#define NUM_WEIGHTS 2048 /* 16 KB: the L1 data cache of the prototype */

static uint64_t weights[NUM_WEIGHTS];

static unsigned dot_product(uint8_t *f, unsigned len)
{
    /* buffers are 64-byte aligned: the payload words are aligned */
    const uint64_t *w = (const uint64_t *)(f + FRAME_HEADER_LEN);
    unsigned words = len > FRAME_HEADER_LEN ? (len - FRAME_HEADER_LEN) / 8 : 0;
    uint64_t type = ERROR_TYPE, result = 0;
    if (words >= 2 && w[0] == DATA_TYPE) {
        uint64_t n = w[1];
        if (n > (words - 2) / 2)
            n = (words - 2) / 2;
        const uint64_t *p = w + 2;
        for (uint64_t i = 0; i < n; i++, p += 2)
            result += p[1] * weights[p[0] % NUM_WEIGHTS];
        type = RESP_TYPE;
    }

    /* Turn the request into the reply in place, as a driver would: swap
     * the MAC addresses, the IPv4 addresses (the header checksum does not
     * change when two of its 16-bit words trade places) and the contexts;
     * shorten the lengths, updating the checksum incrementally (RFC 1624). */
    uint16_t *h = (uint16_t *)f; /* buffers are 64-byte aligned */
    for (int i = 0; i < 3; i++) {
        uint16_t t = h[i];
        h[i] = h[3 + i];
        h[3 + i] = t;
    }
    for (int i = IP_SRC / 2; i < IP_SRC / 2 + 2; i++) {
        uint16_t t = h[i];
        h[i] = h[i + 2];
        h[i + 2] = t;
    }
    uint16_t old_len = h[IP_TOTAL_LEN / 2];
    uint16_t new_len = (uint16_t)(IP_HEADER_LEN + NT_HEADER_LEN + RESP_MSG_LEN);
    new_len = (uint16_t)(new_len << 8 | new_len >> 8); /* network order */
    uint32_t sum = (uint16_t)~h[IP_CHECKSUM / 2] + (uint16_t)~old_len + new_len;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    h[IP_TOTAL_LEN / 2] = new_len;
    h[IP_CHECKSUM / 2] = (uint16_t)~sum;
    for (int i = 0; i < 2; i++) {
        uint8_t t = f[NT_SRC_CONTEXT + i];
        f[NT_SRC_CONTEXT + i] = f[NT_DST_CONTEXT + i];
        f[NT_DST_CONTEXT + i] = t;
    }
    put_be16(f + NT_MSG_LEN, RESP_MSG_LEN);
    put_be16(f + NT_PKT_OFFSET, 0);
    uint64_t *out = (uint64_t *)(f + FRAME_HEADER_LEN);
    out[0] = type;
    out[1] = result;
    return FRAME_HEADER_LEN + RESP_MSG_LEN;
}

int main(void)
{
    for (int i = 0; i < NUM_WEIGHTS; i++)
        weights[i] = (uint64_t)i + 1;
    icenic_serve(dot_product);
}
