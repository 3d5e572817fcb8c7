# `cmake --install`: the command, the ABI header, the report renderer and the CMake
# package (samplecheckConfig.cmake with samplecheck::samplecheck, samplecheck::plugin_abi
# and the function files cmake/samplecheck_*.cmake) under <prefix>.
include(CMakePackageConfigHelpers)

# The ABI as vendors see it: the header alone, nothing of the tree's build flags.
add_library(samplecheck_plugin_abi_package INTERFACE)
target_include_directories(samplecheck_plugin_abi_package INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernels>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/samplecheck>)
set_target_properties(samplecheck_plugin_abi_package PROPERTIES EXPORT_NAME plugin_abi)
add_library(samplecheck::plugin_abi ALIAS samplecheck_plugin_abi_package)

set(SAMPLECHECK_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/samplecheck)
set(SAMPLECHECK_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
# Component judge: what the pip wheel installs (pyproject.toml), the two commands and the
# files they read at run time; `cmake --install` without --component installs everything.
install(TARGETS samplecheck samplecheck_plugin_abi_package EXPORT samplecheckTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT judge)
install(TARGETS samplecheck-subject-host RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT judge)
install(FILES ${PROJECT_SOURCE_DIR}/kernels/samplecheck_plugin.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/samplecheck)
# The matmul checks' layer shapes (the sampler fixtures are generated in code).
install(FILES ${PROJECT_SOURCE_DIR}/fixtures/matmul/layer_shapes.txt
  DESTINATION ${CMAKE_INSTALL_DATADIR}/samplecheck/fixtures/matmul COMPONENT judge)
# examples/plugin's sources: examples/consumer (and a vendor starting from it) builds
# its plugin from the installed copy, one source for the tree and the package.
set(SAMPLECHECK_INSTALL_EXAMPLESDIR ${CMAKE_INSTALL_DATADIR}/samplecheck/examples)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/plugin
  DESTINATION ${SAMPLECHECK_INSTALL_EXAMPLESDIR})
install(EXPORT samplecheckTargets NAMESPACE samplecheck:: DESTINATION ${SAMPLECHECK_PACKAGE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/samplecheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/samplecheckConfig.cmake INSTALL_DESTINATION ${SAMPLECHECK_PACKAGE_DIR}
  PATH_VARS SAMPLECHECK_INSTALL_BINDIR SAMPLECHECK_INSTALL_EXAMPLESDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/samplecheckConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
# The function files vendors call; samplecheck_hip.cmake is this tree's own build rule.
file(GLOB samplecheck_function_files ${PROJECT_SOURCE_DIR}/cmake/samplecheck_*.cmake)
list(FILTER samplecheck_function_files EXCLUDE REGEX "/samplecheck_hip\\.cmake$")
install(FILES ${PROJECT_BINARY_DIR}/samplecheckConfig.cmake
  ${PROJECT_BINARY_DIR}/samplecheckConfigVersion.cmake ${samplecheck_function_files}
  DESTINATION ${SAMPLECHECK_PACKAGE_DIR})
