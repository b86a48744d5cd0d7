/*
 * lnic_eval: a server with the nanoPU prototype's evaluation interface
 * (the FireSim runs of nanoPU §5.2.2-5.2.3), written for this SDK.
 *
 *   lnic_eval MAC IP TEST_TYPE STALL_FACTOR STALL_FREQ
 *
 * MAC is accepted and ignored (the simulated NIC has its own). The program
 * serves only if IP is 10.0.0.2 (the prototype's node); otherwise it says so
 * and parks. TEST_TYPE is one of
 *   ONE_CONTEXT_FOUR_CORES          every core: context 0, priority 0
 *   FOUR_CONTEXTS_FOUR_CORES        core c: context c, priority 0
 *   TWO_CONTEXTS_FOUR_SHARED_CORES  every core: context 0 (priority 0) and
 *                                   context 1 (priority 1), HTS
 *   DIF_PRIORITY_LNIC_DRIVEN        core 0: contexts 0 (prio 0), 1 (prio 1), HTS
 *   DIF_PRIORITY_TIMER_DRIVEN       the same, a 5 us timer interrupt (TIS)
 *   HIGH_PRIORITY_C1_STALL          core 0: contexts 0 and 1 at priority 0, HTS
 *   LOW_PRIORITY_C1_STALL           core 0: contexts 0 and 1 at priority 1, HTS
 * In the two STALL types, context 1 multiplies the service time of one
 * request in STALL_FREQ + 1 by STALL_FACTOR.
 *
 * Every serving thread is announced by a start-up message [core, context]
 * (16 B) to context 0 of the load generator at 10.0.0.1. A request must come
 * from 10.0.0.1 and be 16 B: [service_cycles, sent_time]; the thread waits
 * until mcycle has advanced by service_cycles (wall time: a preempted thread
 * is charged the time it was off the core, as on the prototype) and answers
 * [service_cycles, sent_time] to the sender. A service time of 0 ends the
 * program (exit code 0).
 */
#include <nanokernel.h>
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_IP 0x0a000002u
#define LOAD_GEN_IP 0x0a000001u
#define REQUEST_BYTES 16

enum test_type {
    ONE_CONTEXT_FOUR_CORES,
    FOUR_CONTEXTS_FOUR_CORES,
    TWO_CONTEXTS_FOUR_SHARED_CORES,
    DIF_PRIORITY_LNIC_DRIVEN,
    DIF_PRIORITY_TIMER_DRIVEN,
    HIGH_PRIORITY_C1_STALL,
    LOW_PRIORITY_C1_STALL,
    TEST_TYPES
};

static const char *const test_names[TEST_TYPES] = {
    "ONE_CONTEXT_FOUR_CORES",   "FOUR_CONTEXTS_FOUR_CORES", "TWO_CONTEXTS_FOUR_SHARED_CORES",
    "DIF_PRIORITY_LNIC_DRIVEN", "DIF_PRIORITY_TIMER_DRIVEN", "HIGH_PRIORITY_C1_STALL",
    "LOW_PRIORITY_C1_STALL",
};

/* Set by hart 0 before `ready`; read by every hart after it. */
static volatile int ready;
static enum test_type test;
static uint64_t stall_factor, stall_freq;

static uint64_t stacks[NCORES][2][1024] __attribute__((aligned(16)));

struct thread_arg {
    uint16_t context;
    int stalls;
};
static struct thread_arg thread_args[NCORES][2];

/* Dotted quad to a host-order address; 0 if malformed. */
static uint32_t parse_ipv4(const char *s)
{
    uint32_t ip = 0;
    for (int part = 0; part < 4; part++) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v > 255 || (part < 3 && *end != '.') || (part == 3 && *end != '\0'))
            return 0;
        ip = (ip << 8) | (uint32_t)v;
        s = end + 1;
    }
    return ip;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    *out = strtoul(s, &end, 10);
    return end != s && *end == '\0';
}

/* The start-up message of the thread serving `context` on `core`. */
static void announce(int core, uint16_t context)
{
    lnic_write_r(lnic_hdr(LOAD_GEN_IP, 0, REQUEST_BYTES));
    lnic_write_r((uint64_t)core);
    lnic_write_r((uint64_t)context);
}

/* Serves the running context's requests; `stalls`: context 1's stall rule. */
static void serve(int stalls)
{
    uint64_t since_stall = 0;
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        if (lnic_hdr_ip(hdr) != LOAD_GEN_IP) {
            printf("lnic_eval: request from %lx, not the load generator\n",
                   (unsigned long)lnic_hdr_ip(hdr));
            exit(2);
        }
        if (lnic_hdr_len(hdr) != REQUEST_BYTES) {
            printf("lnic_eval: request of %u bytes, expected %u\n", lnic_hdr_len(hdr), REQUEST_BYTES);
            exit(2);
        }
        uint64_t service = lnic_read();
        uint64_t sent = lnic_read();
        if (service == 0)
            exit(0);
        if (stalls) {
            if (since_stall >= stall_freq) {
                since_stall = 0;
                service *= stall_factor;
            } else {
                since_stall++;
            }
        }
        uint64_t start = read_csr(mcycle);
        while (read_csr(mcycle) - start < service)
            ;
        lnic_write_r(hdr);
        lnic_write_r(service);
        lnic_write_r(sent);
        lnic_msg_done();
    }
}

static void thread_main(void *p)
{
    struct thread_arg *a = p;
    serve(a->stalls);
}

static void __attribute__((noreturn)) park(void)
{
    for (;;)
        __asm__ volatile ("wfi");
}

/* Two nanokernel threads on this core, contexts 0 and 1. The start-up
 * messages are sent before the scheduler starts: under the timer baseline a
 * thread runs only once a message is waiting for it. */
static void __attribute__((noreturn)) two_threads(int core, uint8_t prio0, uint8_t prio1, int c1_stalls, int timer)
{
    thread_args[core][0] = (struct thread_arg){ .context = 0, .stalls = 0 };
    thread_args[core][1] = (struct thread_arg){ .context = 1, .stalls = c1_stalls };
    if (nk_thread_create(0, prio0, thread_main, &thread_args[core][0], NK_STACK_TOP(stacks[core][0])) < 0 ||
        nk_thread_create(1, prio1, thread_main, &thread_args[core][1], NK_STACK_TOP(stacks[core][1])) < 0) {
        printf("lnic_eval: cannot create threads on core %d\n", core);
        exit(3);
    }
    announce(core, 0);
    announce(core, 1);
    if (timer)
        nk_start_timer(5);
    nk_start();
}

static void __attribute__((noreturn)) run_core(int core)
{
    switch (test) {
    case ONE_CONTEXT_FOUR_CORES:
        lnic_add_context(0, 0);
        announce(core, 0);
        serve(0);
        break;
    case FOUR_CONTEXTS_FOUR_CORES:
        lnic_add_context(core, 0);
        announce(core, (uint16_t)core);
        serve(0);
        break;
    case TWO_CONTEXTS_FOUR_SHARED_CORES:
        two_threads(core, 0, 1, 0, 0);
    case DIF_PRIORITY_LNIC_DRIVEN:
        if (core == 0)
            two_threads(core, 0, 1, 0, 0);
        break;
    case DIF_PRIORITY_TIMER_DRIVEN:
        if (core == 0)
            two_threads(core, 0, 1, 0, 1);
        break;
    case HIGH_PRIORITY_C1_STALL:
        if (core == 0)
            two_threads(core, 0, 0, 1, 0);
        break;
    case LOW_PRIORITY_C1_STALL:
        if (core == 0)
            two_threads(core, 1, 1, 1, 0);
        break;
    default:
        break;
    }
    park();
}

void thread_entry(int cid, int nc)
{
    (void)nc;
    while (!ready)
        ;
    if (ready > 0)
        run_core(cid);
}

int main(int argc, char **argv)
{
    int nc = nanopu_ncores;
    if (argc != 6) {
        printf("usage: lnic_eval MAC IP TEST_TYPE STALL_FACTOR STALL_FREQ\n");
        ready = -1;
        return 1;
    }
    uint32_t ip = parse_ipv4(argv[2]);
    if (ip == 0) {
        printf("lnic_eval: invalid IP address %s\n", argv[2]);
        ready = -1;
        return 1;
    }
    test = TEST_TYPES;
    for (int t = 0; t < TEST_TYPES; t++)
        if (strcmp(argv[3], test_names[t]) == 0)
            test = (enum test_type)t;
    if (test == TEST_TYPES) {
        printf("lnic_eval: unknown test type %s\n", argv[3]);
        ready = -1;
        return 1;
    }
    if (!parse_u64(argv[4], &stall_factor) || !parse_u64(argv[5], &stall_freq)) {
        printf("lnic_eval: stall factor and frequency must be numbers\n");
        ready = -1;
        return 1;
    }
    int four_cores = test == ONE_CONTEXT_FOUR_CORES || test == FOUR_CONTEXTS_FOUR_CORES ||
                     test == TWO_CONTEXTS_FOUR_SHARED_CORES;
    if (four_cores && nc < 4) {
        printf("lnic_eval: %s needs 4 cores, the node has %d\n", test_names[test], nc);
        ready = -1;
        return 1;
    }
    if (ip != NODE_IP) {
        printf("lnic_eval: %s is not the root node (10.0.0.2), not used in this test\n", argv[2]);
        ready = -1;
        park();
    }
    printf("lnic_eval: root node running test type %s\n", test_names[test]);
    ready = 1;
    run_core(0);
}
