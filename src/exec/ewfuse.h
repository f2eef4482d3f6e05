/*
 * ewfuse.h - the program of a fused element-wise node (plan-time fusion of element-wise
 * chains, src/exec/fuse_ew.c): what the planner writes and the kernel
 * _VigilFusedElementwise (src/kernels/ew_fused.c) runs.
 *
 * A cluster is a set of float32 element-wise nodes of one output shape S (the "full"
 * shape, n elements, last dimension C), plus per-channel reductions of its values
 * (Sum / Mean over every axis but the last, as batch norm's moments and their gradients
 * take them). The kernel walks S in tiles of whole channel rows; per tile it evaluates
 * the instructions in order into tile-sized registers that stay in cache, stores the
 * registers the rest of the plan reads, and adds the reduced registers into per-channel
 * partial sums. The element-wise passes between the cluster's nodes never touch memory.
 *
 * Registers 0 .. ninputs-1 are the node's inputs: each full (n values of S), a scalar
 * (one value, broadcast), or a channel vector (C values, broadcast along S's last
 * axis); float32, or bool (a Select's condition, read as 0/1). Instruction i writes
 * register ninputs + i. Bool values live in registers as 0.0f / 1.0f.
 */
#ifndef VIGIL_EXEC_EWFUSE_H
#define VIGIL_EXEC_EWFUSE_H
#include "core/visibility.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    VG__EWI_ADD, VG__EWI_SUB, VG__EWI_MUL, VG__EWI_DIV, VG__EWI_MAX, VG__EWI_MIN, VG__EWI_SQDIFF,
    VG__EWI_LESS, VG__EWI_LESS_EQUAL, VG__EWI_GREATER, VG__EWI_GREATER_EQUAL, /* -> bool */
    VG__EWI_SELECT,                                                          /* a ? b : c */
    VG__EWI_NEG, VG__EWI_SQUARE, VG__EWI_RELU, VG__EWI_COPY,
    VG__EWI_RELU_GRAD,                                                       /* b > 0 ? a : 0 */
    VG__EWI_ZERO, VG__EWI_ONE,                                               /* no operands */
    VG__EWI_ADDN                                                             /* args[0 .. nargs) */
};

enum { VG__EWIN_FULL, VG__EWIN_SCALAR, VG__EWIN_CHANNEL, VG__EWIN_ROW };

typedef struct vg__ew_ins {
    int op;
    int nargs;
    int *args; /* registers read */
} vg__ew_ins;

/* Output k of the node: register reg stored as an S-shaped tensor (full), or summed
 * over every axis but the last (reduce: times scale, 1 for Sum, C/n for Mean) into a
 * tensor of dims out_dims, or over the last axis only (reduce and row: n / C sums, times
 * scale, 1 for Sum, 1/C for Mean). */
typedef struct vg__ew_out {
    int reg;
    bool reduce;
    bool row;     /* reduce over the last axis (one value per row of S) */
    bool is_bool; /* full outputs: stored as bool */
    bool var;     /* reduce (not row): the biased variance of the register over every axis
                     but the last (tf.nn.moments' variance, one pass: per tile mean and
                     squared deviations in float, tiles and pieces combined in double by Chan's
                     formula), times scale / (C/n) = 1 */
    double scale;
    int ndims;
    int64_t dims[8];
} vg__ew_out;

/* Specialised chain loops of the kernel (ew_fused.c), matched at plan time on the
 * program's structure (fuse_ew.c vg__ew_prog_match_chain). */
enum {
    VG__EW_CHAIN_NONE,
    VG__EW_CHAIN_BN_LEAKY,      /* batch norm + leaky ReLU (tf.where) forward */
    VG__EW_CHAIN_BN_LEAKY_GRAD, /* its gradient's reduction pass */
    VG__EW_CHAIN_BN_DX,         /* batch-norm dx with hoisted coefficients */
    VG__EW_CHAIN_LN,            /* layer norm's normalization */
    VG__EW_CHAIN_LN_GRAD,       /* layer norm's gradient sums */
    VG__EW_CHAIN_COUNT
};
#define VG__EW_CHAIN_MAXREG 16

/* The kernel's per-run work memory, kept between runs of one program (a run takes it,
 * grows it if too small, puts it back; a concurrent run of the same program allocates
 * its own): no allocation per kernel run once warm. Owned by the program. */
typedef struct vg__ew_cache {
    _Atomic(void *) blk; /* a block starting with its size_t capacity, or NULL */
} vg__ew_cache;

typedef struct vg__ew_prog {
    int ninputs;
    int *in_kind;   /* VG__EWIN_* per input */
    bool *in_bool;  /* per input: a bool tensor */
    int nins;
    vg__ew_ins *ins;
    int nouts;
    vg__ew_out *outs;
    int ndims;      /* S */
    int64_t dims[8];
    int64_t n, C;   /* elements of S, its last dimension */
    /* the chain loop matched at plan time (VG__EW_CHAIN_*, NONE: op by op); chain_reg:
     * the program register bound to each of the pattern's nodes, chain_out: the
     * program output bound to each of the pattern's outputs (see fuse_ew.c) */
    int chain;
    int chain_nin; /* the pattern's inputs: chain_reg[0 .. chain_nin) (a program input, or
                      an instruction of broadcast operands only, which the kernel hoists) */
    int chain_reg[VG__EW_CHAIN_MAXREG];
    int chain_out[4];
    vg__ew_cache *cache; /* NULL: the kernel allocates per run */
} vg__ew_prog;

/* Turns the moments-variance rewrite (fuse_ew.c fuse_moments: the variance of
 * tf.nn.moments summed in its mean's pass) on or off for plans built afterwards;
 * returns the previous setting (first: the environment's VG_EW_MOMENTS). For
 * tests comparing the two. Off unless VG_EW_MOMENTS is 1 (measured: see fuse_ew.c). */
VG_HIDDEN bool vg__ew_set_moments(bool on);
/* Turns the kernel's chain paths on or off for runs afterwards (ew_fused.c: the
 * instructions of broadcast operands only computed once per run, and the specialised
 * loops that run a common cluster's whole chain per element); returns the previous
 * setting (first: on unless the environment's VG_EW_CHAIN is 0). Values are the same
 * either way, bit for bit; for tests and measurements. Defined in ew_fused.c. */
VG_HIDDEN bool vg__ew_set_chain(bool on);
/* How many kernel runs so far (all threads) took specialised chain loop `kind`: 1 batch
 * norm + leaky ReLU forward, 2 its gradient's reductions, 3 batch-norm dx, 4 layer norm's
 * normalization, 5 layer norm's gradient sums; 0: any of them. */
VG_HIDDEN int64_t vg__ew_chain_runs(int kind);

/* How many times so far (all threads) a kernel run allocated its work block (the
 * program's cache empty or too small); for tests. Defined in ew_fused.c. */
VG_HIDDEN int64_t vg__ew_work_allocs(void);

/* Matches p against the chain loops' patterns on its structure, not its text: the
 * operands of Add / Mul (and AddN's first two) in either order, Greater(a, b) as
 * Less(b, a), copies (Identity, Tile) looked through, inputs in any order, outputs in
 * any order; constants are inputs and scales, so their values never matter. Sets
 * p->chain / chain_reg / chain_out. Defined in fuse_ew.c; run by the planner. */
VG_HIDDEN void vg__ew_prog_match_chain(vg__ew_prog *p);

/* Frees a program (NULL: nothing). Defined in fuse_ew.c. */
VG_HIDDEN void vg__ew_prog_free(vg__ew_prog *p);

#endif
