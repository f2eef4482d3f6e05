/*
 * heartbeat.c - the heartbeat thread of heartbeat.h: UDP datagrams between the ranks,
 * written by hand because no Debian library does this small a job (a failure
 * detector outside MPI; Open MPI 4.1's ULFM is not in Debian's build).
 */
#include "dist/heartbeat.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HB_MAGIC 0x7669676c68623031ull /* "viglhb01" */

typedef struct hb_msg {
    uint64_t magic, nonce;
    int32_t rank;
    uint32_t pad;
} hb_msg;

static struct {
    int fd;
    bool prepared, running;
    volatile bool stop;
    pthread_t thread;
    int rank, size;
    uint64_t nonce;
    int64_t timeout_ns, period_ns, start_ns;
    vg__hb_entry *peers;       /* size entries */
    _Atomic int64_t *last;     /* size entries: vg__now_ns of the last datagram, 0 = none */
} H = {.fd = -1};

static uint64_t fresh_nonce(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 12) ^
                 (uint64_t)(uintptr_t)&ts;
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
    return x ? x : 1;
}

bool vg__hb_prepare(int64_t timeout_ms, vg__hb_entry *me) {
    memset(me, 0, sizeof *me);
    if (timeout_ms <= 0) return false;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return false;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        close(fd);
        return false;
    }
    struct ifaddrs *ifs = NULL;
    uint32_t loop = 0;
    bool have_loop = false;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && me->naddrs < VG__HB_MAX_ADDRS; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
            uint32_t ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
            if (i->ifa_flags & IFF_LOOPBACK) {
                loop = ip, have_loop = true; /* last: other hosts' loopback is not theirs */
                continue;
            }
            me->addrs[me->naddrs++] = ip;
        }
        freeifaddrs(ifs);
    }
    if (have_loop && me->naddrs < VG__HB_MAX_ADDRS) me->addrs[me->naddrs++] = loop;
    if (!me->naddrs) me->addrs[me->naddrs++] = htonl(INADDR_LOOPBACK);
    me->port = a.sin_port;
    me->nonce = fresh_nonce();
    H.fd = fd;
    H.prepared = true;
    H.timeout_ns = timeout_ms * 1000000LL;
    /* a period of a tenth of the timeout (at most 1 s): a few lost datagrams do not
     * make a live peer look gone */
    H.period_ns = H.timeout_ns / 10;
    if (H.period_ns > 1000000000LL) H.period_ns = 1000000000LL;
    if (H.period_ns < 10000000LL) H.period_ns = 10000000LL;
    return true;
}

/* Whether this rank sends to and hears from peer. */
static bool talks_to(int peer) {
    if (peer < 0 || peer >= H.size || peer == H.rank) return false;
    if (H.size <= VG__HB_ALL_PEERS) return true;
    return peer == (H.rank + 1) % H.size || peer == (H.rank + H.size - 1) % H.size;
}

static void send_all(void) {
    hb_msg m = {HB_MAGIC, H.nonce, H.rank, 0};
    for (int p = 0; p < H.size; p++) {
        if (!talks_to(p)) continue;
        for (int k = 0; k < H.peers[p].naddrs; k++) {
            struct sockaddr_in a = {0};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = H.peers[p].addrs[k];
            a.sin_port = H.peers[p].port;
            /* best effort: a full socket buffer or an unreachable address is a lost beat */
            (void)sendto(H.fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, sizeof a);
        }
    }
}

static void drain(void) {
    for (;;) {
        hb_msg m;
        ssize_t n = recv(H.fd, &m, sizeof m, MSG_DONTWAIT);
        if (n < 0) return;
        if (n != (ssize_t)sizeof m || m.magic != HB_MAGIC || m.nonce != H.nonce || !talks_to(m.rank)) continue;
        atomic_store(&H.last[m.rank], vg__now_ns());
    }
}

static void *hb_main(void *arg) {
    (void)arg;
    int64_t next = vg__now_ns();
    while (!H.stop) {
        int64_t now = vg__now_ns();
        if (now >= next) {
            send_all();
            next = now + H.period_ns;
        }
        int64_t wait_ms = (next - now) / 1000000 + 1;
        if (wait_ms > 100) wait_ms = 100; /* H.stop is seen within 100 ms */
        struct pollfd pf = {H.fd, POLLIN, 0};
        if (poll(&pf, 1, (int)wait_ms) > 0) drain();
    }
    return NULL;
}

bool vg__hb_start(int rank, int size, const vg__hb_entry *all) {
    if (!H.prepared || size < 2 || !all) {
        vg__hb_stop();
        return false;
    }
    H.rank = rank;
    H.size = size;
    H.nonce = all[0].nonce;
    H.peers = vg__calloc((size_t)size, sizeof *H.peers);
    H.last = vg__calloc((size_t)size, sizeof *H.last);
    if (!H.peers || !H.last) {
        vg__hb_stop();
        return false;
    }
    memcpy(H.peers, all, sizeof *H.peers * (size_t)size);
    H.start_ns = vg__now_ns();
    H.stop = false;
    if (pthread_create(&H.thread, NULL, hb_main, NULL) != 0) {
        vg__hb_stop();
        return false;
    }
    H.running = true;
    return true;
}

void vg__hb_stop(void) {
    if (H.running) {
        H.stop = true;
        pthread_join(H.thread, NULL);
        H.running = false;
    }
    if (H.fd >= 0) close(H.fd);
    H.fd = -1;
    H.prepared = false;
    vg__free(H.peers);
    vg__free((void *)H.last);
    H.peers = NULL;
    H.last = NULL;
}

bool vg__hb_on(void) { return H.running; }

int64_t vg__hb_timeout_ns(void) { return H.running ? H.timeout_ns : 0; }

int64_t vg__hb_age_ns(int peer) {
    if (!H.running || !talks_to(peer)) return -1;
    int64_t t = atomic_load(&H.last[peer]);
    return vg__now_ns() - (t ? t : H.start_ns);
}

int vg__hb_first_stale(void) {
    if (!H.running) return -1;
    for (int p = 0; p < H.size; p++) {
        int64_t a = vg__hb_age_ns(p);
        if (a >= 0 && a > H.timeout_ns) return p;
    }
    return -1;
}
