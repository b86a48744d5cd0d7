/*
 * trad_loopback_routed: trad_loopback for networks whose switches route by
 * IPv4 address: the reply swaps the IPv4 addresses as well as the Ethernet
 * ones (see trad_loopback.c).
 */
#define TRAD_LOOPBACK_ROUTED 1
#include "../trad_loopback/trad_loopback.c"
