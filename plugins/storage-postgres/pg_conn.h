// pg_conn.h — the libpq connection of storage-postgres is the support library's
// (lcc/support/pg_conn.h, lcc_support_pg), shared with the front end's PMDB/FEDB
// (core/front); these names keep the plugin's code as it was.
#pragma once

#include "lcc/support/pg_conn.h"

namespace lcc::plugins::postgres {

using pg::PgConn;
using pg::PgParams;
using pg::PgResult;
using pg::PgStep;
using pg::quoteIdent;
using pg::statusFromSqlState;

}  // namespace lcc::plugins::postgres
