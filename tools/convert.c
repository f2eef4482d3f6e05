/*
 * convert.c - `vigil convert`: MNIST-format IDX files (Fashion-MNIST; plain or .gz) to
 *   - a TFRecord file of tf.train.Examples in the layout of TF's
 *     convert_to_records.py: height, width, depth, label (int64) and image_raw (the
 *     pixels as bytes), optionally GZIP/ZLIB compressed (--format tfrecord, default);
 *   - CIFAR-style fixed-length records: one label byte then the pixels, back to back
 *     (--format fixed; read with FixedLengthRecordReader(record_bytes = 1 + rows*cols)).
 * The IDX files are read whole through the public vg_idx_read (Fashion-MNIST's training
 * images are 47 MB); the output is written record by record.
 */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *convert_usage =
    "usage: vigil convert --images IDX --labels IDX -o OUT [--format tfrecord|fixed]\n"
    "                     [--compression GZIP|ZLIB] [--limit N]\n"
    "\n"
    "Converts MNIST-format IDX files (plain or .gz) into a TFRecord file of\n"
    "tf.train.Examples (height, width, depth, label, image_raw: TF's convert_to_records.py)\n"
    "or into fixed-length records (1 label byte + the pixels, as CIFAR-10's binary files).\n"
    "--limit N converts the first N records only.\n";

int cli_convert(int argc, char **argv) {
    const char *images = NULL, *labels = NULL, *out = NULL, *format = "tfrecord", *compression = "";
    int64_t limit = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        bool missing = false;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(convert_usage, stdout);
            return 0;
        } else if (cli_opt(argc, argv, &i, "--images", &v, &missing)) {
            images = v;
        } else if (cli_opt(argc, argv, &i, "--labels", &v, &missing)) {
            labels = v;
        } else if (cli_opt(argc, argv, &i, "-o", &v, &missing) || cli_opt(argc, argv, &i, "--output", &v, &missing)) {
            out = v;
        } else if (cli_opt(argc, argv, &i, "--format", &v, &missing)) {
            format = v;
        } else if (cli_opt(argc, argv, &i, "--compression", &v, &missing)) {
            compression = v;
        } else if (cli_opt(argc, argv, &i, "--limit", &v, &missing)) {
            if (!missing && (!cli_parse_i64(v, &limit) || limit < 0))
                return cli_usage_error("convert", "--limit needs a number >= 0, got '%s'", v);
        } else {
            return cli_usage_error("convert", "unknown option '%s'", argv[i]);
        }
        if (missing) return cli_usage_error("convert", "%s needs a value", argv[i]);
    }
    if (!images || !labels || !out) return cli_usage_error("convert", "--images, --labels and -o are required");
    bool fixed = !strcmp(format, "fixed");
    if (!fixed && strcmp(format, "tfrecord")) return cli_usage_error("convert", "unknown --format '%s'", format);
    vg_status st;
    vg_compression comp;
    if (vg_compression_parse(compression, &comp, &st) != VG_OK) return cli_usage_error("convert", "%s", st.msg);
    if (fixed && comp != VG_COMPRESSION_NONE) return cli_usage_error("convert", "--compression is for tfrecord only");

    int64_t idims[4], ldims[4];
    int ind = 0, lnd = 0;
    void *pix = NULL, *lab = NULL;
    size_t pbytes = 0, lbytes = 0;
    if (vg_idx_read(images, VG_IDX_U8, idims, &ind, &pix, &pbytes, &st) != VG_OK) return cli_fail_status(&st);
    if (vg_idx_read(labels, VG_IDX_U8, ldims, &lnd, &lab, &lbytes, &st) != VG_OK) {
        vg_free(pix);
        return cli_fail_status(&st);
    }
    int rc = 0;
    if (ind != 3 || lnd != 1) {
        rc = cli_fail("%s: expected images [n, rows, cols] and %s labels [n]", images, labels);
    } else if (idims[0] != ldims[0]) {
        rc = cli_fail("%s has %lld images but %s has %lld labels", images, (long long)idims[0], labels,
                      (long long)ldims[0]);
    }
    int64_t n = rc ? 0 : idims[0];
    if (limit >= 0 && limit < n) n = limit;
    size_t pixels = rc ? 0 : (size_t)(idims[1] * idims[2]);
    uint8_t *rec = rc ? NULL : malloc(pixels + 1);
    if (!rc && !rec) rc = cli_fail("out of memory");
    vg_tfrecord_writer *w = NULL;
    FILE *fo = NULL;
    vg_example *ex = NULL;
    /* the output goes to a new temporary next to OUT (mkstemp: O_EXCL, never through a
     * planted symlink), renamed over OUT once complete */
    char tmp[4200] = "";
    int tfd = -1;
    if (!rc && (size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", out) >= sizeof tmp) {
        tmp[0] = 0;
        rc = cli_fail("output name too long: %s", out);
    }
    if (!rc && (tfd = mkstemp(tmp)) < 0) {
        tmp[0] = 0;
        rc = cli_fail("cannot create a temporary file next to %s: %s", out, strerror(errno));
    }
    if (tfd >= 0) {
        mode_t um = umask(0);
        umask(um);
        fchmod(tfd, 0666 & ~um); /* what fopen(out, "wb") would have given */
    }
    if (!rc && fixed && !(fo = fdopen(tfd, "wb"))) rc = cli_fail("cannot create %s", tmp);
    if (tfd >= 0 && !fo) close(tfd); /* the tfrecord writer reopens the file it names */
    if (!rc && !fixed && (!(w = vg_tfrecord_writer_open(tmp, comp, &st)) || !(ex = vg_example_new())))
        rc = w ? cli_fail("out of memory") : cli_fail_status(&st);
    for (int64_t i = 0; i < n && !rc; i++) {
        uint8_t label = ((const uint8_t *)lab)[i];
        memcpy(rec + 1, (const uint8_t *)pix + (size_t)i * pixels, pixels);
        if (fixed) {
            rec[0] = label;
            if (fwrite(rec, 1, pixels + 1, fo) != pixels + 1) rc = cli_fail("cannot write %s", out);
            continue;
        }
        int64_t h = idims[1], wd = idims[2], depth = 1, lab = label;
        vg_example_clear(ex);
        size_t len;
        const void *bytes = NULL;
        if (vg_example_add_int64(ex, "height", &h, 1, &st) == VG_OK &&
            vg_example_add_int64(ex, "width", &wd, 1, &st) == VG_OK &&
            vg_example_add_int64(ex, "depth", &depth, 1, &st) == VG_OK &&
            vg_example_add_int64(ex, "label", &lab, 1, &st) == VG_OK &&
            vg_example_add_bytes(ex, "image_raw", (const char *[]){(const char *)rec + 1}, &pixels, 1, &st) == VG_OK)
            bytes = vg_example_serialize(ex, &len, &st);
        if (!bytes || vg_tfrecord_writer_write(w, bytes, len, &st) != VG_OK) rc = cli_fail_status(&st);
    }
    if (w && vg_tfrecord_writer_close(w, &st) != VG_OK && !rc) rc = cli_fail_status(&st);
    if (fo && fclose(fo) != 0 && !rc) rc = cli_fail("cannot write %s", out);
    if (!rc && tmp[0] && rename(tmp, out) != 0) rc = cli_fail("cannot rename %s to %s: %s", tmp, out, strerror(errno));
    else if (!rc) tmp[0] = 0;
    if (tmp[0]) unlink(tmp);
    vg_example_free(ex);
    free(rec);
    vg_free(pix);
    vg_free(lab);
    if (!rc)
        printf("%lld records of %zu bytes -> %s (%s%s%s)\n", (long long)n, pixels, out, fixed ? "fixed-length" : "tfrecord",
               comp != VG_COMPRESSION_NONE ? ", " : "", comp != VG_COMPRESSION_NONE ? compression : "");
    return rc;
}
