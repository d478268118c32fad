#include <boost/dll/alias.hpp>

#include "storage_kyoto.h"

BOOST_DLL_ALIAS(lcc::plugins::kyoto::describe, lcc_plugin)
