// The gate of the soft fabric's cross-memory path: a page shared by the
// two processes (a memfd of the initiator's, opened by the responder
// through /proc) with one slot per outstanding cross-memory RDMA Read or
// Write. The initiator arms a slot before it sends the request; the
// responder copies only after it has taken the armed slot with a
// compare-and-swap, and frees it when the copy is over; the initiator
// withdraws the slot before it completes the work request. So once the
// initiator has completed an operation (flushed or not) the responder can
// no longer copy into or out of its memory, as a real queue pair places
// nothing once it is in the error state. A socket handshake could not give
// that: the flush completion would then wait on the peer's goodwill.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_CMA_GATE_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_CMA_GATE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "plugin/fabric/soft/soft_socket.h"

namespace rpcrdma::fabric::soft {

class CmaGate {
 public:
  // Slot 0 holds the probe cookie; operation `seq` uses slot
  // 1 + seq % (kSlots - 1), and goes through the socket when that slot
  // is still armed for an older one.
  static constexpr size_t kSlots = 1024;

  CmaGate() = default;
  CmaGate(const CmaGate&) = delete;
  CmaGate& operator=(const CmaGate&) = delete;
  ~CmaGate();

  // Makes a gate in this process holding `cookie`; false when memfd or
  // mmap is unavailable.
  bool Create(uint64_t cookie);
  // Maps the gate that process `pid` holds open as `fd`, and checks that
  // it holds `cookie` (the fd could name something else by now).
  bool OpenPeer(int pid, uint32_t fd, uint64_t cookie);
  bool valid() const { return slots_ != nullptr; }
  int fd() const { return fd_.get(); }
  // The mapping stays; the descriptor goes once no process needs to open
  // the gate through it any more (a descriptor per connection counts when
  // a process holds ten thousand).
  void CloseFd() { fd_.reset(); }
  // The cookie's address in this process (what the peer probes).
  uint64_t cookie_address() const;

  // Initiator: arms the slot of `seq`; false when it is taken.
  bool Arm(uint64_t seq);
  // Initiator: returns once the responder can no longer copy for `seq`.
  // While the responder is copying it waits for the end of that copy (one
  // bounded process_vm call) unless `peer_gone` says the peer has exited.
  void Withdraw(uint64_t seq, absl::FunctionRef<bool()> peer_gone);
  // Responder: takes the slot of `seq`; false when the initiator has
  // withdrawn it (or never armed it).
  bool Enter(uint64_t seq);
  // Responder: the copy for `seq` is over.
  void Leave(uint64_t seq);

 private:
  static constexpr size_t kBytes = kSlots * sizeof(uint64_t);
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "the gate is shared between processes");
  bool Map(UniqueFd fd);
  std::atomic<uint64_t>& Slot(uint64_t seq) const;

  UniqueFd fd_;
  std::atomic<uint64_t>* slots_ = nullptr;
};

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_CMA_GATE_H_
