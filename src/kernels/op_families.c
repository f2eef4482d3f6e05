/*
 * op_families.c - the list of op families (like Lua's linit.c): the one place that
 * names every family's op table. To add a family, write src/kernels/<family>_ops.c
 * with its table vg__ops_<family> and add a line to each list below.
 *
 * The tables are strong references, so a static library links every family's object
 * file. vg__ops_test is weak: a test executable may define it to register test ops
 * (fault injection, blocking ops).
 */
#include "kernels/kernel.h"

extern const vg__op_def vg__ops_array_shape[];
extern const vg__op_def vg__ops_array_index[];
extern const vg__op_def vg__ops_math_cwise[];
extern const vg__op_def vg__ops_math_reduce[];
extern const vg__op_def vg__ops_nn[];
extern const vg__op_def vg__ops_conv[];
extern const vg__op_def vg__ops_state[];
extern const vg__op_def vg__ops_random[];
extern const vg__op_def vg__ops_training[];
extern const vg__op_def vg__ops_io[];
extern const vg__op_def vg__ops_queue[];
extern const vg__op_def vg__ops_summary[];
extern const vg__op_def vg__ops_data[];
extern const vg__op_def vg__ops_data_flow[];
extern const vg__op_def vg__ops_math_rounding[];
extern const vg__op_def vg__ops_math_special[];
extern const vg__op_def vg__ops_nn_activation[];
extern const vg__op_def vg__ops_nn_loss[];
extern const vg__op_def vg__ops_nn_lrn[];
extern const vg__op_def vg__ops_clip[];
extern const vg__op_def vg__ops_strided_slice[];
extern const vg__op_def vg__ops_split[];
extern const vg__op_def vg__ops_reverse[];
extern const vg__op_def vg__ops_scan[];
extern const vg__op_def vg__ops_sort[];
extern const vg__op_def vg__ops_scatter_gather_nd[];
extern const vg__op_def vg__ops_linalg[];
extern const vg__op_def vg__ops_random_sampling[];
extern const vg__op_def vg__ops_parsing[];
extern const vg__op_def vg__ops_ew_fused[];
extern const vg__op_def vg__ops_reader[];
extern const vg__op_def vg__ops_dataset[];
extern const vg__op_def vg__ops_control_flow[];
extern const vg__op_def vg__ops_stack[];
extern const vg__op_def vg__ops_tensor_array[];
extern const vg__op_def vg__ops_rnn[];
extern const vg__op_def vg__ops_unique[];
extern const vg__op_def vg__ops_image_codec[];
extern const vg__op_def vg__ops_image[];
extern const vg__op_def vg__ops_string[];
extern const vg__op_def vg__ops_nn_norm[];
extern const vg__op_def vg__ops_custom[];
extern const vg__op_def vg__ops_nn_depthwise[];
extern const vg__op_def vg__ops_space_batch[];
extern const vg__op_def vg__ops_collective[];
extern const vg__op_def vg__ops_sparse_to_dense[];
extern const vg__op_def vg__ops_resource_variable[];
extern const vg__op_def vg__ops_audio[];
extern const vg__op_def vg__ops_lookup[];
extern const vg__op_def vg__ops_array_ext[];
extern const vg__op_def vg__ops_complex[];
extern const vg__op_def vg__ops_fft[];
extern const vg__op_def vg__ops_gamma[];
extern const vg__op_def vg__ops_beam_search[];
extern const vg__op_def vg__ops_regex[];
extern const vg__op_def vg__ops_cudnn_rnn[];
extern const vg__op_def vg__ops_test[] __attribute__((weak));
VG_HIDDEN void vg__dataset_fdef_install(void); /* src/data: dataset functions as FunctionDefs */

void vg__op_families_register(void) {
    vg__dataset_fdef_install();
    vg__registry_add_family(vg__ops_array_shape);
    vg__registry_add_family(vg__ops_array_index);
    vg__registry_add_family(vg__ops_math_cwise);
    vg__registry_add_family(vg__ops_math_reduce);
    vg__registry_add_family(vg__ops_nn);
    vg__registry_add_family(vg__ops_conv);
    vg__registry_add_family(vg__ops_state);
    vg__registry_add_family(vg__ops_random);
    vg__registry_add_family(vg__ops_training);
    vg__registry_add_family(vg__ops_io);
    vg__registry_add_family(vg__ops_queue);
    vg__registry_add_family(vg__ops_summary);
    vg__registry_add_family(vg__ops_data);
    vg__registry_add_family(vg__ops_data_flow);
    vg__registry_add_family(vg__ops_math_rounding);
    vg__registry_add_family(vg__ops_math_special);
    vg__registry_add_family(vg__ops_nn_activation);
    vg__registry_add_family(vg__ops_nn_loss);
    vg__registry_add_family(vg__ops_nn_lrn);
    vg__registry_add_family(vg__ops_clip);
    vg__registry_add_family(vg__ops_strided_slice);
    vg__registry_add_family(vg__ops_split);
    vg__registry_add_family(vg__ops_reverse);
    vg__registry_add_family(vg__ops_scan);
    vg__registry_add_family(vg__ops_sort);
    vg__registry_add_family(vg__ops_scatter_gather_nd);
    vg__registry_add_family(vg__ops_linalg);
    vg__registry_add_family(vg__ops_random_sampling);
    vg__registry_add_family(vg__ops_parsing);
    vg__registry_add_family(vg__ops_ew_fused);
    vg__registry_add_family(vg__ops_reader);
    vg__registry_add_family(vg__ops_dataset);
    vg__registry_add_family(vg__ops_control_flow);
    vg__registry_add_family(vg__ops_stack);
    vg__registry_add_family(vg__ops_tensor_array);
    vg__registry_add_family(vg__ops_rnn);
    vg__registry_add_family(vg__ops_unique);
    vg__registry_add_family(vg__ops_image_codec);
    vg__registry_add_family(vg__ops_image);
    vg__registry_add_family(vg__ops_string);
    vg__registry_add_family(vg__ops_nn_norm);
    vg__registry_add_family(vg__ops_custom);
    vg__registry_add_family(vg__ops_nn_depthwise);
    vg__registry_add_family(vg__ops_space_batch);
    vg__registry_add_family(vg__ops_collective);
    vg__registry_add_family(vg__ops_sparse_to_dense);
    vg__registry_add_family(vg__ops_resource_variable);
    vg__registry_add_family(vg__ops_audio);
    vg__registry_add_family(vg__ops_lookup);
    vg__registry_add_family(vg__ops_array_ext);
    vg__registry_add_family(vg__ops_complex);
    vg__registry_add_family(vg__ops_fft);
    vg__registry_add_family(vg__ops_gamma);
    vg__registry_add_family(vg__ops_beam_search);
    vg__registry_add_family(vg__ops_regex);
    vg__registry_add_family(vg__ops_cudnn_rnn);
    vg__registry_add_family(vg__ops_test); /* NULL unless a test defines it */
}
