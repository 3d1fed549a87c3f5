#include "plugin/fabric/verbs/verbs_memory.h"

#include <utility>

namespace rpcrdma::fabric::verbs {

int WindowAccessFlags(uint32_t access) {
  int flags = 0;
  if ((access & kRemoteRead) != 0) flags |= IBV_ACCESS_REMOTE_READ;
  if ((access & kRemoteWrite) != 0) flags |= IBV_ACCESS_REMOTE_WRITE;
  return flags;
}

absl::StatusOr<std::shared_ptr<Domain>> Domain::Create(ibv_context* context,
                                                       bool memory_windows) {
  Pd pd(ibv_alloc_pd(context));
  if (pd == nullptr) return ErrnoError("ibv_alloc_pd");
  return std::shared_ptr<Domain>(new Domain(std::move(pd), memory_windows));
}

Domain::~Domain() {
  // Windows go before the protection domain they belong to.
  windows_.clear();
}

int Domain::registration_access() const {
  // Binding a type 2 window needs MW_BIND on the region; a window with
  // remote write rights needs local write on it (IBA C10-75, C10-79). The
  // region itself grants no remote rights.
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (memory_windows_) access |= IBV_ACCESS_MW_BIND;
  return access;
}

void Domain::AddWindow(uint32_t handle, Window window) {
  windows_.insert_or_assign(handle, std::move(window));
}

bool Domain::HasWindow(uint32_t handle) const {
  return windows_.find(handle) != windows_.end();
}

void Domain::DropWindow(uint32_t handle) { windows_.erase(handle); }

void Domain::DropWindowsOn(const ibv_mr* parent) {
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (it->second.parent == parent) {
      it = windows_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<std::unique_ptr<Registration>> VerbsRegistration::Create(
    std::shared_ptr<Domain> domain, absl::Span<uint8_t> memory) {
  Mr mr(ibv_reg_mr(domain->pd(), memory.data(), memory.size(),
                   domain->registration_access()));
  if (mr == nullptr) return ErrnoError("ibv_reg_mr");
  return std::unique_ptr<Registration>(
      new VerbsRegistration(std::move(domain), std::move(mr), memory));
}

VerbsRegistration::~VerbsRegistration() {
  // A region with windows bound on it cannot be deregistered; windows the
  // caller left behind die with it.
  domain_->DropWindowsOn(mr_.get());
}

}  // namespace rpcrdma::fabric::verbs
