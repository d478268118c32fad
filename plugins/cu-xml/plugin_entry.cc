#include <boost/dll/alias.hpp>

#include "xml_exporter.h"

BOOST_DLL_ALIAS(lcc::plugins::cu_xml::describe, lcc_plugin)
