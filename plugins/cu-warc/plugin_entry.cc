#include <boost/dll/alias.hpp>

#include "warc_exporter.h"

BOOST_DLL_ALIAS(lcc::plugins::cu_warc::describe, lcc_plugin)
