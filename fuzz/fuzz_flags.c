/* fuzz_flags.c - the tf.flags parser (vigil/flags.h, src/train/flags.c), which reads a
 * program's command line: the input split at NUL bytes is argv[1..] (at most 64
 * arguments); byte 0's low bit picks known_only. After a parse that succeeds, every
 * flag is read back, argv must hold argc entries (and NULL after them when it shrank),
 * and the help text is built. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    bool known_only = data[0] & 1;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    char *argv[66];
    int argc = 0;
    argv[argc++] = "prog";
    for (size_t i = 0; i < size - 1 && argc < 65;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    vg_status st;
    vg_flags *f = vg_flags_new();
    if (!f) abort();
    if (vg_flags_define_string(f, "data_dir", "/tmp/data", "Where the data is.", &st) ||
        vg_flags_define_string(f, "name", NULL, "No default.", &st) ||
        vg_flags_define_integer(f, "batch_size", 128, "Batch size.", &st) ||
        vg_flags_define_float(f, "learning_rate", 0.01, "Learning rate.", &st) ||
        vg_flags_define_boolean(f, "fake_data", false, "Use fake data.", &st))
        abort();
    int n0 = argc;
    if (vg_flags_parse(f, &argc, argv, known_only, &st) == VG_OK) {
        if (argc < 1 || argc > n0) abort();
        if (argc < n0 && argv[argc] != NULL) abort();
        for (int i = 0; i < argc; i++)
            if (!argv[i]) abort();
        (void)vg_flags_string(f, "data_dir");
        (void)vg_flags_string(f, "name");
        (void)vg_flags_integer(f, "batch_size");
        (void)vg_flags_float(f, "learning_rate");
        (void)vg_flags_boolean(f, "fake_data");
        (void)vg_flags_present(f, "batch_size");
        char *h = vg_flags_help(f, argv[0]);
        vg_free(h);
    }
    vg_flags_free(f);
    free(buf);
    return 0;
}
