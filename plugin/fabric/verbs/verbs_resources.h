// Owning handles for rdma-core objects, so that no cm_id, queue pair,
// completion queue, protection domain, memory region, memory window or
// channel outlives its owner on any path, and small helpers for turning
// errno values into absl::Status. The deleters accept null (std::shared_ptr
// calls its deleter for a null pointer too).
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_RESOURCES_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_RESOURCES_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::fabric::verbs {

struct CmChannelDeleter {
  void operator()(rdma_event_channel* channel) const {
    if (channel != nullptr) rdma_destroy_event_channel(channel);
  }
};
using CmChannel = std::unique_ptr<rdma_event_channel, CmChannelDeleter>;

// Destroys the queue pair created on the id (if any) before the id.
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const {
    if (id == nullptr) return;
    if (id->qp != nullptr) rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
};
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

struct CmEventDeleter {
  void operator()(rdma_cm_event* event) const {
    if (event != nullptr) rdma_ack_cm_event(event);
  }
};
using CmEvent = std::unique_ptr<rdma_cm_event, CmEventDeleter>;

struct CompChannelDeleter {
  void operator()(ibv_comp_channel* channel) const {
    if (channel != nullptr) ibv_destroy_comp_channel(channel);
  }
};
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;

struct CqDeleter {
  void operator()(ibv_cq* cq) const {
    if (cq != nullptr) ibv_destroy_cq(cq);
  }
};
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;

struct PdDeleter {
  void operator()(ibv_pd* pd) const {
    if (pd != nullptr) ibv_dealloc_pd(pd);
  }
};
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;

struct MrDeleter {
  void operator()(ibv_mr* mr) const {
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
};
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;

struct MwDeleter {
  void operator()(ibv_mw* mw) const {
    if (mw != nullptr) ibv_dealloc_mw(mw);
  }
};
using Mw = std::unique_ptr<ibv_mw, MwDeleter>;

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// "VERB: strerror(err)" with a code chosen from `err`.
absl::Status VerbError(absl::string_view verb, int err);
// The same for a call that reported its failure in errno.
absl::Status ErrnoError(absl::string_view verb);
// rdma_create_event_channel's failure. Without an RDMA device (no
// /dev/infiniband/rdma_cm: ENODEV or ENOENT) NOT_FOUND, saying how to
// check and that the software fabric needs none; otherwise ErrnoError.
absl::Status EventChannelError();
absl::Status SetNonBlocking(int fd);

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_RESOURCES_H_
