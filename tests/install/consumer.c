/* consumer.c - a program outside vigil's tree that uses the installed library: checks
 * the version macros against vg_version() and runs 2 + 3 through a session. Built by
 * tests/install_test.sh with find_package(vigil) and with pkg-config. Exit 0 = good. */
#include <vigil/vigil.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", VG_VERSION_MAJOR, VG_VERSION_MINOR, VG_VERSION_PATCH);
    if (strcmp(want, vg_version()) != 0) {
        fprintf(stderr, "consumer: headers say %s, library says %s\n", want, vg_version());
        return 1;
    }
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output sum = vg_add(g, vg_const_f32(g, 2.0f, "a"), vg_const_f32(g, 3.0f, "b"), "sum");
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) {
        fprintf(stderr, "consumer: %s\n", st.msg);
        return 1;
    }
    vg_tensor *out = NULL;
    if (vg_session_run1(s, sum, &out, &st) != VG_OK) {
        fprintf(stderr, "consumer: %s\n", st.msg);
        return 1;
    }
    double v = vg_tensor_scalar(out);
    vg_tensor_free(out);
    vg_session_free(s);
    vg_graph_free(g);
    if (v != 5.0) {
        fprintf(stderr, "consumer: 2 + 3 = %g\n", v);
        return 1;
    }
    printf("consumer: vigil %s, 2 + 3 = %g\n", vg_version(), v);
    return 0;
}
