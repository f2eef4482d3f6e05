# Tests: one executable per tests/<folder>/test_*.c, CTest labels, header checks, install test.
#
# Folders, by layer or subsystem (docs/conventions.md): api (the public API as a whole
# and the layer rule), core, io, graph, exec, kernels (op families), dataset (tf.data,
# input pipelines), train, monitored, dist, hostile (untrusted inputs), examples, cli.
# A new test may also sit at the top (tests/test_*.c) until it is given a folder.
#
# Labels (ctest -L <label>): the test's folder (api, core, io, ..., cli), and
#   unit       every test but those of cli/ and monitored/ (and the top-level ones too)
#   headers    each public header compiles alone (headertest_*), and test_header_examples
#   slow       takes seconds (VIGIL_SLOW_TESTS)
#   install    installs into a temporary prefix and builds consumers out of tree
#   dist       the runs under mpiexec (cmake/VigilDistTests.cmake)
set(VIGIL_SLOW_TESTS test_cli_signal test_cli_tools test_cli_train test_cli_train_lstm test_cli_hostile test_saver_crash test_file_writer)

# The tests that include src/ headers or call vg__* functions: they link the static
# `vigil_internal`; every other test links `vigil` (shared or static), as a user would.
# A test that needs the internals is added here (its build fails otherwise).
set(VIGIL_INTERNAL_TESTS
  # api/
  test_layers
  # core/
  test_alloc_cache test_bfloat16 test_core_tensor test_half test_threadpool
  # io/
  test_checkpoint test_io_alloc test_io_bundle test_io_ckpt_state test_io_crc32c test_io_events
  test_io_idx test_io_pb test_io_sstable test_io_tfrecord
  # graph/
  test_graphdef
  # exec/
  test_conv_fusion test_core_session test_exec_ab test_fusion_elementwise test_fusion_matmul_sum
  test_fusion_batchnorm
  test_fusion_chain
  # kernels/
  test_backend test_cf_tf_while test_conv_winograd test_math_binary test_nn_conv test_nn_depthwise
  test_parsing
  test_matmul_paths
  # dataset/
  test_data_rows test_data_saveable_paths test_data_vectorize test_example_fast_decode
  # train/
  test_file_writer test_optimizer_apply_ops test_optimizer_basic test_saved_model_assets
  test_saved_model_save test_saver test_summary_ops test_summary_run_metadata
  # monitored/
  test_hooks_tfedge test_monitored_extra test_monitored_session test_scaffold
  test_options_zero
  # hostile/
  test_hostile test_hostile_bombs test_hostile_paths
  # cli/
  test_cli_convert test_cli_hostile test_cli_train)

function(vigil_test_labels name folder out)
  set(l ${folder})
  if(NOT folder STREQUAL "cli" AND NOT folder STREQUAL "monitored")
    list(APPEND l unit)
  endif()
  if(name STREQUAL "test_header_examples")
    list(APPEND l headers)
  endif()
  if(name IN_LIST VIGIL_SLOW_TESTS)
    list(APPEND l slow)
  endif()
  set(${out} "${l}" PARENT_SCOPE)
endfunction()

file(GLOB VIGIL_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_*.c ${PROJECT_SOURCE_DIR}/tests/*/test_*.c)
set(_vigil_test_names "")
foreach(src ${VIGIL_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  get_filename_component(_dir ${src} DIRECTORY)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR}/tests ${_dir})
  list(APPEND _vigil_test_names ${name})
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    VG_TESTDATA="${PROJECT_SOURCE_DIR}/tests/data/tf"
    VG_SRCDIR="${PROJECT_SOURCE_DIR}"
    VG_BINDIR="${PROJECT_BINARY_DIR}"
    VG_C_COMPILER="${CMAKE_C_COMPILER}"
    VG_PROJECT_VERSION="${PROJECT_VERSION}"
    VG_PROJECT_VERSION_MAJOR=${PROJECT_VERSION_MAJOR}
    VG_PROJECT_VERSION_MINOR=${PROJECT_VERSION_MINOR}
    VG_PROJECT_VERSION_PATCH=${PROJECT_VERSION_PATCH})
  if(name IN_LIST VIGIL_INTERNAL_TESTS)
    vigil_link(${name} ON)
  else()
    vigil_link(${name} OFF)
  endif()
  target_link_libraries(${name} PRIVATE ZLIB::ZLIB)   # some tests write gzip'd fixtures
  add_test(NAME ${name} COMMAND ${name})
  vigil_test_labels(${name} "${folder}" labels)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "${labels}")
endforeach()
foreach(name ${VIGIL_INTERNAL_TESTS})
  if(NOT name IN_LIST _vigil_test_names)
    message(FATAL_ERROR "VIGIL_INTERNAL_TESTS names ${name}, but there is no tests/.../${name}.c")
  endif()
endforeach()

# oneDNN picks its kernels by the CPU's ISA when it runs: the tests of the oneDNN paths
# again with its JIT capped at AVX2, AVX and SSE4.1, so that the kernels of CPUs without
# AVX-512 run on machines that have it (an AVX2-only bug hid in them: see
# test_backend__dnnl_conv_scratch_alignment).
if(VIGIL_DNNL)
  foreach(t test_backend test_nn_conv test_conv_fusion test_matmul_paths)
    foreach(isa AVX2 AVX SSE41)
      add_test(NAME ${t}_dnnl_${isa} COMMAND ${t})
      set_tests_properties(${t}_dnnl_${isa} PROPERTIES TIMEOUT 300 LABELS unit ENVIRONMENT "DNNL_MAX_CPU_ISA=${isa}")
    endforeach()
  endforeach()
endif()

# Every public header compiles alone as C and C++ (-pedantic -Werror).
file(GLOB VIGIL_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/vigil/*.h)
foreach(h ${VIGIL_PUBLIC_HEADERS})
  get_filename_component(hn ${h} NAME_WE)
  add_test(NAME headertest_c_${hn} COMMAND ${CMAKE_C_COMPILER} -std=c11 -pedantic -Werror -Wall -fsyntax-only -I${PROJECT_SOURCE_DIR}/include -x c ${h})
  add_test(NAME headertest_cxx_${hn} COMMAND ${CMAKE_CXX_COMPILER} -std=c++11 -pedantic -Werror -Wall -fsyntax-only -I${PROJECT_SOURCE_DIR}/include -x c++ ${h})
  set_tests_properties(headertest_c_${hn} headertest_cxx_${hn} PROPERTIES LABELS headers)
endforeach()

# Install into a temporary prefix, then build and run an out-of-tree consumer with
# find_package(vigil) and with pkg-config against the shared library (tests/install_test.sh).
get_target_property(_vigil_lib_type vigil TYPE)
if(VIGIL_INSTALL AND _vigil_lib_type STREQUAL "SHARED_LIBRARY" AND NOT VIGIL_SANITIZE AND NOT VIGIL_TSAN)
  add_test(NAME install_consumer COMMAND ${PROJECT_SOURCE_DIR}/tests/install_test.sh --build ${PROJECT_BINARY_DIR})
  set_tests_properties(install_consumer PROPERTIES LABELS "install;slow" TIMEOUT 600
    ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
endif()

# The distributed tests under mpiexec (issue 15).
include(${PROJECT_SOURCE_DIR}/cmake/VigilDistTests.cmake)
