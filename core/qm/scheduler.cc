#include "qm/scheduler.h"

#include <algorithm>

#include "lcc/support/url_norm.h"

namespace lcc::qm {

std::string politenessHost(std::string_view url) {
  auto parts = url::splitNormalUrl(url);
  if (!parts.isOk()) return std::string(url);
  const auto& p = parts.value();
  const std::uint16_t port = p.port != 0 ? p.port : (p.scheme == "https" ? 443 : 80);
  return p.host + ":" + std::to_string(port);
}

Scheduler::Scheduler(Clock& clock, SchedulerOptions options) : clock_(clock), options_(options) {
  if (options_.provider_inflight == 0) options_.provider_inflight = 1;
  if (options_.host_inflight == 0) options_.host_inflight = 1;
  if (options_.bandwidth_tick.count() <= 0) options_.bandwidth_tick = Millis(1);
  if (options_.bandwidth_horizon < options_.bandwidth_tick) options_.bandwidth_horizon = options_.bandwidth_tick;
  std::size_t n = static_cast<std::size_t>((options_.bandwidth_horizon.count() + options_.bandwidth_tick.count() - 1) /
                                           options_.bandwidth_tick.count()) + 2;
  wheel_.resize(n);
  wheel_time_ = clock_.monoNow();
}

Scheduler::Provider& Scheduler::get(ProviderId pid) { return providers_[pid]; }

void Scheduler::reindex(ProviderId pid, Provider& p) {
  if (p.indexed) {
    eligible_.erase(*p.indexed);
    p.indexed.reset();
  }
  bool ok = !p.ready.empty() && !p.delayed_until && !p.blocked && !p.held && p.waiting_host.empty() &&
            p.in_flight < options_.provider_inflight;
  if (ok) {
    IndexKey k{-static_cast<std::int64_t>(p.priority), *p.ready.begin(), pid};
    eligible_.insert(k);
    p.indexed = k;
  }
}

void Scheduler::setProvider(ProviderId pid, std::int32_t priority, std::uint64_t bandwidth) {
  Provider& p = get(pid);
  p.priority = priority;
  p.bandwidth = bandwidth;
  reindex(pid, p);
}

void Scheduler::setHeld(ProviderId pid, bool held) {
  Provider& p = get(pid);
  if (p.held == held) return;
  p.held = held;
  reindex(pid, p);
}

bool Scheduler::isHeld(ProviderId pid) const {
  auto it = providers_.find(pid);
  return it != providers_.end() && it->second.held;
}

std::size_t Scheduler::heldCount() const {
  std::size_t n = 0;
  for (const auto& [pid, p] : providers_) n += p.held ? 1 : 0;
  return n;
}

void Scheduler::addReadySet(ProviderId pid, PSetId pset) {
  Provider& p = get(pid);
  p.ready.insert(pset);
  p.blocked = false;
  stopWaiting(pid, p);
  reindex(pid, p);
}

void Scheduler::removeReadySet(ProviderId pid, PSetId pset) {
  auto it = providers_.find(pid);
  if (it == providers_.end()) return;
  it->second.ready.erase(pset);
  reindex(pid, it->second);
}

std::vector<PSetId> Scheduler::readySets(ProviderId pid) const {
  auto it = providers_.find(pid);
  if (it == providers_.end()) return {};
  return {it->second.ready.begin(), it->second.ready.end()};
}

void Scheduler::setCapacity(std::uint64_t slots) { capacity_ = slots; }

std::uint64_t Scheduler::limit() const {
  if (capacity_ == 0) return 0;
  return std::max<std::uint64_t>(capacity_, capacity_ * options_.botm_overload_pct / 100);
}

std::uint32_t Scheduler::inFlight(ProviderId pid) const {
  auto it = providers_.find(pid);
  return it == providers_.end() ? 0 : it->second.in_flight;
}

std::optional<ProviderId> Scheduler::pick() const {
  if (in_flight_ >= limit() || eligible_.empty()) return std::nullopt;
  return std::get<2>(*eligible_.begin());
}

std::vector<ProviderId> Scheduler::candidates(std::size_t n) const {
  std::vector<ProviderId> out;
  for (auto it = eligible_.begin(); it != eligible_.end() && out.size() < n; ++it) out.push_back(std::get<2>(*it));
  return out;
}

void Scheduler::dispatched(ProviderId pid, const std::string& host) {
  Provider& p = get(pid);
  p.in_flight += 1;
  in_flight_ += 1;
  hosts_[host].in_flight += 1;
  reindex(pid, p);
}

bool Scheduler::hostHasRoom(const std::string& host) const { return hostInFlight(host) < options_.host_inflight; }

std::uint32_t Scheduler::hostInFlight(const std::string& host) const {
  auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.in_flight;
}

void Scheduler::waitForHost(ProviderId pid, const std::string& host) {
  Provider& p = get(pid);
  if (p.waiting_host == host) return;
  stopWaiting(pid, p);
  p.waiting_host = host;
  hosts_[host].waiting.push_back(pid);
  reindex(pid, p);
}

void Scheduler::stopWaiting(ProviderId pid, Provider& p) {
  if (p.waiting_host.empty()) return;
  auto it = hosts_.find(p.waiting_host);
  p.waiting_host.clear();
  if (it == hosts_.end()) return;
  auto& w = it->second.waiting;
  w.erase(std::remove(w.begin(), w.end(), pid), w.end());
  if (it->second.in_flight == 0 && w.empty()) hosts_.erase(it);
}

void Scheduler::hostDone(const std::string& host) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return;
  if (it->second.in_flight > 0) it->second.in_flight -= 1;
  std::vector<ProviderId> waiting;  // all released: pick() gives the free slot to the best of them
  waiting.swap(it->second.waiting);
  if (it->second.in_flight == 0) hosts_.erase(it);
  for (ProviderId pid : waiting) {
    auto pit = providers_.find(pid);
    if (pit == providers_.end() || pit->second.waiting_host != host) continue;
    pit->second.waiting_host.clear();
    reindex(pid, pit->second);
  }
}

void Scheduler::blocked(ProviderId pid) {
  Provider& p = get(pid);
  p.blocked = true;
  reindex(pid, p);
}

Scheduler::After Scheduler::finished(ProviderId pid, std::uint64_t bytes) {
  Provider& p = get(pid);
  if (p.in_flight > 0) {
    p.in_flight -= 1;
    in_flight_ -= 1;
  }
  p.blocked = false;
  After after = After::kReady;
  if (p.bandwidth > 0 && bytes > 0) {
    const MonoTime now = clock_.monoNow();
    const auto cost = Millis(static_cast<std::int64_t>((bytes * 1000 + p.bandwidth - 1) / p.bandwidth));
    p.allowed_at = std::max(p.allowed_at, now) + cost;
    auto owed = std::chrono::duration_cast<Millis>(p.allowed_at - now);
    // Small debts accumulate in allowed_at; the wheel is used once a tick is owed.
    if (owed >= options_.bandwidth_tick) after = delay(pid, owed);
  }
  reindex(pid, p);
  return after;
}

void Scheduler::lost(ProviderId pid) {
  Provider& p = get(pid);
  if (p.in_flight > 0) {
    p.in_flight -= 1;
    in_flight_ -= 1;
  }
  p.blocked = false;
  reindex(pid, p);
}

Scheduler::After Scheduler::delay(ProviderId pid, Millis d) {
  Provider& p = get(pid);
  if (d.count() <= 0) return After::kReady;
  if (d > options_.bandwidth_horizon) {
    p.allowed_at = MonoTime{};
    p.beyond = d;
    return After::kBeyondHorizon;
  }
  const MonoTime now = clock_.monoNow();
  const MonoTime until = now + d;
  if (p.delayed_until && *p.delayed_until >= until) return After::kDelayed;  // already held longer
  // Bucket k is released when the wheel reaches wheel_time_ + k × tick; pick the first
  // bucket not earlier than `until`.
  const std::int64_t tick = options_.bandwidth_tick.count();
  std::int64_t from_base = std::chrono::duration_cast<Millis>(until - wheel_time_).count();
  std::int64_t ticks = std::max<std::int64_t>(1, (from_base + tick - 1) / tick);
  ticks = std::min<std::int64_t>(ticks, static_cast<std::int64_t>(wheel_.size()) - 1);
  p.delay_gen += 1;
  p.delayed_until = until;
  wheel_[(wheel_pos_ + static_cast<std::size_t>(ticks)) % wheel_.size()].emplace_back(pid, p.delay_gen);
  reindex(pid, p);
  return After::kDelayed;
}

bool Scheduler::isDelayed(ProviderId pid) const {
  auto it = providers_.find(pid);
  return it != providers_.end() && it->second.delayed_until.has_value();
}

Millis Scheduler::lastBeyond(ProviderId pid) const {
  auto it = providers_.find(pid);
  return it == providers_.end() ? Millis(0) : it->second.beyond;
}

void Scheduler::setRetryAt(ProviderId pid, MonoTime t) { get(pid).retry_at = t; }

std::optional<MonoTime> Scheduler::retryAt(ProviderId pid) const {
  auto it = providers_.find(pid);
  if (it == providers_.end()) return std::nullopt;
  return it->second.retry_at;
}

std::vector<ProviderId> Scheduler::tick() {
  std::vector<ProviderId> released;
  const MonoTime now = clock_.monoNow();
  const Millis tick = options_.bandwidth_tick;
  while (now >= wheel_time_ + tick) {
    wheel_pos_ = (wheel_pos_ + 1) % wheel_.size();
    wheel_time_ += tick;
    auto bucket = std::move(wheel_[wheel_pos_]);
    wheel_[wheel_pos_].clear();
    for (auto [pid, gen] : bucket) {
      auto it = providers_.find(pid);
      if (it == providers_.end() || it->second.delay_gen != gen || !it->second.delayed_until) continue;
      it->second.delayed_until.reset();
      reindex(pid, it->second);
      released.push_back(pid);
    }
  }
  return released;
}

std::size_t Scheduler::delayedCount() const {
  std::size_t n = 0;
  for (const auto& [pid, p] : providers_) n += p.delayed_until ? 1 : 0;
  return n;
}

std::size_t Scheduler::readySetCount() const {
  std::size_t n = 0;
  for (const auto& [pid, p] : providers_) n += p.ready.size();
  return n;
}

}  // namespace lcc::qm
