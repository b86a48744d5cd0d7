/*
 * rdma_server: one-sided RDMA operations served in software by a nanoPU
 * core (nanoPU §4.1 and §5.3, Table 2): read, write, compare-and-swap,
 * fetch-and-add and indirect read on a memory region, straight out of netRX
 * and into netTX. Message format: README.md in this directory.
 *
 * The region's initial contents are a function of the word index (see
 * rdma_initial_word), so a client's model of the region (the Rust oracle,
 * crates/apps/src/rdma.rs) starts from the same state.
 * Never exits: it is driven by the simulator's NIC.
 */
#include <nanopu.h>

#define OP_READ 1
#define OP_WRITE 2
#define OP_CAS 3
#define OP_FAA 4
#define OP_INDIRECT_READ 5

#define STATUS_OK 0
#define STATUS_BAD_ADDRESS 1
#define STATUS_MALFORMED 2

#define REGION_WORDS 4096 /* 32 KB */
#define POINTER_WORDS 256 /* words 0..255 initially hold pointers */
#define MAX_WORDS 64      /* at most 512 bytes per read or write */

static uint64_t region[REGION_WORDS];

/* Word i of the region at start: a pointer (a byte offset into the data
 * words) for the first POINTER_WORDS words, a pattern elsewhere. */
static uint64_t rdma_initial_word(uint64_t i)
{
    if (i < POINTER_WORDS)
        return (POINTER_WORDS + (i * 97) % (REGION_WORDS - POINTER_WORDS - MAX_WORDS)) * 8;
    return i * 0x9E3779B97F4A7C15ULL;
}

/* Index of the first of n words at byte offset addr, or -1 if the range is
 * not n aligned words inside the region. */
static long word_index(uint64_t addr, uint64_t n)
{
    if (addr % 8 != 0 || n == 0 || n > MAX_WORDS)
        return -1;
    uint64_t i = addr / 8;
    if (i >= REGION_WORDS || n > REGION_WORDS - i)
        return -1;
    return (long)i;
}

/* Pops the words of the current message not read yet. */
static void drain(uint32_t left)
{
    for (; left > 0; left--)
        (void)lnic_read();
}

static void reply_status(uint64_t rx_hdr, uint64_t id, uint64_t status)
{
    lnic_write_r(lnic_reply_hdr(rx_hdr, 16));
    lnic_write_r(id);
    lnic_write_r(status);
}

int main(void)
{
    for (uint64_t i = 0; i < REGION_WORDS; i++)
        region[i] = rdma_initial_word(i);
    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        uint32_t words = lnic_hdr_words(hdr);
        if (words < 4) {
            uint64_t id = words > 0 ? lnic_read() : 0;
            drain(words > 0 ? words - 1 : 0);
            reply_status(hdr, id, STATUS_MALFORMED);
            lnic_msg_done();
            continue;
        }
        uint64_t id = lnic_read();
        uint64_t op = lnic_read();
        uint64_t addr = lnic_read();
        uint64_t arg = lnic_read();
        uint32_t left = words - 4;
        switch (op) {
        case OP_READ:
        case OP_INDIRECT_READ: {
            if (left != 0) {
                drain(left);
                reply_status(hdr, id, STATUS_MALFORMED);
                break;
            }
            long i = word_index(addr, 1);
            if (i >= 0 && op == OP_INDIRECT_READ)
                i = word_index(region[i], arg);
            else if (i >= 0)
                i = word_index(addr, arg);
            if (i < 0) {
                reply_status(hdr, id, STATUS_BAD_ADDRESS);
                break;
            }
            lnic_write_r(lnic_reply_hdr(hdr, (uint16_t)(16 + 8 * arg)));
            lnic_write_r(id);
            lnic_write_i(STATUS_OK);
            for (uint64_t k = 0; k < arg; k++)
                lnic_write_r(region[i + k]);
            break;
        }
        case OP_WRITE: {
            long i = word_index(addr, arg);
            if (left != arg || arg == 0) {
                drain(left);
                reply_status(hdr, id, STATUS_MALFORMED);
                break;
            }
            if (i < 0) {
                drain(left);
                reply_status(hdr, id, STATUS_BAD_ADDRESS);
                break;
            }
            for (uint64_t k = 0; k < arg; k++)
                region[i + k] = lnic_read();
            reply_status(hdr, id, STATUS_OK);
            break;
        }
        case OP_CAS: {
            if (left != 1) {
                drain(left);
                reply_status(hdr, id, STATUS_MALFORMED);
                break;
            }
            uint64_t desired = lnic_read();
            long i = word_index(addr, 1);
            if (i < 0) {
                reply_status(hdr, id, STATUS_BAD_ADDRESS);
                break;
            }
            uint64_t old = region[i];
            if (old == arg)
                region[i] = desired;
            lnic_write_r(lnic_reply_hdr(hdr, 24));
            lnic_write_r(id);
            lnic_write_i(STATUS_OK);
            lnic_write_r(old);
            break;
        }
        case OP_FAA: {
            if (left != 0) {
                drain(left);
                reply_status(hdr, id, STATUS_MALFORMED);
                break;
            }
            long i = word_index(addr, 1);
            if (i < 0) {
                reply_status(hdr, id, STATUS_BAD_ADDRESS);
                break;
            }
            uint64_t old = region[i];
            region[i] = old + arg;
            lnic_write_r(lnic_reply_hdr(hdr, 24));
            lnic_write_r(id);
            lnic_write_i(STATUS_OK);
            lnic_write_r(old);
            break;
        }
        default:
            drain(left);
            reply_status(hdr, id, STATUS_MALFORMED);
            break;
        }
        lnic_msg_done();
    }
}
