/*
 * trad_loopback: the nanoPU paper's "traditional" loopback (section 5.2.1):
 * the service of `loopback` on a plain core with the DMA NIC (icenic.h)
 * instead of the register file interface.
 *
 * Every received frame is sent back with its Ethernet source and
 * destination addresses swapped by memcpy, as in the paper's baseline
 * (12 ns of its 51 ns loopback), and otherwise unchanged: same length, IPv4
 * and transport headers untouched. Receive buffers are kept posted and
 * handled in batches of up to 30 (icenic_serve). Sends the boot frame when
 * ready; never exits: it is driven by the simulator's client.
 */
#include <icenic.h>

static void swap_eth(uint8_t *f)
{
    uint8_t tmp[6];
    memcpy(tmp, f + ETH_DST, 6);
    memcpy(f + ETH_DST, f + ETH_SRC, 6);
    memcpy(f + ETH_SRC, tmp, 6);
}

static unsigned loopback(uint8_t *f, unsigned len)
{
    swap_eth(f);
    return len;
}

int main(void)
{
    icenic_serve(loopback);
}
