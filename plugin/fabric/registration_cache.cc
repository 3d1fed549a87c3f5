#include "plugin/fabric/registration_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/log/logging.h"

namespace rpcrdma::fabric {
namespace {

constexpr uintptr_t kPageSize = 4096;

uintptr_t PageFloor(uintptr_t a) { return a & ~(kPageSize - 1); }
uintptr_t PageCeil(uintptr_t a) { return PageFloor(a + kPageSize - 1); }

}  // namespace

RegistrationCache::Lease::Lease(Lease&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      key_(other.key_),
      buffer_(other.buffer_) {}

RegistrationCache::Lease& RegistrationCache::Lease::operator=(
    Lease&& other) noexcept {
  if (this != &other) {
    if (cache_ != nullptr) cache_->Release(key_);
    cache_ = std::exchange(other.cache_, nullptr);
    key_ = other.key_;
    buffer_ = other.buffer_;
  }
  return *this;
}

RegistrationCache::Lease::~Lease() {
  if (cache_ != nullptr) cache_->Release(key_);
}

RegistrationCache::RegistrationCache(Endpoint& endpoint, size_t max_bytes)
    : endpoint_(endpoint), max_bytes_(max_bytes) {}

RegistrationCache::~RegistrationCache() {
  for (const auto& [key, entry] : entries_) {
    if (entry.leases != 0) {
      // A lease outliving the cache would point at freed state.
      RPCRDMA_LOG_FATAL("registration cache destroyed while leased");
    }
  }
}

absl::StatusOr<RegistrationCache::Lease> RegistrationCache::Acquire(
    absl::Span<uint8_t> memory) {
  const auto start = reinterpret_cast<uintptr_t>(memory.data());
  const uintptr_t end = start + memory.size();
  if (memory.empty() || end < start) {
    return absl::InvalidArgumentError(
        "cannot register an empty or wrapping buffer");
  }
  // Look at the few entries starting closest below `start`; one of them
  // covers the buffer in every common pattern, and a miss only costs a
  // registration.
  constexpr int kCandidates = 8;
  auto it = entries_.upper_bound(Key{start, SIZE_MAX});
  for (int i = 0; i < kCandidates && it != entries_.begin(); ++i) {
    --it;
    const auto [entry_start, entry_length] = it->first;
    if (end <= entry_start + entry_length) {
      ++stats_.hits;
      Entry& e = it->second;
      if (e.leases++ == 0) idle_.erase(e.idle_position);
      return Lease(this, it->first,
                   LocalBuffer{e.registration.get(), start - entry_start,
                               memory.size()});
    }
  }
  ++stats_.misses;
  const Key key{PageFloor(start), PageCeil(end) - PageFloor(start)};
  auto registration = endpoint_.Register(
      absl::MakeSpan(reinterpret_cast<uint8_t*>(key.first), key.second));
  if (!registration.ok()) return registration.status();
  Registration* reg = registration->get();
  entries_.emplace(key, Entry{*std::move(registration), 1, {}});
  stats_.registered_bytes += key.second;
  ++stats_.entries;
  EvictIdle();
  return Lease(this, key, LocalBuffer{reg, start - key.first, memory.size()});
}

absl::Status RegistrationCache::Forget(absl::Span<const uint8_t> memory) {
  const auto start = reinterpret_cast<uintptr_t>(memory.data());
  const uintptr_t end = start + memory.size();
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto [entry_start, entry_length] = it->first;
    const bool overlaps =
        entry_start < end && start < entry_start + entry_length;
    if (!overlaps) {
      ++it;
      continue;
    }
    if (it->second.leases != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "memory at ", start, " is still leased from the registration cache"));
    }
    Erase(it++);
  }
  return absl::OkStatus();
}

void RegistrationCache::Release(const Key& key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.leases == 0) {
    RPCRDMA_LOG_FATAL("registration cache lease released twice");
  }
  Entry& e = it->second;
  if (--e.leases == 0) {
    e.idle_position = idle_.insert(idle_.end(), key);
    EvictIdle();
  }
}

void RegistrationCache::EvictIdle() {
  while (stats_.registered_bytes > max_bytes_ && !idle_.empty()) {
    auto it = entries_.find(idle_.front());
    ++stats_.evictions;
    Erase(it);
  }
}

void RegistrationCache::Erase(std::map<Key, Entry>::iterator it) {
  Entry& e = it->second;
  if (e.leases == 0) idle_.erase(e.idle_position);
  stats_.registered_bytes -= it->first.second;
  --stats_.entries;
  entries_.erase(it);
}

}  // namespace rpcrdma::fabric
