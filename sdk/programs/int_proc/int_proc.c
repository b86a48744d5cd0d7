/*
 * int_proc: in-band network telemetry processing on a nanoPU node (nanoPU
 * paper Table 1, "INT Processing"). Our own code. A request is an INT
 * report: the path it took and, per hop, the switch, its queue depth and
 * the hop latency. The program keeps each path's latency (an exponentially
 * weighted moving average of the path's total) and each switch's
 * accumulated queue depth (a heavy-hitter counter), and replies with an
 * alert when a path's average crosses the latency threshold or a switch's
 * counter reaches the heavy-hitter threshold, else with an ack. The state
 * is the program's: hart 0 alone serves context 0, in arrival order (the
 * oracle, crates/apps/src/int_proc.rs, replays the same state machine in
 * send order). Message format: README.md.
 */
#include <nanopu.h>
#include <nanopu_rt.h>

#define INT_PATHS 256
#define INT_SWITCHES 64
#define INT_MAX_HOPS 8
#define INT_LATENCY_THRESHOLD_NS 3000
#define INT_HEAVY_QUEUE 1000
#define INT_ACK 0
#define INT_ALERT 1
#define INT_MALFORMED 2
#define INT_ALERT_LATENCY 1
#define INT_ALERT_HEAVY 2
#define INT_NO_SWITCH 0xffff

static uint64_t path_latency[INT_PATHS];   /* EWMA of the path's total, ns */
static uint64_t switch_queue[INT_SWITCHES]; /* queue depth accumulated since the last alert */

static inline void reply_status(uint64_t hdr, uint64_t tag, uint64_t status)
{
    lnic_write_r(lnic_reply_hdr(hdr, 16));
    lnic_write_r(tag);
    lnic_write_r(status);
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    uint64_t path = words > 1 ? lnic_read() : INT_PATHS;
    uint64_t n = words > 2 ? lnic_read() : 0;
    uint32_t rest = words > 3 ? words - 3 : 0;
    if (words < 4 || path >= INT_PATHS || n == 0 || n > INT_MAX_HOPS || rest != n ||
        lnic_hdr_len(hdr) != 8 * words) {
        while (rest--)
            (void)lnic_read();
        reply_status(hdr, tag, INT_MALFORMED);
        return;
    }
    /* Validate every hop before changing any state: a bad report changes nothing. */
    uint64_t hops[INT_MAX_HOPS];
    uint64_t total = 0;
    int ok = 1;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t h = lnic_read();
        hops[i] = h;
        ok &= (h & 0xffff) < INT_SWITCHES;
        total += h >> 32;
    }
    if (!ok) {
        reply_status(hdr, tag, INT_MALFORMED);
        return;
    }
    uint64_t flags = 0, heavy = INT_NO_SWITCH;
    uint64_t old = path_latency[path];
    uint64_t avg = (7 * old + total) >> 3;
    path_latency[path] = avg;
    if (old <= INT_LATENCY_THRESHOLD_NS && avg > INT_LATENCY_THRESHOLD_NS)
        flags |= INT_ALERT_LATENCY;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = hops[i] & 0xffff;
        uint64_t q = switch_queue[s] + ((hops[i] >> 16) & 0xffff);
        if (q >= INT_HEAVY_QUEUE) {
            q = 0;
            if (!(flags & INT_ALERT_HEAVY)) {
                flags |= INT_ALERT_HEAVY;
                heavy = s;
            }
        }
        switch_queue[s] = q;
    }
    if (flags == 0) {
        reply_status(hdr, tag, INT_ACK);
        return;
    }
    lnic_write_r(lnic_reply_hdr(hdr, 40));
    lnic_write_r(tag);
    lnic_write_i(INT_ALERT);
    lnic_write_r(flags);
    lnic_write_r(avg);
    lnic_write_r(heavy);
}

int main(void)
{
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        serve_one();
        lnic_msg_done();
    }
    return 0;
}
