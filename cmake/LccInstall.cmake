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
# P/share/doc/lcc/             README.md, LICENSE, docs/*.md

install(TARGETS lccd lcc lcc-bot RUNTIME DESTINATION bin)
get_property(_lcc_plugins GLOBAL PROPERTY LCC_PLUGIN_TARGETS)
install(TARGETS ${_lcc_plugins} LIBRARY DESTINATION lib/lcc/plugins)
install(FILES README.md LICENSE DESTINATION share/doc/lcc)
file(GLOB _lcc_docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${_lcc_docs} DESTINATION share/doc/lcc/docs)

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
]])

# cpack -G DEB: the same tree under /usr, the config under /etc (a conffile).
set(CPACK_PACKAGE_NAME lcc)
set(CPACK_PACKAGE_VENDOR "LCC")
set(CPACK_PACKAGE_CONTACT "LCC maintainers <lcc@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Local Content Cache: fetches what content providers changed, for content users")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The install() code above writes /etc/lcc through DESTDIR, so CPack stages with DESTDIR.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
# Library dependencies come from dpkg-shlibdeps (dpkg-dev); adduser for postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(_lcc_conffiles ${CMAKE_BINARY_DIR}/deb/conffiles)
file(WRITE ${_lcc_conffiles} "/etc/lcc/lcc.yaml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_SOURCE_DIR}/cmake/deb/postinst ${CMAKE_SOURCE_DIR}/cmake/deb/prerm ${CMAKE_SOURCE_DIR}/cmake/deb/postrm
  ${_lcc_conffiles})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
