#include "cu/merged_query.h"

#include <pthread.h>

#include <future>
#include <system_error>

#include "cu/query_engine.h"
#include "proto/cu_cursor.h"

namespace lcc::cu {
Result<MergedResult> runMergedQuery(const proto::CuQuery& q, QueryEngine* local, const PeerOptions& peers,
                                    std::uint64_t default_limit) {
  if (auto e = proto::validateCuQuery(q)) return Status::invalidArgument(e->message);
  proto::CuCursor since;
  if (q.since_cursor) {
    LCC_ASSIGN_OR_RETURN(since, proto::decodeCuCursor(*q.since_cursor));
  } else if (q.since_seq && *q.since_seq > 0) {
    return Status::invalidArgument("a merged answer takes back its own last_seq (c1.…), not a plain seq");
  }
  const std::uint64_t limit = q.limit ? *q.limit : default_limit;  // 0 from default_limit: none
  const bool capped = q.limit.has_value() || default_limit > 0;
  const std::uint64_t per_source = capped ? std::min(limit, peers.max_records) : peers.max_records;
  proto::CuQuery asked = sourceQuery(q, per_source);
  asked.since_seq.reset();
  if (!since.parts().empty()) asked.since_cursor = proto::encodeCuCursor(since);

  std::vector<std::future<Result<SourceAnswer>>> pending;
  try {
    for (const auto& url : peers.peers) {
      pending.push_back(std::async(std::launch::async, [&url, &asked, &peers] {
        pthread_setname_np(pthread_self(), "lcc-cu-peer");
        return askPeer(url, asked, peers);
      }));
    }
  } catch (const std::system_error& e) {  // no thread to be had: the started ones finish first
    return Status::internal(std::string("starting a thread to ask a peer: ") + e.what());
  }
  std::vector<SourceAnswer> answers;
  Status refused = Status::ok();
  if (local != nullptr) {
    auto mine = askLocal(*local, asked, peers.max_answer_bytes);
    if (mine.isOk()) answers.push_back(std::move(mine).value());
    else refused = mine.status();
  }
  for (auto& f : pending) {
    auto a = f.get();
    if (!a.isOk()) {
      if (refused.isOk()) refused = a.status();
      continue;
    }
    answers.push_back(std::move(a).value());
  }
  if (!refused.isOk()) return refused;
  MergedResult out;
  out.answer = CursorMerge(since, capped ? limit : 0).merge(std::move(answers));
  if (local != nullptr) local->stats().peers_unreachable.inc(out.answer.unreachable.size());
  out.token = proto::encodeCuCursor(out.answer.cursor);
  return out;
}

}  // namespace lcc::cu
