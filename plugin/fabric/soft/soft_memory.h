// Memory registrations and windows of one soft endpoint (its protection
// domain).
//
// A window handle is built like an rkey: the upper 24 bits index a slot of
// the window table (plus one, so no handle is 0) and the lower 8 bits are a
// key that changes every time the slot is reused. Freed slots are reused
// oldest first and only once kReuseAfter of them are waiting, so a handle
// comes back only after many thousands of bind/invalidate cycles.
//
// A window's offset is the address of its first octet, as with verbs.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_MEMORY_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric::soft {

class ProtectionDomain : public std::enable_shared_from_this<ProtectionDomain> {
 public:
  static constexpr size_t kReuseAfter = 64;
  static constexpr size_t kMaxWindows = (size_t{1} << 24) - 2;

  std::unique_ptr<Registration> Register(absl::Span<uint8_t> memory);

  // The bytes a local scatter/gather element names, or InvalidArgument
  // when its registration is not one of this domain's or the range is
  // outside it.
  absl::StatusOr<absl::Span<uint8_t>> Resolve(const LocalBuffer& buffer) const;

  // Creates a window over `buffer` (checked like Resolve).
  absl::StatusOr<RemoteRegion> Bind(const LocalBuffer& buffer, uint32_t access);
  // Invalidates a valid window; false when `handle` names none.
  bool Invalidate(uint32_t handle);
  bool IsValid(uint32_t handle) const;

  // The bytes [address, address + length) of window `handle` when the
  // window is valid, grants `right` and contains the whole range; nullopt
  // otherwise (a remote access error).
  std::optional<absl::Span<uint8_t>> Access(uint32_t handle, uint64_t address,
                                            uint64_t length,
                                            uint32_t right) const;

  // Called when a registration goes away: windows still on it die.
  void Forget(const Registration* registration);

 private:
  struct Window {
    bool valid = false;
    uint8_t key = 0;
    const Registration* registration = nullptr;
    uint8_t* base = nullptr;
    uint64_t address = 0;
    uint32_t length = 0;
    uint32_t access = 0;
  };
  const Window* Find(uint32_t handle) const;

  std::unordered_set<const Registration*> registrations_;
  std::vector<Window> windows_;
  std::deque<uint32_t> free_;  // indices of invalid slots, oldest first
};

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_MEMORY_H_
