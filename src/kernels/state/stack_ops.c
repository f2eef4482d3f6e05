/*
 * stack_ops.c - TF's stack ops (stack_ops.cc): StackV2(max_size) -> handle,
 * StackPushV2(handle, elem) -> elem, StackPopV2(handle) -> elem, StackCloseV2(handle).
 * The gradient of a while loop saves forward values on them (one stack per value and
 * per execution of the enclosing frame) and pops them in the backward loop.
 *
 * Handles are VG_RESOURCE scalars holding a pointer to a stack that lives until the
 * end of the run (a step resource, as TF's step container): every run of StackV2
 * makes a new one; StackCloseV2 clears it and later use fails. Errors as TF: pushing beyond max_size, popping an empty stack
 * ("Stack[name] is empty."), a closed stack, a wrong element type: INVALID_ARGUMENT /
 * OUT_OF_RANGE.
 */
#include "kernels/kernel.h"
#include "vigil/control_flow.h"
#include "vigil/ops.h"
#include <stdio.h>

typedef struct vg__stack {
    vg_tensor **v;
    int n, cap;
    int64_t max_size;
    vg_dtype elem;
    bool closed;
    char name[96];
} vg__stack;

static void stack_clear(vg__stack *s) {
    for (int i = 0; i < s->n; i++) vg_tensor_free(s->v[i]);
    s->n = 0;
}

static void stack_destroy(void *p) {
    vg__stack *s = p;
    stack_clear(s);
    vg__free(s->v);
    vg__free(s);
}

static vg__stack *stack_of(vg__kctx *ctx) {
    vg__stack *s = vg__kctx_handle_input(ctx, 0, "stack");
    if (!s) return NULL;
    if (s->closed) {
        vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "Stack[%s] has already been closed.", s->name);
        return NULL;
    }
    return s;
}

static vg_code kernel_stack_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *ms = vg__kctx_input(ctx, 0);
    if (!ms || vg_tensor_ndims(ms) != 0 || vg_tensor_dtype(ms) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StackV2: max_size must be an int32 scalar");
    vg_dtype et = VG_FLOAT;
    vg_op_attr_type_(vg__kctx_op(ctx), "elem_type", &et);
    vg__stack *s = vg__calloc(1, sizeof *s);
    if (!s) return VG_OOM(st, "stack");
    s->max_size = *(int32_t *)vg_tensor_data(ms);
    s->elem = et;
    snprintf(s->name, sizeof s->name, "%s", vg_op_name(vg__kctx_op(ctx)));
    vg_code rc = vg__kctx_step_resource(ctx, s, stack_destroy);
    if (rc != VG_OK) return rc;
    return vg__kctx_output_handle(ctx, s);
}

static vg_code kernel_push_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__stack *s = stack_of(ctx);
    if (!s) return st->code;
    vg_tensor *x = vg__kctx_input(ctx, 1);
    if (vg_tensor_dtype(x) != s->elem)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Stack[%s]: pushing %s onto a stack of %s", s->name,
                             vg_dtype_name(vg_tensor_dtype(x)), vg_dtype_name(s->elem));
    if (s->max_size >= 0 && s->n >= s->max_size)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Stack[%s] overflowed its max_size (%lld)", s->name,
                             (long long)s->max_size);
    if (!vg__grow((void **)&s->v, &s->cap, s->n + 1, sizeof(vg_tensor *))) return VG_OOM(st, "stack push");
    s->v[s->n++] = vg_tensor_ref(x);
    vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
    return VG_OK;
}

static vg_code kernel_pop_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__stack *s = stack_of(ctx);
    if (!s) return st->code;
    if (s->n == 0) return vg_status_set(st, VG_OUT_OF_RANGE, "Stack[%s] is empty.", s->name);
    vg__kctx_set_output(ctx, 0, s->v[--s->n]);
    return VG_OK;
}

static vg_code kernel_close_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__stack *s = stack_of(ctx);
    if (!s) return st->code;
    stack_clear(s);
    s->closed = true;
    return VG_OK;
}

static vg_code shape_stack(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StackV2: max_size must be int32");
    vg__op_set_default_attr_string(op, "stack_name", "");
    return vg__op_set_single_output(op, VG_RESOURCE, vg_shape_make(NULL, 0));
}

static vg_code shape_push(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StackPushV2: input 0 must be a stack handle");
    vg__op_set_default_attr_type(op, "T", vg__op_input_dtype(op, 1));
    vg__op_set_default_attr_bool(op, "swap_memory", false);
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 1), vg__op_input_shape(op, 1));
}

static vg_code shape_pop(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StackPopV2: input 0 must be a stack handle");
    vg_dtype et = VG_FLOAT;
    if (!vg_op_attr_type_(op, "elem_type", &et)) return vg_status_set(st, VG_INVALID_ARGUMENT, "StackPopV2: no elem_type");
    return vg__op_set_single_output(op, et, vg_shape_unknown());
}

static vg_code shape_close(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StackCloseV2: input 0 must be a stack handle");
    return vg__op_set_no_outputs(op);
}

/* Two ops of one stack may run at once where the graph does not order them; TF guards
 * each stack with a mutex, the kernels here share one lock (push and pop move a tensor
 * reference). */
static pthread_mutex_t g_stack_mu = PTHREAD_MUTEX_INITIALIZER;
VG__KERNEL_UNDER_LOCK(kernel_stack, g_stack_mu)
VG__KERNEL_UNDER_LOCK(kernel_push, g_stack_mu)
VG__KERNEL_UNDER_LOCK(kernel_pop, g_stack_mu)
VG__KERNEL_UNDER_LOCK(kernel_close, g_stack_mu)

const vg__op_def vg__ops_stack[] = {
    {"StackV2", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_stack, kernel_stack, NULL},
    {"StackPushV2", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_push, kernel_push, NULL},
    {"StackPopV2", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_pop, kernel_pop, NULL},
    {"StackCloseV2", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_close, kernel_close, NULL},
    {0},
};

vg_output vg_stack(vg_graph *g, vg_dtype elem_type, const char *stack_name, const char *name) {
    if (!g) return vg_out(NULL, 0);
    vg_output ms = vg_const_i32(g, -1, "max_size");
    vg_op_builder *b = vg__builder_with_inputs(g, "StackV2", name, "Stack", (vg_output[]){ms}, 1);
    vg_op_builder_set_attr_type(b, "elem_type", elem_type);
    if (stack_name) vg_op_builder_set_attr_string(b, "stack_name", stack_name, strlen(stack_name));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_stack_push(vg_graph *g, vg_output handle, vg_output elem, const char *name) {
    return vg__build_simple(g, "StackPushV2", name, "StackPush", (vg_output[]){handle, elem}, 2);
}

vg_output vg_stack_pop(vg_graph *g, vg_output handle, vg_dtype elem_type, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StackPopV2", name, "StackPop", (vg_output[]){handle}, 1);
    vg_op_builder_set_attr_type(b, "elem_type", elem_type);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_op *vg_stack_close(vg_graph *g, vg_output handle, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StackCloseV2", name, "StackClose", (vg_output[]){handle}, 1);
    return vg_op_builder_finish(b);
}
