#include <boost/dll/alias.hpp>

#include "memory_plugin.h"

BOOST_DLL_ALIAS(lcc::plugins::memory::describe, lcc_plugin)
