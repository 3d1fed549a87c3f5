#include "plugin/fabric/verbs/verbs_endpoint.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::verbs {
namespace {

uint32_t Clamp(uint32_t asked, int limit) {
  return std::min(asked, static_cast<uint32_t>(std::max(limit, 0)));
}

uint8_t DepthParam(uint32_t depth) {
  return static_cast<uint8_t>(std::min<uint32_t>(depth, 255));
}

// Whether a successful receive was a Send With Invalidate. Soft-RoCE (rxe,
// Linux 6.1) writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the
// user-space completion, where bit 2 reads as IBV_WC_IP_CSUM_OK, a flag no
// RC receive carries; it is taken as the invalidation only when the rkey
// names a window of this endpoint.
bool ReceiveInvalidated(const ibv_wc& wc, const Domain& domain) {
  if ((wc.wc_flags & IBV_WC_WITH_INV) != 0) return true;
  return (wc.wc_flags & IBV_WC_WITH_IMM) == 0 &&
         (wc.wc_flags & IBV_WC_IP_CSUM_OK) != 0 &&
         domain.HasWindow(wc.invalidated_rkey);
}

// Whether the endpoint invalidates with memory windows (type 2, which
// the peer may invalidate remotely) or with a registration per buffer.
bool UsesMemoryWindows(WindowMode mode, const ibv_device_attr& dev) {
  const auto cap_flags = static_cast<uint64_t>(dev.device_cap_flags);
  const bool has_windows = (cap_flags & IBV_DEVICE_MEM_WINDOW) != 0 &&
                           (cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
                                         IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
  switch (mode) {
    case WindowMode::kAuto:
      return has_windows;
    case WindowMode::kMemoryWindows:
      return true;
    case WindowMode::kRegistrations:
      return false;
  }
  return false;
}

// The queue pair asked for: the endpoint's options within the device's
// limits, at least one of each.
ibv_qp_cap QueuePairCapsFor(const EndpointOptions& options,
                            const ibv_device_attr& dev,
                            const VerbsFabricOptions& fabric_options) {
  ibv_qp_cap cap;
  std::memset(&cap, 0, sizeof(cap));
  cap.max_send_wr =
      std::max<uint32_t>(Clamp(options.send_queue_depth, dev.max_qp_wr), 1);
  cap.max_recv_wr =
      std::max<uint32_t>(Clamp(options.recv_queue_depth, dev.max_qp_wr), 1);
  cap.max_send_sge =
      std::max<uint32_t>(Clamp(options.max_send_sge, dev.max_sge), 1);
  cap.max_recv_sge =
      std::max<uint32_t>(Clamp(options.max_recv_sge, dev.max_sge), 1);
  cap.max_inline_data = fabric_options.max_inline_data;
  return cap;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerbsEndpoint>> VerbsEndpoint::Create(
    CmChannel channel, CmId id, const EndpointOptions& options,
    const VerbsFabricOptions& fabric_options) {
  std::unique_ptr<VerbsEndpoint> ep(new VerbsEndpoint(fabric_options));
  ep->channel_ = std::move(channel);
  ep->id_ = std::move(id);
  if (absl::Status s = ep->InitEventFds(); !s.ok()) return s;
  if (absl::Status s = SetNonBlocking(ep->channel_->fd); !s.ok()) return s;
  if (absl::Status s = ep->WatchFd(ep->channel_->fd); !s.ok()) return s;
  if (absl::Status s = ep->InitVerbs(options); !s.ok()) return s;
  ep->owner_driven_ = options.owner_driven;
  return ep;
}

absl::StatusOr<std::unique_ptr<VerbsEndpoint>> VerbsEndpoint::CreateUnreachable(
    std::string detail) {
  std::unique_ptr<VerbsEndpoint> ep(new VerbsEndpoint(VerbsFabricOptions{}));
  if (absl::Status s = ep->InitEventFds(); !s.ok()) return s;
  ep->state_ = State::kClosed;
  ep->Emit(ConnectionEventType::kUnreachable, {}, std::move(detail));
  ep->UpdatePending();
  return ep;
}

VerbsEndpoint::~VerbsEndpoint() {
  // A type 2 window bound through the queue pair holds on to it: a queue
  // pair destroyed under bound windows waits for them (rxe), and they are
  // of no use without it. Windows go first.
  if (domain_ != nullptr) domain_->DropAllWindows();
  // Destroying a connected id sends a DREQ, so the peer learns of it. The
  // members release the rest in order.
}

absl::Status VerbsEndpoint::InitEventFds() {
  epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  if (epoll_.get() < 0) return ErrnoError("epoll_create1");
  pending_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (pending_.get() < 0) return ErrnoError("eventfd");
  return WatchFd(pending_.get());
}

absl::Status VerbsEndpoint::WatchFd(int fd) {
  epoll_event ev;
  std::memset(&ev, 0, sizeof(ev));
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return ErrnoError("epoll_ctl");
  }
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::InitVerbs(const EndpointOptions& options) {
  ibv_context* context = id_->verbs;
  if (context == nullptr) {
    return absl::FailedPreconditionError("rdma-cm id has no device");
  }
  ibv_device_attr dev;
  std::memset(&dev, 0, sizeof(dev));
  if (int rc = ibv_query_device(context, &dev); rc != 0) {
    return VerbError("ibv_query_device", rc);
  }
  ibv_port_attr port;
  std::memset(&port, 0, sizeof(port));
  if (int rc = ibv_query_port(context, id_->port_num, &port); rc != 0) {
    return VerbError("ibv_query_port", rc);
  }
  const bool memory_windows = UsesMemoryWindows(fabric_options_.windows, dev);
  absl::StatusOr<std::shared_ptr<Domain>> domain =
      Domain::Create(context, memory_windows);
  if (!domain.ok()) return domain.status();
  domain_ = *std::move(domain);

  const ibv_qp_cap asked = QueuePairCapsFor(options, dev, fabric_options_);
  const int cqe = static_cast<int>(
      std::min<uint64_t>(uint64_t{asked.max_send_wr} + asked.max_recv_wr,
                         static_cast<uint64_t>(std::max(dev.max_cqe, 1))));
  if (absl::Status s = CreateCompletionQueue(context, cqe); !s.ok()) return s;
  absl::StatusOr<ibv_qp_cap> got = CreateQueuePair(asked);
  if (!got.ok()) return got.status();

  caps_.device_name = ibv_get_device_name(context->device);
  caps_.max_send_sge = got->max_send_sge;
  caps_.max_recv_sge = got->max_recv_sge;
  caps_.max_inline_data = got->max_inline_data;
  // RDMA Read scatter lists may be shorter than send gather lists.
  caps_.max_rdma_read_sge = Clamp(
      got->max_send_sge, dev.max_sge_rd > 0 ? dev.max_sge_rd : dev.max_sge);
  caps_.initiator_depth =
      Clamp(options.initiator_depth, std::min(dev.max_qp_init_rd_atom, 255));
  caps_.responder_resources =
      Clamp(options.responder_resources, std::min(dev.max_qp_rd_atom, 255));
  caps_.max_send_queue = got->max_send_wr;
  caps_.max_recv_queue = got->max_recv_wr;
  caps_.max_message_size = port.max_msg_sz;
  caps_.max_rdma_size = port.max_msg_sz;
  caps_.remote_invalidation = memory_windows;
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::CreateCompletionQueue(ibv_context* context,
                                                  int entries) {
  comp_channel_.reset(ibv_create_comp_channel(context));
  if (comp_channel_ == nullptr) return ErrnoError("ibv_create_comp_channel");
  if (absl::Status s = SetNonBlocking(comp_channel_->fd); !s.ok()) return s;
  if (absl::Status s = WatchFd(comp_channel_->fd); !s.ok()) return s;
  cq_.reset(ibv_create_cq(context, entries, nullptr, comp_channel_.get(), 0));
  if (cq_ == nullptr) return ErrnoError("ibv_create_cq");
  if (int rc = ibv_req_notify_cq(cq_.get(), 0); rc != 0) {
    return VerbError("ibv_req_notify_cq", rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<ibv_qp_cap> VerbsEndpoint::CreateQueuePair(
    const ibv_qp_cap& asked) {
  ibv_qp_init_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.send_cq = cq_.get();
  attr.recv_cq = cq_.get();
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;
  attr.cap = asked;
  if (rdma_create_qp(id_.get(), domain_->pd(), &attr) != 0) {
    // Some devices have no inline data; try once without.
    attr.cap.max_inline_data = 0;
    if (rdma_create_qp(id_.get(), domain_->pd(), &attr) != 0) {
      return ErrnoError("rdma_create_qp");
    }
  }
  // What the queue pair actually got.
  ibv_qp_attr qp_attr;
  ibv_qp_init_attr init;
  std::memset(&qp_attr, 0, sizeof(qp_attr));
  std::memset(&init, 0, sizeof(init));
  if (int rc = ibv_query_qp(id_->qp, &qp_attr, IBV_QP_CAP, &init); rc != 0) {
    return VerbError("ibv_query_qp", rc);
  }
  return init.cap;
}

absl::Status VerbsEndpoint::Connect(absl::Span<const uint8_t> private_data) {
  if (private_data.size() > kMaxConnectPrivateData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "connect private data of ", private_data.size(),
        " octets; rdma-cm carries at most ", kMaxConnectPrivateData));
  }
  active_ = true;
  rdma_conn_param param;
  std::memset(&param, 0, sizeof(param));
  param.private_data = private_data.empty() ? nullptr : private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.initiator_depth = DepthParam(caps_.initiator_depth);
  param.responder_resources = DepthParam(caps_.responder_resources);
  param.retry_count = fabric_options_.retry_count;
  param.rnr_retry_count = fabric_options_.rnr_retry_count;
  param.flow_control = 1;
  if (rdma_connect(id_.get(), &param) != 0) return ErrnoError("rdma_connect");
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::Accept(absl::Span<const uint8_t> private_data,
                                   const PeerDepths& peer) {
  if (private_data.size() > kMaxAcceptPrivateData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "accept private data of ", private_data.size(),
        " octets; rdma-cm carries at most ", kMaxAcceptPrivateData));
  }
  // The request's depths are from this side's point of view: the most
  // Reads this side may issue (peer.initiator_depth, the peer's IRD) and
  // must accept (peer.responder_resources, the peer's ORD).
  caps_.initiator_depth = std::min(caps_.initiator_depth, peer.initiator_depth);
  caps_.responder_resources =
      std::min(caps_.responder_resources, peer.responder_resources);
  rdma_conn_param param;
  std::memset(&param, 0, sizeof(param));
  param.private_data = private_data.empty() ? nullptr : private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.initiator_depth = DepthParam(caps_.initiator_depth);
  param.responder_resources = DepthParam(caps_.responder_resources);
  param.retry_count = fabric_options_.retry_count;
  param.rnr_retry_count = fabric_options_.rnr_retry_count;
  param.flow_control = 1;
  if (rdma_accept(id_.get(), &param) != 0) return ErrnoError("rdma_accept");
  accepted_ = true;
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::CheckDevice() const {
  if (domain_ == nullptr || id_ == nullptr || id_->qp == nullptr) {
    return absl::FailedPreconditionError("endpoint has no device");
  }
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::CheckConnected() const {
  if (absl::Status s = CheckDevice(); !s.ok()) return s;
  // The passive side's queue pair is ready to send once rdma_accept has
  // returned, before its ESTABLISHED event (the RTU) arrives.
  if (state_ == State::kConnecting && !accepted_) {
    return absl::FailedPreconditionError("not connected yet");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Registration>> VerbsEndpoint::Register(
    absl::Span<uint8_t> memory) {
  if (domain_ == nullptr) {
    return absl::FailedPreconditionError("endpoint has no device");
  }
  return VerbsRegistration::Create(domain_, memory);
}

absl::StatusOr<ibv_sge> VerbsEndpoint::Element(
    const LocalBuffer& buffer) const {
  const auto* reg = dynamic_cast<const VerbsRegistration*>(buffer.registration);
  if (reg == nullptr || reg->domain() != domain_.get()) {
    return absl::InvalidArgumentError(
        "buffer is not registered with this endpoint");
  }
  const absl::Span<uint8_t> memory = reg->memory();
  if (buffer.offset > memory.size() ||
      buffer.length > memory.size() - buffer.offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer [", buffer.offset, ", +", buffer.length,
                     ") outside its registration of ", memory.size()));
  }
  if (buffer.length > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("buffer longer than 4 GiB - 1");
  }
  ibv_sge sge;
  sge.addr = reinterpret_cast<uintptr_t>(memory.data() + buffer.offset);
  sge.length = static_cast<uint32_t>(buffer.length);
  sge.lkey = reg->mr()->lkey;
  return sge;
}

absl::StatusOr<std::vector<ibv_sge>> VerbsEndpoint::Gather(
    absl::Span<const LocalBuffer> buffers, uint32_t max_sge,
    uint64_t* total) const {
  std::vector<ibv_sge> sges;
  sges.reserve(buffers.size());
  *total = 0;
  for (const LocalBuffer& b : buffers) {
    absl::StatusOr<ibv_sge> sge = Element(b);
    if (!sge.ok()) return sge.status();
    *total += sge->length;
    // A zero-length element means 2 GiB to some devices; leave it out.
    if (sge->length != 0) sges.push_back(*sge);
  }
  if (sges.size() > max_sge) {
    return absl::InvalidArgumentError(absl::StrCat(
        sges.size(), " scatter/gather elements; the queue pair takes ",
        max_sge));
  }
  return sges;
}

uint64_t VerbsEndpoint::Track(uint64_t wr_id, WorkType type, uint32_t handle) {
  const uint64_t id = next_id_++;
  work_.emplace(id, Work{wr_id, type, handle});
  return id;
}

absl::Status VerbsEndpoint::PostSendWr(ibv_send_wr& wr, absl::string_view verb,
                                       uint64_t wr_id, WorkType type,
                                       uint32_t handle) {
  wr.wr_id = Track(wr_id, type, handle);
  wr.send_flags |= IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) {
    work_.erase(wr.wr_id);
    return VerbError(absl::StrCat("ibv_post_send(", verb, ")"), rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<RemoteRegion> VerbsEndpoint::BindWindow(
    uint64_t wr_id, const LocalBuffer& buffer, uint32_t access) {
  if (absl::Status s = CheckConnected(); !s.ok()) return s;
  absl::StatusOr<ibv_sge> sge = Element(buffer);
  if (!sge.ok()) return sge.status();
  const auto* reg = static_cast<const VerbsRegistration*>(buffer.registration);
  const int flags = WindowAccessFlags(access);
  Domain::Window window;
  window.parent = reg->mr();
  uint32_t handle = 0;
  if (domain_->memory_windows()) {
    window.mw.reset(ibv_alloc_mw(domain_->pd(), IBV_MW_TYPE_2));
    if (window.mw == nullptr) return ErrnoError("ibv_alloc_mw");
    handle = ibv_inc_rkey(window.mw->rkey);
    ibv_send_wr wr;
    std::memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = window.mw.get();
    wr.bind_mw.rkey = handle;
    wr.bind_mw.bind_info.mr = reg->mr();
    wr.bind_mw.bind_info.addr = sge->addr;
    wr.bind_mw.bind_info.length = sge->length;
    wr.bind_mw.bind_info.mw_access_flags = static_cast<unsigned>(flags);
    if (absl::Status s =
            PostSendWr(wr, "BIND_MW", wr_id, WorkType::kBindWindow, handle);
        !s.ok()) {
      return s;
    }
    window.mw->rkey = handle;
  } else {
    // Remote write needs local write on the region (IBA C10-79).
    const int mr_flags =
        flags |
        ((flags & IBV_ACCESS_REMOTE_WRITE) != 0 ? IBV_ACCESS_LOCAL_WRITE : 0);
    window.mr.reset(ibv_reg_mr(domain_->pd(),
                               reinterpret_cast<void*>(sge->addr), sge->length,
                               mr_flags));
    if (window.mr == nullptr) return ErrnoError("ibv_reg_mr(window)");
    handle = window.mr->rkey;
    Completion c;
    c.wr_id = wr_id;
    c.type = WorkType::kBindWindow;
    completions_.push_back(c);
    UpdatePending();
  }
  domain_->AddWindow(handle, std::move(window));
  return RemoteRegion{handle, sge->addr, sge->length};
}

absl::Status VerbsEndpoint::InvalidateWindow(uint64_t wr_id, uint32_t handle) {
  if (absl::Status s = CheckConnected(); !s.ok()) return s;
  if (!domain_->HasWindow(handle)) {
    return absl::NotFoundError(
        absl::StrCat("no window with handle 0x", absl::Hex(handle)));
  }
  if (!domain_->memory_windows()) {
    domain_->DropWindow(handle);
    Completion c;
    c.wr_id = wr_id;
    c.type = WorkType::kLocalInvalidate;
    completions_.push_back(c);
    UpdatePending();
    return absl::OkStatus();
  }
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof(wr));
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.invalidate_rkey = handle;
  return PostSendWr(wr, "LOCAL_INV", wr_id, WorkType::kLocalInvalidate, handle);
}

absl::Status VerbsEndpoint::PostReceive(uint64_t wr_id,
                                        const LocalBuffer& buffer) {
  if (absl::Status s = CheckDevice(); !s.ok()) return s;
  uint64_t total = 0;
  absl::StatusOr<std::vector<ibv_sge>> sges =
      Gather({&buffer, 1}, caps_.max_recv_sge, &total);
  if (!sges.ok()) return sges.status();
  ibv_recv_wr wr;
  std::memset(&wr, 0, sizeof(wr));
  wr.wr_id = Track(wr_id, WorkType::kReceive);
  wr.sg_list = sges->data();
  wr.num_sge = static_cast<int>(sges->size());
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) {
    work_.erase(wr.wr_id);
    return VerbError("ibv_post_recv", rc);
  }
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::PostSend(uint64_t wr_id,
                                     absl::Span<const LocalBuffer> gather,
                                     std::optional<uint32_t> invalidate) {
  if (absl::Status s = CheckConnected(); !s.ok()) return s;
  uint64_t total = 0;
  absl::StatusOr<std::vector<ibv_sge>> sges =
      Gather(gather, caps_.max_send_sge, &total);
  if (!sges.ok()) return sges.status();
  if (total > caps_.max_message_size) {
    return absl::InvalidArgumentError(absl::StrCat("send of ", total,
                                                   " octets; the port allows ",
                                                   caps_.max_message_size));
  }
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof(wr));
  wr.sg_list = sges->data();
  wr.num_sge = static_cast<int>(sges->size());
  if (total > 0 && total <= caps_.max_inline_data) {
    wr.send_flags = IBV_SEND_INLINE;
  }
  if (invalidate.has_value()) {
    wr.opcode = IBV_WR_SEND_WITH_INV;
    wr.invalidate_rkey = *invalidate;
    return PostSendWr(wr, "SEND_WITH_INV", wr_id,
                      WorkType::kSendWithInvalidate);
  }
  wr.opcode = IBV_WR_SEND;
  return PostSendWr(wr, "SEND", wr_id, WorkType::kSend);
}

absl::Status VerbsEndpoint::PostRdmaRead(uint64_t wr_id,
                                         absl::Span<const LocalBuffer> scatter,
                                         const RemoteRegion& source) {
  return PostRdma(wr_id, scatter, source, WorkType::kRdmaRead);
}

absl::Status VerbsEndpoint::PostRdmaWrite(uint64_t wr_id,
                                          absl::Span<const LocalBuffer> gather,
                                          const RemoteRegion& target) {
  return PostRdma(wr_id, gather, target, WorkType::kRdmaWrite);
}

absl::Status VerbsEndpoint::PostRdma(uint64_t wr_id,
                                     absl::Span<const LocalBuffer> local,
                                     const RemoteRegion& remote,
                                     WorkType type) {
  if (absl::Status s = CheckConnected(); !s.ok()) return s;
  const bool read = type == WorkType::kRdmaRead;
  uint64_t total = 0;
  absl::StatusOr<std::vector<ibv_sge>> sges = Gather(
      local, read ? caps_.max_rdma_read_sge : caps_.max_send_sge, &total);
  if (!sges.ok()) return sges.status();
  if (total != remote.length) {
    return absl::InvalidArgumentError(
        read ? absl::StrCat("RDMA Read scatters ", total,
                            " octets from a region of ", remote.length)
             : absl::StrCat("RDMA Write gathers ", total,
                            " octets for a region of ", remote.length));
  }
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof(wr));
  wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
  wr.sg_list = sges->data();
  wr.num_sge = static_cast<int>(sges->size());
  wr.wr.rdma.remote_addr = remote.offset;
  wr.wr.rdma.rkey = remote.handle;
  return PostSendWr(wr, read ? "RDMA_READ" : "RDMA_WRITE", wr_id, type);
}

void VerbsEndpoint::ReapCompletions() {
  if (cq_ == nullptr) return;
  // An owner-driven endpoint looks only when its owner saw the channel
  // readable, or spins: everything on the queue comes with a notification.
  const bool read_channel = !owner_driven_ || cq_notified_;
  if (owner_driven_ && !cq_notified_ && !spinning_) return;
  cq_notified_ = false;
  spinning_ = false;
  // Consume the channel's notifications, acknowledge them, and re-arm
  // before polling, so that a completion arriving after the last poll
  // raises a new notification.
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned int notified = 0;
  while (read_channel &&
         ibv_get_cq_event(comp_channel_.get(), &cq, &context) == 0) {
    ++notified;
  }
  if (notified > 0) {
    ibv_ack_cq_events(cq_.get(), notified);
    ibv_req_notify_cq(cq_.get(), 0);
  }
  std::array<ibv_wc, 32> wcs;
  while (true) {
    const int n =
        ibv_poll_cq(cq_.get(), static_cast<int>(wcs.size()), wcs.data());
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) Complete(wcs[static_cast<size_t>(i)]);
    if (n < static_cast<int>(wcs.size())) break;
  }
}

void VerbsEndpoint::Complete(const ibv_wc& wc) {
  auto it = work_.find(wc.wr_id);
  if (it == work_.end()) return;  // not ours; cannot happen
  const Work work = it->second;
  work_.erase(it);
  Completion c;
  c.wr_id = work.wr_id;
  c.status = MapWcStatus(wc.status);
  if (wc.status != IBV_WC_SUCCESS) {
    c.provider_status = ibv_wc_status_str(wc.status);
  }
  // The opcode of a completion in error is undefined; the type comes from
  // what was posted.
  c.type = work.type;
  if (c.status == WorkStatus::kSuccess) {
    if (work.type == WorkType::kReceive) {
      c.byte_length = wc.byte_len;
      if (ReceiveInvalidated(wc, *domain_)) {
        c.invalidated_handle = wc.invalidated_rkey;
        domain_->DropWindow(wc.invalidated_rkey);
      }
    } else if (work.type == WorkType::kLocalInvalidate) {
      domain_->DropWindow(work.handle);
    }
    if (std::optional<WorkType> t = MapWcOpcode(wc.opcode);
        t.has_value() && work.type != WorkType::kSendWithInvalidate) {
      c.type = *t;
    }
  } else if (work.type == WorkType::kBindWindow) {
    domain_->DropWindow(work.handle);
  }
  completions_.push_back(c);
  if (c.status != WorkStatus::kSuccess && state_ == State::kConnected) {
    Fail(absl::StrCat(WorkTypeName(c.type), " completed with ",
                      WorkStatusName(c.status)));
  }
}

size_t VerbsEndpoint::PollCompletions(absl::Span<Completion> out) {
  ReapCompletions();
  size_t n = 0;
  while (n < out.size() && !completions_.empty()) {
    out[n++] = std::move(completions_.front());
    completions_.pop_front();
  }
  UpdatePending();
  return n;
}

void VerbsEndpoint::ReapCmEvents() {
  if (channel_ == nullptr) return;
  if (owner_driven_ && !cm_notified_) return;
  cm_notified_ = false;
  rdma_cm_event* raw = nullptr;
  while (rdma_get_cm_event(channel_.get(), &raw) == 0) {
    CmEvent event(raw);  // acknowledged when handled
    HandleCmEvent(*event);
  }
}

void VerbsEndpoint::HandleCmEvent(const rdma_cm_event& event) {
  switch (ClassifyCmEvent(event.event, event.status)) {
    case CmAction::kIgnore:
      return;
    case CmAction::kEstablished:
      if (state_ != State::kConnecting) return;
      state_ = State::kConnected;
      if (active_) {
        // From this side's point of view (the CM swaps the REP's fields):
        // the peer's IRD bounds this side's ORD and vice versa.
        caps_.initiator_depth = std::min<uint32_t>(
            caps_.initiator_depth, event.param.conn.initiator_depth);
        caps_.responder_resources = std::min<uint32_t>(
            caps_.responder_resources, event.param.conn.responder_resources);
        Emit(ConnectionEventType::kEstablished, CmPrivateData(event),
             CmEventDetail(event));
      } else {
        Emit(ConnectionEventType::kEstablished, {}, CmEventDetail(event));
      }
      return;
    case CmAction::kRejected:
    case CmAction::kUnreachable: {
      MoveQpToError();
      const bool was_connecting = state_ == State::kConnecting;
      const bool reported = state_ == State::kClosed;
      state_ = State::kClosed;
      if (reported) return;
      const ConnectionEventType type =
          !was_connecting ? ConnectionEventType::kDisconnected
          : ClassifyCmEvent(event.event, event.status) == CmAction::kRejected
              ? ConnectionEventType::kRejected
              : ConnectionEventType::kUnreachable;
      Emit(type,
           type == ConnectionEventType::kRejected ? CmPrivateData(event)
                                                  : std::vector<uint8_t>{},
           CmEventDetail(event));
      return;
    }
    case CmAction::kDisconnected: {
      // Answers the peer's DREQ (and moves the queue pair to the error
      // state, which flushes the outstanding work).
      rdma_disconnect(id_.get());
      MoveQpToError();
      const bool reported = state_ == State::kClosed;
      state_ = State::kClosed;
      if (!reported) {
        Emit(ConnectionEventType::kDisconnected, {},
             failure_.empty()
                 ? CmEventDetail(event)
                 : absl::StrCat(CmEventDetail(event), " after ", failure_));
      }
      return;
    }
    case CmAction::kDeviceRemoved:
      MoveQpToError();
      state_ = State::kClosed;
      Emit(ConnectionEventType::kDeviceRemoved, {}, CmEventDetail(event));
      return;
    case CmAction::kAddressChanged:
      Fail(CmEventDetail(event));
      return;
  }
}

std::optional<ConnectionEvent> VerbsEndpoint::PollConnectionEvent() {
  ReapCmEvents();
  std::optional<ConnectionEvent> out;
  if (!events_.empty()) {
    out = std::move(events_.front());
    events_.pop_front();
  }
  UpdatePending();
  return out;
}

void VerbsEndpoint::Emit(ConnectionEventType type,
                         std::vector<uint8_t> private_data,
                         std::string detail) {
  ConnectionEvent ev;
  ev.type = type;
  ev.private_data = std::move(private_data);
  ev.detail = std::move(detail);
  events_.push_back(std::move(ev));
}

void VerbsEndpoint::Fail(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  Disconnect();
}

void VerbsEndpoint::Disconnect() {
  switch (state_) {
    case State::kConnected:
      // Moves the queue pair to the error state and sends a DREQ; the
      // DISCONNECTED event follows (on the DREP or its timeout).
      state_ = State::kDisconnecting;
      if (rdma_disconnect(id_.get()) != 0) {
        MoveQpToError();
        state_ = State::kClosed;
        Emit(ConnectionEventType::kDisconnected, {},
             std::string(ErrnoError("rdma_disconnect").message()));
      }
      break;
    case State::kConnecting:
      // No connection to take down yet: flush what was posted and report.
      if (id_ != nullptr) rdma_disconnect(id_.get());
      MoveQpToError();
      state_ = State::kClosed;
      Emit(ConnectionEventType::kDisconnected, {},
           "disconnected while connecting");
      break;
    case State::kDisconnecting:
    case State::kClosed:
      break;
  }
  UpdatePending();
}

void VerbsEndpoint::MoveQpToError() {
  if (id_ == nullptr || id_->qp == nullptr) return;
  ibv_qp_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(id_->qp, &attr, IBV_QP_STATE);
}

void VerbsEndpoint::UpdatePending() {
  // An owner-driven endpoint's owner polls after its own calls (fabric.h).
  const bool want =
      !owner_driven_ && (!completions_.empty() || !events_.empty());
  if (want == pending_signalled_) return;
  if (want) {
    const uint64_t one = 1;
    if (write(pending_.get(), &one, sizeof(one)) == sizeof(one)) {
      pending_signalled_ = true;
    }
  } else {
    uint64_t count = 0;
    if (read(pending_.get(), &count, sizeof(count)) == sizeof(count) ||
        errno == EAGAIN) {
      pending_signalled_ = false;
    }
  }
}

}  // namespace rpcrdma::fabric::verbs
