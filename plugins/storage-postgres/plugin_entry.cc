#include <boost/dll/alias.hpp>

#include "storage_postgres.h"

BOOST_DLL_ALIAS(lcc::plugins::postgres::describe, lcc_plugin)
