/*
 * incast_client: one client of the nanoPU 80-to-1 incast (nanoPU §5.2.3).
 * Registers context 0, sends one MSG_BYTES message to the server (host 0,
 * 10.0.0.1, context 0) as soon as it boots, waits for the reply, reads it
 * and exits. The server is `loopback` (it echoes the message back).
 */
#include <nanopu.h>

#ifndef SERVER_IP
#define SERVER_IP 0x0a000001u
#endif
#ifndef MSG_BYTES
#define MSG_BYTES 1024
#endif

int main(void)
{
    lnic_add_context(0, 0);
    lnic_write_r(lnic_hdr(SERVER_IP, 0, MSG_BYTES));
    for (uint64_t i = 0; i < MSG_BYTES / 8; i++)
        lnic_write_r(i);
    lnic_wait();
    uint64_t hdr = lnic_read();
    uint64_t sum = 0;
    for (uint32_t n = lnic_hdr_words(hdr); n > 0; n--)
        sum += lnic_read();
    lnic_msg_done();
    /* The echo carries 0 + 1 + ... + 127. */
    return sum == (MSG_BYTES / 8) * (MSG_BYTES / 8 - 1) / 2 ? 0 : 1;
}
