# What `cmake --install build --prefix P` and `cpack -G DEB` put on a machine: the
# three programs, the C client library and its header, the plugins, a production
# configuration, the systemd unit and the docs. Nothing else: the tests, benchmarks
# and examples stay in the build folder.
#
# P/bin/{lccd,lcc,lcc-bot}
# P/lib/liblcc_client.so*, P/include/lcc_client.h     (core/capi/CMakeLists.txt)
# P/lib/lcc/plugins/*.so
# P/etc/lcc/lcc.yaml          from etc/lcc.production.yaml, plugin_dir = P/lib/lcc/plugins
#                              (/etc/lcc/lcc.yaml when P is /usr, as in the .deb)
# P/lib/systemd/system/lccd.service   ExecStart names P/bin/lccd and the config above
# P/share/doc/lcc/             README.md, LICENSE, copyright, changelog.gz, docs/*.md,
#                              examples/*.yaml (etc/examples, plugin_dir = P/lib/lcc/plugins),
#                              plugins/<plugin>/README.md
# Packaging notes (lintian, the -dbgsym package): cmake/deb/README.md.

install(TARGETS lccd lcc lcc-bot RUNTIME DESTINATION bin)
get_property(_lcc_plugins GLOBAL PROPERTY LCC_PLUGIN_TARGETS)
install(TARGETS ${_lcc_plugins} LIBRARY DESTINATION lib/lcc/plugins)
install(FILES README.md LICENSE cmake/deb/copyright DESTINATION share/doc/lcc)
file(GLOB _lcc_docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${_lcc_docs} DESTINATION share/doc/lcc/docs)
foreach(_p IN LISTS _lcc_plugins)
  get_target_property(_dir ${_p} SOURCE_DIR)
  get_filename_component(_name ${_dir} NAME)  # plugins/<name>, the .so's stem
  if(EXISTS ${_dir}/README.md)
    install(FILES ${_dir}/README.md DESTINATION share/doc/lcc/plugins/${_name})
  endif()
endforeach()

# The Debian changelog (gzip -9n, as Debian wants it), made at configure time: the
# version, the commit and the commit's date (cmake/deb/changelog.in).
set(LCC_DEB_VERSION ${PROJECT_VERSION})
# A placeholder address (example.org is reserved for examples): whoever distributes the
# package puts theirs here, cmake -DLCC_DEB_MAINTAINER="Name <address>".
set(LCC_DEB_MAINTAINER "LCC maintainers <lcc@example.org>" CACHE STRING "the .deb's Maintainer")
set(LCC_DEB_DATE "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%aD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    OUTPUT_VARIABLE LCC_DEB_DATE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT LCC_DEB_DATE)
  string(TIMESTAMP LCC_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/deb/changelog.in ${CMAKE_BINARY_DIR}/deb/changelog @ONLY)
execute_process(COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/deb/changelog RESULT_VARIABLE _gz_rc)
if(NOT _gz_rc EQUAL 0)
  message(FATAL_ERROR "gzip -9n of ${CMAKE_BINARY_DIR}/deb/changelog failed")
endif()
install(FILES ${CMAKE_BINARY_DIR}/deb/changelog.gz DESTINATION share/doc/lcc)

# The config and the unit name absolute paths, known only at install time (--prefix,
# or /usr under cpack). With the prefix /usr the config goes to /etc, as GNU and
# Debian expect (GNUInstallDirs' special case).
install(CODE "set(LCC_SRC \"${CMAKE_SOURCE_DIR}\")")
install(CODE [[
  set(_prefix "${CMAKE_INSTALL_PREFIX}")
  if(_prefix STREQUAL "/usr")
    set(_etc "/etc/lcc")
  else()
    set(_etc "${_prefix}/etc/lcc")
  endif()
  file(READ "${LCC_SRC}/etc/lcc.production.yaml" _cfg)
  string(REPLACE "plugin_dir: /usr/lib/lcc/plugins" "plugin_dir: ${_prefix}/lib/lcc/plugins" _cfg "${_cfg}")
  file(WRITE "$ENV{DESTDIR}${_etc}/lcc.yaml" "${_cfg}")
  message(STATUS "Installing: $ENV{DESTDIR}${_etc}/lcc.yaml")
  file(READ "${LCC_SRC}/etc/lccd.service" _unit)
  string(REPLACE "/usr/bin/lccd -c /etc/lcc/lcc.yaml" "${_prefix}/bin/lccd -c ${_etc}/lcc.yaml" _unit "${_unit}")
  string(REPLACE "file:/usr/share/doc/lcc/" "file:${_prefix}/share/doc/lcc/" _unit "${_unit}")
  file(WRITE "$ENV{DESTDIR}${_prefix}/lib/systemd/system/lccd.service" "${_unit}")
  message(STATUS "Installing: $ENV{DESTDIR}${_prefix}/lib/systemd/system/lccd.service")
  file(GLOB _examples "${LCC_SRC}/etc/examples/*.yaml")
  foreach(_ex IN LISTS _examples)
    get_filename_component(_name "${_ex}" NAME)
    file(READ "${_ex}" _cfg)
    string(REPLACE "plugin_dir: /usr/lib/lcc/plugins" "plugin_dir: ${_prefix}/lib/lcc/plugins" _cfg "${_cfg}")
    file(WRITE "$ENV{DESTDIR}${_prefix}/share/doc/lcc/examples/${_name}" "${_cfg}")
    message(STATUS "Installing: $ENV{DESTDIR}${_prefix}/share/doc/lcc/examples/${_name}")
  endforeach()
]])

# cpack -G DEB: the same tree under /usr, the config under /etc (a conffile).
set(CPACK_PACKAGE_NAME lcc)
set(CPACK_PACKAGE_VENDOR "LCC")
set(CPACK_PACKAGE_CONTACT "${LCC_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Local Content Cache: fetches what content providers changed, for content users")
# Lines under 80 columns (lintian); "." is an empty line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "A content provider tells the LCC which of its URLs changed or went
away; the LCC queues that durably, fetches each URL politely (by priority,
within the provider's bandwidth and time-of-day window), stores the content,
and lets content users take what changed since their last visit, as XML,
tar.gz or WARC, or over ResourceSync.
.
This package holds the daemon lccd, the command lcc, the robot lcc-bot, the
storage, fetch and export plugins, the C client library liblcc_client, a
production configuration in /etc/lcc and the systemd unit lccd.service (not
enabled).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The install() code above writes /etc/lcc through DESTDIR, so CPack stages with DESTDIR.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
# Library dependencies come from dpkg-shlibdeps (dpkg-dev); adduser for postinst;
# procps for /bin/kill, the unit's ExecReload.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, procps")
# liblcc_client.so.1: a shlibs file for packages that link it, the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Stripped programs, plugins and library; their symbols and debug information (what
# the build type has: -g with RelWithDebInfo) go to lcc-dbgsym_<version>_<arch>.ddeb,
# found by build id (/usr/lib/debug/.build-id/).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/deb/fix_dbgsym.cmake)
set(_lcc_conffiles ${CMAKE_BINARY_DIR}/deb/conffiles)
file(WRITE ${_lcc_conffiles} "/etc/lcc/lcc.yaml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_SOURCE_DIR}/cmake/deb/postinst ${CMAKE_SOURCE_DIR}/cmake/deb/prerm ${CMAKE_SOURCE_DIR}/cmake/deb/postrm
  ${CMAKE_SOURCE_DIR}/cmake/deb/triggers ${_lcc_conffiles})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
