# CPACK_POST_BUILD_SCRIPTS of cmake/LccInstall.cmake. CPack 3.25 writes the md5sums of
# the -dbgsym package with the absolute staging paths (lintian:
# md5sums-lists-nonexistent-file, and `dpkg --verify` cannot check them): this rewrites
# them relative to the root, as dpkg expects, adds usr/share/doc/lcc-dbgsym -> lcc (the
# copyright and changelog of the package it belongs to, as dh_strip does), and builds the
# package again.
foreach(_pkg IN LISTS CPACK_PACKAGE_FILES)
  if(NOT _pkg MATCHES "-dbgsym_[^/]*\\.ddeb$")
    continue()
  endif()
  set(_dir "${_pkg}.tree")
  file(REMOVE_RECURSE "${_dir}")
  execute_process(COMMAND dpkg-deb -R "${_pkg}" "${_dir}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb -R ${_pkg} failed")
  endif()
  file(READ "${_dir}/DEBIAN/md5sums" _sums)
  string(REGEX REPLACE "  [^\n]*/usr/lib/debug/" "  usr/lib/debug/" _sums "${_sums}")
  file(WRITE "${_dir}/DEBIAN/md5sums" "${_sums}")
  string(REGEX REPLACE "^.*/([^/_]+)-dbgsym_[^/]*$" "\\1" _main "${_pkg}")
  file(MAKE_DIRECTORY "${_dir}/usr/share/doc")
  file(CREATE_LINK "${_main}" "${_dir}/usr/share/doc/${_main}-dbgsym" SYMBOLIC)
  execute_process(COMMAND dpkg-deb --root-owner-group -Zxz -b "${_dir}" "${_pkg}" OUTPUT_QUIET RESULT_VARIABLE _rc)
  file(REMOVE_RECURSE "${_dir}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb -b ${_pkg} failed")
  endif()
endforeach()
