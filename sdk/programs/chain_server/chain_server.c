/*
 * chain_server: one replica of a chain-replicated key-value store (van
 * Renesse and Schneider, OSDI'04; nanoPU Table 1 "Chain Repl."): writes
 * enter at the head and are applied by every replica on their way to the
 * tail, which acknowledges them to the client; reads are served by the tail.
 * The state machine is kv_table.h (16 B keys, 64 B values).
 *
 * Arguments: own IPv4 address, then the chain's addresses head first
 * (replica.h). Message formats: README.md in this directory.
 * Never exits: it is driven by the simulator's NIC (exit 2 on bad arguments).
 */
#include <nanopu.h>
#include <kv_table.h>
#include <replica.h>
#include <stdio.h>

#define REQ_WRITE_WORDS (4 + KV_VALUE_WORDS) /* id, op, k0, k1, value */
#define REQ_READ_WORDS 4
#define FWD_WORDS (1 + REQ_WRITE_WORDS)     /* client header, then the request */

static struct kv_table table;

static void drain(uint32_t left)
{
    for (; left > 0; left--)
        (void)lnic_read();
}

static void reply2(uint64_t to_hdr, uint64_t id, uint64_t status)
{
    lnic_write_r(lnic_reply_hdr(to_hdr, 16));
    lnic_write_r(id);
    lnic_write_r(status);
}

/* "Ask replica ip instead." */
static void reply_wrong_node(uint64_t to_hdr, uint64_t id, uint32_t ip)
{
    lnic_write_r(lnic_reply_hdr(to_hdr, 24));
    lnic_write_r(id);
    lnic_write_i(KV_WRONG_NODE);
    lnic_write_r(ip);
}

int main(int argc, char **argv)
{
    uint32_t ips[REPLICA_MAX];
    int self;
    int n = replica_args(argc, argv, ips, &self);
    if (n == 0) {
        printf("chain_server: arguments: OWN_IP HEAD_IP [MIDDLE_IP...] TAIL_IP\n");
        return 2;
    }
    int head = self == 0, tail = self == n - 1;
    uint32_t pred = head ? 0 : ips[self - 1];
    uint64_t next_hdr = tail ? 0 : lnic_hdr(ips[self + 1], 0, FWD_WORDS * 8);

    lnic_add_context(0, 0);
    lnic_boot();
    for (;;) {
        lnic_wait();
        uint64_t hdr = lnic_read();
        uint32_t words = lnic_hdr_words(hdr);
        uint64_t client;
        if (!head && lnic_hdr_ip(hdr) == pred) {
            /* A write on its way down the chain: client header first. */
            if (words != FWD_WORDS) {
                drain(words);
                lnic_msg_done();
                continue;
            }
            client = lnic_read();
            words--;
        } else {
            client = hdr;
        }
        if (words < 2) {
            uint64_t id = words ? lnic_read() : 0;
            reply2(client, id, KV_MALFORMED);
            lnic_msg_done();
            continue;
        }
        uint64_t id = lnic_read();
        uint64_t op = lnic_read();
        if (op == KV_OP_WRITE && words == REQ_WRITE_WORDS) {
            if (client == hdr && !head) {
                drain(words - 2);
                reply_wrong_node(client, id, ips[0]);
                lnic_msg_done();
                continue;
            }
            uint64_t k0 = lnic_read(), k1 = lnic_read();
            struct kv_slot *s = kv_slot(&table, k0, k1, 1);
            if (!tail) {
                lnic_write_r(next_hdr);
                lnic_write_r(client);
                lnic_write_r(id);
                lnic_write_r(op);
                lnic_write_r(k0);
                lnic_write_r(k1);
            }
            for (int i = 0; i < KV_VALUE_WORDS; i++) {
                uint64_t v = lnic_read();
                if (s)
                    s->value[i] = v;
                if (!tail)
                    lnic_write_r(v);
            }
            if (tail)
                reply2(client, id, s ? KV_OK : KV_FULL);
        } else if (op == KV_OP_READ && words == REQ_READ_WORDS && client == hdr) {
            uint64_t k0 = lnic_read(), k1 = lnic_read();
            if (!tail) {
                reply_wrong_node(client, id, ips[n - 1]);
            } else {
                struct kv_slot *s = kv_slot(&table, k0, k1, 0);
                if (!s) {
                    reply2(client, id, KV_NOT_FOUND);
                } else {
                    lnic_write_r(lnic_reply_hdr(client, 16 + 8 * KV_VALUE_WORDS));
                    lnic_write_r(id);
                    lnic_write_i(KV_OK);
                    for (int i = 0; i < KV_VALUE_WORDS; i++)
                        lnic_write_r(s->value[i]);
                }
            }
        } else {
            drain(words - 2);
            reply2(client, id, KV_MALFORMED);
        }
        lnic_msg_done();
    }
}
