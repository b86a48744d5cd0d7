/*
 * replica.h: what the replicated key-value services (chain_server, raft)
 * share: the client's operations and status codes, and how a replica learns
 * its own address and its peers' from its arguments
 * (`args = ["{ip}", "10.0.0.1", "10.0.0.2", "10.0.0.3"]` in a [[programs]]
 * entry: its own IPv4 address, then every replica's, in order).
 */
#ifndef REPLICA_H
#define REPLICA_H

#include <stdint.h>

/* Client operations (word 1 of a request; word 0 is the request id). */
#define KV_OP_WRITE 1 /* id, 1, k0, k1, v[8]  -> id, OK */
#define KV_OP_READ 2  /* id, 2, k0, k1        -> id, OK, v[8] | id, NOT_FOUND */

/* Reply status (word 1 of a reply). */
#define KV_OK 0
#define KV_NOT_FOUND 1
#define KV_MALFORMED 2
#define KV_FULL 3
#define KV_WRONG_NODE 4 /* word 2: the replica to ask (its IPv4 address; 0: unknown) */

#define REPLICA_MAX 8

/* Parses a dotted IPv4 address; 0 if s is not one. */
static inline uint32_t replica_parse_ip(const char *s)
{
    uint32_t ip = 0;
    for (int part = 0; part < 4; part++) {
        uint32_t v = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9' && digits < 4) {
            v = v * 10 + (uint32_t)(*s++ - '0');
            digits++;
        }
        if (digits == 0 || v > 255)
            return 0;
        ip = (ip << 8) | v;
        if (part < 3 && *s++ != '.')
            return 0;
    }
    return *s == 0 ? ip : 0;
}

/* Reads argv = [name, own ip, replica ip...] into ips; returns the number
 * of replicas and sets *self to the own address's index, or returns 0 if
 * the arguments are not such a list. */
static inline int replica_args(int argc, char **argv, uint32_t ips[REPLICA_MAX], int *self)
{
    if (argc < 3 || argc - 2 > REPLICA_MAX)
        return 0;
    uint32_t me = replica_parse_ip(argv[1]);
    int n = argc - 2;
    *self = -1;
    for (int i = 0; i < n; i++) {
        ips[i] = replica_parse_ip(argv[2 + i]);
        if (ips[i] == 0)
            return 0;
        if (ips[i] == me)
            *self = i;
    }
    return *self >= 0 ? n : 0;
}

#endif /* REPLICA_H */
