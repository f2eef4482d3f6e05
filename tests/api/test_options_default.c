/* test_options_default.c - every option struct with an _INIT macro has a
 * vg_*_options_default() (or _default()) function returning the same values, field by
 * field (issue 8 part 3). A new field added to a macro but not to the function (or the
 * other way round) fails here. */
#include "test_util.h"
#include "vigil/hooks.h"
#include "vigil/vigil.h"

static int same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

#define EQ(f) CHECK_EQ_INT((long long)(a.f != b.f), 0)
#define EQD(f) CHECK_NEAR(a.f, b.f, 0)
#define EQS(f) CHECK(same_str(a.f, b.f))
#define EQO(f) CHECK(a.f.op == b.f.op && a.f.index == b.f.index)

static void test_options_default__core_layers(void) {
    {
        vg_session_options a = VG_SESSION_OPTIONS_INIT, b = vg_session_options_default();
        EQ(intra_op_threads); EQ(inter_op_threads);
    }
    {
        vg_run_options a = VG_RUN_OPTIONS_INIT, b = vg_run_options_default();
        EQ(trace_level); EQ(timeout_in_ms); EQ(inter_op_thread_pool); EQ(output_partition_graphs);
        EQ(report_tensor_allocations_upon_oom); EQ(ndebug_watches); EQ(debug_watches);
    }
    {
        vg_saver_options a = VG_SAVER_OPTIONS_INIT, b = vg_saver_options_default();
        EQ(var_list); EQ(nvars); EQ(max_to_keep); EQD(keep_checkpoint_every_n_hours); EQ(write_meta_graph);
        EQ(sharded); EQS(name); EQ(allow_empty);
        CHECK_EQ_INT(b.max_to_keep, 5);
    }
    {
        vg_file_writer_options a = VG_FILE_WRITER_OPTIONS_INIT, b = vg_file_writer_options_default();
        EQ(max_queue); EQD(flush_secs); EQS(filename_suffix);
        CHECK_EQ_INT(b.max_queue, 10);
    }
}

static void test_options_default__monitored(void) {
    {
        vg_run_args a = VG_RUN_ARGS_INIT, b = vg_run_args_default();
        EQ(fetches); EQ(nfetches); EQ(feeds); EQ(feed_values); EQ(nfeeds); EQ(targets); EQ(ntargets); EQ(options);
    }
    {
        vg_scaffold_options a = VG_SCAFFOLD_OPTIONS_INIT, b = vg_scaffold_options_default();
        EQ(init_op); EQ(init_feeds); EQ(init_feed_values); EQ(ninit_feeds); EQ(init_fn); EQ(init_fn_payload);
        EQO(ready_op); EQO(ready_for_local_init_op); EQ(local_init_op); EQO(summary_op); EQ(saver);
        EQ(copy_from_scaffold);
    }
    {
        vg_session_manager_options a = VG_SESSION_MANAGER_OPTIONS_INIT, b = vg_session_manager_options_default();
        EQ(local_init_op); EQO(ready_op); EQO(ready_for_local_init_op); EQD(recovery_wait_secs); EQ(config);
        CHECK_NEAR(b.recovery_wait_secs, 30, 0);
    }
    {
        vg_prepare_options a = VG_PREPARE_OPTIONS_INIT, b = vg_prepare_options_default();
        EQ(init_op); EQ(saver); EQS(checkpoint_dir); EQS(checkpoint_filename_with_path); EQ(wait_for_checkpoint);
        EQD(max_wait_secs); EQ(init_feeds); EQ(init_feed_values); EQ(ninit_feeds); EQ(init_fn);
        EQ(init_fn_payload); EQ(scaffold);
        CHECK_NEAR(b.max_wait_secs, 7200, 0);
    }
    {
        vg_session_creator_options a = VG_SESSION_CREATOR_OPTIONS_INIT, b = vg_session_creator_options_default();
        EQ(scaffold); EQ(config); EQS(checkpoint_dir); EQS(checkpoint_filename_with_path); EQD(max_wait_secs);
        CHECK_NEAR(b.max_wait_secs, 1800, 0); /* WorkerSessionCreator's 30 * 60 */
    }
    {
        vg_monitored_options a = VG_MONITORED_OPTIONS_INIT, b = vg_monitored_options_default();
        EQ(creator.create_session); EQ(creator.destroy); EQ(creator.payload); EQ(hooks); EQ(nhooks);
        EQD(stop_grace_period_secs);
        CHECK_NEAR(b.stop_grace_period_secs, 120, 0);
    }
    {
        vg_singular_options a = VG_SINGULAR_OPTIONS_INIT, b = vg_singular_options_default();
        EQ(hooks); EQ(nhooks); EQ(scaffold); EQ(config); EQS(checkpoint_dir); EQD(stop_grace_period_secs);
        EQS(checkpoint_filename_with_path);
    }
    {
        vg_mts_options a = VG_MTS_OPTIONS_INIT, b = vg_mts_options_default();
        EQ(is_chief); EQS(checkpoint_dir); EQ(scaffold); EQ(hooks); EQ(nhooks); EQ(chief_only_hooks);
        EQ(nchief_only_hooks); EQD(save_checkpoint_secs); EQ(save_summaries_steps); EQD(save_summaries_secs);
        EQ(config); EQD(stop_grace_period_secs); EQ(log_step_count_steps); EQD(max_wait_secs);
        EQ(save_checkpoint_steps); EQS(summary_dir);
        CHECK(b.is_chief);
    }
}

static void test_options_default__hooks(void) {
    {
        vg_checkpoint_saver_options a = VG_CHECKPOINT_SAVER_OPTIONS_INIT, b = vg_checkpoint_saver_options_default();
        EQS(checkpoint_dir); EQD(save_secs); EQ(save_steps); EQ(saver); EQ(scaffold); EQS(checkpoint_basename);
        EQ(listeners); EQ(nlisteners); EQ(save_graph_def);
        CHECK(same_str(b.checkpoint_basename, "model.ckpt"));
    }
    {
        vg_logging_tensor_options a = VG_LOGGING_TENSOR_OPTIONS_INIT, b = vg_logging_tensor_options_default();
        EQ(tensors); EQ(names); EQ(ntensors); EQ(every_n_iter); EQD(every_n_secs); EQ(at_end); EQ(formatter);
        EQ(formatter_payload); EQ(sink); EQ(sink_payload);
    }
    {
        vg_summary_saver_options a = VG_SUMMARY_SAVER_OPTIONS_INIT, b = vg_summary_saver_options_default();
        EQ(save_steps); EQD(save_secs); EQS(output_dir); EQ(summary_writer); EQ(scaffold); EQO(summary_op);
    }
    {
        vg_step_counter_options a = VG_STEP_COUNTER_OPTIONS_INIT, b = vg_step_counter_options_default();
        EQ(every_n_steps); EQD(every_n_secs); EQS(output_dir); EQ(summary_writer);
        CHECK_EQ_INT(b.every_n_steps, 100);
    }
    {
        vg_final_ops_options a = VG_FINAL_OPS_OPTIONS_INIT, b = vg_final_ops_options_default();
        EQ(final_ops); EQ(nfinal_ops); EQ(feeds); EQ(feed_values); EQ(nfeeds);
    }
    {
        vg_profiler_options a = VG_PROFILER_OPTIONS_INIT, b = vg_profiler_options_default();
        EQ(save_steps); EQD(save_secs); EQS(output_dir); EQ(show_dataflow); EQ(show_memory);
        CHECK(b.show_dataflow && !b.show_memory);
    }
}

int main(void) {
    RUN_TEST(test_options_default__core_layers);
    RUN_TEST(test_options_default__monitored);
    RUN_TEST(test_options_default__hooks);
    TEST_MAIN_END();
}
