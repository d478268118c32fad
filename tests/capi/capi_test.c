/* capi_test.c — the C API as a C program sees it (run by capi_harness_test).
 *
 *   capi_test SCRIPT
 *
 * SCRIPT lines (written by the harness):
 *   endpoints H:P[,H:P...]     the client's endpoints (tls://H:P for TLS)
 *   tls CAFILE                 lcc_client_set_tls(client, CAFILE, NULL, NULL) (after endpoints)
 *   since I SEQ                lcc_query_set_endpoint_since_seq(q, I, SEQ)
 *   provider ID | mime PAT | deleted | content | limit N
 *   expect-error CODE          lcc_query_run/next must fail with CODE (e.g. -2)
 *   expect-text TEXT           ...and lcc_cursor_error() must contain TEXT
 *   rec E SEQ PID DELETED SIZE FNV URL   the next record, in order (FNV: 64-bit
 *                              FNV-1a of the content, hex; "-" when not read)
 *   last I SEQ                 lcc_cursor_last_seq(I) after the end
 *   count I N                  lcc_cursor_count(I) after the end
 * Exit 0 when everything matched; otherwise prints what differed and exits 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lcc_client.h"

#define MAX_LINE 8192

static int failures = 0;
#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      fprintf(stderr, "capi_test: FAIL: ");    \
      fprintf(stderr, __VA_ARGS__);            \
      fprintf(stderr, "\n");                   \
      ++failures;                              \
    }                                          \
  } while (0)

struct expect_rec {
  size_t endpoint;
  uint64_t seq;
  uint32_t pid;
  int deleted;
  uint64_t size;
  char fnv[32];
  char url[MAX_LINE];
};

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capi_test SCRIPT\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  lcc_query* q = lcc_query_new();
  lcc_client* client = NULL;
  struct expect_rec* recs = NULL;
  size_t nrecs = 0, cap = 0;
  uint64_t last[16], count[16];
  int has_last[16] = {0}, has_count[16] = {0};
  int expect_error = 0, with_content = 0;
  char expect_text[256] = "";
  char line[MAX_LINE];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char word[64];
    if (sscanf(line, "%63s", word) != 1) continue;
    const char* rest = line + strlen(word) + (line[strlen(word)] ? 1 : 0);
    if (!strcmp(word, "endpoints")) {
      CHECK(lcc_client_new(rest, &client) == LCC_OK, "lcc_client_new(%s)", rest);
    } else if (!strcmp(word, "tls")) {
      CHECK(lcc_client_set_tls(client, rest, NULL, NULL) == LCC_OK, "lcc_client_set_tls(%s): %s", rest,
            lcc_client_tls_error(client));
    } else if (!strcmp(word, "expect-text")) {
      snprintf(expect_text, sizeof expect_text, "%s", rest);
    } else if (!strcmp(word, "since")) {
      size_t i;
      uint64_t seq;
      sscanf(rest, "%zu %" SCNu64, &i, &seq);
      lcc_query_set_endpoint_since_seq(q, i, seq);
    } else if (!strcmp(word, "provider")) {
      lcc_query_add_provider(q, (uint32_t)strtoul(rest, NULL, 10));
    } else if (!strcmp(word, "mime")) {
      lcc_query_add_mime(q, rest);
    } else if (!strcmp(word, "deleted")) {
      lcc_query_set_deleted(q, 1);
    } else if (!strcmp(word, "content")) {
      lcc_query_set_content(q, 1);
      with_content = 1;
    } else if (!strcmp(word, "limit")) {
      lcc_query_set_limit(q, strtoull(rest, NULL, 10));
    } else if (!strcmp(word, "expect-error")) {
      expect_error = atoi(rest);
    } else if (!strcmp(word, "rec")) {
      if (nrecs == cap) {
        cap = cap ? cap * 2 : 16;
        recs = realloc(recs, cap * sizeof *recs);
      }
      struct expect_rec* r = &recs[nrecs++];
      int off = 0;
      sscanf(rest, "%zu %" SCNu64 " %" SCNu32 " %d %" SCNu64 " %31s %n", &r->endpoint, &r->seq, &r->pid, &r->deleted,
             &r->size, r->fnv, &off);
      snprintf(r->url, sizeof r->url, "%s", rest + off);
    } else if (!strcmp(word, "last") || !strcmp(word, "count")) {
      size_t i;
      uint64_t v;
      sscanf(rest, "%zu %" SCNu64, &i, &v);
      if (i < 16) {
        if (word[0] == 'l') last[i] = v, has_last[i] = 1;
        else count[i] = v, has_count[i] = 1;
      }
    }
  }
  fclose(f);
  if (!client) return 2;

  lcc_cursor* cur = NULL;
  int rc = lcc_query_run(client, q, &cur);
  size_t seen = 0;
  const lcc_record* r = NULL;
  while (rc == LCC_OK && (rc = lcc_cursor_next(cur, &r)) == LCC_OK) {
    char fnv[32] = "-";
    uint64_t got = 0;
    if (with_content && r->has_content) {
      uint64_t h = 1469598103934665603ULL;
      unsigned char buf[7]; /* small reads on purpose */
      long long k;
      while ((k = lcc_cursor_read_content(cur, buf, sizeof buf)) > 0) {
        for (long long i = 0; i < k; ++i) h = (h ^ buf[i]) * 1099511628211ULL;
        got += (uint64_t)k;
      }
      CHECK(k == 0, "read_content failed: %lld %s", k, lcc_cursor_error(cur));
      snprintf(fnv, sizeof fnv, "%016" PRIx64, h);
      CHECK(got == r->size, "%s: read %" PRIu64 " content bytes, record says %" PRIu64, r->url, got, r->size);
    }
    if (seen >= nrecs) {
      CHECK(0, "unexpected record %s (seq %" PRIu64 ")", r->url, r->seq);
      ++seen;
      continue;
    }
    const struct expect_rec* e = &recs[seen++];
    CHECK(r->endpoint == e->endpoint, "record %zu: endpoint %zu, want %zu", seen, r->endpoint, e->endpoint);
    CHECK(r->seq == e->seq, "record %zu: seq %" PRIu64 ", want %" PRIu64, seen, r->seq, e->seq);
    CHECK(r->pid == e->pid, "record %zu: pid %u, want %u", seen, r->pid, e->pid);
    CHECK(r->deleted == e->deleted, "record %zu: deleted %d, want %d", seen, r->deleted, e->deleted);
    CHECK(!strcmp(r->url, e->url), "record %zu: url %s, want %s", seen, r->url, e->url);
    if (!r->deleted) CHECK(r->size == e->size, "record %zu: size %" PRIu64 ", want %" PRIu64, seen, r->size, e->size);
    CHECK(!strcmp(fnv, e->fnv), "record %zu (%s): content hash %s, want %s", seen, r->url, fnv, e->fnv);
  }
  if (expect_error) {
    CHECK(rc == expect_error, "wanted error %d, got %d (%s)", expect_error, rc, lcc_strerror(rc));
    CHECK(strlen(lcc_cursor_error(cur)) > 0, "an error without words");
    CHECK(strstr(lcc_cursor_error(cur), expect_text) != NULL, "error \"%s\" does not say \"%s\"",
          lcc_cursor_error(cur), expect_text);
  } else {
    CHECK(rc == LCC_DONE, "query ended with %d: %s: %s", rc, lcc_strerror(rc), cur ? lcc_cursor_error(cur) : "");
    CHECK(seen == nrecs, "got %zu records, want %zu", seen, nrecs);
    for (size_t i = 0; i < 16; ++i) {
      if (has_last[i]) CHECK(lcc_cursor_last_seq(cur, i) == last[i], "endpoint %zu: last_seq %" PRIu64 ", want %" PRIu64, i, lcc_cursor_last_seq(cur, i), last[i]);
      if (has_count[i]) CHECK(lcc_cursor_count(cur, i) == count[i], "endpoint %zu: count %" PRIu64 ", want %" PRIu64, i, lcc_cursor_count(cur, i), count[i]);
    }
  }
  lcc_cursor_free(cur);
  lcc_query_free(q);
  lcc_client_free(client);
  free(recs);
  if (failures == 0) printf("capi_test: ok (%zu records)\n", seen);
  return failures == 0 ? 0 : 1;
}
