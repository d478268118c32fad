#include "s3/call_worker.h"

#include <pthread.h>

namespace lcc::s3 {

CallWorker::CallWorker(S3Options options, std::string thread_name, std::function<void(CallAnswer)> done)
    : opts_(std::move(options)), name_(std::move(thread_name)), done_(std::move(done)) {
  thread_ = std::thread([this] { run(); });
}

CallWorker::~CallWorker() { stop(); }

void CallWorker::submit(Call call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  calls_.push_back(std::move(call));
  cv_.notify_one();
}

void CallWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    calls_.clear();
  }
  cancel_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CallWorker::run() {
  ::pthread_setname_np(::pthread_self(), name_.substr(0, 15).c_str());
  S3Client client(opts_);
  client.cancelWith(&cancel_);
  for (;;) {
    Call call;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
      if (stopping_) return;
      call = std::move(calls_.front());
      calls_.pop_front();
    }
    CallAnswer answer;
    answer.ticket = call.ticket;
    if (call.kind == Call::Kind::kDelete) {
      answer.status = client.remove(call.key);
    } else {
      auto page = client.list(call.key, call.token);
      answer.status = page.status();
      if (page.isOk()) answer.page = std::move(page).value();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;  // stop() returned or is waiting: nobody takes answers now
    }
    done_(std::move(answer));
  }
}

}  // namespace lcc::s3
