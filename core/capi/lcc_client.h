/* lcc_client.h — the LCC content-user C API (liblcc_client.so).
 *
 * Runs a CU query (docs/protocol.md §3) against one or several LCC endpoints (the CU TCP
 * port, host:port of `listen.cu`) and presents one merged view: the endpoints are
 * queried in turn, in the order given, and their answers concatenated (design
 * document §12: a split LCC holds each provider in exactly one sub-LCC, so nothing
 * repeats). Within one endpoint, records come in change-sequence order.
 *
 * Incremental mirroring: each endpoint has its own change sequence. After a query,
 * lcc_cursor_last_seq(cursor, i) is what to pass back as
 * lcc_query_set_endpoint_since_seq(query, i, seq) next time; doing so never misses
 * and never repeats a change (updates and, with lcc_query_set_deleted, removals).
 *
 * Content: with lcc_query_set_content(q, 1) the stored bytes of each record are
 * available through lcc_cursor_read_content() while that record is current; they
 * are streamed (base64 decoded on the fly), never held whole in memory.
 *
 * Threads: objects are not shared between threads; separate objects may be used
 * in separate threads. Errors are negative LCC_E* values; lcc_strerror() names them,
 * lcc_cursor_error() says more.
 */
#ifndef LCC_CLIENT_H
#define LCC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LCC_CLIENT_API __attribute__((visibility("default")))
#else
#define LCC_CLIENT_API
#endif

/* Return codes. */
#define LCC_OK 0
#define LCC_DONE 1             /* lcc_cursor_next: no more records */
#define LCC_EINVAL (-1)        /* bad argument (endpoint syntax, NULL, out of range) */
#define LCC_ECONNECT (-2)      /* an endpoint could not be reached */
#define LCC_EIO (-3)           /* the connection failed or timed out mid-answer */
#define LCC_EPROTOCOL (-4)     /* the answer is not a well-formed CU answer */
#define LCC_EREJECTED (-5)     /* the server answered query_rejected; see lcc_cursor_reject_code */
#define LCC_ENOMEM (-6)

typedef struct lcc_client lcc_client;
typedef struct lcc_query lcc_query;
typedef struct lcc_cursor lcc_cursor;

/* One record. Strings are NUL-terminated UTF-8 and valid until the next
 * lcc_cursor_next() or lcc_cursor_free(). */
typedef struct lcc_record {
  size_t endpoint;        /* index of the endpoint it came from */
  uint64_t seq;           /* change sequence within that endpoint */
  uint32_t pid;           /* provider id */
  const char* url;        /* c: the conceptual URL */
  const char* mime;       /* m */
  const char* browse;     /* b ("" when not browsable) */
  const char* fetch;      /* f */
  const char* view_tag;   /* st, "" when none */
  const char* md5;        /* "" for removals */
  int64_t mtime;          /* seconds since the epoch; -1 when unknown */
  int64_t stored;         /* when stored or removed, seconds since the epoch */
  uint64_t size;          /* bytes stored (0 for removals) */
  int deleted;            /* 1: a removal (tombstone) */
  int has_content;        /* 1: lcc_cursor_read_content() gives the stored bytes */
  const char* content_missing; /* content asked for but not available: "other-machine",
                                  "unreadable"; NULL otherwise */
} lcc_record;

/* Endpoints: "host:port" or a comma-separated list "h1:p1,h2:p2"; "tls://host:port"
 * is a CU port that runs TLS (listen.cu_tls): the server's certificate is checked
 * for `host` against the system's CAs, or those of lcc_client_set_tls(). */
LCC_CLIENT_API int lcc_client_new(const char* endpoints, lcc_client** out);
LCC_CLIENT_API void lcc_client_free(lcc_client* client);
LCC_CLIENT_API size_t lcc_client_endpoint_count(const lcc_client* client);
LCC_CLIENT_API const char* lcc_client_endpoint(const lcc_client* client, size_t index);
/* Connect and read timeout in milliseconds (default 30000; 0: none). */
LCC_CLIENT_API void lcc_client_set_timeout(lcc_client* client, int timeout_ms);
/* TLS endpoints: the CA file (PEM) servers are checked against (NULL: the system's),
 * and a client certificate and key (NULL, NULL: none) for servers that ask for one.
 * LCC_EINVAL when a file cannot be used; lcc_client_tls_error() says why. */
LCC_CLIENT_API int lcc_client_set_tls(lcc_client* client, const char* ca_file, const char* cert_file,
                                      const char* key_file);
LCC_CLIENT_API const char* lcc_client_tls_error(const lcc_client* client);

LCC_CLIENT_API lcc_query* lcc_query_new(void);
LCC_CLIENT_API void lcc_query_free(lcc_query* query);
LCC_CLIENT_API int lcc_query_add_provider(lcc_query* query, uint32_t pid);
/* Records changed after `seq`, on every endpoint... */
LCC_CLIENT_API int lcc_query_set_since_seq(lcc_query* query, uint64_t seq);
/* ...or on endpoint `endpoint` only (wins over the former for that endpoint). */
LCC_CLIENT_API int lcc_query_set_endpoint_since_seq(lcc_query* query, size_t endpoint, uint64_t seq);
/* Records stored or removed at or after this time (seconds since the epoch). */
LCC_CLIENT_API int lcc_query_set_since_time(lcc_query* query, int64_t unix_seconds);
LCC_CLIENT_API int lcc_query_add_mime(lcc_query* query, const char* pattern);  /* "text/html"; "text/" and a star: any text */
LCC_CLIENT_API int lcc_query_add_prefix(lcc_query* query, const char* url_prefix);
LCC_CLIENT_API int lcc_query_set_deleted(lcc_query* query, int include_removals);
/* At most `limit` records per endpoint. */
LCC_CLIENT_API int lcc_query_set_limit(lcc_query* query, uint64_t limit);
LCC_CLIENT_API int lcc_query_set_content(lcc_query* query, int with_content);

/* Starts the query (connects to the first endpoint). The cursor is returned even on
 * failure (when *out could be made), so that lcc_cursor_error() can say why. */
LCC_CLIENT_API int lcc_query_run(lcc_client* client, const lcc_query* query, lcc_cursor** out);
/* LCC_OK and *record set; LCC_DONE at the end of the last endpoint; or an error. */
LCC_CLIENT_API int lcc_cursor_next(lcc_cursor* cursor, const lcc_record** record);
/* Reads content of the current record: >0 bytes, 0 at its end, <0 an error. */
LCC_CLIENT_API long long lcc_cursor_read_content(lcc_cursor* cursor, void* buf, size_t n);
/* Count and last_seq of endpoint `endpoint`'s answer; valid once the cursor reached
 * that endpoint (always after LCC_DONE). */
LCC_CLIENT_API uint64_t lcc_cursor_count(const lcc_cursor* cursor, size_t endpoint);
LCC_CLIENT_API uint64_t lcc_cursor_last_seq(const lcc_cursor* cursor, size_t endpoint);
/* The query_rejected code (docs/protocol.md §2) after LCC_EREJECTED, else 0. */
LCC_CLIENT_API int lcc_cursor_reject_code(const lcc_cursor* cursor);
/* The last error in words ("" when none). */
LCC_CLIENT_API const char* lcc_cursor_error(const lcc_cursor* cursor);
LCC_CLIENT_API void lcc_cursor_free(lcc_cursor* cursor);

LCC_CLIENT_API const char* lcc_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* LCC_CLIENT_H */
