# lcc_add_plugin(NAME <name> SOURCES <files...> ENTRY <plugin_entry.cc> [LIBS <libs...>])
#
# A plugin compiles against lcc_plugin_sdk only (core/include: lcc/*.h, the plugin API,
# and lcc/support/*.h, the support library it links statically); LIBS names outside
# libraries (Kyoto, curl, zlib...) and lcc_support_pg (support code with libpq), never a
# core library (lcc_common, lcc_proto...):
# that is refused here, and tests/layers checks the include lines.
#
# Makes (<id> is <name> with '-' turned into '_': storage-kyoto -> storage_kyoto):
#  - <id>: a MODULE library at build/plugins/<name>.so, hidden visibility,
#    -Wl,--no-undefined, holding the `lcc_plugin` alias from ENTRY; listed in the
#    global property LCC_PLUGIN_TARGETS;
#  - <id>_impl: a static, PIC, hidden-visibility library of SOURCES (the code without
#    the alias), which unit tests link to call the plugin's describe() and classes
#    directly.
function(lcc_add_plugin)
  cmake_parse_arguments(P "" "NAME;ENTRY" "SOURCES;LIBS" ${ARGN})
  string(REPLACE "-" "_" _id ${P_NAME})
  foreach(_lib IN LISTS P_LIBS)
    # lcc_support_pg is support code (core/support) with libpq of its own.
    if(_lib MATCHES "^lcc_" AND NOT _lib STREQUAL "lcc_support_pg")
      message(FATAL_ERROR "plugin ${P_NAME}: LIBS names the core library ${_lib}; "
        "plugins link only lcc_plugin_sdk (CONTRIBUTING.md, Layers)")
    endif()
  endforeach()

  add_library(${_id}_impl STATIC ${P_SOURCES})
  target_link_libraries(${_id}_impl PUBLIC lcc_plugin_sdk ${P_LIBS})
  set_target_properties(${_id}_impl PROPERTIES
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON POSITION_INDEPENDENT_CODE ON)

  add_library(${_id} MODULE ${P_ENTRY})
  target_link_libraries(${_id} PRIVATE ${_id}_impl lcc_plugin_sdk)
  target_include_directories(${_id} PRIVATE ${Boost_INCLUDE_DIRS})
  set_target_properties(${_id} PROPERTIES
    OUTPUT_NAME ${P_NAME}
    PREFIX ""
    LIBRARY_OUTPUT_DIRECTORY ${LCC_PLUGIN_OUTPUT_DIR}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${_id} PRIVATE -Wl,--no-undefined)
  set_property(GLOBAL APPEND PROPERTY LCC_PLUGIN_TARGETS ${_id})
endfunction()
