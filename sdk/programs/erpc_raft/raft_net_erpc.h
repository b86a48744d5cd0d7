/*
 * raft_net_erpc.h: raft.c's messaging layer (see ../raft/raft_net.h for
 * the operations) over eRPC (erpc.h) on the traditional NIC. Raft's
 * messages map onto RPCs as in eRPC §7.1 (LibRaft's send callbacks):
 * AppendEntries and RequestVote are requests on a client session to each
 * peer, their answers (MSG_APPENDED, MSG_VOTE) are the responses, and a
 * client's request is answered once its entry commits (a deferred
 * response, eRPC §3.1). A message is built straight into a msgbuf (a
 * request's own, or the slot's preallocated response buffer) and read
 * where the NIC wrote it.
 */
#ifndef RAFT_NET_ERPC_H
#define RAFT_NET_ERPC_H

#include <erpc.h>
#include <stdint.h>

/* The cursors raft.c's words go through. */
extern const uint64_t *raft_rx_ptr;
extern uint64_t *raft_tx_ptr;

static inline uint64_t net_rx(void) { return *raft_rx_ptr++; }
#define net_tx(w) (*raft_tx_ptr++ = (uint64_t)(w))
#define net_tx_i(c) net_tx(c)

void net_request(int p, uint32_t words);
void net_reply_peer(int p, uint32_t words);
void net_reply(uint64_t client, uint32_t bytes);
void net_end(void);

#endif
