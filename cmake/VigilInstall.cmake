# Install rules, the exported CMake package (find_package(vigil) -> vigil::vigil),
# vigil.pc for pkg-config, and CPack (DEB components libvigil0 / libvigil-dev / vigil-tools).
#
# Components: lib (the shared library), dev (headers, the .so link, static library,
# CMake package, pkg-config file), tools (the vigil command and its man page).
include(CMakePackageConfigHelpers)

set(VIGIL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vigil)

install(TARGETS vigil EXPORT vigilTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lib
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vigil DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(EXPORT vigilTargets NAMESPACE vigil:: DESTINATION ${VIGIL_CMAKE_DIR} COMPONENT dev)

get_target_property(_vigil_type vigil TYPE)
if(_vigil_type STREQUAL "STATIC_LIBRARY")
  set(VIGIL_STATIC_DEPS ON)
else()
  set(VIGIL_STATIC_DEPS OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vigilConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vigilConfig.cmake INSTALL_DESTINATION ${VIGIL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vigilConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vigilConfig.cmake ${PROJECT_BINARY_DIR}/vigilConfigVersion.cmake
  DESTINATION ${VIGIL_CMAKE_DIR} COMPONENT dev)

# pkg-config: relocatable (prefix from the .pc file's own place).
file(RELATIVE_PATH VIGIL_PC_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" VIGIL_PC_PREFIX "${VIGIL_PC_PREFIX}")
set(VIGIL_PC_LIBS_PRIVATE "-lopenblas -lsnappy -lkissfft-float -lzip -lpcre2-8 -lpng16 -ljpeg -lz -lpthread -lm")
# Runtime dependencies of libvigil (Debian 12 package names), for CPack below.
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libopenblas0 | libopenblas0-pthread, libsnappy1v5, libkissfft-float131, libzip4, libpcre2-8-0, libpng16-16, libjpeg62-turbo, zlib1g, libc6")
# The optional dependencies (VIGIL_<name>): their libraries and their Debian packages.
set(_vigil_pc_DNNL "-ldnnl -lgomp")
set(_vigil_deb_DNNL "libdnnl2, libgomp1")
set(_vigil_pc_MPI "-lmpi")
set(_vigil_deb_MPI "libopenmpi3")
foreach(_opt DNNL MPI)
  if(VIGIL_${_opt})
    string(APPEND VIGIL_PC_LIBS_PRIVATE " ${_vigil_pc_${_opt}}")
    string(APPEND CPACK_DEBIAN_LIB_PACKAGE_DEPENDS ", ${_vigil_deb_${_opt}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/vigil.pc.in ${PROJECT_BINARY_DIR}/vigil.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vigil.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

if(TARGET vigil_cli)
  install(TARGETS vigil_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/vigil.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endif()

# ---- CPack: cpack -G DEB (or TGZ) in the build directory -------------------------
set(CPACK_PACKAGE_NAME vigil)
set(CPACK_PACKAGE_VENDOR "vigil")
set(CPACK_PACKAGE_CONTACT "vigil maintainers <vigil@example.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
set(CPACK_COMPONENT_LIB_DESCRIPTION "vigil shared library")
set(CPACK_COMPONENT_DEV_DESCRIPTION "vigil headers, CMake package and pkg-config file")
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "the vigil command: train, ckpt, events, plot")
set(CPACK_COMPONENT_TOOLS_DEPENDS lib)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libvigil${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libvigil-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME vigil-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
# (CPACK_DEBIAN_LIB_PACKAGE_DEPENDS: set with the pkg-config libraries above.)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
