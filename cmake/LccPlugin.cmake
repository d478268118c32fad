# lcc_add_plugin(NAME <name> SOURCES <files...> ENTRY <plugin_entry.cc> [LIBS <libs...>])
#
# Makes:
#  - <name>: a MODULE library at build/plugins/<name>.so, hidden visibility,
#    -Wl,--no-undefined, holding the `lcc_plugin` alias from ENTRY;
#  - <name>-static: the same code without the alias, for unit tests that call the
#    plugin's describe() function directly;
#  - a ctest `verify_<name>` that runs `lccd --check` on a config naming the plugin
#    (when tests are on and the plugin has a tests/verify/<name>.yaml).
function(lcc_add_plugin)
  cmake_parse_arguments(P "" "NAME;ENTRY" "SOURCES;LIBS" ${ARGN})
  string(REPLACE "-" "_" _id ${P_NAME})

  add_library(${_id}_impl STATIC ${P_SOURCES})
  target_link_libraries(${_id}_impl PUBLIC lcc_api ${P_LIBS})
  set_target_properties(${_id}_impl PROPERTIES
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON POSITION_INDEPENDENT_CODE ON)

  add_library(${_id} MODULE ${P_ENTRY})
  target_link_libraries(${_id} PRIVATE ${_id}_impl lcc_api)
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
