# cmake -DBUILD_DIR=<build> -P build_probes.cmake
# Builds the layer probes (tests/layers/CMakeLists.txt):
#  - layer_probe_public_only (plugin flags, lcc/ and lcc/support/ headers) must compile;
#  - layer_probe_core_internal (plugin flags, "common/posix_env.h") must fail on that
#    include: plugins see no core folder;
#  - layer_probe_proto_sees_rs (links lcc_proto, includes "rs/rs_service.h") must fail
#    on that include: a core library sees only the folders of what it links.
# Anything else fails the test.
function(build_probe target out_var rc_var)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
    OUTPUT_VARIABLE _out ERROR_VARIABLE _out RESULT_VARIABLE _rc)
  set(${out_var} "${_out}" PARENT_SCOPE)
  set(${rc_var} "${_rc}" PARENT_SCOPE)
endfunction()

function(expect_missing target header)
  build_probe(${target} out rc)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${target}: including ${header} compiled; a layer is open")
  endif()
  string(REPLACE "." "\\." _re "${header}")
  if(NOT out MATCHES "${_re}: No such file or directory")
    message(FATAL_ERROR "${target} failed, but not on its include of ${header}:\n${out}")
  endif()
endfunction()

build_probe(layer_probe_public_only out rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a plugin cannot build with lcc/ and lcc/support/ headers:\n${out}")
endif()
expect_missing(layer_probe_core_internal "common/posix_env.h")
expect_missing(layer_probe_proto_sees_rs "rs/rs_service.h")
message(STATUS "plugins see lcc/ only; lcc_proto does not see rs/")
