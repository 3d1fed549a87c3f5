// Registrations of caller memory (DDP-eligible buffers, result buffers),
// reused across operations. Registering pins pages and costs a system call
// and device work on verbs, so an RPC transport keeps registrations of the
// buffers its caller reuses. Entries cover whole pages and are bounded by
// a byte budget; idle ones are evicted least recently used first.
//
// The cache cannot see the caller free memory. Call Forget() before
// freeing (or unmapping) memory that may be cached; otherwise a later
// allocation at the same address would reuse a registration of pages that
// are gone (on verbs, pinned pages the process no longer maps).
#ifndef RPCRDMA_PLUGIN_FABRIC_REGISTRATION_CACHE_H_
#define RPCRDMA_PLUGIN_FABRIC_REGISTRATION_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

class RegistrationCache {
 public:
  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
    size_t registered_bytes = 0;
    size_t entries = 0;
  };

  // Keeps an entry in use (never evicted or forgotten) while it lives.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    // The leased memory as a local buffer of its registration.
    const LocalBuffer& buffer() const { return buffer_; }

   private:
    friend class RegistrationCache;
    Lease(RegistrationCache* cache, std::pair<uintptr_t, size_t> key,
          LocalBuffer buffer)
        : cache_(cache), key_(key), buffer_(buffer) {}

    RegistrationCache* cache_;
    std::pair<uintptr_t, size_t> key_;
    LocalBuffer buffer_;
  };

  // `max_bytes` bounds the registered bytes of idle entries; entries in
  // use may take the total above it until they are released.
  RegistrationCache(Endpoint& endpoint, size_t max_bytes);
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;
  // Every lease must have ended first.
  ~RegistrationCache();

  // A registration covering `memory`, registered (page-rounded) on a miss.
  absl::StatusOr<Lease> Acquire(absl::Span<uint8_t> memory);

  // Deregisters every idle entry overlapping `memory`. FailedPrecondition
  // if one of them is leased (its memory must not be freed yet).
  absl::Status Forget(absl::Span<const uint8_t> memory);

  const Stats& stats() const { return stats_; }

 private:
  // (start address, length): entries may overlap, and a longer entry may
  // start where a shorter one still in use does.
  using Key = std::pair<uintptr_t, size_t>;
  struct Entry {
    std::unique_ptr<Registration> registration;
    size_t leases = 0;
    std::list<Key>::iterator idle_position;  // valid when leases == 0
  };

  void Release(const Key& key);
  void EvictIdle();
  void Erase(std::map<Key, Entry>::iterator it);

  Endpoint& endpoint_;
  size_t max_bytes_;
  std::map<Key, Entry> entries_;
  std::list<Key> idle_;  // least recently used first
  Stats stats_;
};

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_REGISTRATION_CACHE_H_
