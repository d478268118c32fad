#include <boost/dll/alias.hpp>

#include "tar_exporter.h"

BOOST_DLL_ALIAS(lcc::plugins::cu_tar::describe, lcc_plugin)
