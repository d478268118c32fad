#include <boost/dll/alias.hpp>

#include "curl_plugin.h"

BOOST_DLL_ALIAS(lcc::plugins::curl::describe, lcc_plugin)
