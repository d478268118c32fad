#include "cu/bounded_pipe.h"

namespace lcc::cu {

BoundedPipe::BoundedPipe(std::size_t capacity, std::size_t chunk) : capacity_(capacity), chunk_(chunk) {}

Status BoundedPipe::write(std::string_view bytes) {
  std::function<void()> wake;
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (!bytes.empty()) {
      cv_.wait(lock, [&] { return closed_ || bytes_ < capacity_; });
      if (closed_) return Status::aborted("the client went away");
      if (finished_) return Status::internal("write after finish");
      if (chunks_.empty() || chunks_.back().size() >= chunk_) {
        chunks_.emplace_back();
        chunks_.back().reserve(chunk_);
      }
      std::string& back = chunks_.back();
      const std::size_t room = std::min(chunk_ - std::min(chunk_, back.size()), capacity_ - bytes_);
      const std::size_t n = std::min(bytes.size(), room == 0 ? std::size_t{1} : room);
      back.append(bytes.substr(0, n));
      bytes_ += n;
      bytes.remove_prefix(n);
      if (waiter_) {
        // Wake the consumer now rather than after the whole write: it drains while we fill.
        wake = std::move(waiter_);
        waiter_ = nullptr;
        lock.unlock();
        wake();
        wake = nullptr;
        lock.lock();
      }
    }
  }
  return Status::ok();
}

void BoundedPipe::finish(Status status) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    final_ = std::move(status);
    wake = std::move(waiter_);
    waiter_ = nullptr;
  }
  cv_.notify_all();
  if (wake) wake();
}

BoundedPipe::Take BoundedPipe::take(std::string& out, std::function<void()> waiter) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!chunks_.empty()) {
      out = std::move(chunks_.front());
      chunks_.pop_front();
      bytes_ -= out.size();
    } else if (finished_) {
      return Take::kEnd;
    } else {
      waiter_ = std::move(waiter);
      return Take::kEmpty;
    }
  }
  cv_.notify_all();
  return Take::kData;
}

void BoundedPipe::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    chunks_.clear();
    bytes_ = 0;
    waiter_ = nullptr;
  }
  cv_.notify_all();
}

bool BoundedPipe::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

Status BoundedPipe::finalStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return final_;
}

std::size_t BoundedPipe::buffered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace lcc::cu
