/*
 * vigil/mixed_precision.h - TF's automatic mixed precision with bfloat16 (the CPU
 * variant of TF's oneDNN builds): the graph rewrite auto_mixed_precision of
 * ConfigProto.graph_options.rewrite_options (vg_config_proto.auto_mixed_precision in
 * vigil/config.h) and tf.train.experimental.enable_mixed_precision_graph_rewrite.
 *
 * The rewrite runs where a session builds its execution plans: MatMul, Conv2D and their
 * gradients (TF's allow list) compute in bfloat16 with float32 accumulation, TF's deny
 * list (Sum, Mean, the softmax cross-entropies, Exp, Pow, L2Loss, ...) and what it feeds
 * stay float32, the infer and clear lists follow TF's rules. Graph, feeds, fetches and
 * their dtypes do not change; variables and the optimizer's updates stay float32
 * (master weights), so checkpoints are the same as without it. docs/mixed_precision.md.
 *
 *     vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
 *     opt = vg_enable_mixed_precision_graph_rewrite(opt); // sessions created from now on
 *     bool on = vg_mixed_precision_graph_rewrite_enabled(); // true
 *     vg_disable_mixed_precision_graph_rewrite();
 *     vg_optimizer_free(opt);
 *     (void)on;
 */
#ifndef VIGIL_MIXED_PRECISION_H
#define VIGIL_MIXED_PRECISION_H

#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_optimizer vg_optimizer; /* vigil/optimizer.h */

/* tf.train.experimental.enable_mixed_precision_graph_rewrite(opt): turns the rewrite on
 * for every session created from now on (process-wide, as TF's global switch) and
 * returns opt (the same pointer; ownership stays with the caller). TF also wraps opt in a
 * loss-scale optimizer for float16; bfloat16 has float32's exponent range and needs none,
 * so vigil returns opt unchanged. Never fails. TF's two-argument form (opt, loss_scale),
 * which wraps opt in a MixedPrecisionLossScaleOptimizer, is
 * vg_enable_mixed_precision_graph_rewrite_with_loss_scale in vigil/loss_scale.h. */
VG_API vg_optimizer *vg_enable_mixed_precision_graph_rewrite(vg_optimizer *opt);
/* tf.train.experimental.disable_mixed_precision_graph_rewrite(): sessions created from
 * now on run without it (unless their config asks). */
VG_API void vg_disable_mixed_precision_graph_rewrite(void);
VG_API bool vg_mixed_precision_graph_rewrite_enabled(void);

/* The rewrite for one session (what vg_session_new_with_config does when the config's
 * auto_mixed_precision is set); call it before the session's first run. Fails with
 * INVALID_ARGUMENT (s NULL) and FAILED_PRECONDITION (the session has run already). */
VG_API vg_code vg_session_set_auto_mixed_precision(vg_session *s, bool on, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
