/* test_keras_datasets.c - .npz archives and pickled dicts of arrays (vigil/npy.h) and
 * tf.keras.datasets' mnist / fashion_mnist / cifar10 load_data (vigil/keras_datasets.h):
 * archives written as numpy.savez and savez_compressed write them (tests/data/npz, made
 * by Python's zipfile as NumPy does: see its README), pickles written by Python's pickle
 * module with NumPy's reduce protocol (tests/data/pickle), write/read round trips,
 * Keras's file places and the errors. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>

#define NPZ VG_SRCDIR "/tests/data/npz"
#define FASHION "/usr/share/datasets/fashion-mnist"
#define PKL VG_SRCDIR "/tests/data/pickle"

/* the generator's pixel and label formulas (tests/data/npz/make_npz.py) */
static int check_images(const vg_tensor *x, int64_t n, int seed) {
    const uint8_t *p = vg_tensor_data(x);
    int bad = 0;
    for (int64_t i = 0; i < n * 784; i++) bad += p[i] != (uint8_t)((i * 7 + seed * 13) % 256);
    return bad;
}

static void test_npz_written_by_python(void) {
    const char *files[2] = {NPZ "/mnist_mini.npz", NPZ "/mnist_mini_stored.npz"};
    for (int k = 0; k < 2; k++) {
        vg_status st;
        vg_npz *z = vg_npz_open(files[k], &st);
        CHECK(z != NULL);
        if (!z) continue;
        CHECK_EQ_INT(vg_npz_count(z), 4);
        CHECK(strcmp(vg_npz_key(z, 0), "x_train") == 0);
        CHECK(strcmp(vg_npz_key(z, 3), "y_test") == 0);
        CHECK(vg_npz_key(z, 4) == NULL);
        vg_tensor *x = vg_npz_get(z, "x_test", &st);
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_INT(vg_tensor_dtype(x), VG_UINT8);
            CHECK_EQ_INT(vg_tensor_ndims(x), 3);
            CHECK_EQ_INT(vg_tensor_dim(x, 0), 2);
            CHECK_EQ_INT(check_images(x, 2, 2), 0);
            vg_tensor_free(x);
        }
        CHECK(vg_npz_get(z, "x_val", &st) == NULL);
        EXPECT_STATUS(&st, VG_NOT_FOUND, "x_val");
        vg_npz_close(z);
    }
}

static void test_npz_round_trip_and_corruption(void) {
    char dir[256], path[320];
    tu_mkdtemp(dir, sizeof dir, "npz");
    vg_status st;
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    vg_tensor *a = vg_tensor_new_copy(VG_FLOAT, dims, 2, v, sizeof v, &st);
    vg_tensor *b = vg_tensor_new_scalar_i64(42, &st);
    const char *keys[2] = {"a", "b"};
    const vg_tensor *ts[2] = {a, b};
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof path, "%s/rt%d.npz", dir, c);
        CHECK_OK(vg_npz_write(path, keys, ts, 2, c == 1, &st), &st);
        vg_npz *z = vg_npz_open(path, &st);
        CHECK(z != NULL);
        if (!z) continue;
        CHECK_EQ_INT(vg_npz_count(z), 2);
        vg_tensor *a2 = vg_npz_get(z, "a", &st), *b2 = vg_npz_get(z, "b", &st);
        CHECK(a2 && b2);
        if (a2) {
            CHECK_EQ_INT(vg_tensor_dim(a2, 1), 3);
            CHECK(memcmp(vg_tensor_data(a2), v, sizeof v) == 0);
        }
        if (b2) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(b2), 42);
        vg_tensor_free(a2);
        vg_tensor_free(b2);
        vg_npz_close(z);
    }
    /* a flipped byte inside the stored member's data: libzip's CRC check */
    snprintf(path, sizeof path, "%s/rt0.npz", dir);
    FILE *f = fopen(path, "rb");
    uint8_t buf[8192];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 200);
    const uint8_t pat[4] = {0x00, 0x00, 0x80, 0x3f}; /* 1.0f, the first element of a */
    uint8_t *hit = memmem(buf, n, pat, 4);
    CHECK(hit != NULL);
    if (hit) {
        hit[3] ^= 0x40;
        vg_npz *z = vg_npz_parse(buf, n, "flipped.npz", &st);
        CHECK(z != NULL);
        if (z) {
            CHECK(vg_npz_get(z, "a", &st) == NULL);
            EXPECT_STATUS(&st, VG_DATA_LOSS, "flipped.npz: member a.npy");
            vg_npz_close(z);
        }
    }
    CHECK(vg_npz_parse("not a zip at all", 16, "junk.npz", &st) == NULL);
    EXPECT_STATUS(&st, VG_DATA_LOSS, "junk.npz");
    snprintf(path, sizeof path, "%s/none.npz", dir);
    EXPECT_REFUSED(vg_npz_open(path, &st), &st, VG_NOT_FOUND);
    /* the member size limit applies before allocating */
    vg_decode_limits l = vg_decode_limits_default();
    l.max_record_bytes = 100;
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    vg_npz *z = vg_npz_open(NPZ "/mnist_mini.npz", &st);
    CHECK(z != NULL);
    if (z) {
        CHECK(vg_npz_get(z, "x_train", &st) == NULL);
        EXPECT_STATUS(&st, VG_RESOURCE_EXHAUSTED, "x_train.npy claims 2480 bytes");
        vg_npz_close(z);
    }
    l = vg_decode_limits_default();
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    vg_tensor_free(a);
    vg_tensor_free(b);
    tu_rmrf(dir);
}

/* mnist.py: load_data(path) -> (x_train, y_train), (x_test, y_test) from the .npz. */
static void test_mnist_load_data(void) {
    vg_keras_data d;
    vg_status st;
    CHECK_OK(vg_keras_mnist_load_data(NPZ "/mnist_mini.npz", &d, &st), &st);
    CHECK(d.x_train && d.y_train && d.x_test && d.y_test);
    if (d.x_train) {
        CHECK_EQ_INT(vg_tensor_dim(d.x_train, 0), 3);
        CHECK_EQ_INT(check_images(d.x_train, 3, 1), 0);
        const uint8_t *y = vg_tensor_data(d.y_train);
        CHECK(y[0] == 1 && y[1] == 2 && y[2] == 3);
    }
    vg_keras_data_free(&d);
    CHECK(d.x_train == NULL);
    /* a relative name lives under $HOME/.keras/datasets, as Keras's get_file */
    char home[256], sub[400];
    tu_mkdtemp(home, sizeof home, "kerashome");
    const char *old = getenv("HOME");
    char *saved = old ? strdup(old) : NULL;
    setenv("HOME", home, 1);
    CHECK_STATUS(vg_keras_mnist_load_data(NULL, &d, &st), &st, VG_NOT_FOUND, "/.keras/datasets/mnist.npz not found");
    CHECK_STR_CONTAINS(st.msg, "tf-keras-datasets/mnist.npz");
    CHECK(d.x_train == NULL);
    snprintf(sub, sizeof sub, "%s/.keras", home);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/.keras/datasets", home);
    mkdir(sub, 0755);
    /* Keras's mnist.npz is a savez_compressed archive: copy the miniature there */
    snprintf(sub, sizeof sub, "%s/.keras/datasets/mnist.npz", home);
    FILE *in = fopen(NPZ "/mnist_mini.npz", "rb"), *out = fopen(sub, "wb");
    CHECK(in && out);
    if (in && out) {
        char b[8192];
        size_t n;
        while ((n = fread(b, 1, sizeof b, in)) > 0) fwrite(b, 1, n, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    CHECK_OK(vg_keras_mnist_load_data(NULL, &d, &st), &st);
    if (d.x_test) CHECK_EQ_INT(vg_tensor_dim(d.x_test, 0), 2);
    vg_keras_data_free(&d);
    if (saved) setenv("HOME", saved, 1); else unsetenv("HOME");
    free(saved);
    tu_rmrf(home);
    /* an archive without Keras's arrays */
    char dir[256], path[320];
    tu_mkdtemp(dir, sizeof dir, "kerasbad");
    snprintf(path, sizeof path, "%s/other.npz", dir);
    vg_tensor *t = vg_tensor_new_scalar_f32(1, &st);
    const char *k = "x_train";
    const vg_tensor *tt = t;
    CHECK_OK(vg_npz_write(path, &k, &tt, 1, false, &st), &st);
    CHECK_STATUS(vg_keras_mnist_load_data(path, &d, &st), &st, VG_DATA_LOSS, "no array y_train");
    vg_tensor_free(t);
    tu_rmrf(dir);
    CHECK_EQ_INT(vg_keras_mnist_load_data(NULL, NULL, &st), VG_INVALID_ARGUMENT);
}

/* fashion_mnist.py on the four gzip'd IDX files Debian's dataset-fashion-mnist holds
 * (the same files Keras downloads). */
static void test_fashion_mnist_load_data(void) {
    FILE *f = fopen(FASHION "/train-images-idx3-ubyte.gz", "rb");
    if (!f) {
        printf("SKIP fashion-mnist: %s missing (Debian's dataset-fashion-mnist)\n", FASHION);
        return;
    }
    fclose(f);
    vg_keras_data d;
    vg_status st;
    CHECK_OK(vg_keras_fashion_mnist_load_data(FASHION, &d, &st), &st);
    if (d.x_train) {
        CHECK_EQ_INT(vg_tensor_dim(d.x_train, 0), 60000);
        CHECK_EQ_INT(vg_tensor_dim(d.x_train, 1), 28);
        CHECK_EQ_INT(vg_tensor_dim(d.x_test, 0), 10000);
        CHECK_EQ_INT(vg_tensor_dim(d.y_train, 0), 60000);
        /* Fashion-MNIST: 6000 training examples of each of the 10 classes */
        int64_t count[10] = {0};
        const uint8_t *y = vg_tensor_data(d.y_train);
        int bad = 0;
        for (int i = 0; i < 60000; i++) {
            if (y[i] < 10) count[y[i]]++; else bad++;
        }
        CHECK_EQ_INT(bad, 0);
        for (int c = 0; c < 10; c++) CHECK_EQ_INT(count[c], 6000);
    }
    vg_keras_data_free(&d);
    char dir[256];
    tu_mkdtemp(dir, sizeof dir, "fashion");
    CHECK_STATUS(vg_keras_fashion_mnist_load_data(dir, &d, &st), &st, VG_NOT_FOUND,
                 "train-labels-idx1-ubyte.gz not found");
    tu_rmrf(dir);
}

/* Every protocol Python writes (2 as Python 2's cPickle and the CIFAR batches, 3, 4 with
 * frames and MEMOIZE, 5): a big-endian float64 array, a Fortran-order int32 array, a list
 * of floats, a str and a large int. */
static void test_pickle_reader(void) {
    for (int p = 2; p <= 5; p++) {
        char path[512];
        snprintf(path, sizeof path, PKL "/misc_p%d.pkl", p);
        vg_status st;
        vg_pickle_dict *d = vg_pickle_dict_read(path, &st);
        CHECK(d != NULL);
        if (!d) {
            fprintf(stderr, "%s\n", st.msg);
            continue;
        }
        CHECK_EQ_INT(vg_pickle_dict_count(d), 5);
        vg_tensor *t = vg_pickle_dict_get(d, "f8_be", &st);
        CHECK(t && vg_tensor_dtype(t) == VG_DOUBLE && vg_tensor_dim(t, 1) == 2);
        if (t) {
            const double *v = vg_tensor_data(t);
            CHECK(v[0] == 1.5 && v[1] == -2.0 && v[2] == 3.25 && v[3] == 4.0);
        }
        vg_tensor_free(t);
        /* Fortran order [[1,2,3],[4,5,6]] stored column by column: 1 4 2 5 3 6 */
        t = vg_pickle_dict_get(d, "i4_fortran", &st);
        CHECK(t && vg_tensor_dtype(t) == VG_INT32 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 3);
        if (t) {
            const int32_t *v = vg_tensor_data(t);
            for (int i = 0; i < 6; i++) CHECK_EQ_INT(v[i], i + 1);
        }
        vg_tensor_free(t);
        t = vg_pickle_dict_get(d, "floats", &st);
        CHECK(t && vg_tensor_dtype(t) == VG_DOUBLE && ((double *)vg_tensor_data(t))[1] == -1.25);
        vg_tensor_free(t);
        t = vg_pickle_dict_get(d, "name", &st);
        size_t len = 0;
        CHECK(t && vg_tensor_dtype(t) == VG_STRING);
        if (t) CHECK(memcmp(vg_tensor_string(t, 0, &len), "caf\xc3\xa9", 5) == 0 && len == 5);
        vg_tensor_free(t);
        t = vg_pickle_dict_get(d, "count", &st);
        CHECK(t && *(int64_t *)vg_tensor_data(t) == 123456789012LL);
        vg_tensor_free(t);
        EXPECT_REFUSED(vg_pickle_dict_get(d, "nope", &st), &st, VG_NOT_FOUND);
        vg_pickle_dict_free(d);
    }
    /* a pickle that would call something else is refused, not run */
    static const char evil[] = "\x80\x02" "cos\nsystem\nq\x00U\x05" "touchq\x01\x85q\x02Rq\x03.";
    vg_status st;
    CHECK(vg_pickle_dict_parse(evil, sizeof evil - 1, "evil.pkl", &st) == NULL);
    EXPECT_STATUS(&st, VG_UNIMPLEMENTED, "os.system");
    /* truncation anywhere is DATA_LOSS or a clean refusal, never a crash */
    FILE *f = fopen(PKL "/misc_p2.pkl", "rb");
    uint8_t buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 100);
    for (size_t cut = 0; cut < n; cut += 7) {
        vg_pickle_dict *d = vg_pickle_dict_parse(buf, cut, "cut.pkl", &st);
        CHECK(d == NULL);
        vg_pickle_dict_free(d);
    }
}

/* cifar10.py / cifar.py's load_batch on batches pickled as the distributed files are:
 * 5 training batches of 2 rows, a test batch of 3; channels last; labels [n, 1]. */
static void test_cifar10_load_data(void) {
    vg_keras_data d;
    vg_status st;
    CHECK_OK(vg_keras_cifar10_load_data(PKL "/cifar-10-batches-py", &d, &st), &st);
    if (d.x_train) {
        CHECK_EQ_INT(vg_tensor_ndims(d.x_train), 4);
        CHECK_EQ_INT(vg_tensor_dim(d.x_train, 0), 10);
        CHECK_EQ_INT(vg_tensor_dim(d.x_train, 3), 3);
        CHECK_EQ_INT(vg_tensor_dim(d.y_train, 1), 1);
        CHECK_EQ_INT(vg_tensor_dim(d.x_test, 0), 3);
        /* batch b (seed b), row r: byte i of the row is (3 i + 11 b) mod 256 with i = c*1024 + p,
         * and pixel p channel c lands at [r, p / 32, p % 32, c] */
        const uint8_t *x = vg_tensor_data(d.x_train), *y = vg_tensor_data(d.y_train);
        int bad = 0;
        for (int b = 1; b <= 5; b++)
            for (int r = 0; r < 2; r++) {
                int row = (b - 1) * 2 + r;
                if (y[row] != (r * 7 + b) % 10) bad++;
                for (int c = 0; c < 3; c++)
                    for (int p = 0; p < 1024; p += 97) {
                        int i = r * 3072 + c * 1024 + p;
                        if (x[(size_t)row * 3072 + (size_t)p * 3 + (size_t)c] != (uint8_t)((i * 3 + b * 11) % 256)) bad++;
                    }
            }
        CHECK_EQ_INT(bad, 0);
    }
    vg_keras_data_free(&d);
    char dir[256];
    tu_mkdtemp(dir, sizeof dir, "cifar");
    CHECK_STATUS(vg_keras_cifar10_load_data(dir, &d, &st), &st, VG_NOT_FOUND, "data_batch_1 not found");
    CHECK(d.x_train == NULL);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_pickle_reader);
    RUN_TEST(test_cifar10_load_data);
    RUN_TEST(test_npz_written_by_python);
    RUN_TEST(test_npz_round_trip_and_corruption);
    RUN_TEST(test_mnist_load_data);
    RUN_TEST(test_fashion_mnist_load_data);
    TEST_MAIN_END();
}
