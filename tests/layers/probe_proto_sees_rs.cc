// Compiled in a target that links lcc_proto only; includes a header of lcc_rs, which
// lcc_proto does not depend on, so it must not compile (tests/layers/build_probes.cmake).
#include "rs/rs_service.h"
