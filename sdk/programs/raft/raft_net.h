/*
 * raft_net.h: raft.c's messaging layer on the nanoPU: messages go word by
 * word through the register file (netRX x30, netTX x31). Every operation
 * is the lnic_* instruction raft.c used before the layer existed, so this
 * build's code is the same. The other layer is eRPC's
 * (../erpc_raft/raft_net_erpc.h), where these are msgbuf reads and writes.
 *
 *   net_rx()                  the next word of the message being handled
 *   net_tx(w), net_tx_i(c)    a word (c: a small constant) of the message
 *                             being built
 *   net_request(p, words)     starts a request to server p (AppendEntries,
 *                             RequestVote)
 *   net_reply_peer(p, words)  starts the answer to server p's request
 *   net_reply(client, bytes)  starts the answer to a client's request
 *                             (client: what on_client was given)
 *   net_end()                 the message is complete
 */
#ifndef RAFT_NET_H
#define RAFT_NET_H

#define net_rx() lnic_read()
#define net_tx(w) lnic_write_r(w)
#define net_tx_i(c) lnic_write_i(c)
#define net_request(p, words) lnic_write_r(peer_hdr(p, words))
#define net_reply_peer(p, words) lnic_write_r(peer_hdr(p, words))
#define net_reply(client, bytes) lnic_write_r(lnic_reply_hdr(client, bytes))
#define net_end() \
    do {          \
    } while (0)

#endif
