// A plugin source that breaks the layer rule three ways: check_plugin_includes.py
// must report each line (tests/layers/CMakeLists.txt). Never compiled.
#include "bad_plugin_own.h"
#include "lcc/status.h"
#include "common/posix_env.h"
#include "../../../../core/common/metrics.h"
#include <common/content_locator.h>
#include <string>
