/* torch_peer.h - finding the PyTorch peer of the benchmarks: the interpreter is
 * /usr/bin/python3 (Debian's, where python3-torch installs; a `python3` earlier on PATH
 * may be a pyenv without torch), or $VG_BENCH_PYTHON. bench_torch_probe() checks once
 * that it imports torch and gives a line saying what was found, which every benchmark
 * with a peer prints (stderr) and puts in its JSON ("peer_status"). */
#ifndef VG_BENCH_TORCH_PEER_H
#define VG_BENCH_TORCH_PEER_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const char *bench_python(void) {
    const char *e = getenv("VG_BENCH_PYTHON");
    return e && *e ? e : "/usr/bin/python3";
}

/* true when the interpreter imports torch; *status: "torch 1.13.1 (/usr/bin/python3)"
 * or why not ("no /usr/bin/python3", "/usr/bin/python3 has no torch: apt-get install
 * python3-torch"). */
static inline bool bench_torch_probe(const char **status) {
    static char line[256];
    static int known = -1;
    if (known < 0) {
        const char *py = bench_python();
        known = 0;
        if (access(py, X_OK) != 0) {
            snprintf(line, sizeof line, "no %s", py);
        } else {
            char cmd[512], ver[64] = "";
            snprintf(cmd, sizeof cmd, "%s -c 'import torch; print(torch.__version__)' 2>/dev/null", py);
            FILE *p = popen(cmd, "r");
            if (p && fgets(ver, sizeof ver, p)) ver[strcspn(ver, "\n")] = 0;
            if (p) pclose(p);
            if (ver[0]) {
                known = 1;
                snprintf(line, sizeof line, "torch %s (%s)", ver, py);
            } else {
                snprintf(line, sizeof line, "%s has no torch: apt-get install python3-torch (or set VG_BENCH_PYTHON)",
                         py);
            }
        }
        fprintf(stderr, "peer: %s\n", line);
    }
    if (status) *status = line;
    return known == 1;
}
#endif
