/*
 * service.h - the request loop of the service-time servers (programs
 * service, service_hts, service_tis, service_bounded, service_unbounded).
 *
 * A request is [number, cycles]: the thread works for `cycles` of its own
 * CPU time (a two-instruction loop, two cycles an iteration on the Rocket
 * model, so a preempted thread resumes its work instead of counting the time
 * it was off the core), then answers [number, cycles] to the sender.
 */
#ifndef NANOPU_SERVICE_H
#define NANOPU_SERVICE_H

#include <nanopu.h>

static inline void service_spin(uint64_t cycles)
{
    uint64_t n = cycles / 2;
    if (n)
        __asm__ volatile ("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(n));
}

/* Serves the message at the head of netRX (lnic_wait() has returned). */
static inline void service_one(void)
{
    uint64_t hdr = lnic_read();
    uint64_t number = lnic_read();
    uint64_t cycles = lnic_read();
    for (uint32_t n = lnic_hdr_words(hdr); n > 2; n--)
        (void)lnic_read();
    service_spin(cycles);
    lnic_write_r(lnic_reply_hdr(hdr, 16));
    lnic_write_r(number);
    lnic_write_r(cycles);
    lnic_msg_done();
}

/* A nanokernel thread serving its context forever. */
static inline void service_thread(void *arg)
{
    (void)arg;
    for (;;) {
        lnic_wait();
        service_one();
    }
}

#endif
