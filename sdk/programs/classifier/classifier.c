/*
 * classifier: 5-tuple packet classification on a nanoPU node (nanoPU paper
 * Table 1, "Packet Classifier", 100K rules). Our own code. Hart 0 generates
 * a ClassBench-style rule set at start (the generator below; the oracle,
 * crates/apps/src/classifier.rs, generates the same rules and classifies by
 * linear scan) and indexes it for tuple-space search: one hash table over
 * (prefix-length pair, source prefix, destination prefix), chains in rule
 * order. A request is a packet header; the reply is the id of the first
 * (highest-priority, lowest-numbered) matching rule. Every core serves
 * context 0. Message format: README.md.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>

#ifndef CLS_RULES
#define CLS_RULES 100000
#endif
#define CLS_BUCKETS (1u << 18)
#define CLS_NONE 0xffffffffu
#define CLS_OK 0
#define CLS_MALFORMED 2
#define CLS_PROTO_ANY 0xff

struct rule {
    uint32_t src, dst;
    uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
    uint8_t src_len, dst_len, proto, tuple;
    uint32_t next; /* the next rule of the same bucket, in rule order */
};

static struct rule rules[CLS_RULES];
static uint32_t bucket_head[CLS_BUCKETS];

/* The prefix lengths the generator draws and their weights (of 256). */
static const uint8_t prefix_lens[5] = {32, 24, 16, 8, 0};
static const uint8_t prefix_cumulative[5] = {90, 180, 230, 250, 255};
/* Destination ports of exact-port rules. */
static const uint16_t common_ports[32] = {
    20, 21, 22, 23, 25, 53, 67, 69, 80, 110, 123, 137, 143, 161, 179, 389,
    443, 445, 465, 514, 587, 636, 993, 995, 1433, 1521, 3306, 3389, 5060, 5432, 8080, 8443,
};

static inline uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

static inline unsigned prefix_index(unsigned byte)
{
    unsigned i = 0;
    while (i < 4 && byte >= prefix_cumulative[i])
        i++;
    return i;
}

static inline uint32_t prefix_mask(unsigned len)
{
    return len == 0 ? 0 : 0xffffffffu << (32 - len);
}

static inline uint32_t bucket_of(unsigned tuple, uint32_t src, uint32_t dst)
{
    uint64_t h = splitmix64(((uint64_t)tuple << 56) ^ ((uint64_t)src << 24) ^ dst);
    return (uint32_t)h & (CLS_BUCKETS - 1);
}

/* Rule r of the generator (the oracle's `Rule::generate`). */
static void generate(uint32_t r, struct rule *out)
{
    uint64_t h0 = splitmix64(4 * (uint64_t)r), h1 = splitmix64(4 * (uint64_t)r + 1);
    uint64_t h2 = splitmix64(4 * (uint64_t)r + 2);
    unsigned si = prefix_index(h0 & 0xff), di = prefix_index((h0 >> 8) & 0xff);
    out->src_len = prefix_lens[si];
    out->dst_len = prefix_lens[di];
    out->tuple = (uint8_t)(si * 5 + di);
    out->src = (uint32_t)h1 & prefix_mask(out->src_len);
    out->dst = (uint32_t)(h1 >> 32) & prefix_mask(out->dst_len);
    unsigned p = (h0 >> 16) & 0xff;
    out->proto = p < 128 ? 6 : p < 224 ? 17 : CLS_PROTO_ANY;
    unsigned sp = (h0 >> 24) & 0xff;
    out->sport_lo = sp < 192 ? 0 : sp < 224 ? 0 : 1024;
    out->sport_hi = sp < 192 ? 65535 : sp < 224 ? 1023 : 65535;
    unsigned dp = (h0 >> 32) & 0xff;
    if (dp < 128) {
        out->dport_lo = out->dport_hi = common_ports[h2 % 32];
    } else if (dp < 176) {
        out->dport_lo = 1024;
        out->dport_hi = 65535;
    } else if (dp < 208) {
        out->dport_lo = 0;
        out->dport_hi = 1023;
    } else {
        out->dport_lo = 0;
        out->dport_hi = 65535;
    }
}

static void build(void)
{
    for (uint32_t b = 0; b < CLS_BUCKETS; b++)
        bucket_head[b] = CLS_NONE;
    /* Inserting the last rule first leaves every chain in rule order. */
    for (uint32_t r = CLS_RULES; r-- > 0;) {
        struct rule *x = &rules[r];
        generate(r, x);
        uint32_t b = bucket_of(x->tuple, x->src, x->dst);
        x->next = bucket_head[b];
        bucket_head[b] = r;
    }
}

static inline int matches(const struct rule *x, unsigned tuple, uint32_t src, uint32_t dst,
                          unsigned sport, unsigned dport, unsigned proto)
{
    return x->tuple == tuple && x->src == (src & prefix_mask(x->src_len)) &&
           x->dst == (dst & prefix_mask(x->dst_len)) &&
           (x->proto == CLS_PROTO_ANY || x->proto == proto) && sport >= x->sport_lo &&
           sport <= x->sport_hi && dport >= x->dport_lo && dport <= x->dport_hi;
}

/* Tuple-space search: probe each of the 25 prefix-length pairs; a chain is
 * in rule order, so its first match is its best, and a chain is left as
 * soon as its rules cannot beat the best so far. */
static uint32_t classify(uint32_t src, uint32_t dst, unsigned sport, unsigned dport,
                         unsigned proto)
{
    uint32_t best = CLS_NONE;
    for (unsigned si = 0; si < 5; si++) {
        uint32_t s = src & prefix_mask(prefix_lens[si]);
        for (unsigned di = 0; di < 5; di++) {
            unsigned tuple = si * 5 + di;
            uint32_t d = dst & prefix_mask(prefix_lens[di]);
            for (uint32_t r = bucket_head[bucket_of(tuple, s, d)]; r < best; r = rules[r].next)
                if (matches(&rules[r], tuple, src, dst, sport, dport, proto)) {
                    best = r;
                    break;
                }
        }
    }
    return best;
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    if (words != 3 || lnic_hdr_len(hdr) != 24) {
        for (uint32_t i = 1; i < words; i++)
            (void)lnic_read();
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(CLS_MALFORMED);
        return;
    }
    uint64_t ips = lnic_read();
    uint64_t ports = lnic_read();
    if (ports >> 40) {
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(CLS_MALFORMED);
        return;
    }
    uint32_t r = classify((uint32_t)ips, (uint32_t)(ips >> 32), ports & 0xffff,
                          (ports >> 16) & 0xffff, (ports >> 32) & 0xff);
    lnic_write_r(lnic_reply_hdr(hdr, 24));
    lnic_write_r(tag);
    lnic_write_i(CLS_OK);
    lnic_write_r((uint64_t)r);
}

NANOPU_RPC_SERVER(build, serve_one)
