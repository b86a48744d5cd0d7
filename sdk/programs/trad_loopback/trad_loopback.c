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
 *
 * The paper's FireSim switch forwards by Ethernet address, so swapping
 * those is enough there; trad_loopback_routed is this program built to swap
 * the IPv4 addresses too, for networks of switches that route by IPv4.
 */
#include <icenic.h>

static void swap_eth(uint8_t *f)
{
    uint8_t tmp[6];
    memcpy(tmp, f + ETH_DST, 6);
    memcpy(f + ETH_DST, f + ETH_SRC, 6);
    memcpy(f + ETH_SRC, tmp, 6);
}

#ifdef TRAD_LOOPBACK_ROUTED
/* On a network whose switches route by IPv4 address (ours), the reply must
 * also carry the client's address as its destination. Swapping the two
 * addresses leaves the header checksum as it is (a ones'-complement sum). */
static void swap_ip(uint8_t *f)
{
    uint8_t tmp[4];
    memcpy(tmp, f + IP_DST, 4);
    memcpy(f + IP_DST, f + IP_SRC, 4);
    memcpy(f + IP_SRC, tmp, 4);
}
#endif

static unsigned loopback(uint8_t *f, unsigned len)
{
    swap_eth(f);
#ifdef TRAD_LOOPBACK_ROUTED
    swap_ip(f);
#endif
    return len;
}

int main(void)
{
    icenic_serve(loopback);
}
