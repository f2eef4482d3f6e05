/* test_einsum.c - vg_einsum (tf.einsum lowered to existing ops): each common form
 * against a loop over the index space computed here, gradients by finite differences,
 * unknown batch dims, and the equation errors. */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static vg_tensor *rnd(const int64_t *dims, int nd, unsigned *seed) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, &st);
    double *p = vg_tensor_data(t);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        *seed = *seed * 1103515245u + 12345u;
        p[i] = ((double)((*seed >> 8) % 2001) - 1000.0) / 500.0;
    }
    return t;
}

/* Reference einsum over all label assignments (labels a..z, explicit output). */
static void ref_einsum(const char *eq, vg_tensor *const *in, int n, double *out, int64_t nout) {
    char ins[4][16], outl[16];
    const char *arrow = strstr(eq, "->");
    snprintf(outl, sizeof outl, "%s", arrow + 2);
    int k = 0;
    const char *s = eq;
    while (k < n) {
        const char *c = strchr(s, ',');
        const char *e = (c && c < arrow) ? c : arrow;
        memcpy(ins[k], s, (size_t)(e - s));
        ins[k][e - s] = 0;
        k++;
        s = e + 1;
    }
    int64_t dim[128] = {0};
    char all[32] = "";
    int na = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; ins[j][i]; i++) {
            dim[(int)ins[j][i]] = vg_tensor_dim(in[j], i);
            if (!strchr(all, ins[j][i])) all[na++] = ins[j][i], all[na] = 0;
        }
    for (int64_t i = 0; i < nout; i++) out[i] = 0;
    int64_t idx[128] = {0};
    for (;;) {
        double prod = 1;
        for (int j = 0; j < n; j++) {
            int64_t off = 0;
            for (int i = 0; ins[j][i]; i++) off = off * dim[(int)ins[j][i]] + idx[(int)ins[j][i]];
            prod *= ((const double *)vg_tensor_data(in[j]))[off];
        }
        int64_t off = 0;
        for (int i = 0; outl[i]; i++) off = off * dim[(int)outl[i]] + idx[(int)outl[i]];
        out[off] += prod;
        int d = na - 1;
        for (; d >= 0; d--) {
            if (++idx[(int)all[d]] < dim[(int)all[d]]) break;
            idx[(int)all[d]] = 0;
        }
        if (d < 0) break;
    }
}

static void check_form_ref(const char *eq, const char *ref, int n, const int64_t dims[][4], const int *ranks) {
    vg_status st;
    unsigned seed = 42;
    vg_graph *g = vg_graph_new();
    vg_output x[3];
    vg_tensor *v[3];
    for (int j = 0; j < n; j++) {
        char nm[8];
        snprintf(nm, sizeof nm, "x%d", j);
        x[j] = vg_placeholder(g, VG_DOUBLE, dims[j], ranks[j], nm);
        v[j] = rnd(dims[j], ranks[j], &seed);
    }
    vg_output y = vg_einsum(g, eq, x, n, NULL);
    if (vg_graph_status(g, &st) != VG_OK) fprintf(stderr, "%s: %s\n", eq, st.msg);
    CHECK(y.op != NULL);
    if (!y.op) {
        for (int j = 0; j < n; j++) vg_tensor_free(v[j]);
        vg_graph_free(g);
        return;
    }
    CHECK(strcmp(vg_op_name(y.op), "einsum") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run(s, NULL, x, v, n, &y, &t, 1, NULL, 0, NULL, &st), &st);
    if (t) {
        int64_t m = vg_tensor_num_elements(t);
        double want[4096];
        ref_einsum(ref, v, n, want, m);
        int bad = 0;
        for (int64_t i = 0; i < m; i++)
            if (fabs(((double *)vg_tensor_data(t))[i] - want[i]) > 1e-9 * (1 + fabs(want[i]))) bad++;
        if (bad) fprintf(stderr, "%s: %d wrong values\n", eq, bad);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    int gbad = vg_gradcheck(g, x, v, n, y, 1e-6, 1e-5);
    if (gbad) fprintf(stderr, "%s: gradient mismatches\n", eq);
    CHECK_EQ_INT(gbad, 0);
    for (int j = 0; j < n; j++) vg_tensor_free(v[j]);
    vg_graph_free(g);
}

static void check_form(const char *eq, int n, const int64_t dims[][4], const int *ranks) {
    check_form_ref(eq, eq, n, dims, ranks);
}

static void test_forms(void) {
    check_form("ij,jk->ik", 2, (const int64_t[][4]){{2, 3}, {3, 4}}, (int[]){2, 2});
    check_form("bij,bjk->bik", 2, (const int64_t[][4]){{2, 3, 2}, {2, 2, 3}}, (int[]){3, 3});
    check_form("ij->ji", 1, (const int64_t[][4]){{2, 3}}, (int[]){2});
    check_form("ij->j", 1, (const int64_t[][4]){{2, 3}}, (int[]){2});
    check_form("i,i->", 2, (const int64_t[][4]){{5}, {5}}, (int[]){1, 1});
    check_form("bi,bi->b", 2, (const int64_t[][4]){{3, 4}, {3, 4}}, (int[]){2, 2});
    check_form("ijk,kl->ijl", 2, (const int64_t[][4]){{2, 3, 4}, {4, 2}}, (int[]){3, 2});
    check_form("i,j->ij", 2, (const int64_t[][4]){{3}, {2}}, (int[]){1, 1});
    check_form("ij,kj->ik", 2, (const int64_t[][4]){{2, 3}, {4, 3}}, (int[]){2, 2});
    check_form("bij,bkj->bki", 2, (const int64_t[][4]){{2, 3, 2}, {2, 2, 2}}, (int[]){3, 3});
    check_form("ij,jk->", 2, (const int64_t[][4]){{2, 3}, {3, 2}}, (int[]){2, 2});
    check_form("ijk,j->ki", 2, (const int64_t[][4]){{2, 3, 2}, {3}}, (int[]){3, 1});
    check_form("ij,jk,kl->il", 3, (const int64_t[][4]){{2, 3}, {3, 2}, {2, 2}}, (int[]){2, 2, 2});
    /* ellipses: fresh labels for the leading dims, checked against the spelled-out form */
    check_form_ref("...ij,...jk->...ik", "abij,abjk->abik", 2, (const int64_t[][4]){{2, 2, 2, 3}, {2, 2, 3, 2}},
                   (int[]){4, 4});
    check_form_ref("...i,...i->...", "bi,bi->b", 2, (const int64_t[][4]){{3, 4}, {3, 4}}, (int[]){2, 2});
    check_form_ref("...ij,jk", "bij,jk->bik", 2, (const int64_t[][4]){{2, 2, 3}, {3, 2}}, (int[]){3, 2});
    check_form_ref("i...->...i", "ijk->jki", 1, (const int64_t[][4]){{2, 3, 2}}, (int[]){3});
}

static void test_implicit_and_unknown_dims(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* implicit output: "ij,jk" -> "ik"; "ba" -> "ab" (sorted) */
    vg_output a = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 2}, 2, "b");
    vg_output ab[2] = {a, b};
    vg_output y = vg_einsum(g, "ij,jk", ab, 2, NULL);
    vg_output z = vg_einsum(g, "ba", &b, 1, "tr");
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_EQ_INT(vg_output_shape(y).ndims, 2);
    CHECK_EQ_INT(vg_output_shape(z).dims[0], 2);
    CHECK(strcmp(vg_op_name(y.op), "einsum") == 0 && strcmp(vg_op_name(z.op), "tr") == 0);
    vg_tensor *av, *bv;
    av = vg_tensor_new(VG_FLOAT, (int64_t[]){2, 3}, 2, &st);
    bv = vg_tensor_new(VG_FLOAT, (int64_t[]){3, 2}, 2, &st);
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 2, 2};
    memcpy(vg_tensor_data(av), A, sizeof A);
    memcpy(vg_tensor_data(bv), B, sizeof B);
    vg_tensor *vals[2] = {av, bv};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, ab, vals, 2, &y, &out, 1, NULL, 0, NULL, &st), &st);
    /* [[1+6, 2+6], [4+12, 5+12]] */
    float e[4] = {7, 8, 16, 17};
    for (int i = 0; out && i < 4; i++) CHECK_NEAR(((float *)vg_tensor_data(out))[i], e[i], 1e-5);
    vg_tensor_free(out);
    CHECK_OK(vg_session_run(s, NULL, &b, &bv, 1, &z, &out, 1, NULL, 0, NULL, &st), &st);
    float et[6] = {1, 0, 2, 0, 1, 2};
    for (int i = 0; out && i < 6; i++) CHECK_NEAR(((float *)vg_tensor_data(out))[i], et[i], 0);
    kt_teardown(g, s, (vg_tensor *[]){out, av, bv}, 3, NULL, 0);
}

static void test_errors(void) {
    vg_status st;
    struct {
        const char *eq;
        int n;
        vg_code code;
        const char *msg;
    } cases[] = {
        {"ij,jk->ik", 1, VG_INVALID_ARGUMENT, "2 operands but 1 inputs"},
        {"ijk,jk->ik", 2, VG_INVALID_ARGUMENT, "input 0 has rank 2"},
        {"ij,jk->iz", 2, VG_INVALID_ARGUMENT, "output label is in no input"},
        {"ij,ik->jk", 2, VG_INVALID_ARGUMENT, "label 'i' has dimension 2 and 3"},
        {"ii,jk->ik", 2, VG_UNIMPLEMENTED, "repeated within one operand"},
        {"...i...j,jk->ik", 2, VG_INVALID_ARGUMENT, "more than one ellipsis"},
        {"...ijk,jk->ik", 2, VG_INVALID_ARGUMENT, "fewer than its labels"},
        {"i1,jk->ik", 2, VG_INVALID_ARGUMENT, "letters"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vg_graph *g = vg_graph_new();
        vg_output in[2] = {vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "a"),
                           vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 4}, 2, "b")};
        vg_output y = vg_einsum(g, cases[c].eq, in, cases[c].n, NULL);
        CHECK(y.op == NULL);
        CHECK_CODE(vg_graph_status(g, &st), cases[c].code);
        CHECK_STR_CONTAINS(st.msg, cases[c].msg);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_forms);
    RUN_TEST(test_implicit_and_unknown_dims);
    RUN_TEST(test_errors);
    TEST_MAIN_END();
}
