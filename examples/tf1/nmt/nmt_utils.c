/* nmt_utils.c - nmt/utils/nmt_utils.py (decode_and_evaluate, get_translation),
 * nmt/utils/evaluation_utils.py (evaluate: bleu, accuracy, word_accuracy) and
 * nmt/scripts/bleu.py (compute_bleu), inference.load_data. */
#include "nmt.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's line.strip().split(" "): tokens point into line (modified) */
static int split_space(char *line, char **tok, int max) {
    char *s = line, *e = line + strlen(line);
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    int n = 0;
    tok[n++] = s;
    for (char *p = s; *p && n < max; p++)
        if (*p == ' ') *p = 0, tok[n++] = p + 1;
    return n;
}

static bool ngram_eq(char **a, char **b, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0) return false;
    return true;
}
static int count_ngram(char **seq, int len, char **ng, int n) {
    int c = 0;
    for (int i = 0; i + n <= len; i++) c += ngram_eq(seq + i, ng, n);
    return c;
}

/* bleu.compute_bleu(reference_corpus (one reference each), translation_corpus, max_order=4, smooth=False) */
static double compute_bleu(char **refs, char **trans, int n, int max_order) {
    double matches[8] = {0}, possible[8] = {0}, ref_len = 0, trans_len = 0;
    for (int s = 0; s < n; s++) {
        char rb[4096], tb[4096], *r[512], *t[512];
        snprintf(rb, sizeof rb, "%s", refs[s]);
        snprintf(tb, sizeof tb, "%s", trans[s]);
        int nr = split_space(rb, r, 512), nt = split_space(tb, t, 512);
        ref_len += nr, trans_len += nt;
        for (int order = 1; order <= max_order; order++) {
            for (int i = 0; i + order <= nt; i++) {
                bool seen = false; /* each distinct n-gram once: min(count in translation, count in reference) */
                for (int j = 0; j < i && !seen; j++) seen = ngram_eq(t + j, t + i, order);
                if (seen) continue;
                int ct = count_ngram(t, nt, t + i, order), cr = count_ngram(r, nr, t + i, order);
                matches[order - 1] += ct < cr ? ct : cr;
            }
            if (nt - order + 1 > 0) possible[order - 1] += nt - order + 1;
        }
    }
    double p_log_sum = 0, min_p = 1;
    for (int i = 0; i < max_order; i++) {
        double p = possible[i] > 0 ? matches[i] / possible[i] : 0.0;
        if (p < min_p) min_p = p;
        if (p > 0) p_log_sum += log(p) / max_order;
    }
    double geo_mean = min_p > 0 ? exp(p_log_sum) : 0.0;
    double ratio = ref_len > 0 ? trans_len / ref_len : 0.0;
    double bp = ratio > 1.0 ? 1.0 : ratio > 0 ? exp(1.0 - 1.0 / ratio) : 0.0;
    return geo_mean * bp;
}

double nmt_evaluate(const char *ref_file, const char *trans_file, const char *metric) {
    char **refs, **trans;
    int nr, nt;
    if (nmt_read_lines(ref_file, &refs, &nr) != 0) return -1;
    if (nmt_read_lines(trans_file, &trans, &nt) != 0) {
        nmt_free_lines(refs, nr);
        return -1;
    }
    double score = -1;
    int n = nr < nt ? nr : nt;
    if (!strcmp(metric, "bleu")) {
        score = n ? 100 * compute_bleu(refs, trans, n, 4) : 0;
    } else if (!strcmp(metric, "accuracy")) { /* _accuracy: exact match of the stripped lines */
        double match = 0;
        for (int i = 0; i < nr; i++) {
            char a[4096], b[4096], *ta[1024], *tb[1024];
            snprintf(a, sizeof a, "%s", refs[i]);
            snprintf(b, sizeof b, "%s", i < nt ? trans[i] : "");
            split_space(a, ta, 1); /* strips */
            split_space(b, tb, 1);
            match += strcmp(ta[0], tb[0]) == 0;
        }
        score = nr ? 100 * match / nr : 0;
    } else if (!strcmp(metric, "word_accuracy")) {
        double total = 0;
        for (int i = 0; i < nr; i++) {
            char a[4096], b[4096], *ta[512], *tb[512];
            snprintf(a, sizeof a, "%s", refs[i]);
            snprintf(b, sizeof b, "%s", i < nt ? trans[i] : "");
            int na = split_space(a, ta, 512), nb = split_space(b, tb, 512), match = 0;
            for (int k = 0; k < na && k < nb; k++) match += strcmp(ta[k], tb[k]) == 0;
            total += 100.0 * match / (na > nb ? na : nb);
        }
        score = nr ? total / nr : 0;
    }
    nmt_free_lines(refs, nr);
    nmt_free_lines(trans, nt);
    return score;
}

vg_code nmt_decode_and_evaluate(nmt_infer_model *im, vg_session *sess, const nmt_hparams *hp, const char *src_file,
                                const char *ref_file, const char *trans_file, double *scores, int max_scores,
                                int *nscores, vg_status *st) {
    *nscores = 0;
    /* sess.run(iterator.initializer, feed_dict={src_placeholder: inference.load_data(src_file)}) */
    char **lines;
    int n;
    if (nmt_read_lines(src_file, &lines, &n) != 0)
        return vg_status_set(st, VG_NOT_FOUND, "cannot read %s", src_file);
    vg_tensor *src = vg_tensor_new(VG_STRING, (const int64_t[]){n}, 1, st);
    for (int i = 0; src && i < n; i++) vg_tensor_set_string(src, i, lines[i], strlen(lines[i]), st);
    nmt_free_lines(lines, n);
    if (!src) return st->code;
    vg_code rc = vg_session_run(sess, NULL, &im->src_placeholder, &src, 1, NULL, NULL, 0, &im->iterator.initializer, 1,
                                NULL, st);
    vg_tensor_free(src);
    if (rc != VG_OK) return rc;
    FILE *f = fopen(trans_file, "w");
    if (!f) return vg_status_set(st, VG_PERMISSION_DENIED, "cannot write %s", trans_file);
    bool beam = !strcmp(hp->infer_mode, "beam_search");
    int num_sentences = 0;
    for (;;) {
        /* model.decode(sess) = infer(): sample_words [time, batch] or [time, batch, beam]
         * (time major) and infer_summary (the attention images of a greedy attention
         * model; decode_and_evaluate does not write it) */
        vg_tensor *w = NULL, *outs[2] = {NULL, NULL};
        vg_output fetch[2] = {im->model.sample_words, im->model.infer_summary};
        rc = vg_session_run(sess, NULL, NULL, NULL, 0, fetch, outs, im->model.infer_summary.op ? 2 : 1, NULL, 0, NULL,
                            st);
        w = outs[0];
        vg_tensor_free(outs[1]);
        if (rc == VG_OUT_OF_RANGE) {
            rc = VG_OK;
            break;
        }
        if (rc != VG_OK) break;
        const int64_t *d = vg_tensor_dims(w);
        int64_t T = d[0], B = d[1], K = beam ? d[2] : 1;
        if (!hp->time_major) T = d[1], B = d[0]; /* [batch, time(, beam)] */
        for (int64_t b = 0; b < B; b++) {
            /* get_translation(nmt_outputs[0], sent_id, tgt_eos): the words up to the first </s> */
            bool first = true;
            for (int64_t t = 0; t < T; t++) {
                int64_t idx = hp->time_major ? (t * B + b) * K : (b * T + t) * K;
                size_t len;
                const char *s = vg_tensor_string(w, idx, &len);
                if (len == strlen(NMT_EOS) && !memcmp(s, NMT_EOS, len)) break;
                fprintf(f, "%s%.*s", first ? "" : " ", (int)len, s);
                first = false;
            }
            fputc('\n', f);
        }
        num_sentences += (int)B;
        vg_tensor_free(w);
    }
    fclose(f);
    if (rc != VG_OK) return rc;
    printf("  done, num sentences %d, num translations per input 1\n", num_sentences);
    /* evaluation_utils.evaluate for each metric */
    char metrics[256];
    snprintf(metrics, sizeof metrics, "%s", hp->metrics);
    for (char *save = NULL, *m = strtok_r(metrics, ",", &save); m && *nscores < max_scores;
         m = strtok_r(NULL, ",", &save)) {
        double s = nmt_evaluate(ref_file, trans_file, m);
        if (s < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown metric %s (or unreadable files)", m);
        scores[(*nscores)++] = s;
        printf("  %s: %.1f\n", m, s);
    }
    return VG_OK;
}
