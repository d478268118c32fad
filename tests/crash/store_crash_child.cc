// store_crash_child.cc — the writer half of the store crash test (crash_test.cc).
//
//   store_crash_child <plugin_dir> <plugin> <queue|content|providers> <data_dir>
//
// Opens one store through the real plugin loader and writes batches last+1, last+2,
// ... forever (last: the last batch the store holds). Batch n (kRows rows, all tagged n) is applied and
// synced, then "n\n" is written to stdout: the parent may count on batch n from then
// on. The parent SIGKILLs this process at a random moment.
// Batch n also removes the rows of batch n-3 and records "last" = n, so every batch
// both adds and removes, and the expected state is known exactly:
//   rows of batches last-2 .. last present in full, nothing else.
// A line "ready <info>" is written once the store is open.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "crash_common.h"

using namespace lcc;

namespace {

void say(const std::string& line) {
  std::string l = line + "\n";
  if (::write(1, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::_Exit(3);
}

[[noreturn]] void die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "store_crash_child: %s: %s\n", what.c_str(), s.toString().c_str());
  std::_Exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: store_crash_child <plugin_dir> <plugin> <kind> <data_dir>\n");
    return 2;
  }
  const std::string plugin = argv[2], kind = argv[3];
  std::uint64_t n = 1;
  SystemClock clock;
  PluginRegistry registry(argv[1], HostContext{&clock, posixEnv(), nullptr, argv[4], "m1"});
  auto opts = registry.defaultOptions(plugin, crash::smallOptions(plugin));
  if (!opts.isOk()) die("options", opts.status());

  if (kind == "queue") {
    auto q = registry.makeQueueStore(plugin, *opts);
    if (!q.isOk()) die("open", q.status());
    say("ready " + crash::describe((*q)->openInfo()));
    auto last = (*q)->getMeta("last");
    if (!last.isOk()) die("getMeta", last.status());
    if (*last) n = std::strtoull(last.value()->c_str(), nullptr, 10) + 1;
    for (;; ++n) {
      QueueBatch b;
      crash::queueBatch(n, &b);
      Status s = (*q)->apply(b);
      if (s.isOk()) s = (*q)->sync();
      if (!s.isOk()) die("batch " + std::to_string(n), s);
      say(std::to_string(n));
    }
  }
  if (kind == "content") {
    auto c = registry.makeContentStore(plugin, *opts);
    if (!c.isOk()) die("open", c.status());
    say("ready " + crash::describe((*c)->openInfo()));
    auto max = (*c)->maxSeq();
    if (!max.isOk()) die("maxSeq", max.status());
    ChangeSeq seq = *max;
    auto last = (*c)->getMeta("last");
    if (!last.isOk()) die("getMeta", last.status());
    if (*last) n = std::strtoull(last.value()->c_str(), nullptr, 10) + 1;
    for (;; ++n) {
      ContentBatch b;
      crash::contentBatch(n, &seq, &b);
      Status s = (*c)->apply(b);
      if (s.isOk()) s = (*c)->sync();
      if (!s.isOk()) die("batch " + std::to_string(n), s);
      say(std::to_string(n));
    }
  }
  if (kind == "providers") {
    auto p = registry.makeProviderStore(plugin, *opts);
    if (!p.isOk()) die("open", p.status());
    say("ready " + crash::describe((*p)->openInfo()));
    auto one = (*p)->get(1);
    if (!one.isOk()) die("get", one.status());
    if (*one) n = one.value()->conn_seq + 1;
    for (;; ++n) {
      // One durable create per batch, then a durable modify of provider 1.
      ProviderRecord r;
      r.contact = "b" + std::to_string(n);
      r.prefixes = {"http://p/" + std::to_string(n) + "/"};
      auto id = (*p)->create(r);
      if (!id.isOk()) die("create", id.status());
      Status s = (*p)->modify(1, [&](ProviderRecord& rec) {
        rec.conn_seq = n;
        rec.last_ip = "10.0.0." + std::to_string(n % 250);
        return Status::ok();
      });
      if (!s.isOk()) die("modify", s);
      say(std::to_string(n));
    }
  }
  std::fprintf(stderr, "store_crash_child: unknown store kind %s\n", kind.c_str());
  return 2;
}
