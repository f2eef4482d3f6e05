# Distributed tests (issue 15): every tests/dist/test_dist*.c also runs under
# `mpiexec -np 2` when MPI is built (the plain run above checks the 1-rank world).
# Open MPI refuses root and more ranks than cores unless told; the variables are
# ignored by other MPIs. LSan ignores what MPI itself keeps until exit.
if(VIGIL_MPI AND MPIEXEC_EXECUTABLE)
  set(VIGIL_MPI_TEST_ENV
    "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" "OMPI_MCA_rmaps_base_oversubscribe=1"
    "OMPI_MCA_btl_vader_single_copy_mechanism=none"
    "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_mpi.supp:fast_unwind_on_malloc=0")
  file(GLOB _vigil_dist_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_dist*.c ${PROJECT_SOURCE_DIR}/tests/dist/test_dist*.c)
  foreach(src ${_vigil_dist_tests})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME ${name}_np2 COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:${name}>)
    set_tests_properties(${name}_np2 PROPERTIES TIMEOUT 120 LABELS "unit;dist" ENVIRONMENT "${VIGIL_MPI_TEST_ENV}")
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_mpi.supp:fast_unwind_on_malloc=0")
  endforeach()
  # the ring of the fused allreduce (ranks of one node take the shared-memory path)
  if(TEST test_dist_fused_np2)
    add_test(NAME test_dist_fused_np2_ring COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_dist_fused>)
    set_tests_properties(test_dist_fused_np2_ring PROPERTIES TIMEOUT 120 LABELS "unit;dist"
      ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_SHM=0")
  endif()
  # fp16 compression on the ring; the hierarchical allreduce on two fake nodes of two
  if(TEST test_dist_wire_np2)
    add_test(NAME test_dist_wire_np2_ring COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_dist_wire>)
    set_tests_properties(test_dist_wire_np2_ring PROPERTIES TIMEOUT 120 LABELS "unit;dist"
      ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_SHM=0")
    add_test(NAME test_dist_wire_np4_hier COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 $<TARGET_FILE:test_dist_wire>)
    set_tests_properties(test_dist_wire_np4_hier PROPERTIES TIMEOUT 240 LABELS "unit;dist"
      ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_NODE_SIZE=2")
  endif()
endif()
# The tests that start mpiexec themselves: their ranks inherit the environment.
if(VIGIL_MPI)
  foreach(t test_cli_mpi test_examples_mpi)
    if(TEST ${t})
      get_test_property(${t} LABELS _l)
      list(APPEND _l dist slow)
      list(REMOVE_DUPLICATES _l)
      set_tests_properties(${t} PROPERTIES
        ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_mpi.supp:fast_unwind_on_malloc=0"
        LABELS "${_l}" TIMEOUT 900)   # minutes under ASan on a loaded machine
    endif()
  endforeach()
endif()
# SyncReplicasOptimizer with backup workers (tests/dist/test_sync_replicas.c): R = N on
# 2 ranks; R = 1 on 2 ranks (every worker gradient dropped); R = 2 of 3 ranks with rank 2 slow (its stale gradients dropped); a stalled
# worker named by the chief, and a stalled chief named by the worker, within the 1 s
# collective timeout (the world then breaks and mpiexec fails: one rank's line is the verdict).
if(VIGIL_MPI AND MPIEXEC_EXECUTABLE AND TEST test_sync_replicas)
  set_tests_properties(test_sync_replicas PROPERTIES ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan_mpi.supp:fast_unwind_on_malloc=0")
  add_test(NAME test_sync_replicas_np2 COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_sync_replicas>)
  set_tests_properties(test_sync_replicas_np2 PROPERTIES TIMEOUT 120 LABELS "unit;dist"
    ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_SR_R=2")
  add_test(NAME test_sync_replicas_np3_backup COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 $<TARGET_FILE:test_sync_replicas>)
  set_tests_properties(test_sync_replicas_np3_backup PROPERTIES TIMEOUT 180 LABELS "unit;dist"
    ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_SR_R=2;VIGIL_TEST_SR_SLOW=2")
  add_test(NAME test_sync_replicas_np2_r1 COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_sync_replicas>)
  set_tests_properties(test_sync_replicas_np2_r1 PROPERTIES TIMEOUT 120 LABELS "unit;dist"
    ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_SR_R=1")
  add_test(NAME test_sync_replicas_np2_stall COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_sync_replicas>)
  set_tests_properties(test_sync_replicas_np2_stall PROPERTIES TIMEOUT 120 LABELS "unit;dist"
    ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_SR_STALL=1"
    PASS_REGULAR_EXPRESSION "SYNC_REPLICAS_STALL_NAMED: rank 0 failed after")
  add_test(NAME test_sync_replicas_np2_chief_stall COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_sync_replicas>)
  set_tests_properties(test_sync_replicas_np2_chief_stall PROPERTIES TIMEOUT 120 LABELS "unit;dist"
    ENVIRONMENT "${VIGIL_MPI_TEST_ENV};VIGIL_TEST_SR_STALL=0"
    PASS_REGULAR_EXPRESSION "SYNC_REPLICAS_STALL_NAMED: rank 1 failed after")
endif()
