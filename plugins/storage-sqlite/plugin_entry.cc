#include <boost/dll/alias.hpp>

#include "storage_sqlite.h"

BOOST_DLL_ALIAS(lcc::plugins::sqlite::describe, lcc_plugin)
