# cmake --install into a temporary prefix installs exactly the programs, the client
# library, the plugins, the production config, the systemd unit and the docs; the
# installed lccd --check accepts the installed config, whose plugin_dir is the
# installed plugin folder; so do the installed examples; the installed programs'
# --version names the version, the commit and the plugin ABI.
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
set(prefix ${WORK}/install-prefix)
file(REMOVE_RECURSE ${prefix})
run_or_fail("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

tree_of(${prefix} got)
expected_files("" "etc/" want)
expect_same_list("cmake --install --prefix ${prefix}" "${got}" "${want}")

file(READ ${prefix}/etc/lcc/lcc.yaml cfg)
foreach(want "plugin_dir: ${prefix}/lib/lcc/plugins" "data_dir: /var/lib/lcc" "allow_private: false"
             "http: 127.0.0.1:7780")
  expect_in("etc/lcc/lcc.yaml" "${cfg}" "${want}")
endforeach()
file(READ ${prefix}/lib/systemd/system/lccd.service unit)
foreach(want "ExecStart=${prefix}/bin/lccd -c ${prefix}/etc/lcc/lcc.yaml" "Type=notify" "StateDirectory=lcc"
             "User=lcc" "NoNewPrivileges=yes" "ProtectSystem=strict" "LimitNOFILE=")
  expect_in("lccd.service" "${unit}" "${want}")
endforeach()

run_or_fail("installed lccd --check" ${prefix}/bin/lccd -c ${prefix}/etc/lcc/lcc.yaml --check --config-only)
expect_in("lccd --check" "${LAST_OUTPUT}" "plugin storage-kyoto")
expect_in("lccd --check" "${LAST_OUTPUT}" "${prefix}/lib/lcc/plugins/fetch-curl.so")
file(GLOB examples ${prefix}/share/doc/lcc/examples/*.yaml)
foreach(e IN LISTS examples)
  file(READ ${e} cfg)
  expect_in("${e}" "${cfg}" "plugin_dir: ${prefix}/lib/lcc/plugins")
  # The PostgreSQL examples name a deployment's database hosts: their check connects
  # there, so they are checked against the suite's own server instead
  # (config_check_examples_pg-*, tests/install/CMakeLists.txt).
  if(NOT cfg MATCHES "storage-postgres")
    run_or_fail("installed lccd --check ${e}" ${prefix}/bin/lccd -c ${e} --check --config-only)
  endif()
endforeach()
expect_versions(${prefix}/bin)
file(REMOVE_RECURSE ${prefix})
message(STATUS "install layout: ok (${prefix})")
