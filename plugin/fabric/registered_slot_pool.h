// Pre-registered buffers for Sends and Receives: one page-aligned
// allocation, one registration, equal slots handed out by index. Posting a
// receive or a send from a pool costs no registration on the data path.
#ifndef RPCRDMA_PLUGIN_FABRIC_REGISTERED_SLOT_POOL_H_
#define RPCRDMA_PLUGIN_FABRIC_REGISTERED_SLOT_POOL_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

class RegisteredSlotPool {
 public:
  // `count` buffers of `buffer_size` octets each, registered on `endpoint`.
  static absl::StatusOr<std::unique_ptr<RegisteredSlotPool>> Create(
      Endpoint& endpoint, size_t buffer_size, size_t count);

  RegisteredSlotPool(const RegisteredSlotPool&) = delete;
  RegisteredSlotPool& operator=(const RegisteredSlotPool&) = delete;
  ~RegisteredSlotPool();

  // A free slot, or nullopt when every slot is in use.
  std::optional<uint32_t> Acquire();
  // Returns a slot; releasing a slot twice or one not acquired is a bug
  // and aborts.
  void Release(uint32_t slot);

  // The first `length` octets of a slot, for posting.
  LocalBuffer Buffer(uint32_t slot, size_t length) const;
  LocalBuffer Buffer(uint32_t slot) const { return Buffer(slot, buffer_size_); }
  absl::Span<uint8_t> Memory(uint32_t slot) const;

  size_t buffer_size() const { return buffer_size_; }
  size_t count() const { return in_use_.size(); }
  size_t available() const { return free_.size(); }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  RegisteredSlotPool(size_t buffer_size, size_t count,
                     std::unique_ptr<uint8_t, FreeDeleter> memory);

  size_t buffer_size_;
  std::unique_ptr<uint8_t, FreeDeleter> memory_;
  std::unique_ptr<Registration> registration_;
  std::vector<uint32_t> free_;
  std::vector<bool> in_use_;
};

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_REGISTERED_SLOT_POOL_H_
