/*
 * dir_lock.c - one trainer per checkpoint directory (a vigil guard; TF has none): an
 * exclusive, non-blocking flock on the directory itself, held by the chief session
 * creator (and so by MonitoredTrainingSession and SingularMonitoredSession) from its
 * construction until it is destroyed, and by `vigil train` for its whole run. The
 * holder's pid goes to "<dir>/.vigil-train.pid", read only to name the holder in the
 * error. The kernel drops the lock when the holder dies, so a killed trainer never
 * leaves a stale lock.
 */
#include "vigil/monitored.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PID_FILE ".vigil-train.pid"

struct vg_dir_lock {
    int fd;
    char *pidfile;
};

static vg_code errno_code(int e) {
    return e == EACCES || e == EPERM ? VG_PERMISSION_DENIED
           : e == ENOENT             ? VG_NOT_FOUND
           : e == ENOSPC || e == ENOMEM ? VG_RESOURCE_EXHAUSTED
                                     : VG_FAILED_PRECONDITION;
}

/* mkdir -p dir (0755). */
static vg_code make_dirs(const char *dir, vg_status *st) {
    char p[4096];
    int n = snprintf(p, sizeof p, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof p)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "bad checkpoint directory name '%s'", dir);
    for (char *q = p + 1;; q++) {
        bool end = *q == 0;
        if (*q == '/' || end) {
            *q = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                int e = errno;
                return vg_status_set(st, errno_code(e), "cannot create directory %s: %s", p, strerror(e));
            }
            if (end) break;
            *q = '/';
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return vg_status_set(st, VG_FAILED_PRECONDITION, "%s is not a directory", dir);
    return VG_OK;
}

vg_dir_lock *vg_checkpoint_dir_lock_acquire(const char *dir, vg_status *st) {
    if (!dir || !*dir) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint directory lock: no directory given");
        return NULL;
    }
    if (make_dirs(dir, st) != VG_OK) return NULL;
    size_t plen = strlen(dir) + sizeof PID_FILE + 2;
    vg_dir_lock *l = vg_calloc(1, sizeof *l);
    char *pidfile = vg_malloc(plen);
    if (!l || !pidfile) {
        vg_free(l);
        vg_free(pidfile);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory locking checkpoint directory %s", dir);
        return NULL;
    }
    snprintf(pidfile, plen, "%s/%s", dir, PID_FILE);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        vg_status_set(st, errno_code(e), "cannot open checkpoint directory %s: %s", dir, strerror(e));
        vg_free(pidfile);
        vg_free(l);
        return NULL;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "unknown";
        int pf = openat(fd, PID_FILE, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (pf >= 0) {
            ssize_t k = read(pf, holder, sizeof holder - 1);
            holder[k > 0 ? k : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            if (!holder[0]) strcpy(holder, "unknown");
            close(pf);
        }
        close(fd);
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        if (e == EWOULDBLOCK)
            vg_status_set(st, VG_FAILED_PRECONDITION,
                          "checkpoint directory %s is locked by another vigil trainer (pid %s%s)", dir, holder,
                          strcmp(holder, pid) == 0 ? ", this process" : "");
        else
            vg_status_set(st, VG_UNAVAILABLE, "cannot lock checkpoint directory %s: %s", dir, strerror(e));
        vg_free(pidfile);
        vg_free(l);
        return NULL;
    }
    /* written in place (no temporary a kill could leave behind); read only for messages.
     * Whatever holds the name (a stale pid file, or a symlink or hard link planted there)
     * is removed first and a new file created (O_EXCL | O_NOFOLLOW), relative to the
     * locked directory: a file elsewhere is never truncated or written through it. */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    unlinkat(fd, PID_FILE, 0);
    int pf = openat(fd, PID_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (pf < 0 || write(pf, pid, (size_t)n) != n) vg_logf(VG_LOG_WARN, "cannot record the lock holder in %s", pidfile);
    if (pf >= 0) close(pf);
    l->fd = fd;
    l->pidfile = pidfile;
    vg_status_clear(st);
    return l;
}

void vg_checkpoint_dir_lock_release(vg_dir_lock *l) {
    if (!l) return;
    unlinkat(l->fd, PID_FILE, 0); /* still holding the lock: no other holder can have written it */
    close(l->fd);
    vg_free(l->pidfile);
    vg_free(l);
}
