#include "plugin/fabric/registered_slot_pool.h"

#include "absl/strings/str_cat.h"
#include "plugin/log/logging.h"

namespace rpcrdma::fabric {
namespace {

constexpr size_t kPageSize = 4096;

// Misusing a slot would hand one buffer to two operations; stop instead.
void Require(bool condition, const char* what, size_t slot) {
  if (!condition) {
    RPCRDMA_LOG_FATAL("buffer pool: ", what, " (slot ", slot, ")");
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<RegisteredSlotPool>> RegisteredSlotPool::Create(
    Endpoint& endpoint, size_t buffer_size, size_t count) {
  if (buffer_size == 0 || count == 0) {
    return absl::InvalidArgumentError(
        "a buffer pool needs a non-zero buffer size and count");
  }
  if (count > UINT32_MAX || buffer_size > SIZE_MAX / count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a pool of ", count, " buffers of ", buffer_size, " octets overflows"));
  }
  const size_t total = buffer_size * count;
  const size_t rounded = (total + kPageSize - 1) / kPageSize * kPageSize;
  std::unique_ptr<uint8_t, FreeDeleter> memory(
      static_cast<uint8_t*>(std::aligned_alloc(kPageSize, rounded)));
  if (memory == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", rounded, " octets for a buffer pool"));
  }
  std::unique_ptr<RegisteredSlotPool> pool(
      new RegisteredSlotPool(buffer_size, count, std::move(memory)));
  auto registration =
      endpoint.Register(absl::MakeSpan(pool->memory_.get(), total));
  if (!registration.ok()) return registration.status();
  pool->registration_ = *std::move(registration);
  return pool;
}

RegisteredSlotPool::RegisteredSlotPool(
    size_t buffer_size, size_t count,
    std::unique_ptr<uint8_t, FreeDeleter> memory)
    : buffer_size_(buffer_size),
      memory_(std::move(memory)),
      in_use_(count, false) {
  free_.reserve(count);
  // Hand out low slots first, so a lightly used pool touches few pages.
  for (size_t i = count; i > 0; --i)
    free_.push_back(static_cast<uint32_t>(i - 1));
}

// The registration goes before the memory it covers.
RegisteredSlotPool::~RegisteredSlotPool() { registration_.reset(); }

std::optional<uint32_t> RegisteredSlotPool::Acquire() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  in_use_[slot] = true;
  return slot;
}

void RegisteredSlotPool::Release(uint32_t slot) {
  Require(slot < in_use_.size() && in_use_[slot],
          "release of a slot not in use", slot);
  in_use_[slot] = false;
  free_.push_back(slot);
}

LocalBuffer RegisteredSlotPool::Buffer(uint32_t slot, size_t length) const {
  Require(slot < in_use_.size() && length <= buffer_size_,
          "slot or length out of range", slot);
  return LocalBuffer{registration_.get(), size_t{slot} * buffer_size_, length};
}

absl::Span<uint8_t> RegisteredSlotPool::Memory(uint32_t slot) const {
  Require(slot < in_use_.size(), "slot out of range", slot);
  return absl::MakeSpan(memory_.get() + size_t{slot} * buffer_size_,
                        buffer_size_);
}

}  // namespace rpcrdma::fabric
