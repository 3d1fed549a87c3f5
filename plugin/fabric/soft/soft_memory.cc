#include "plugin/fabric/soft/soft_memory.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::soft {
namespace {

class SoftRegistration : public Registration {
 public:
  SoftRegistration(std::shared_ptr<ProtectionDomain> pd,
                   absl::Span<uint8_t> memory)
      : pd_(std::move(pd)), memory_(memory) {}
  ~SoftRegistration() override { pd_->Forget(this); }
  absl::Span<uint8_t> memory() const override { return memory_; }

 private:
  std::shared_ptr<ProtectionDomain> pd_;
  absl::Span<uint8_t> memory_;
};

}  // namespace

std::unique_ptr<Registration> ProtectionDomain::Register(
    absl::Span<uint8_t> memory) {
  auto registration =
      std::make_unique<SoftRegistration>(shared_from_this(), memory);
  registrations_.insert(registration.get());
  return registration;
}

absl::StatusOr<absl::Span<uint8_t>> ProtectionDomain::Resolve(
    const LocalBuffer& buffer) const {
  if (buffer.registration == nullptr ||
      registrations_.count(buffer.registration) == 0) {
    return absl::InvalidArgumentError(
        "soft fabric: buffer names a registration of another domain");
  }
  absl::Span<uint8_t> memory = buffer.registration->memory();
  if (buffer.offset > memory.size() ||
      buffer.length > memory.size() - buffer.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft fabric: buffer [", buffer.offset, ", +", buffer.length,
        ") outside its registration of ", memory.size(), " octets"));
  }
  return memory.subspan(buffer.offset, buffer.length);
}

absl::StatusOr<RemoteRegion> ProtectionDomain::Bind(const LocalBuffer& buffer,
                                                    uint32_t access) {
  if ((access & ~uint32_t{kRemoteRead | kRemoteWrite}) != 0) {
    return absl::InvalidArgumentError("soft fabric: unknown access bits");
  }
  absl::StatusOr<absl::Span<uint8_t>> bytes = Resolve(buffer);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("soft fabric: window over 4 GiB");
  }
  uint32_t index;
  if (free_.size() >= kReuseAfter || windows_.size() >= kMaxWindows) {
    if (free_.empty()) {
      return absl::ResourceExhaustedError("soft fabric: window table full");
    }
    index = free_.front();
    free_.pop_front();
    ++windows_[index].key;
  } else {
    index = static_cast<uint32_t>(windows_.size());
    windows_.emplace_back();
  }
  Window& w = windows_[index];
  w.valid = true;
  w.registration = buffer.registration;
  w.base = bytes->data();
  w.address = reinterpret_cast<uintptr_t>(bytes->data());
  w.length = static_cast<uint32_t>(bytes->size());
  w.access = access;
  RemoteRegion region;
  region.handle = ((index + 1) << 8) | w.key;
  region.offset = w.address;
  region.length = w.length;
  return region;
}

const ProtectionDomain::Window* ProtectionDomain::Find(uint32_t handle) const {
  const uint32_t slot = handle >> 8;
  if (slot == 0 || slot > windows_.size()) return nullptr;
  const Window& w = windows_[slot - 1];
  if (!w.valid || w.key != static_cast<uint8_t>(handle & 0xff)) return nullptr;
  return &w;
}

bool ProtectionDomain::IsValid(uint32_t handle) const {
  return Find(handle) != nullptr;
}

bool ProtectionDomain::Invalidate(uint32_t handle) {
  if (Find(handle) == nullptr) return false;
  const uint32_t index = (handle >> 8) - 1;
  windows_[index].valid = false;
  windows_[index].registration = nullptr;
  windows_[index].base = nullptr;
  free_.push_back(index);
  return true;
}

std::optional<absl::Span<uint8_t>> ProtectionDomain::Access(
    uint32_t handle, uint64_t address, uint64_t length, uint32_t right) const {
  const Window* w = Find(handle);
  if (w == nullptr || (w->access & right) != right) return std::nullopt;
  // Overflow-safe: address - start and length are each within the window.
  if (address < w->address) return std::nullopt;
  const uint64_t skip = address - w->address;
  if (skip > w->length || length > w->length - skip) return std::nullopt;
  return absl::Span<uint8_t>(w->base + skip, static_cast<size_t>(length));
}

void ProtectionDomain::Forget(const Registration* registration) {
  registrations_.erase(registration);
  for (size_t i = 0; i < windows_.size(); ++i) {
    if (windows_[i].valid && windows_[i].registration == registration) {
      Invalidate(static_cast<uint32_t>(((i + 1) << 8) | windows_[i].key));
    }
  }
}

}  // namespace rpcrdma::fabric::soft
