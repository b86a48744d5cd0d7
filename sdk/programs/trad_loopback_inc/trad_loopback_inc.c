/*
 * trad_loopback_inc: the "loopback with increment" of the nanoPU paper
 * (section 5.2.1, Fig. 5) on the traditional DMA NIC: like trad_loopback
 * (Ethernet addresses swapped with memcpy, everything else unchanged), and
 * every 64-bit payload word after the 64-byte header is incremented by one
 * (little-endian, like the nanoPU's `loopback_inc`). The payload is
 * (length - 64) / 8 whole words; trailing bytes of a partial last word, if
 * any, are sent back unchanged. Each word is read from the buffer the NIC
 * wrote (L1 misses served by the L2) and written back before the send.
 * Never exits: it is driven by the simulator's client.
 */
#include <icenic.h>

static void swap_eth(uint8_t *f)
{
    uint8_t tmp[6];
    memcpy(tmp, f + ETH_DST, 6);
    memcpy(f + ETH_DST, f + ETH_SRC, 6);
    memcpy(f + ETH_SRC, tmp, 6);
}

static unsigned loopback_inc(uint8_t *f, unsigned len)
{
    swap_eth(f);
    if (len > FRAME_HEADER_LEN) {
        /* buffers are 64-byte aligned: the payload words are aligned */
        uint64_t *w = (uint64_t *)(f + FRAME_HEADER_LEN);
        for (unsigned n = (len - FRAME_HEADER_LEN) / 8; n > 0; n--, w++)
            *w += 1;
    }
    return len;
}

int main(void)
{
    icenic_serve(loopback_inc);
}
