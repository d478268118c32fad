# cmake -DBUILD_DIR=<build> -P build_probes.cmake
# Builds the two layer probes (tests/layers/CMakeLists.txt) with plugin flags:
# layer_probe_public_only must compile, layer_probe_core_internal must fail because
# "common/posix_env.h" is not found. Anything else fails the test.
function(build_probe target out_var rc_var)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
    OUTPUT_VARIABLE _out ERROR_VARIABLE _out RESULT_VARIABLE _rc)
  set(${out_var} "${_out}" PARENT_SCOPE)
  set(${rc_var} "${_rc}" PARENT_SCOPE)
endfunction()

build_probe(layer_probe_public_only out rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a plugin cannot build with lcc/ and lcc/support/ headers:\n${out}")
endif()
build_probe(layer_probe_core_internal out rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "a plugin source including common/posix_env.h compiled: "
    "a core folder is on the plugins' include path")
endif()
if(NOT out MATCHES "common/posix_env\\.h: No such file or directory")
  message(FATAL_ERROR "the core-internal probe failed, but not on its include:\n${out}")
endif()
message(STATUS "plugins see lcc/ and nothing else of the core")
