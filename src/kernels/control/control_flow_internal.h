/* control_flow_internal.h - the control-flow contexts that vg_cond / vg_while_loop
 * record on a graph (TF's CondContext / WhileContext, kept as graph user data), for
 * the gradient code (src/autodiff) and the stack ops. Kernel layer. */
#ifndef VG_CONTROL_FLOW_INTERNAL_H
#define VG_CONTROL_FLOW_INTERNAL_H

#include "graph/graph_impl.h"
#include "vigil/control_flow.h"

enum { VG__CTX_COND = 1, VG__CTX_WHILE = 2 };

typedef struct vg__cf_ctx {
    int kind;
    int parent;          /* context index, -1 = root */
    int start_id;        /* ops created while the context was built: [start_id, end_id) */
    int end_id;
    vg_op *pivot;        /* cond: switch_t/switch_f; while: the body pivot (Identity of var 0) */
    /* cond */
    vg_output pred;      /* cond/pred_id */
    int branch;          /* 0 false, 1 true */
    vg_op **merges;      /* the cond's Merge ops (the true-branch context holds them) */
    int nmerges;
    /* while */
    char *frame_name;
    int parallel_iterations;
    int nvars;
    vg_op **enters, **merge_ops, **switches, **identities, **nexts, **exits;
    vg_op *loop_cond;
    vg_op *pred_pivot;   /* Merge of var 0: pivot for the condition's ops */
    vg_output fwd_count; /* gradient support: Exit of the forward iteration counter */
    vg_op *fwd_sync;     /* the counter's increment (pushes run before it) */
    vg_output fwd_index; /* the counter inside the body */
    vg_output *stacks;   /* gradient support: stacks of saved forward values (not closed yet) */
    int nstacks, stacks_cap;
    /* a backward (gradient) while loop */
    int forward;         /* the forward while context it differentiates, -1 none */
    vg_output *hist_from, *hist_to; /* forward value -> its pop in this loop */
    int nhist, hist_cap, hist_cap2;
    int *gcond;          /* forward cond contexts -> their branch pivot in this gradient loop */
    vg_op **gpivot;
    int ngc, gc_cap, gc_cap2;
} vg__cf_ctx;

typedef struct vg__cf_info {
    vg__cf_ctx *ctx;
    int n, cap;
    int *ctx_of;         /* per op id: 0 = root (unassigned), -1 = root (explicit), k+1 = context k */
    int nctx_of, ctx_of_cap;
    int cur;             /* context being built, -1 = none */
} vg__cf_info;

/* The graph's control-flow info, NULL if it has none (create: make it). */
VG_HIDDEN vg__cf_info *vg__cf_info_get(vg_graph *g, bool create);
/* Context of an op (the frame/branch it runs in): -1 root, else an index. */
VG_HIDDEN int vg__cf_ctx_of(const vg__cf_info *ci, const vg_op *op);
/* Sets an op's context explicitly (ctx -1 = root). false on OOM. */
VG_HIDDEN bool vg__cf_set_ctx(vg__cf_info *ci, const vg_op *op, int ctx);
/* The context whose values an output carries: for an Enter, the frame it enters. */
VG_HIDDEN int vg__cf_out_ctx(const vg__cf_info *ci, vg_output o);
/* The innermost while context enclosing ctx (itself if a while), -1 root. */
VG_HIDDEN int vg__cf_frame_ctx(const vg__cf_info *ci, int ctx);
/* True if a is ctx or an ancestor of it (-1 is everyone's ancestor). */
VG_HIDDEN bool vg__cf_is_ancestor(const vg__cf_info *ci, int a, int ctx);
/* Gradient support: the forward iteration counter of while context c (made once):
 * its Exit (the number of iterations, int32, in c's parent) in *count. Sets the
 * parallel_iterations of c's Enters to 1 (forward values are saved in order). */
VG_HIDDEN vg_code vg__cf_forward_count(vg_graph *g, vg__cf_info *ci, int c, vg_output *count, vg_status *st);
/* Builds a while loop as vg_while_loop does, marking it as the gradient loop of the
 * forward while context `forward`: forward values used inside are saved on stacks
 * in the forward loop and popped here (TF's GradLoopState). */
VG_HIDDEN vg_code vg__cf_grad_while(vg_graph *g, int forward, vg_while_cond_fn cond_fn, vg_while_body_fn body_fn,
                                    void *user, const vg_output *loop_vars, int n, vg_output *outs, vg_status *st);
/* Replaces input i of op (same dtype; the shape inferred before stays). */
VG_HIDDEN void vg__cf_set_input(vg_op *op, int i, vg_output in);

#endif
