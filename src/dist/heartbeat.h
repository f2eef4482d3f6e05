/*
 * heartbeat.h - liveness of the other ranks, apart from MPI (issue 33).
 *
 * A rank that waits on a peer cannot tell from MPI alone whether the peer is busy (the
 * chief checkpointing or evaluating while the others wait in a collective or in the
 * final barrier) or gone (its host killed, the link to it cut): TCP keeps retrying for
 * many minutes, and Open MPI 4.1 has no failure detector. So every rank runs a small
 * thread that sends a UDP datagram to its peers once a period and notes when it last
 * heard from each. A waiter then fails quickly (UNAVAILABLE naming the peer) when the
 * peer's heartbeats stop, and keeps waiting as long as they arrive, without a time
 * limit in the final barrier. The thread makes no MPI call, so a rank that is busy in
 * its own code, or inside a long MPI call, still answers for itself.
 *
 * The datagrams go to every IPv4 address of the peer's host that is up (a host may
 * have several, and which one reaches a peer is not known here); each carries the
 * job's nonce and the sender's rank, so a datagram that lands elsewhere is dropped.
 * Worlds of more than VG__HB_ALL_PEERS ranks send only to the ring neighbours (the
 * peers the ring collectives wait on); the age of other peers is then unknown (-1).
 *
 * The addresses are exchanged through MPI by the caller (comm.c): vg__hb_prepare
 * opens the socket and fills this rank's entry, the caller gathers every rank's entry,
 * vg__hb_start starts the thread. No MPI here.
 */
#ifndef VG_DIST_HEARTBEAT_H
#define VG_DIST_HEARTBEAT_H

#include "core/core.h"
#include <stdbool.h>
#include <stdint.h>

#define VG__HB_MAX_ADDRS 8
#define VG__HB_ALL_PEERS 256

/* One rank's entry in the exchange (plain bytes: the same layout on every rank). */
typedef struct vg__hb_entry {
    uint64_t nonce;                     /* rank 0's entry: the job's */
    uint32_t addrs[VG__HB_MAX_ADDRS];   /* IPv4, network order */
    uint16_t port;                      /* network order */
    uint16_t naddrs;
    uint32_t pad;
} vg__hb_entry;

/* Opens this rank's UDP socket and fills *me (its addresses, its port, a nonce).
 * timeout_ms: a peer silent this long counts as gone (0: heartbeats off; then this
 * does nothing and returns false). false when the socket cannot be made (the waits
 * then use the collective timeout alone). */
VG_HIDDEN bool vg__hb_prepare(int64_t timeout_ms, vg__hb_entry *me);
/* Starts the thread with every rank's entry (size entries, borrowed); rank 0's nonce
 * is the job's. false (and heartbeats off) if it cannot start. */
VG_HIDDEN bool vg__hb_start(int rank, int size, const vg__hb_entry *all);
/* Stops the thread, closes the socket. Safe when not started. */
VG_HIDDEN void vg__hb_stop(void);
/* Whether heartbeats run. */
VG_HIDDEN bool vg__hb_on(void);
/* Nanoseconds since the last heartbeat from peer (since the start if none came yet);
 * -1 when heartbeats are off or the peer is not one this rank hears from. */
VG_HIDDEN int64_t vg__hb_age_ns(int peer);
/* The timeout in nanoseconds (0: off). */
VG_HIDDEN int64_t vg__hb_timeout_ns(void);
/* The first peer (in [0, size), not this rank) whose heartbeats are older than the
 * timeout, or -1: for waits on every rank (a barrier). */
VG_HIDDEN int vg__hb_first_stale(void);

#endif
