# lcc_cu_xml_format: the XML answer formatting of docs/protocol.md §3 (cu_xml_format.cc)
# as a small PIC static library with hidden visibility, for the exporter plugins
# (cu-xml, cu-tar), which link with -Wl,--no-undefined and so must carry it.
# Included by each plugin's CMakeLists.txt; the first include defines the target.
# (cu_xml_format.cc is also part of lcc_proto, for the core and the C API.)
if(NOT TARGET lcc_cu_xml_format)
  add_library(lcc_cu_xml_format STATIC
    ${CMAKE_SOURCE_DIR}/core/proto/cu_xml_format.cc
    ${CMAKE_SOURCE_DIR}/core/common/time_util.cc)
  target_include_directories(lcc_cu_xml_format PUBLIC ${CMAKE_SOURCE_DIR}/core)
  target_link_libraries(lcc_cu_xml_format PUBLIC lcc_api)
  set_target_properties(lcc_cu_xml_format PROPERTIES
    POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endif()
