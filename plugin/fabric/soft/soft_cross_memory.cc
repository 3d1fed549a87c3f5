// The same-host fast path of the soft fabric: RDMA Reads and Writes between
// processes on one machine moved by one process_vm_readv/writev copy, after
// the target has checked the access against its window (see soft_wire.h
// for the offer, probe and request frames).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/fabric/soft/soft_endpoint.h"

namespace rpcrdma::fabric::soft {
namespace {

bool IsUnixSocket(int fd) {
  int domain = 0;
  socklen_t len = sizeof(domain);
  return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
         domain == AF_UNIX;
}

void* PointerOf(uint64_t address) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
}

// Copies between `local` and the segments of process `pid` (into them when
// `to_peer`). Returns 0 or an errno value.
int CrossMemoryCopy(int pid, absl::Span<uint8_t> local,
                    absl::Span<const CmaSegment> segments, bool to_peer) {
  std::vector<iovec> remote;
  remote.reserve(segments.size());
  for (const CmaSegment& seg : segments) {
    if (seg.length > 0)
      remote.push_back(iovec{PointerOf(seg.address), seg.length});
  }
  size_t done = 0;
  size_t first = 0;  // remote iovecs before this one are used up
  while (done < local.size()) {
    iovec l{local.data() + done, local.size() - done};
    const ssize_t n = to_peer
                          ? process_vm_writev(pid, &l, 1, remote.data() + first,
                                              remote.size() - first, 0)
                          : process_vm_readv(pid, &l, 1, remote.data() + first,
                                             remote.size() - first, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EFAULT;
    // A partial transfer: skip what moved.
    size_t moved = static_cast<size_t>(n);
    done += moved;
    while (moved > 0 && first < remote.size()) {
      const size_t take = std::min(moved, remote[first].iov_len);
      remote[first].iov_base =
          static_cast<uint8_t*>(remote[first].iov_base) + take;
      remote[first].iov_len -= take;
      moved -= take;
      if (remote[first].iov_len == 0) ++first;
    }
  }
  return 0;
}

}  // namespace

std::shared_ptr<PeerProcess> PeerProcess::Of(int pid) {
  // One pidfd per peer process, shared by every endpoint talking to it:
  // ten thousand connections to one process hold one descriptor for it.
  static std::mutex mu;
  static std::map<int, std::weak_ptr<PeerProcess>> known;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<PeerProcess>& slot = known[pid];
  std::shared_ptr<PeerProcess> process = slot.lock();
  // An entry of an exited process whose pid names another one now is not
  // reused.
  if (process == nullptr || process->Exited()) {
    process = std::make_shared<PeerProcess>();
    process->pid = pid;
    // Kernels or sandboxes without pidfd_open(2) go without the pidfd.
    process->pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    slot = process;
  }
  for (auto it = known.begin(); it != known.end();) {
    it = it->second.expired() ? known.erase(it) : std::next(it);
  }
  return process;
}

bool PeerProcess::Exited() const {
  if (!pidfd.valid()) return kill(pid, 0) != 0 && errno == ESRCH;
  pollfd p{pidfd.get(), POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

void SoftEndpoint::OfferCrossMemory() {
  if (!fabric_.cross_memory_attach || !stream_.open() ||
      !IsUnixSocket(stream_.fd())) {
    return;
  }
  std::random_device device;
  const uint64_t cookie =
      (static_cast<uint64_t>(device()) << 32) ^ static_cast<uint64_t>(device());
  // Without a gate the path could not be withdrawn from the peer on a
  // flush, so it is not offered.
  if (!own_gate_.Create(cookie)) return;
  AppendCmaOffer(stream_.output(), own_gate_.cookie_address(), cookie,
                 static_cast<uint32_t>(own_gate_.fd()));
  cma_offered_ = true;
  cma_awaiting_answer_ = true;
}

bool SoftEndpoint::ProbePeer(uint64_t address, uint64_t cookie,
                             uint32_t gate_fd) {
  if (fabric_.fail_cross_memory_probe) return false;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(stream_.fd(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      cred.pid <= 0) {
    return false;
  }
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec remote{PointerOf(address), sizeof(value)};
  if (process_vm_readv(cred.pid, &local, 1, &remote, 1, 0) !=
          static_cast<ssize_t>(sizeof(value)) ||
      value != cookie) {
    return false;
  }
  // Writing the same value back shows the other direction works too.
  if (process_vm_writev(cred.pid, &local, 1, &remote, 1, 0) !=
      static_cast<ssize_t>(sizeof(value))) {
    return false;
  }
  if (!peer_gate_.OpenPeer(cred.pid, gate_fd, cookie)) return false;
  // Its pidfd tells, before each copy, whether the peer has exited (its
  // pid could then name another process).
  peer_process_ = PeerProcess::Of(cred.pid);
  return true;
}

bool SoftEndpoint::PeerExited() const {
  return peer_process_ != nullptr && peer_process_->Exited();
}

bool SoftEndpoint::ArmCrossMemory(uint64_t seq) {
  return own_gate_.valid() && own_gate_.Arm(seq);
}

void SoftEndpoint::WithdrawCrossMemory(uint64_t seq, const Pending& p) {
  if (!p.cross_memory) return;
  own_gate_.Withdraw(seq, [this] { return PeerExited(); });
}

void SoftEndpoint::HandleCmaOffer(const Frame& f) {
  if (peer_offer_seen_) {
    ProtocolError("a second CMA_OFFER");
    return;
  }
  peer_offer_seen_ = true;
  // Only a side that offers the path itself accepts it. The answer goes
  // ahead of queued work (whole frames only ever sit in the output
  // buffer): the peer's RDMA waits for it, and ours may wait for the
  // peer's answer.
  cma_in_ = cma_offered_ && ProbePeer(f.address, f.cookie, f.gate_fd);
  AppendCmaAnswer(stream_.output(), cma_in_);
}

void SoftEndpoint::HandleCmaAnswer(const Frame& f) {
  if (!cma_awaiting_answer_) {
    ProtocolError("CMA_ANSWER without an offer");
    return;
  }
  cma_awaiting_answer_ = false;
  cma_out_ = f.status == 1;
  // The peer has mapped our gate, or never will: its descriptor goes.
  own_gate_.CloseFd();
  if (cma_out_ && peer_process_ == nullptr) {
    // Withdrawing a slot waits out a copy in progress unless the peer has
    // exited, which its pidfd tells.
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(stream_.fd(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
        cred.pid > 0) {
      peer_process_ = PeerProcess::Of(cred.pid);
    }
  }
}

void SoftEndpoint::HandleCmaRequest(const Frame& f) {
  const bool read = f.type == FrameType::kReadReqCma;
  auto fail = [&](WorkStatus initiator_status, std::string detail) {
    std::vector<uint8_t> frame;
    if (read) {
      AppendReadResp(frame, f.id, StatusByte(initiator_status), true, {});
    } else {
      AppendAck(frame, f.id, StatusByte(initiator_status));
    }
    Close(ConnectionEventType::kDisconnected, std::move(detail),
          /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
  };
  if (!cma_in_) {
    ProtocolError("a cross-memory request without an accepted offer");
    return;
  }
  if (read && reads_answering_ >= caps_.responder_resources) {
    fail(WorkStatus::kRemoteInvalidRequest,
         "RDMA Read beyond the negotiated responder resources");
    return;
  }
  uint64_t total = 0;
  for (const CmaSegment& seg : f.segments) total += seg.length;
  if (total != f.length) {
    fail(WorkStatus::kRemoteInvalidRequest,
         absl::StrCat("cross-memory segments of ", total,
                      " octets for a request of ", f.length));
    return;
  }
  // The window is checked right before the copy, as for the socket path.
  std::optional<absl::Span<uint8_t>> bytes = pd_->Access(
      f.handle, f.address, f.length, read ? kRemoteRead : kRemoteWrite);
  if (!bytes.has_value()) {
    fail(WorkStatus::kRemoteAccessError,
         absl::StrCat("remote access error: RDMA ", read ? "Read" : "Write",
                      " of handle ", f.handle, " at ", f.address, " for ",
                      f.length, " octets"));
    return;
  }
  if (PeerExited()) {
    Close(ConnectionEventType::kDisconnected,
          "the peer process exited before a cross-memory copy",
          /*orderly=*/false);
    return;
  }
  if (!peer_gate_.Enter(f.id)) {
    // The initiator has completed the operation already (its queue pair
    // flushed): like a queue pair in the error state, its memory is no
    // longer there to be placed into or read from.
    Close(ConnectionEventType::kDisconnected,
          absl::StrCat("cross-memory request ", f.id,
                       " withdrawn by the initiator"),
          /*orderly=*/false);
    return;
  }
  const int err = CrossMemoryCopy(peer_process_->pid, *bytes, f.segments, read);
  peer_gate_.Leave(f.id);
  if (err != 0) {
    // EFAULT: the initiator named memory it does not have.
    fail(err == EFAULT ? WorkStatus::kLocalProtectionError
                       : WorkStatus::kTransportError,
         absl::StrCat("cross-memory copy failed: ", Errno(err)));
    return;
  }
  if (read) {
    AppendReadResp(FrameBuffer(), f.id, StatusByte(WorkStatus::kSuccess), true,
                   {});
  } else {
    AppendAck(FrameBuffer(), f.id, StatusByte(WorkStatus::kSuccess));
  }
}

}  // namespace rpcrdma::fabric::soft

namespace rpcrdma::fabric {

bool SoftUsesCrossMemory(const Endpoint& endpoint) {
  const auto* soft = dynamic_cast<const soft::SoftEndpoint*>(&endpoint);
  return soft != nullptr && soft->uses_cross_memory();
}

uint64_t SoftCrossMemoryOperations(const Endpoint& endpoint) {
  const auto* soft = dynamic_cast<const soft::SoftEndpoint*>(&endpoint);
  return soft != nullptr ? soft->cross_memory_operations() : 0;
}

}  // namespace rpcrdma::fabric
