-- schema.sql — the tables of storage-postgres, embedded into the plugin at build time.
--
-- All three stores live in one PostgreSQL schema (option `schema`, default lcc); the
-- plugin runs this file in one transaction, under an advisory lock, whenever a store
-- opens, so every statement is IF NOT EXISTS. Bump kFormatVersion (pg_store.h) on a
-- change that older plugins cannot read.
-- Keys (`key`, `next`, `first`, `last`) are lcc::encodeUrlKey() bytes as bytea: bytea
-- compares as memcmp, so key order is encodeUrlKey order (no collation involved).
-- Strings are bytea too: the LCC's strings are bytes (a URL may hold any byte, a
-- PostgreSQL text may not hold NUL or invalid UTF-8). Integers are BIGINT (u64 values
-- as their two's-complement i64); times are Unix milliseconds; NULL = absent optional.

-- Identity and state per store: (store, name) → value. Names: plugin, format,
-- clean_shutdown, max_seq (content), sync_count.
CREATE TABLE IF NOT EXISTS lcc_store (
  store text NOT NULL,
  name  text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (store, name)
);

-- The caller's named values: QueueBatch::putMeta (store 'queue'), ContentBatch::putMeta
-- (store 'content').
CREATE TABLE IF NOT EXISTS meta (
  store text  NOT NULL,
  key   bytea NOT NULL,
  value bytea NOT NULL,
  PRIMARY KEY (store, key)
);

-- QDB: one row per queued URL identity.
CREATE TABLE IF NOT EXISTS qdb (
  key       bytea PRIMARY KEY,
  url_op    bigint NOT NULL,
  view_tag  bytea NOT NULL,
  browse    bytea,
  fetch_url bytea NOT NULL,
  mtime     bigint,
  size      bigint,
  md5       bytea NOT NULL,
  tod       bytea NOT NULL,
  op        bigint NOT NULL,
  pset      bigint NOT NULL,
  slot      bigint NOT NULL,
  next      bytea NOT NULL,
  bad_count bigint NOT NULL,
  queued    bigint NOT NULL
);

-- QPSDB: the primary key serves (pset, slot) order, the index "slot = ? ORDER BY pset".
CREATE TABLE IF NOT EXISTS qpsdb (
  pset     bigint NOT NULL,
  slot     bigint NOT NULL,
  pid      bigint NOT NULL,
  priority bigint NOT NULL,
  first    bytea NOT NULL,
  last     bytea NOT NULL,
  count    bigint NOT NULL,
  PRIMARY KEY (pset, slot)
);
CREATE INDEX IF NOT EXISTS qpsdb_by_slot ON qpsdb (slot, pset);
-- A provider's queued URLs (ProviderStore::queuedUrls: a UNS host's "processing").
-- On pid alone, so the QM's count updates stay HOT.
CREATE INDEX IF NOT EXISTS qpsdb_by_pid ON qpsdb (pid);

-- FSMDB: content to unlink on a machine.
CREATE TABLE IF NOT EXISTS fsmdb (
  machine  bytea NOT NULL,
  filename bytea NOT NULL,
  since    bigint NOT NULL,
  PRIMARY KEY (machine, filename)
);

-- LCC DB: one row per stored URL; seq is the change order (scanSince), the key index
-- serves get(), lcc_by_pid serves scanProvider in key order.
CREATE TABLE IF NOT EXISTS lcc (
  seq            bigint PRIMARY KEY,
  key            bytea NOT NULL UNIQUE,
  pid            bigint NOT NULL,
  deleted        bigint NOT NULL,
  view_tag       bytea NOT NULL,
  browse         bytea,
  fetch_url      bytea NOT NULL,
  mtime          bigint,
  size           bigint NOT NULL,
  md5            bytea NOT NULL,
  machine        bytea NOT NULL,
  filename       bytea NOT NULL,
  stored         bigint NOT NULL,
  refreshed      bigint NOT NULL,
  declared_mtime bigint,
  declared_size  bigint,
  declared_md5   bytea NOT NULL,
  created_seq    bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS lcc_by_pid ON lcc (pid, key);
-- etag (ContentRecord::etag, '': none) came after the first release: a schema made
-- before it gains the column here, its rows reading as no ETag.
ALTER TABLE lcc ADD COLUMN IF NOT EXISTS etag bytea NOT NULL DEFAULT ''::bytea;

-- PIDB. An identity column: ids from 1, never reused (a sequence never goes back).
-- prefixes and errors: the byte lists of list_codec.h.
CREATE TABLE IF NOT EXISTS providers (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state                bigint NOT NULL,
  state_reason         bytea NOT NULL,
  password_hash        bytea NOT NULL,
  prefixes             bytea NOT NULL,
  priority             bigint NOT NULL,
  bandwidth            bigint NOT NULL,
  quota_files          bigint NOT NULL,
  quota_bytes          bigint NOT NULL,
  used_files           bigint NOT NULL,
  used_bytes           bigint NOT NULL,
  secret               bytea NOT NULL,
  secret_url           bytea NOT NULL,
  contact              bytea NOT NULL,
  reg_expires          bigint NOT NULL,
  conn_seq             bigint NOT NULL,
  last_ip              bytea NOT NULL,
  last_connect         bigint,
  fullsets_used        bigint NOT NULL,
  fullset_period_start bigint NOT NULL,
  fullset_wanted       bigint NOT NULL,
  fullset_reason       bigint NOT NULL,
  error_total          bigint NOT NULL,
  errors               bytea NOT NULL,
  created              bigint NOT NULL,
  sitemap_url          bytea NOT NULL,
  sitemap_interval     bigint NOT NULL
);

-- The QM lease (option qm_lease of the queue store; pg_lease.h): one row. The active
-- QM holds it until expires_at (the server's clock), and renews it. A standby takes
-- it once it expired, by one UPDATE that increments epoch: the fencing token that
-- every write transaction of the holder checks (FOR SHARE), so a QM that was paused
-- past a takeover writes nothing.
CREATE TABLE IF NOT EXISTS qm_lease (
  id         int PRIMARY KEY CHECK (id = 1),
  epoch      bigint NOT NULL,
  holder     bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
INSERT INTO qm_lease (id, epoch, holder, expires_at) VALUES (1, 0, '', 'epoch') ON CONFLICT (id) DO NOTHING;
