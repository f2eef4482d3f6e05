/*
 * fuse_ew.c - plan-time fusion of element-wise chains (issue 30): the moments,
 * batch_normalization and tf.where chains that TF1 programs write by hand (the CIFAR
 * ResNet's batch norm and leaky ReLU, layer norm, their gradients) run one kernel per
 * chain instead of one pass over memory per op.
 *
 * A cluster is a set of plan nodes, all float32 element-wise ops of one output shape S
 * (AddV2/Add, Sub, Mul, RealDiv/Div, Maximum, Minimum, SquaredDifference, Neg, Square,
 * Relu, ReluGrad (those fuse.c left: it runs first), Identity (a plan-level alias of a
 * value, which joins as a copy), AddN, comparisons to bool,
 * Select with a condition of shape S, SelectV2,
 * ZerosLike / OnesLike, Tile of a scalar, per-channel or per-row vector up to S), plus
 * Sum / Mean of a member over every axis but the last (per-channel reductions, as
 * batch norm's moments and the gradients of broadcasting ops take them) or over the
 * last axis only (row reductions, any keep_dims: layer norm's moments and gradients).
 * Inputs from outside the cluster are S-shaped, scalars, vectors along S's last axis,
 * or per-row values (S's dims with the last one 1, as a row reduction with keep_dims
 * makes, broadcast along the row). Clusters grow along data edges
 * in topological order and stay convex: no path leaves a cluster and comes back (which
 * would make the fused node wait for itself); a member never reads a reduction of its
 * own cluster. Nodes with control edges (either way), fed or fetched-only-as-targets
 * special cases are left alone: a node whose output is fed, and nodes with control
 * inputs or control successors, never join.
 * A member may read a variable through its read Identity (layer norm's gamma and beta)
 * only in a cluster that no variable writer (a node taking a variable reference)
 * reaches: the fused node reads later than the member would have, and the plan's
 * reader -> writer ordering, made after fusion, then orders it before the writers.
 *
 * Rewrite of a cluster of two or more nodes: its last node (in topological order)
 * runs _VigilFusedElementwise (src/kernels/ew_fused.c) with the cluster's outside
 * inputs and one output per member value read outside the cluster (or fetched), and
 * per reduction; those members forward that output (_VigilFusedForward), the others
 * run NoOp with no inputs. Consumers keep reading the members' slots, traces still list
 * every node. Values are the separate kernels' per element; reductions are summed in a
 * fixed order (see ew_fused.c).
 *
 * One opt-in rewrite (issue 30, measured not to pay on the ResNet yet): fuse_moments
 * (tf.nn.moments' variance in its mean's pass, VG_EW_MOMENTS=1). A second one, remat
 * (a value of another cluster recomputed instead of read, VG_EW_REMAT=1), never paid in
 * any measurement and was removed (issue 30, session 21).
 */
#include "exec.h"
#include "ewfuse.h"
#include <stdlib.h>
#include <string.h>

void vg__ew_prog_free(vg__ew_prog *p) {
    if (!p) return;
    for (int i = 0; i < p->nins; i++) vg__free(p->ins[i].args);
    vg__free(p->in_kind);
    vg__free(p->in_bool);
    vg__free(p->ins);
    vg__free(p->outs);
    if (p->cache) vg__free(atomic_load(&p->cache->blk));
    vg__free(p->cache);
    vg__free(p);
}

/* Chain patterns (the kernel's specialised loops, ew_fused.c): nodes 0 .. nin-1 are the
 * pattern's inputs, node nin + k its instruction k. Input kinds: 'f' a float value,
 * full or broadcast (a program input, or an instruction of broadcast operands only,
 * which the kernel computes once per run), 'b' a full bool input, 'r' a float row
 * input. Output kinds: 's' stored float, 'b' stored bool, 'c' per-channel sum, 'w' row
 * sum (Sum or Mean: the scale is the program's). */
typedef struct ew_pat {
    int chain;
    const char *in;
    int nins;
    struct { int op, nargs, args[4]; } ins[8];
    int nouts;
    struct { int node; char kind; } outs[4];
} ew_pat;

static const ew_pat ew_pats[] = {
    /* y = x * a + b, mask = y < z, out = mask ? s * y : y */
    {VG__EW_CHAIN_BN_LEAKY, "fffff", 5,
     {{VG__EWI_MUL, 2, {0, 1}}, {VG__EWI_ADD, 2, {5, 2}}, {VG__EWI_LESS, 2, {6, 3}}, {VG__EWI_MUL, 2, {4, 6}},
      {VG__EWI_SELECT, 3, {7, 8, 6}}},
     2, {{7, 'b'}, {9, 's'}}},
    /* g = mask ? d : 0, h = mask ? 0 : d, u = h + s * g, v = x * u, w = u * c */
    {VG__EW_CHAIN_BN_LEAKY_GRAD, "bffff", 7,
     {{VG__EWI_ZERO, 0, {0}}, {VG__EWI_SELECT, 3, {0, 1, 5}}, {VG__EWI_SELECT, 3, {0, 5, 1}}, {VG__EWI_MUL, 2, {2, 6}},
      {VG__EWI_ADDN, 2, {7, 8}}, {VG__EWI_MUL, 2, {3, 9}}, {VG__EWI_MUL, 2, {9, 4}}},
     3, {{9, 'c'}, {11, 's'}, {10, 'c'}}},
    /* dx = (r + k * (x - mu)) + q */
    {VG__EW_CHAIN_BN_DX, "fffff", 3,
     {{VG__EWI_SUB, 2, {0, 1}}, {VG__EWI_MUL, 2, {2, 5}}, {VG__EWI_ADDN, 3, {3, 6, 4}}},
     1, {{7, 's'}}},
    /* dx = ((r + r2) + k * (x - mu)) + q */
    {VG__EW_CHAIN_BN_DX, "ffffff", 3,
     {{VG__EWI_SUB, 2, {0, 1}}, {VG__EWI_MUL, 2, {2, 6}}, {VG__EWI_ADDN, 4, {3, 5, 7, 4}}},
     1, {{8, 's'}}},
    /* k = rstd * gamma, y = x * k + (beta - mean * k) */
    {VG__EW_CHAIN_LN, "rffrf", 5,
     {{VG__EWI_MUL, 2, {0, 1}}, {VG__EWI_MUL, 2, {2, 5}}, {VG__EWI_MUL, 2, {3, 5}}, {VG__EWI_SUB, 2, {4, 7}},
      {VG__EWI_ADD, 2, {6, 8}}},
     2, {{5, 's'}, {9, 's'}}},
    /* a = g * x, n = -x, u = a + rs * n, v = n * y, w = rr * u, z = u * c */
    {VG__EW_CHAIN_LN_GRAD, "ffrfrf", 7,
     {{VG__EWI_MUL, 2, {0, 1}}, {VG__EWI_NEG, 1, {1}}, {VG__EWI_MUL, 2, {2, 7}}, {VG__EWI_MUL, 2, {7, 3}},
      {VG__EWI_ADDN, 2, {6, 8}}, {VG__EWI_MUL, 2, {4, 10}}, {VG__EWI_MUL, 2, {10, 5}}},
     3, {{9, 'w'}, {11, 'c'}, {12, 'w'}}},
};

typedef struct ew_mst {
    const ew_pat *P;
    const vg__ew_prog *p;
    const bool *bc; /* per register: broadcast operands only, read by no output */
    int bind[VG__EW_CHAIN_MAXREG];
} ew_mst;

/* r with copies (Identity, Tile) looked through */
static int ew_resolve(const vg__ew_prog *p, int r) {
    while (r >= p->ninputs && p->ins[r - p->ninputs].op == VG__EWI_COPY && p->ins[r - p->ninputs].nargs == 1)
        r = p->ins[r - p->ninputs].args[0];
    return r;
}

/* Binds pattern nodes pn[0 .. np) to registers rg[0 .. np) (the last first), with
 * backtracking over the operand orders of commutative instructions. */
static bool ew_solve(ew_mst *m, const int *pn, const int *rg, int np) {
    if (np == 0) return true;
    const ew_pat *P = m->P;
    const vg__ew_prog *p = m->p;
    int a = pn[np - 1], r = ew_resolve(p, rg[np - 1]);
    np--;
    if (a < (int)strlen(P->in)) { /* a pattern input */
        if (m->bind[a] >= 0) return m->bind[a] == r && ew_solve(m, pn, rg, np);
        char k = P->in[a];
        bool ok;
        if (r < p->ninputs)
            ok = k == 'f'   ? !p->in_bool[r] && p->in_kind[r] != VG__EWIN_ROW
                 : k == 'b' ? p->in_bool[r] && p->in_kind[r] == VG__EWIN_FULL
                            : !p->in_bool[r] && p->in_kind[r] == VG__EWIN_ROW;
        else ok = k == 'f' && m->bc[r];
        if (!ok) return false;
        m->bind[a] = r;
        if (ew_solve(m, pn, rg, np)) return true;
        m->bind[a] = -1;
        return false;
    }
    if (r < p->ninputs) return false;
    const vg__ew_ins *in = &p->ins[r - p->ninputs];
    const int pi = a - (int)strlen(P->in), op = P->ins[pi].op, na = P->ins[pi].nargs;
    if (na == 0) /* ZerosLike / OnesLike: any instance */
        return in->op == op && in->nargs == 0 && (m->bind[a] = r, ew_solve(m, pn, rg, np));
    if (m->bind[a] >= 0) return m->bind[a] == r && ew_solve(m, pn, rg, np);
    if (in->nargs != na) return false;
    for (int v = 0; v < 3; v++) {
        bool swap; /* the program's first two operands in the other order */
        if (v == 0) {
            if (in->op != op) continue;
            swap = false;
        } else if (v == 1) { /* a + b == b + a, a * b == b * a, bit for bit */
            if (in->op != op || !(op == VG__EWI_ADD || op == VG__EWI_MUL || op == VG__EWI_ADDN)) continue;
            swap = true;
        } else { /* b > a is a < b, b >= a is a <= b (false with NaN either way) */
            if (!((op == VG__EWI_LESS && in->op == VG__EWI_GREATER) ||
                  (op == VG__EWI_LESS_EQUAL && in->op == VG__EWI_GREATER_EQUAL)))
                continue;
            swap = true;
        }
        int pn2[64], rg2[64];
        if (np + na > 64) return false;
        memcpy(pn2, pn, sizeof(int) * (size_t)np);
        memcpy(rg2, rg, sizeof(int) * (size_t)np);
        for (int q = 0; q < na; q++) {
            pn2[np + q] = P->ins[pi].args[q];
            rg2[np + q] = in->args[swap && q < 2 ? 1 - q : q];
        }
        m->bind[a] = r;
        if (ew_solve(m, pn2, rg2, np + na)) return true;
        m->bind[a] = -1;
    }
    return false;
}

static char ew_out_kind(const vg__ew_out *o) {
    return o->reduce ? (o->row ? 'w' : o->var ? 'v' : 'c') : o->is_bool ? 'b' : 's';
}

void vg__ew_prog_match_chain(vg__ew_prog *p) {
    p->chain = VG__EW_CHAIN_NONE;
    int nr = p->ninputs + p->nins;
    if (p->nouts < 1 || p->nouts > 4 || nr > 256) return;
    bool bc[256];
    for (int i = 0; i < p->ninputs; i++) bc[i] = p->in_kind[i] == VG__EWIN_SCALAR || p->in_kind[i] == VG__EWIN_CHANNEL;
    for (int k = 0; k < p->nins; k++) { /* as the kernel hoists (ew_fused.c) */
        bool all = true;
        for (int a = 0; a < p->ins[k].nargs; a++) all = all && bc[p->ins[k].args[a]];
        for (int o = 0; o < p->nouts; o++) all = all && p->outs[o].reg != p->ninputs + k;
        bc[p->ninputs + k] = all;
    }
    for (size_t t = 0; t < sizeof ew_pats / sizeof ew_pats[0]; t++) {
        const ew_pat *P = &ew_pats[t];
        if (P->nouts != p->nouts) continue;
        /* the program's outputs to the pattern's, each order of the permutations of
         * nouts (at most 4: 24) */
        int perm[4] = {0, 1, 2, 3}, n = p->nouts;
        for (;;) {
            bool kinds = true;
            for (int k = 0; k < n && kinds; k++) kinds = ew_out_kind(&p->outs[perm[k]]) == P->outs[k].kind;
            if (kinds) {
                ew_mst m = {.P = P, .p = p, .bc = bc};
                int pn[4], rg[4];
                for (int k = 0; k < VG__EW_CHAIN_MAXREG; k++) m.bind[k] = -1;
                for (int k = 0; k < n; k++) pn[n - 1 - k] = P->outs[k].node, rg[n - 1 - k] = p->outs[perm[k]].reg;
                if (ew_solve(&m, pn, rg, n)) {
                    p->chain = P->chain;
                    p->chain_nin = (int)strlen(P->in);
                    memcpy(p->chain_reg, m.bind, sizeof m.bind);
                    for (int k = 0; k < n; k++) p->chain_out[k] = perm[k];
                    return;
                }
            }
            /* the next permutation (lexicographic) */
            int i = n - 2;
            while (i >= 0 && perm[i] >= perm[i + 1]) i--;
            if (i < 0) break;
            int j = n - 1;
            while (perm[j] <= perm[i]) j--;
            int tmp = perm[i];
            perm[i] = perm[j], perm[j] = tmp;
            for (int a = i + 1, b = n - 1; a < b; a++, b--) tmp = perm[a], perm[a] = perm[b], perm[b] = tmp;
        }
    }
}

enum { K_BIN, K_CMP, K_SELECT, K_SELECT2, K_UN, K_CONST, K_ADDN, K_TILE, K_RED, K_VAR };

/* A per-channel reduction: Sum / Mean, or a moments variance read straight from x (fuse_moments) */
static bool is_red(int kind) { return kind == K_RED || kind == K_VAR; }

/* an opt-in switch from the environment: on when it starts with 1 */
static bool env_is_1(const char *name) {
    const char *e = getenv(name);
    return e && e[0] == '1';
}

static const struct ew_type {
    const char *type;
    int kind, code;
} ew_types[] = {
    {"AddV2", K_BIN, VG__EWI_ADD}, {"Add", K_BIN, VG__EWI_ADD}, {"Sub", K_BIN, VG__EWI_SUB},
    {"Mul", K_BIN, VG__EWI_MUL}, {"RealDiv", K_BIN, VG__EWI_DIV}, {"Div", K_BIN, VG__EWI_DIV},
    {"Maximum", K_BIN, VG__EWI_MAX}, {"Minimum", K_BIN, VG__EWI_MIN},
    {"SquaredDifference", K_BIN, VG__EWI_SQDIFF}, {"Less", K_CMP, VG__EWI_LESS},
    {"LessEqual", K_CMP, VG__EWI_LESS_EQUAL}, {"Greater", K_CMP, VG__EWI_GREATER},
    {"GreaterEqual", K_CMP, VG__EWI_GREATER_EQUAL}, {"Select", K_SELECT, VG__EWI_SELECT},
    {"SelectV2", K_SELECT2, VG__EWI_SELECT}, {"Neg", K_UN, VG__EWI_NEG}, {"Square", K_UN, VG__EWI_SQUARE},
    {"Identity", K_UN, VG__EWI_COPY}, {"ZerosLike", K_CONST, VG__EWI_ZERO}, {"OnesLike", K_CONST, VG__EWI_ONE},
    {"Relu", K_UN, VG__EWI_RELU}, {"ReluGrad", K_BIN, VG__EWI_RELU_GRAD}, {"AddN", K_ADDN, VG__EWI_ADDN},
    {"Tile", K_TILE, VG__EWI_COPY}, {"Sum", K_RED, 0}, {"Mean", K_RED, 0},
};

typedef struct cand {
    int kind, code;
    int ndata;       /* inputs 0 .. ndata-1 carry data into the cluster */
    int nd;          /* S */
    int64_t dims[8];
    bool mean;
    bool row;        /* K_RED over the last axis */
    bool rv;         /* reads a variable through an Identity */
    int pair;        /* K_VAR: the moments' mean node (same x), which it joins */
} cand;

typedef struct fctx {
    vg__plan *p;
    int *succ_cap;
    cand *c;         /* per node; kind -1: not a candidate */
    int *prod;       /* per slot: producing node (-1: fed / none) */
    int *rank;       /* topological rank */
    int *parent;     /* union-find over candidates */
    int **mem;       /* per root: members */
    int *nmem, *capmem;
    int *mark, *seen, *stack;
    bool *wreach;    /* per node: reachable from a node that may write a variable */
    int stamp;
} fctx;

static bool same_dims(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* An input of shape (nd, d) relative to S: full, scalar, channel vector, row vector
 * (S's rank and dims but the last, which is 1), or -1. */
static int in_kind(vg_shape s, const cand *c) {
    if (s.ndims < 0 || s.ndims > 8) return -1;
    int64_t n = 1;
    for (int i = 0; i < s.ndims; i++) {
        if (s.dims[i] < 0) return -1;
        n *= s.dims[i];
    }
    if (same_dims(s.ndims, s.dims, c->nd, c->dims)) return VG__EWIN_FULL;
    if (s.ndims > c->nd) return -1;
    if (n == 1) return VG__EWIN_SCALAR;
    int64_t C = c->dims[c->nd - 1];
    if (n == C && s.dims[s.ndims - 1] == C) return VG__EWIN_CHANNEL;
    if (s.ndims == c->nd && s.dims[s.ndims - 1] == 1 && same_dims(s.ndims - 1, s.dims, c->nd - 1, c->dims))
        return VG__EWIN_ROW;
    return -1;
}

/* The const value behind slot s (a Const node's tensor), or NULL. */
static const vg_tensor *slot_const(const fctx *f, int s) {
    int q = s >= 0 ? f->prod[s] : -1;
    return q >= 0 && f->p->nodes[q].kind == VG__K_CONST ? f->p->nodes[q].const_value : NULL;
}

static bool classify(fctx *f, int i, const bool *ctrl_src) {
    vg__node *n = &f->p->nodes[i];
    cand *c = &f->c[i];
    c->kind = -1;
    vg_op *op = n->op;
    /* an Identity (a plan-level alias, VG__K_IDENTITY) of a value, not of a variable
     * reference, joins as a copy: it would otherwise split a cluster it sits inside
     * (a path out of the cluster and back in); its node runs as a kernel afterwards */
    bool ident = n->kind == VG__K_IDENTITY && !strcmp(op->def->type, "Identity");
    if (ident) { /* only of an element-wise op's value, inside a chain: of another value (a
                    convolution's, a feed's) the alias is free, a member's copy would not be */
        int q = n->ninputs == 1 && n->in_slot[0] >= 0 ? f->prod[n->in_slot[0]] : -1;
        bool ew_src = false;
        for (size_t k = 0; q >= 0 && k < sizeof ew_types / sizeof ew_types[0] && !ew_src; k++)
            ew_src = f->p->nodes[q].kind == VG__K_KERNEL && f->p->nodes[q].op->def &&
                     !strcmp(f->p->nodes[q].op->def->type, ew_types[k].type) && ew_types[k].kind != K_RED;
        if (!ew_src) return false;
    }
    if ((n->kind != VG__K_KERNEL && !ident) || n->amp || n->def != op->def || n->noutputs != 1 || n->out_base < 0 || vg__plan_node_fed(n) ||
        op->ncontrol > 0 || ctrl_src[i] || n->ninputs < 1)
        return false;
    const struct ew_type *t = NULL;
    for (size_t k = 0; k < sizeof ew_types / sizeof ew_types[0] && !t; k++)
        if (!strcmp(op->def->type, ew_types[k].type)) t = &ew_types[k];
    if (!t) return false;
    for (int k = 0; k < n->ninputs; k++)
        if (n->in_var[k] || n->in_slot[k] < 0) return false;
    vg_output y = vg_out(op, 0);
    vg_shape full = t->kind == K_RED ? vg_output_shape(vg_op_input(op, 0)) : vg_output_shape(y);
    if (full.ndims < 1 || full.ndims > 8) return false;
    int64_t nel = 1;
    for (int k = 0; k < full.ndims; k++) {
        if (full.dims[k] <= 0) return false;
        nel *= full.dims[k];
    }
    c->nd = full.ndims;
    memcpy(c->dims, full.dims, sizeof(int64_t) * (size_t)full.ndims);
    vg_dtype want_out = t->kind == K_CMP ? VG_BOOL : VG_FLOAT;
    if (vg_output_dtype(y) != want_out) return false;
    c->code = t->code;
    c->ndata = t->kind == K_CONST ? 0 : t->kind == K_TILE || t->kind == K_RED ? 1 : n->ninputs;
    for (int k = 0; k < c->ndata; k++) {
        vg_output in = vg_op_input(op, k);
        bool cond = (t->kind == K_SELECT || t->kind == K_SELECT2) && k == 0;
        if (vg_output_dtype(in) != (cond ? VG_BOOL : VG_FLOAT)) return false;
        int ik = in_kind(vg_output_shape(in), c);
        if (ik < 0 || (t->kind == K_SELECT && k == 0 && ik != VG__EWIN_FULL) ||
            ((t->kind == K_ADDN || t->kind == K_RED) && ik != VG__EWIN_FULL))
            return false;
    }
    if (t->kind == K_RED) {
        if (full.ndims < 2 || n->ninputs != 2) return false;
        const vg_tensor *ax = slot_const(f, n->in_slot[1]);
        if (!ax) return false;
        int64_t nax = vg_tensor_num_elements(ax);
        vg_dtype adt = vg_tensor_dtype(ax);
        if (adt != VG_INT32 && adt != VG_INT64) return false;
        bool seen[8] = {false};
        for (int64_t k = 0; k < nax && k < 8; k++) {
            int64_t a = adt == VG_INT32 ? ((const int32_t *)vg_tensor_data(ax))[k] : ((const int64_t *)vg_tensor_data(ax))[k];
            if (a < 0) a += full.ndims;
            if (a < 0 || a >= full.ndims || seen[a]) return false;
            seen[a] = true;
        }
        /* exactly the last axis (a row reduction), or every axis but the last */
        c->row = nax == 1 && seen[full.ndims - 1];
        if (!c->row && (nax != full.ndims - 1 || seen[full.ndims - 1])) return false;
        vg_shape ys = vg_output_shape(y);
        if (ys.ndims < 0 || ys.ndims > 8) return false;
        int64_t yn = 1;
        for (int k = 0; k < ys.ndims; k++) {
            if (ys.dims[k] < 0) return false;
            yn *= ys.dims[k];
        }
        if (c->row ? yn != nel / full.dims[full.ndims - 1]
                   : ys.ndims < 1 || ys.dims[ys.ndims - 1] != full.dims[full.ndims - 1])
            return false;
        c->mean = !strcmp(op->def->type, "Mean");
    }
    if (t->kind == K_TILE && in_kind(vg_output_shape(vg_op_input(op, 0)), c) < 0) return false;
    /* a member reading a variable moves the read to the fused node's time: a variable
     * itself, or through a RefIdentity, stays out; through an Identity (a variable's
     * read, maybe behind ops that alias their input) the member may join a cluster that
     * no variable writer reaches (can_merge), whose fused node the plan then orders
     * before the writers like any reader */
    c->rv = false;
    for (int k = 0; k < c->ndata; k++) {
        int q = f->prod[n->in_slot[k]];
        for (int hop = 0; q >= 0 && hop < 4; hop++) {
            const vg__node *pn = &f->p->nodes[q];
            if (pn->kind == VG__K_VARIABLE || (pn->op->def->flags & VG__OP_VARIABLE)) {
                if (hop == 0) return false;
                c->rv = true;
                break;
            }
            const char *pt = pn->op->def->type;
            if (!strcmp(pt, "RefIdentity")) return false;
            if (strcmp(pt, "Identity") && strcmp(pt, "Snapshot") && strcmp(pt, "Reshape") && strcmp(pt, "StopGradient") &&
                strcmp(pt, "ExpandDims") && strcmp(pt, "Squeeze"))
                break;
            q = pn->ninputs > 0 && pn->in_slot[0] >= 0 ? f->prod[pn->in_slot[0]] : -1;
            if (pn->ninputs > 0 && pn->in_var[0]) {
                c->rv = true;
                break;
            }
        }
    }
    c->kind = t->kind;
    return true;
}

static int find(fctx *f, int i) {
    while (f->parent[i] != i) i = f->parent[i] = f->parent[f->parent[i]];
    return i;
}

/* Would the union of the clusters roots[0 .. nr) be convex, with no member reading a
 * reduction of the union, and, where a member reads a variable, no member reachable
 * from a variable writer? */
static bool can_merge(fctx *f, const int *roots, int nr) {
    vg__plan *p = f->p;
    int st = ++f->stamp, maxrank = -1, sp = 0;
    bool rv = false, wr = false;
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < f->nmem[roots[r]]; k++) {
            int m = f->mem[roots[r]][k];
            f->mark[m] = st;
            if (f->rank[m] > maxrank) maxrank = f->rank[m];
            rv |= f->c[m].rv;
            wr |= f->wreach[m];
        }
    if (rv && wr) return false;
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < f->nmem[roots[r]]; k++) {
            int m = f->mem[roots[r]][k];
            const cand *c = &f->c[m];
            for (int q = 0; q < c->ndata; q++) { /* a member reading a member's reduction */
                int src = f->prod[p->nodes[m].in_slot[q]];
                if (src >= 0 && f->mark[src] == st && is_red(f->c[src].kind)) return false;
            }
            for (int e = 0; e < p->nodes[m].nsucc; e++) {
                int y = p->nodes[m].succ[e];
                if (f->mark[y] == st || f->seen[y] == st || f->rank[y] > maxrank) continue;
                f->seen[y] = st;
                f->stack[sp++] = y;
            }
        }
    while (sp) {
        int x = f->stack[--sp];
        for (int e = 0; e < p->nodes[x].nsucc; e++) {
            int y = p->nodes[x].succ[e];
            if (f->mark[y] == st) return false; /* out of the union and back in */
            if (f->seen[y] == st || f->rank[y] > maxrank) continue;
            f->seen[y] = st;
            f->stack[sp++] = y;
        }
    }
    return true;
}

static bool merge(fctx *f, int a, int b) {
    if (f->nmem[a] < f->nmem[b]) {
        int t = a;
        a = b, b = t;
    }
    if (!vg__grow((void **)&f->mem[a], &f->capmem[a], f->nmem[a] + f->nmem[b], sizeof(int))) return false;
    memcpy(f->mem[a] + f->nmem[a], f->mem[b], sizeof(int) * (size_t)f->nmem[b]);
    f->nmem[a] += f->nmem[b];
    f->nmem[b] = 0;
    f->parent[b] = a;
    return true;
}

static void drop_succ(vg__node *n, int x) {
    for (int e = 0; e < n->nsucc; e++)
        if (n->succ[e] == x) {
            n->succ[e] = n->succ[--n->nsucc];
            e--;
        }
}

static bool add_succ_once(fctx *f, int from, int to) { return vg__plan_add_succ_once(f->p, f->succ_cap, from, to); }

/* The cluster's outside inputs (distinct slots, in member order); members marked with
 * stamp st. Returns the count, -1 on OOM (*ext freed by the caller). */
static int ext_inputs(const fctx *f, const int *m, int nm, int st, int **ext) {
    int next = 0, cap = 0;
    *ext = NULL;
    for (int k = 0; k < nm; k++) {
        const cand *c = &f->c[m[k]];
        for (int q = 0; q < c->ndata; q++) {
            int s = f->p->nodes[m[k]].in_slot[q], src = f->prod[s];
            if (src >= 0 && f->mark[src] == st) continue;
            int e = 0;
            while (e < next && (*ext)[e] != s) e++;
            if (e < next) continue;
            if (!vg__grow((void **)ext, &cap, next + 1, sizeof(int))) return -1;
            (*ext)[next++] = s;
        }
    }
    return next;
}

static int mark_cluster(fctx *f, const int *m, int nm) {
    int st = ++f->stamp;
    for (int k = 0; k < nm; k++) f->mark[m[k]] = st;
    return st;
}

/* Rewrites one cluster (members sorted by rank; slot_uses count only reads from
 * outside the members, F's included). Returns false on OOM. */
static bool rewrite(fctx *f, int *m, int nm, const vg__op_def *ew, const vg__op_def *fwd, const vg__op_def *noop) {
    vg__plan *p = f->p;
    int st = mark_cluster(f, m, nm), F = m[nm - 1];
    int *ext = NULL, *reg = NULL, *outk = NULL, *fin = NULL;
    vg__var **fvar = NULL;
    vg__ew_prog *pr = vg__calloc(1, sizeof *pr);
    int next = ext_inputs(f, m, nm, st, &ext);
    reg = vg__malloc(sizeof(int) * (size_t)(nm + 1));
    outk = vg__malloc(sizeof(int) * (size_t)(nm + 1));
    if (!pr || next < 0 || !reg || !outk) goto oom;
    const cand *c0 = &f->c[F];
    pr->ndims = c0->nd;
    memcpy(pr->dims, c0->dims, sizeof(int64_t) * (size_t)c0->nd);
    pr->n = 1;
    for (int k = 0; k < c0->nd; k++) pr->n *= c0->dims[k];
    pr->C = c0->dims[c0->nd - 1];
    pr->ninputs = next;
    pr->in_kind = vg__calloc((size_t)next + 1, sizeof(int));
    pr->in_bool = vg__calloc((size_t)next + 1, sizeof(bool));
    pr->ins = vg__calloc((size_t)nm + 1, sizeof(vg__ew_ins));
    pr->outs = vg__calloc((size_t)nm + 1, sizeof(vg__ew_out));
    fin = vg__malloc(sizeof(int) * (size_t)(next + 1));
    fvar = vg__calloc((size_t)next + 1, sizeof(vg__var *));
    pr->cache = vg__calloc(1, sizeof *pr->cache);
    if (!pr->in_kind || !pr->in_bool || !pr->ins || !pr->outs || !fin || !fvar || !pr->cache) goto oom;
    atomic_init(&pr->cache->blk, NULL);
    for (int k = 0; k < nm; k++) {
        const cand *c = &f->c[m[k]];
        for (int q = 0; q < c->ndata; q++) {
            int s = p->nodes[m[k]].in_slot[q];
            for (int e = 0; e < next; e++)
                if (ext[e] == s) {
                    vg_output in = vg_op_input(p->nodes[m[k]].op, q);
                    pr->in_kind[e] = in_kind(vg_output_shape(in), c0);
                    pr->in_bool[e] = vg_output_dtype(in) == VG_BOOL;
                }
        }
    }
    /* instructions in rank order; reg[k]: member k's register */
    for (int k = 0; k < nm; k++) {
        const cand *c = &f->c[m[k]];
        reg[k] = -1;
        if (is_red(c->kind)) continue;
        vg__ew_ins *in = &pr->ins[pr->nins];
        in->op = c->code;
        in->nargs = c->ndata;
        if (c->ndata && !(in->args = vg__malloc(sizeof(int) * (size_t)c->ndata))) goto oom;
        for (int q = 0; q < c->ndata; q++) {
            int s = p->nodes[m[k]].in_slot[q], src = f->prod[s], r = -1;
            if (src >= 0 && f->mark[src] == st) {
                for (int j = 0; j < k; j++)
                    if (m[j] == src) r = reg[j];
            } else {
                for (int e = 0; e < next; e++)
                    if (ext[e] == s) r = e;
            }
            in->args[q] = r;
        }
        reg[k] = pr->ninputs + pr->nins++;
    }
    /* outputs: member values read outside (or fetched), and every reduction */
    int nout = 0;
    for (int k = 0; k < nm; k++) {
        vg__node *n = &p->nodes[m[k]];
        const cand *c = &f->c[m[k]];
        outk[k] = -1;
        if (!is_red(c->kind) && p->slot_uses[n->out_base] <= 0) continue;
        vg__ew_out *o = &pr->outs[nout];
        outk[k] = nout++;
        if (is_red(c->kind)) {
            int src = f->prod[n->in_slot[0]];
            o->reg = -1;
            for (int j = 0; j < k; j++)
                if (m[j] == src) o->reg = reg[j];
            for (int e = 0; e < next && o->reg < 0; e++) /* x from outside (a moments pair) */
                if (ext[e] == n->in_slot[0]) o->reg = e;
            o->reduce = true;
            o->var = c->kind == K_VAR;
            o->row = c->row;
            o->scale = !c->mean ? 1.0 : c->row ? 1.0 / (double)pr->C : (double)pr->C / (double)pr->n;
            vg_shape ys = vg_output_shape(vg_out(n->op, 0));
            o->ndims = ys.ndims;
            memcpy(o->dims, ys.dims, sizeof(int64_t) * (size_t)ys.ndims);
        } else {
            o->reg = reg[k];
            o->is_bool = c->kind == K_CMP;
        }
    }
    pr->nouts = nout;
    int base = p->nslots;
    int *uses = vg__realloc(p->slot_uses, sizeof(int) * (size_t)(p->nslots + 1),
                            sizeof(int) * (size_t)(p->nslots + nout + 1));
    if (!uses) goto oom;
    p->slot_uses = uses;
    int *prod = vg__realloc(f->prod, sizeof(int) * (size_t)(p->nslots + 1), sizeof(int) * (size_t)(p->nslots + nout + 1));
    if (!prod) goto oom;
    f->prod = prod;
    p->nslots += nout;
    for (int k = 0; k < nout; k++) uses[base + k] = 1, prod[base + k] = F;
    /* edges: members lose their incoming data edges; outside producers feed F */
    for (int k = 0; k < nm; k++) {
        vg__node *n = &p->nodes[m[k]];
        for (int q = 0; q < n->ninputs; q++) {
            int src = n->in_slot[q] >= 0 ? prod[n->in_slot[q]] : -1;
            if (src >= 0) drop_succ(&p->nodes[src], m[k]);
        }
    }
    for (int e = 0; e < next; e++) {
        int src = prod[ext[e]];
        if (src >= 0 && !add_succ_once(f, src, F)) goto oom;
    }
    /* F's own value, when read outside: its readers and fetches move to F's output */
    for (int k = 0; k < nm; k++) {
        if (m[k] != F || outk[k] < 0) continue;
        int old = p->nodes[F].out_base, ns = base + outk[k];
        for (int i = 0; i < p->nnodes; i++)
            for (int q = 0; q < p->nodes[i].ninputs; q++)
                if (p->nodes[i].in_slot[q] == old) p->nodes[i].in_slot[q] = ns;
        for (int fi = 0; fi < p->nfetches; fi++)
            if (p->fetch_slot[fi] == old) p->fetch_slot[fi] = ns;
        uses[ns] = uses[old];
        uses[old] = 0;
    }
    if (next > 0) memcpy(fin, ext, sizeof(int) * (size_t)next); /* a cluster of constants has none */
    vg__node *fn = &p->nodes[F];
    vg__free(fn->in_slot);
    vg__free(fn->in_var);
    fn->in_slot = fin, fin = NULL;
    fn->in_var = fvar, fvar = NULL;
    fn->ninputs = next;
    fn->noutputs = nout;
    fn->out_base = base;
    vg__ew_prog_match_chain(pr);
    fn->def = ew;
    fn->ew_prog = pr, pr = NULL;
    fn->nsucc = 0;
    for (int k = 0; k < nm; k++) p->nodes[m[k]].kind = VG__K_KERNEL; /* an Identity member no longer aliases */
    /* the other members forward an output of F, or do nothing */
    for (int k = 0; k < nm; k++) {
        if (m[k] == F) continue;
        vg__node *n = &p->nodes[m[k]];
        n->nsucc = 0;
        if (outk[k] >= 0) {
            n->def = fwd;
            n->ninputs = 1;
            n->in_slot[0] = base + outk[k];
            n->in_var[0] = NULL;
            if (!add_succ_once(f, F, m[k])) goto oom;
        } else {
            n->def = noop;
            n->ninputs = 0;
        }
    }
    /* outside readers of the outputs: an edge from the forwarder (or F) */
    for (int i = 0; i < p->nnodes; i++) {
        if (f->mark[i] == st) continue;
        vg__node *r = &p->nodes[i];
        for (int q = 0; q < r->ninputs; q++) {
            int s = r->in_slot[q], src = s >= 0 ? prod[s] : -1;
            if (src >= 0 && f->mark[src] == st && !add_succ_once(f, src, i)) goto oom;
        }
    }
    vg__free(ext);
    vg__free(reg);
    vg__free(outk);
    return true;
oom:
    vg__free(ext);
    vg__free(reg);
    vg__free(outk);
    vg__free(fin);
    vg__free(fvar);
    vg__ew_prog_free(pr);
    return false;
}


/* tf.nn.moments' variance, Mean(SquaredDifference(x, StopGradient(mean)), axes) with
 * mean = Mean(x, axes) over every axis but the last (OFF by default, see below): the
 * variance node (V) reads x itself and becomes K_VAR, computed in the pass that sums the
 * mean (one read of x instead of two); the SquaredDifference node (read by V alone)
 * runs NoOp. The mean's value and the StopGradient's other readers (the gradient) are
 * unchanged. V's value is the same biased variance up to float rounding: per tile, the
 * channel's mean and squared deviations (float, from the tile in L1), combined across
 * tiles and pieces in double (Chan et al.) in a fixed order.
 * Measured (the batch norm + leaky ReLU forward and gradient at batch 128, 1 thread,
 * median of 5-7 alternating runs on a loaded 2-vCPU host): the moments alone get faster
 * at every size (forward-only 1.55 -> 1.33 ms at [128,32,32,16], 0.37 -> 0.24 ms at
 * [128,16,16,32] read straight from a conv), but the whole step got slower at 16 and 32
 * channels (8.8 -> 9.3 ms, 4.0 -> 4.15 ms; the unchanged gradient passes slowed, not
 * understood) and faster at 64 (2.0 -> 1.77 ms). So it runs only with
 * VG_EW_MOMENTS=1 (or vg__ew_set_moments(true)). */
static atomic_int g_moments = -1; /* -1: VG_EW_MOMENTS not read yet */

bool vg__ew_set_moments(bool on) {
    int old = atomic_exchange(&g_moments, on ? 1 : 0);
    return old < 0 ? env_is_1("VG_EW_MOMENTS") : old != 0;
}

static bool fuse_moments(fctx *f, const bool *ctrl_src, const vg__op_def *noop) {
    int unread = -1;
    atomic_compare_exchange_strong(&g_moments, &unread, env_is_1("VG_EW_MOMENTS") ? 1 : 0);
    if (!atomic_load(&g_moments)) return true;
    vg__plan *p = f->p;
    for (int v = 0; v < p->nnodes; v++) {
        cand *cv = &f->c[v];
        vg__node *vn = &p->nodes[v];
        if (cv->kind != K_RED || cv->row || !cv->mean) continue;
        int sq = f->prod[vn->in_slot[0]];
        if (sq < 0) continue;
        vg__node *sn = &p->nodes[sq];
        if (sn->kind != VG__K_KERNEL || sn->amp || sn->def != sn->op->def || strcmp(sn->def->type, "SquaredDifference") ||
            sn->ninputs != 2 || sn->noutputs != 1 || sn->out_base != vn->in_slot[0] || vg__plan_node_fed(sn) ||
            sn->op->ncontrol > 0 || ctrl_src[sq] || p->slot_uses[sn->out_base] != 1 || sn->in_slot[0] < 0 ||
            sn->in_slot[1] < 0 || sn->in_var[0] || sn->in_var[1])
            continue;
        int mi = -1, xs = -1;
        for (int k = 0; k < 2 && mi < 0; k++) { /* x and StopGradient(mean), either order */
            int g = f->prod[sn->in_slot[1 - k]];
            if (g < 0) continue;
            const vg__node *gn = &p->nodes[g];
            if (strcmp(gn->op->def->type, "StopGradient") && strcmp(gn->op->def->type, "Identity")) continue;
            if (gn->ninputs != 1 || gn->in_slot[0] < 0 || gn->in_var[0] || vg__plan_node_fed(gn)) continue;
            int m = f->prod[gn->in_slot[0]];
            if (m < 0 || m == v || f->c[m].kind != K_RED || f->c[m].row || !f->c[m].mean) continue;
            if (p->nodes[m].in_slot[0] != sn->in_slot[k] || p->nodes[m].out_base != gn->in_slot[0]) continue;
            if (!same_dims(f->c[m].nd, f->c[m].dims, cv->nd, cv->dims)) continue;
            mi = m, xs = sn->in_slot[k];
        }
        if (mi < 0) continue;
        if (f->prod[xs] >= 0 && !add_succ_once(f, f->prod[xs], v)) return false;
        /* V reads x; the SquaredDifference reads and writes nothing */
        p->slot_uses[vn->in_slot[0]]--;
        vn->in_slot[0] = xs;
        p->slot_uses[xs]++;
        for (int k = 0; k < 2; k++) {
            int src = f->prod[sn->in_slot[k]];
            p->slot_uses[sn->in_slot[k]]--;
            if (src >= 0) drop_succ(&p->nodes[src], sq);
        }
        drop_succ(sn, v);
        sn->ninputs = 0;
        sn->def = noop;
        f->c[sq].kind = -1;
        cv->kind = K_VAR;
        cv->pair = mi;
    }
    return true;
}


bool vg__plan_fuse_elementwise(vg__plan *p, int *succ_cap) {
    const vg__op_def *ew = vg__registry_find("_VigilFusedElementwise");
    const vg__op_def *fwd = vg__registry_find("_VigilFusedForward");
    const vg__op_def *noop = vg__registry_find("NoOp");
    if (!ew || !fwd || !noop || p->nnodes < 2) return true;
    static atomic_int env = -1; /* read once: VG_EW_FUSION=0 turns this pass off */
    if (atomic_load(&env) < 0) {
        const char *e = getenv("VG_EW_FUSION");
        atomic_store(&env, !(e && e[0] == '0'));
    }
    if (!atomic_load(&env)) return true;
    int nn = p->nnodes;
    fctx f = {.p = p, .succ_cap = succ_cap};
    bool ok = false;
    bool *ctrl_src = vg__plan_control_sources(p);
    int *indeg = vg__calloc((size_t)nn + 1, sizeof(int)), *order = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    f.c = vg__calloc((size_t)nn + 1, sizeof(cand));
    f.prod = vg__plan_slot_producers(p);
    f.rank = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    f.parent = vg__malloc(sizeof(int) * (size_t)(nn + 1));
    f.mem = vg__calloc((size_t)nn + 1, sizeof(int *));
    f.nmem = vg__calloc((size_t)nn + 1, sizeof(int));
    f.capmem = vg__calloc((size_t)nn + 1, sizeof(int));
    f.mark = vg__calloc((size_t)nn + 1, sizeof(int));
    f.seen = vg__calloc((size_t)nn + 1, sizeof(int));
    f.stack = vg__malloc(sizeof(int) * (size_t)(nn + 1) * 2);
    f.wreach = vg__calloc((size_t)nn + 1, sizeof(bool));
    if (!f.wreach || !ctrl_src || !indeg || !order || !f.c || !f.prod || !f.rank || !f.parent || !f.mem || !f.nmem || !f.capmem ||
        !f.mark || !f.seen || !f.stack)
        goto done;

    /* topological ranks over succ (data and control edges) */
    for (int i = 0; i < nn; i++)
        for (int e = 0; e < p->nodes[i].nsucc; e++) indeg[p->nodes[i].succ[e]]++;
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (!indeg[i]) order[tail++] = i;
    while (head < tail) {
        int x = order[head];
        f.rank[x] = head++;
        for (int e = 0; e < p->nodes[x].nsucc; e++)
            if (--indeg[p->nodes[x].succ[e]] == 0) order[tail++] = p->nodes[x].succ[e];
    }
    if (tail != nn) { /* a cycle: the planner reports it; fuse nothing */
        ok = true;
        goto done;
    }
    /* nodes a variable writer reaches: from every node taking a variable reference
     * (Assign, Apply*, ...; Identity and the variables themselves only pass it on) */
    int sp = 0;
    for (int i = 0; i < nn; i++) {
        const vg__node *n = &p->nodes[i];
        if (n->kind == VG__K_VARIABLE || n->kind == VG__K_IDENTITY) continue;
        for (int k = 0; k < n->ninputs; k++)
            if (n->in_var && n->in_var[k]) {
                f.wreach[i] = true;
                f.stack[sp++] = i;
                break;
            }
    }
    while (sp) {
        int x = f.stack[--sp];
        for (int e = 0; e < p->nodes[x].nsucc; e++) {
            int y = p->nodes[x].succ[e];
            if (!f.wreach[y]) f.wreach[y] = true, f.stack[sp++] = y;
        }
    }
    int ncand = 0;
    for (int i = 0; i < nn; i++) {
        f.parent[i] = i;
        if (classify(&f, i, ctrl_src)) ncand++;
    }
    if (ncand < 2) {
        ok = true;
        goto done;
    }
    if (!fuse_moments(&f, ctrl_src, noop)) goto done;
    for (int t = 0; t < nn; t++) {
        int i = order[t];
        if (f.c[i].kind < 0) continue;
        if (!vg__grow((void **)&f.mem[i], &f.capmem[i], 1, sizeof(int))) goto done;
        f.mem[i][0] = i;
        f.nmem[i] = 1;
        /* a moments variance joins its mean's cluster: both read x only, so the union
         * of a convex cluster holding the mean and this node stays convex */
        if (f.c[i].kind == K_VAR && !merge(&f, find(&f, f.c[i].pair), find(&f, i))) goto done;
        /* the producers' clusters: all together when the union stays convex (a node
         * reading two chains joins both), else one by one */
        int roots[16], nr = 0;
        roots[nr++] = find(&f, i);
        for (int q = 0; q < f.c[i].ndata; q++) {
            int src = f.prod[p->nodes[i].in_slot[q]];
            if (src < 0 || f.c[src].kind < 0 || is_red(f.c[src].kind)) continue;
            if (!same_dims(f.c[src].nd, f.c[src].dims, f.c[i].nd, f.c[i].dims)) continue;
            int a = find(&f, src), dup = 0;
            for (int r = 0; r < nr; r++) dup |= roots[r] == a;
            if (!dup && nr < 16) roots[nr++] = a;
        }
        if (nr > 2 && can_merge(&f, roots, nr)) {
            for (int r = 1; r < nr; r++)
                if (!merge(&f, find(&f, roots[0]), find(&f, roots[r]))) goto done;
            continue;
        }
        for (int r = 1; r < nr; r++) {
            int pair[2] = {find(&f, i), find(&f, roots[r])};
            if (pair[0] == pair[1] || !can_merge(&f, pair, 2)) continue;
            if (!merge(&f, pair[0], pair[1])) goto done;
        }
    }
    /* the members' reads of each other are no longer uses of their slots */
    for (int i = 0; i < nn; i++) {
        if (f.c[i].kind < 0 || f.nmem[find(&f, i)] < 2) continue;
        vg__node *n = &p->nodes[i];
        for (int q = 0; q < n->ninputs; q++)
            if (n->in_slot[q] >= 0) p->slot_uses[n->in_slot[q]]--;
    }
    /* F reads each outside input once (counted for every cluster before any rewrite,
     * so that a cluster sees the reads of clusters rewritten after it) */
    for (int i = 0; i < nn; i++) {
        if (f.parent[i] != i || f.nmem[i] < 2) continue;
        int st = mark_cluster(&f, f.mem[i], f.nmem[i]);
        int *ext = NULL, next = ext_inputs(&f, f.mem[i], f.nmem[i], st, &ext);
        for (int e = 0; e < next; e++) p->slot_uses[ext[e]]++;
        vg__free(ext);
        if (next < 0) goto done;
    }
    for (int i = 0; i < nn; i++) {
        if (f.parent[i] != i || f.nmem[i] < 2) continue;
        int *m = f.mem[i], nm = f.nmem[i];
        for (int a = 1; a < nm; a++) { /* by rank */
            int x = m[a], b = a - 1;
            while (b >= 0 && f.rank[m[b]] > f.rank[x]) {
                m[b + 1] = m[b];
                b--;
            }
            m[b + 1] = x;
        }
        if (!rewrite(&f, m, nm, ew, fwd, noop)) goto done;
    }
    ok = true;
done:
    for (int i = 0; f.mem && i < nn; i++) vg__free(f.mem[i]);
    vg__free(ctrl_src);
    vg__free(indeg);
    vg__free(order);
    vg__free(f.c);
    vg__free(f.prod);
    vg__free(f.rank);
    vg__free(f.parent);
    vg__free(f.mem);
    vg__free(f.nmem);
    vg__free(f.capmem);
    vg__free(f.mark);
    vg__free(f.seen);
    vg__free(f.stack);
    vg__free(f.wreach);
    return ok;
}
