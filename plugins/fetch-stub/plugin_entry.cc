#include <boost/dll/alias.hpp>

#include "stub_plugin.h"

BOOST_DLL_ALIAS(lcc::plugins::stub::describe, lcc_plugin)
