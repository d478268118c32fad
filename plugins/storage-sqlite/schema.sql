-- schema.sql — the tables of storage-sqlite, embedded into the plugin at build time.
--
-- One file per store under node.data_dir: queue.sqlite, content.sqlite,
-- providers.sqlite. Each file gets the "common" section and its own section; a
-- section starts at a line "-- @section <name>". Everything runs in one transaction
-- when the file is created. Bump kFormatVersion (sqlite_db.h) on any change here.
-- Keys (`key`, `next`, `first`, `last`) are lcc::encodeUrlKey() bytes, stored as BLOBs,
-- so key order is memcmp order and "all of provider P" is a key range. Times are
-- Unix milliseconds; optional values are NULL when absent.

-- @section common
-- What this file is and how it was left: plugin, store, format, clean_shutdown,
-- and the store's counters (rows, max_seq, sync_count).
CREATE TABLE lcc_store (
  name  TEXT PRIMARY KEY NOT NULL,
  value ANY
) STRICT, WITHOUT ROWID;

-- The caller's small named values (QueueBatch::putMeta, ContentBatch::putMeta).
CREATE TABLE meta (
  key   BLOB PRIMARY KEY NOT NULL,
  value BLOB NOT NULL
) STRICT, WITHOUT ROWID;

-- @section queue
-- QDB: one row per queued URL identity.
CREATE TABLE qdb (
  id        INTEGER PRIMARY KEY,      -- rowid; insertion order (scanEntries order)
  key       BLOB NOT NULL UNIQUE,     -- encodeUrlKey(notice.key)
  url_op    INTEGER NOT NULL,         -- UrlOp
  view_tag  TEXT NOT NULL,
  browse    TEXT,                     -- NULL: same as the URL
  fetch     TEXT NOT NULL,
  mtime     INTEGER,
  size      INTEGER,                  -- u64 stored as its two's-complement i64
  md5       TEXT NOT NULL,
  tod       TEXT NOT NULL,
  op        INTEGER NOT NULL,         -- QueueOp
  pset      INTEGER NOT NULL,
  slot      INTEGER NOT NULL,
  next      BLOB NOT NULL,            -- key of the next row of the list; empty: last
  bad_count INTEGER NOT NULL,
  queued    INTEGER NOT NULL
) STRICT;

-- QPSDB: one row per (provider set, start slot) list. The primary key serves
-- "by (pset, slot)"; the index serves "WHERE slot = ? ORDER BY pset".
CREATE TABLE qpsdb (
  pset     INTEGER NOT NULL,
  slot     INTEGER NOT NULL,
  pid      INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  first    BLOB NOT NULL,
  last     BLOB NOT NULL,
  count    INTEGER NOT NULL,
  PRIMARY KEY (pset, slot)
) STRICT, WITHOUT ROWID;
CREATE INDEX qpsdb_by_slot ON qpsdb (slot, pset);

-- FSMDB: content to unlink on a machine; the primary key serves "by machine".
CREATE TABLE fsmdb (
  machine  TEXT NOT NULL,
  filename TEXT NOT NULL,
  since    INTEGER NOT NULL,
  PRIMARY KEY (machine, filename)
) STRICT, WITHOUT ROWID;

-- @section content
-- LCC DB: one row per stored URL. seq is the rowid, so the table itself is the
-- change-sequence order (scanSince is a range scan); the UNIQUE key index serves
-- get() and the provider key range (scanProvider). created_seq and etag came after
-- format 1 was released: sqlite_content_store.cc adds them to an older file when it
-- opens one (ALTER TABLE), so the format number stays 1.
CREATE TABLE lcc (
  seq            INTEGER PRIMARY KEY,
  key            BLOB NOT NULL UNIQUE,
  deleted        INTEGER NOT NULL,
  view_tag       TEXT NOT NULL,
  browse         TEXT,
  fetch          TEXT NOT NULL,
  mtime          INTEGER,
  size           INTEGER NOT NULL,
  md5            TEXT NOT NULL,
  machine        TEXT NOT NULL,
  filename       TEXT NOT NULL,
  stored         INTEGER NOT NULL,
  refreshed      INTEGER NOT NULL,
  declared_mtime INTEGER,
  declared_size  INTEGER,
  declared_md5   TEXT NOT NULL,
  created_seq    INTEGER NOT NULL DEFAULT 0,  -- ContentRecord::created_seq (0: unknown)
  etag           TEXT NOT NULL DEFAULT ''     -- ContentRecord::etag ('': none)
) STRICT;

-- @section providers
-- PIDB. AUTOINCREMENT: ids are never reused, also after the highest one is removed.
-- state_reason, sitemap_url and sitemap_interval came after format 1 was released:
-- sqlite_provider_store.cc adds them to an older file when it opens one (ALTER TABLE),
-- so the format number stays 1.
CREATE TABLE providers (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  state                INTEGER NOT NULL,
  password_hash        TEXT NOT NULL,
  prefixes             BLOB NOT NULL,   -- record_codec.h: list of strings
  priority             INTEGER NOT NULL,
  bandwidth            INTEGER NOT NULL,
  quota_files          INTEGER NOT NULL,
  quota_bytes          INTEGER NOT NULL,
  used_files           INTEGER NOT NULL,
  used_bytes           INTEGER NOT NULL,
  secret               TEXT NOT NULL,
  secret_url           TEXT NOT NULL,
  contact              TEXT NOT NULL,
  reg_expires          INTEGER NOT NULL,
  conn_seq             INTEGER NOT NULL,
  last_ip              TEXT NOT NULL,
  last_connect         INTEGER,
  fullsets_used        INTEGER NOT NULL,
  fullset_period_start INTEGER NOT NULL,
  fullset_wanted       INTEGER NOT NULL,
  fullset_reason       INTEGER NOT NULL,
  error_total          INTEGER NOT NULL,
  errors               BLOB NOT NULL,   -- record_codec.h: list of FetchErrorEntry
  created              INTEGER NOT NULL,
  state_reason         TEXT NOT NULL DEFAULT '',
  sitemap_url          TEXT NOT NULL DEFAULT '',
  sitemap_interval     INTEGER NOT NULL DEFAULT 0   -- milliseconds; 0: sitemap.default_interval
) STRICT;
