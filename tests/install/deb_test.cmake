# cpack -G DEB builds lcc_<version>_<arch>.deb: the same tree under /usr, the config in
# /etc/lcc (a conffile), maintainer scripts that make the lcc user and keep
# /var/lib/lcc, and lcc-dbgsym_<version>_<arch>.ddeb. lintian finds no error in either
# (the warnings left are explained in cmake/deb/README.md). Extracted with dpkg-deb -x
# into a temporary root: the programs are stripped, their --version names the version,
# commit and plugin ABI, and lccd --check accepts the config with plugin_dir pointed at
# the extracted plugins.
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
if(SANITIZED)
  message("SKIP: a build under sanitizers is not packaged")
  return()
endif()
find_program(CPACK cpack HINTS ${CMAKE_COMMAND}/..)
find_program(DPKG_DEB dpkg-deb)
if(NOT CPACK OR NOT DPKG_DEB)
  message("SKIP: cpack or dpkg-deb is missing")
  return()
endif()
find_program(LINTIAN lintian)
if(NOT LINTIAN)
  message(FATAL_ERROR "lintian is missing (scripts/deps.sh --test installs it)")
endif()
set(work ${WORK}/deb)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
run_or_fail("cpack -G DEB" ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${work})
file(GLOB debs ${work}/lcc_*.deb)
file(GLOB ddebs ${work}/lcc-dbgsym_*.ddeb)
list(LENGTH debs n)
list(LENGTH ddebs n_dbg)
if(NOT n EQUAL 1 OR NOT n_dbg EQUAL 1)
  message(FATAL_ERROR "expected one lcc_*.deb and one lcc-dbgsym_*.ddeb in ${work}, got: ${debs} ${ddebs}")
endif()

# lintian: exit 0 and no "E:" line (lintian exits 0 on warnings, 1 on errors).
foreach(pkg ${debs} ${ddebs})
  execute_process(COMMAND ${LINTIAN} --no-cfg ${pkg} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "(^|\n)E: [^\n]*" errors "${out}")
  if(NOT rc EQUAL 0 OR errors)
    message(FATAL_ERROR "lintian ${pkg}: exit ${rc}\n${out}\n${err}")
  endif()
  message(STATUS "lintian ${pkg}: no error\n${out}")
endforeach()

set(root ${work}/root)
run_or_fail("dpkg-deb -x" ${DPKG_DEB} -x ${debs} ${root})
tree_of(${root} got)
expected_files("usr/" "etc/" want)
expect_same_list("the .deb" "${got}" "${want}")

run_or_fail("dpkg-deb -e" ${DPKG_DEB} -e ${debs} ${work}/control)
foreach(script postinst postrm prerm conffiles)
  if(NOT EXISTS ${work}/control/${script})
    message(FATAL_ERROR "the .deb has no ${script}")
  endif()
endforeach()
file(READ ${work}/control/postinst postinst)
expect_in("postinst" "${postinst}" "adduser --system")
file(READ ${work}/control/conffiles conffiles)
expect_in("conffiles" "${conffiles}" "/etc/lcc/lcc.yaml")
file(READ ${root}/usr/lib/systemd/system/lccd.service unit)
expect_in("lccd.service" "${unit}" "ExecStart=/usr/bin/lccd -c /etc/lcc/lcc.yaml")
file(READ ${root}/etc/lcc/lcc.yaml cfg)
expect_in("/etc/lcc/lcc.yaml" "${cfg}" "plugin_dir: /usr/lib/lcc/plugins")

run_or_fail("file" file -L ${root}/usr/bin/lccd ${root}/usr/bin/lcc ${root}/usr/bin/lcc-bot
  ${root}/usr/lib/liblcc_client.so.1 ${root}/usr/lib/lcc/plugins/storage-kyoto.so)
string(REGEX MATCHALL ", not stripped" unstripped "${LAST_OUTPUT}")
if(unstripped)
  message(FATAL_ERROR "the .deb holds unstripped objects:\n${LAST_OUTPUT}")
endif()
expect_versions(${root}/usr/bin)

run_or_fail("extracted lccd --check" ${root}/usr/bin/lccd -c ${root}/etc/lcc/lcc.yaml --check --config-only
  --set storage.plugin_dir=${root}/usr/lib/lcc/plugins)
expect_in("lccd --check" "${LAST_OUTPUT}" "${root}/usr/lib/lcc/plugins/storage-kyoto.so")
file(REMOVE_RECURSE ${work})
message(STATUS "deb: ok")
