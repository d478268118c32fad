# Shared by install_test.cmake and deb_test.cmake.

# Fails the test with `what` and the output of the command.
function(run_or_fail what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  set(LAST_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

# The files (and symbolic links) under `root`, relative, sorted.
function(tree_of root out_var)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE ${root} ${root}/*)
  list(SORT files)
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

# What the install holds under <prefix>, relative to it; `etc` is where lcc/lcc.yaml is.
function(expected_files prefix etc out_var)
  set(list
    ${prefix}bin/lcc ${prefix}bin/lcc-bot ${prefix}bin/lccd
    ${prefix}include/lcc_client.h
    ${prefix}lib/liblcc_client.so ${prefix}lib/liblcc_client.so.1 ${prefix}lib/liblcc_client.so.1.0.0
    ${prefix}lib/systemd/system/lccd.service
    ${etc}lcc/lcc.yaml
    ${prefix}share/doc/lcc/LICENSE ${prefix}share/doc/lcc/README.md
    ${prefix}share/doc/lcc/copyright ${prefix}share/doc/lcc/changelog.gz)
  file(GLOB plugins RELATIVE ${BUILD_DIR}/plugins ${BUILD_DIR}/plugins/*.so)
  foreach(p IN LISTS plugins)
    list(APPEND list ${prefix}lib/lcc/plugins/${p})
    # README's table: each plugin's README.md.
    string(REGEX REPLACE "\\.so$" "" name ${p})
    list(APPEND list ${prefix}share/doc/lcc/plugins/${name}/README.md)
  endforeach()
  # README's table: the configs for several machines (etc/examples/).
  file(GLOB examples RELATIVE ${SOURCE_DIR}/etc/examples ${SOURCE_DIR}/etc/examples/*.yaml)
  foreach(e IN LISTS examples)
    list(APPEND list ${prefix}share/doc/lcc/examples/${e})
  endforeach()
  file(GLOB docs RELATIVE ${SOURCE_DIR}/docs ${SOURCE_DIR}/docs/*.md)
  foreach(d IN LISTS docs)
    list(APPEND list ${prefix}share/doc/lcc/docs/${d})
  endforeach()
  list(SORT list)
  set(${out_var} ${list} PARENT_SCOPE)
endfunction()

function(expect_same_list what got want)
  if(NOT "${got}" STREQUAL "${want}")
    set(extra ${got})
    list(REMOVE_ITEM extra ${want})
    set(missing ${want})
    list(REMOVE_ITEM missing ${got})
    message(FATAL_ERROR "${what}: the installed files differ\nnot expected: ${extra}\nmissing: ${missing}")
  endif()
endfunction()

function(expect_in what text want)
  string(FIND "${text}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: no '${want}' in:\n${text}")
  endif()
endfunction()

# `<bin>/<program> --version` of lccd, lcc and lcc-bot: exit 0, and the lines name the
# program and version, the commit the build was configured at and the plugin ABI of
# core/include/lcc/plugin.h. The commit is read from the build tree's build_info.h when
# there is one: the test's own build step reconfigures after a commit made since ctest
# started (the configure depends on git's HEAD), so COMMIT may name the one before.
function(expect_versions bin)
  set(info ${BUILD_DIR}/core/app/build_info/build_info.h)
  if(EXISTS ${info})
    file(STRINGS ${info} line REGEX "#define LCC_BUILD_COMMIT ")
    string(REGEX MATCH "\"([^\"]*)\"" _ "${line}")
    if(NOT CMAKE_MATCH_1 STREQUAL "")
      set(COMMIT ${CMAKE_MATCH_1})
    endif()
  endif()
  file(STRINGS ${SOURCE_DIR}/core/include/lcc/plugin.h abi REGEX "#define LCC_PLUGIN_ABI_(MAJOR|MINOR) ")
  string(REGEX MATCH "MAJOR ([0-9]+)u" _ "${abi}")
  set(major ${CMAKE_MATCH_1})
  string(REGEX MATCH "MINOR ([0-9]+)u" _ "${abi}")
  set(minor ${CMAKE_MATCH_1})
  if(major STREQUAL "" OR minor STREQUAL "" OR NOT COMMIT MATCHES "^[0-9a-f]+$|^unknown")
    message(FATAL_ERROR "test setup: ABI '${major}.${minor}' or COMMIT '${COMMIT}' not found")
  endif()
  foreach(program lccd lcc lcc-bot)
    run_or_fail("${program} --version" ${bin}/${program} --version)
    foreach(want "${program} ${VERSION}\n" "commit: ${COMMIT}\n" "plugin ABI: ${major}.${minor} (API hash "
                 "libraries (built with): " "OpenSSL")
      expect_in("${program} --version" "${LAST_OUTPUT}" "${want}")
    endforeach()
  endforeach()
endfunction()
