// schema_sql.h — schema.sql, embedded at build time (CMakeLists.txt generates
// schema_sql.cc from it).
#pragma once

namespace lcc::plugins::postgres {

extern const char kSchemaSql[];

}  // namespace lcc::plugins::postgres
