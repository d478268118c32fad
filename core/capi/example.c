/* example.c — a content user in C: mirror what changed since last time.
 *
 *   lcc-cu-example ENDPOINTS [STATE_FILE]
 *
 * ENDPOINTS is "host:port" of an LCC's CU port, or several separated by commas (a
 * split LCC, seen as one). STATE_FILE keeps one last_seq per endpoint between runs:
 * each run prints only what changed since the previous one, removals included, and
 * the size of each stored URL's content as read through the API.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lcc_client.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s HOST:PORT[,HOST:PORT...] [STATE_FILE]\n", argv[0]);
    return 2;
  }
  lcc_client* client = NULL;
  if (lcc_client_new(argv[1], &client) != LCC_OK) {
    fprintf(stderr, "bad endpoint list: %s\n", argv[1]);
    return 2;
  }
  size_t n = lcc_client_endpoint_count(client);
  lcc_query* query = lcc_query_new();
  lcc_query_set_deleted(query, 1);
  lcc_query_set_content(query, 1);

  /* The state file: one decimal last_seq per line, per endpoint. */
  const char* state = argc > 2 ? argv[2] : NULL;
  if (state) {
    FILE* f = fopen(state, "r");
    unsigned long long seq;
    for (size_t i = 0; f && i < n && fscanf(f, "%llu", &seq) == 1; ++i) lcc_query_set_endpoint_since_seq(query, i, seq);
    if (f) fclose(f);
  }

  lcc_cursor* cursor = NULL;
  int rc = lcc_query_run(client, query, &cursor);
  const lcc_record* r;
  while (rc == LCC_OK && (rc = lcc_cursor_next(cursor, &r)) == LCC_OK) {
    if (r->deleted) {
      printf("removed  %s (%s) seq %llu\n", r->url, r->mime, (unsigned long long)r->seq);
      continue;
    }
    unsigned long long got = 0;
    char buf[65536];
    long long k;
    while (r->has_content && (k = lcc_cursor_read_content(cursor, buf, sizeof buf)) > 0) got += (unsigned long long)k;
    printf("stored   %s (%s) seq %llu, %llu bytes%s%s\n", r->url, r->mime, (unsigned long long)r->seq, got,
           r->content_missing ? ", content " : "", r->content_missing ? r->content_missing : "");
  }
  int status = 0;
  if (rc != LCC_DONE) {
    fprintf(stderr, "query failed: %s: %s\n", lcc_strerror(rc), cursor ? lcc_cursor_error(cursor) : "");
    status = 1;
  } else if (state) {
    FILE* f = fopen(state, "w");
    for (size_t i = 0; f && i < n; ++i) fprintf(f, "%llu\n", (unsigned long long)lcc_cursor_last_seq(cursor, i));
    if (f) fclose(f);
  }
  lcc_cursor_free(cursor);
  lcc_query_free(query);
  lcc_client_free(client);
  return status;
}
