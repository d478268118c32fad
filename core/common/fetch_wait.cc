#include "common/fetch_wait.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace lcc {

Result<SmallFetch> fetchAndWait(Fetcher& fetcher, Env& env, const FetchRequest& request, Millis timeout) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    FetchResult result;
  };
  auto wait = std::make_shared<Wait>();
  LCC_RETURN_IF_ERROR(fetcher.start(request, [wait](const FetchResult& r) {
    std::lock_guard<std::mutex> lock(wait->mu);
    wait->result = r;
    wait->done = true;
    wait->cv.notify_all();
  }));
  SmallFetch out;
  {
    std::unique_lock<std::mutex> lock(wait->mu);
    if (!wait->cv.wait_for(lock, timeout, [&] { return wait->done; })) {
      lock.unlock();
      fetcher.cancel(request.id);
      lock.lock();
      wait->cv.wait(lock, [&] { return wait->done; });  // `done` runs once, also on cancel
      wait->result.code = ErrorCode::kFetchTimeout;
    }
    out.result = wait->result;
  }
  Result<std::string> body = out.result.ok() ? env.readFile(request.path) : Result<std::string>(std::string());
  if (env.exists(request.path)) (void)env.removeFile(request.path);
  if (!body.isOk()) return body.status();
  out.body = std::move(body).value();
  return out;
}

}  // namespace lcc
