/* fuzz_cli.c - the CLI's option parsing: the input split at NUL bytes is an argv for
 * `vigil train` (parsing only: nothing is read or trained), and each piece goes
 * through the number and list parsers. Built with tools/main.c and tools/train.c. */
#include "cli.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* usage errors go to stderr: scripts/fuzz.sh runs this one with -close_fd_mask=3 */
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[65];
    int argc = 0;
    argv[argc++] = "train";
    for (char *p = buf; p < buf + size && argc < 64; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;
    int rc = cli_train_parse_only(argc, argv);
    if (rc != 0 && rc != 2 && rc != -1) abort();
    for (int i = 1; i < argc; i++) {
        int64_t v;
        double d;
        cli_parse_i64(argv[i], &v);
        cli_parse_double(argv[i], &d);
        int n;
        char **l = cli_split_list(argv[i], &n);
        if (l) cli_free_list(l, n);
    }
    free(buf);
    return 0;
}
