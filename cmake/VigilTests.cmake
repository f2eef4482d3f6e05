# Tests: one executable per tests/test_*.c, CTest labels, header checks, install test.
#
# Labels (ctest -L <label>):
#   unit       self-contained tests of one module (core, graph, kernels, io, train)
#   io         file formats: readers/writers of TF's files (also labelled unit)
#   monitored  monitored sessions, hooks, scaffold, coordinator, queue runners
#   cli        the vigil command (spawns build/vigil)
#   slow       takes seconds (also in its own group above)
#   headers    each public header compiles alone, and the examples in header comments
#   install    installs into a temporary prefix and builds consumers out of tree
set(VIGIL_SLOW_TESTS test_cli_signal test_cli_tools test_cli_train test_cli_train_lstm test_cli_hostile test_saver_crash test_file_writer)

function(vigil_test_labels name out)
  set(l "")
  if(name STREQUAL "test_header_examples")
    list(APPEND l headers)
  elseif(name MATCHES "^test_cli_")
    list(APPEND l cli)
  elseif(name MATCHES "^test_(monitored_|hooks_|mts|scaffold|coord|queue_runner|examples_monitored)")
    list(APPEND l monitored)
  elseif(name MATCHES "^test_(io_|checkpoint|saver|file_writer|graphdef|summary_|events_|idx_)")
    list(APPEND l unit io)
  else()
    list(APPEND l unit)
  endif()
  if(name IN_LIST VIGIL_SLOW_TESTS)
    list(APPEND l slow)
  endif()
  set(${out} "${l}" PARENT_SCOPE)
endfunction()

file(GLOB VIGIL_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_*.c)
foreach(src ${VIGIL_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
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
  vigil_link_for(${name} ${src})
  target_link_libraries(${name} PRIVATE ZLIB::ZLIB)   # some tests write gzip'd fixtures
  add_test(NAME ${name} COMMAND ${name})
  vigil_test_labels(${name} labels)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "${labels}")
endforeach()

# oneDNN picks its kernels by the CPU's ISA when it runs: the tests of the oneDNN paths
# again with its JIT capped at AVX2, AVX and SSE4.1, so that the kernels of CPUs without
# AVX-512 run on machines that have it (an AVX2-only bug hid in them: see
# test_backend__dnnl_conv_scratch_alignment).
if(VIGIL_DNNL)
  foreach(t test_backend test_nn_conv test_conv_fusion)
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
