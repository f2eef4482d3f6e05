/* graph_impl.h - the graph's and op's internal layout (for graph.c, the executor,
 * gradients and GraphDef export). Everything else uses the accessors. */
#ifndef VG_GRAPH_IMPL_H
#define VG_GRAPH_IMPL_H

#include "core/strmap.h"
#include "registry.h"

typedef struct vg__attr {
    char *name;
    vg_attr_type type;
    union {
        int64_t i;
        float f;
        bool b;
        vg_dtype t;
        vg_shape shape;
        struct { char *p; size_t n; } s;
        vg_tensor *tensor;
        struct { void *p; int n; } list; /* int64_t / float / vg_dtype / vg_shape / char* */
    } u;
} vg__attr;

struct vg_op {
    vg_graph *graph;
    int id;
    char *name;
    const vg__op_def *def;
    int ninputs;
    vg_output *inputs;
    int ncontrol, control_cap;
    vg_op **control;
    int noutputs;
    vg_dtype *out_dtypes;
    vg_shape *out_shapes;
    int nattrs, attr_cap;
    vg__attr *attrs;
    char *device;
    bool oom; /* an allocation failed while the shape function ran */
    const char *bad_kind_attr; /* an attr the shape function defaults as one kind but the op
                                * has as another (e.g. "T" set as an int): the op fails */
    vg_attr_type bad_kind_want;
    bool outside_cf; /* created in an init scope: in no control-flow context (TF's
                      * control_dependencies(None) clears the control-flow context) */
    /* for variables made by variables.c */
    vg_op *var_initializer;
    vg_output var_snapshot;
};

typedef struct vg__collection {
    char *key;
    vg_output *items;
    int n, cap;
} vg__collection;

struct vg_graph {
    vg_op **ops;
    int nops, ops_cap;
    vg__strmap by_name;
    vg__strmap names_in_use; /* lower-cased name -> count (TF's _names_in_use) */
    char **scopes;
    int nscopes, scopes_cap;
    int lost_scopes;         /* pushes that could not be recorded (out of memory) */
    vg_op ***deps;           /* control-dependency stack: each entry a NULL-terminated array,
                              * or the init-scope barrier (vg_graph_push_init_scope) */
    int ndeps, deps_cap;
    int lost_init_scopes;    /* init-scope pushes that could not be recorded (out of memory) */
    vg__collection *colls;
    int ncolls, colls_cap;
    struct vg__udata { char *key; void *ptr; void (*destroy)(void *); } *udata;
    int nudata, udata_cap;
    vg_queue_runner_def *qrs;
    int nqrs, qrs_cap;
    vg_status err;
    bool finalized;
    int64_t seed;
    int64_t last_id;
    char **devices;          /* tf.device stack (vg_graph_push_device); "" = no device */
    int ndevices, devices_cap;
};

VG_HIDDEN vg__attr *vg__op_find_attr(const vg_op *op, const char *name);
/* Adds or replaces an attr on a built (not yet finalized) op. Returns false on OOM. */
VG_HIDDEN bool vg__op_put_attr(vg_op *op, const vg__attr *a);

#endif
