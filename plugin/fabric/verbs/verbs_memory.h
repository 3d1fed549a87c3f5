// Memory on verbs: a protection domain per endpoint (Domain), memory regions
// (VerbsRegistration), and the windows bound on them.
//
// A window is a type 2 memory window bound by a Bind Memory Window work
// request when the device has them, else a memory region of its own with
// the remote rights ("registration windows"), which cannot be invalidated
// by the peer. The Domain owns every window and releases it when it is
// invalidated, when its registration goes away, or when the Domain does.
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_MEMORY_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_MEMORY_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/verbs/verbs_resources.h"

namespace rpcrdma::fabric::verbs {

// ibv_access_flags for a window of `access` (RemoteAccess bits).
int WindowAccessFlags(uint32_t access);

class Domain {
 public:
  struct Window {
    Mw mw;                     // memory window mode
    Mr mr;                     // registration window mode
    ibv_mr* parent = nullptr;  // the registration's region it lies in
  };

  static absl::StatusOr<std::shared_ptr<Domain>> Create(ibv_context* context,
                                                        bool memory_windows);
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;
  ~Domain();

  ibv_pd* pd() const { return pd_.get(); }
  bool memory_windows() const { return memory_windows_; }
  // Access flags of a registration's memory region.
  int registration_access() const;

  void AddWindow(uint32_t handle, Window window);
  bool HasWindow(uint32_t handle) const;
  // Releases the window (deallocates its memory window or deregisters its
  // region); unknown handles are ignored.
  void DropWindow(uint32_t handle);
  void DropWindowsOn(const ibv_mr* parent);
  void DropAllWindows() { windows_.clear(); }
  size_t window_count() const { return windows_.size(); }

 private:
  Domain(Pd pd, bool memory_windows)
      : pd_(std::move(pd)), memory_windows_(memory_windows) {}

  Pd pd_;
  bool memory_windows_;
  std::unordered_map<uint32_t, Window> windows_;
};

class VerbsRegistration final : public Registration {
 public:
  static absl::StatusOr<std::unique_ptr<Registration>> Create(
      std::shared_ptr<Domain> domain, absl::Span<uint8_t> memory);
  ~VerbsRegistration() override;

  absl::Span<uint8_t> memory() const override { return memory_; }
  const Domain* domain() const { return domain_.get(); }
  ibv_mr* mr() const { return mr_.get(); }

 private:
  VerbsRegistration(std::shared_ptr<Domain> domain, Mr mr,
                    absl::Span<uint8_t> memory)
      : domain_(std::move(domain)), mr_(std::move(mr)), memory_(memory) {}

  std::shared_ptr<Domain> domain_;
  Mr mr_;
  absl::Span<uint8_t> memory_;
};

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_MEMORY_H_
