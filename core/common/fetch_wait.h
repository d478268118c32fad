// fetch_wait.h — one small fetch through a Fetcher, waited for: what the RS (secret
// files) and IndexNow (key files) need on an HTTP worker thread.
#pragma once

#include <string>

#include "lcc/env.h"
#include "lcc/fetcher.h"

namespace lcc {

struct SmallFetch {
  FetchResult result;
  std::string body;  // when result.ok()
};

// Starts `request` (request.path: a file of the caller's that is removed again) and
// waits up to `timeout` for it; past that the fetch is cancelled and the result is
// kFetchTimeout. Not OK only when the fetcher refused to start or the fetched file
// could not be read back.
Result<SmallFetch> fetchAndWait(Fetcher& fetcher, Env& env, const FetchRequest& request, Millis timeout);

}  // namespace lcc
