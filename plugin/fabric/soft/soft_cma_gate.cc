#include "plugin/fabric/soft/soft_cma_gate.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace rpcrdma::fabric::soft {
namespace {

// A slot's value: 0 free, seq << 1 armed, seq << 1 | 1 being copied.
uint64_t Armed(uint64_t seq) { return seq << 1; }
uint64_t Copying(uint64_t seq) { return (seq << 1) | 1; }
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

CmaGate::~CmaGate() {
  if (slots_ != nullptr) munmap(slots_, kBytes);
}

bool CmaGate::Map(UniqueFd fd) {
  void* map =
      mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return false;
  slots_ = static_cast<std::atomic<uint64_t>*>(map);
  fd_ = std::move(fd);
  return true;
}

bool CmaGate::Create(uint64_t cookie) {
  UniqueFd fd(
      memfd_create("rpcrdma-cma-gate", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  // Sealed at its size, so the peer that maps it can trust it not to
  // shrink under its mapping (which would fault it with SIGBUS).
  if (!fd.valid() || ftruncate(fd.get(), kBytes) != 0 ||
      fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0 || !Map(std::move(fd))) {
    return false;
  }
  slots_[0].store(cookie);
  return true;
}

bool CmaGate::OpenPeer(int pid, uint32_t fd, uint64_t cookie) {
  const std::string path =
      "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  UniqueFd opened(open(path.c_str(), O_RDWR | O_CLOEXEC));
  struct stat st {};
  if (!opened.valid() || fstat(opened.get(), &st) != 0 ||
      static_cast<size_t>(st.st_size) < kBytes ||
      (fcntl(opened.get(), F_GET_SEALS) & kSeals) != kSeals ||
      !Map(std::move(opened))) {
    return false;
  }
  CloseFd();  // mapped: the descriptor is of no further use here
  return slots_[0].load() == cookie;
}

uint64_t CmaGate::cookie_address() const {
  return reinterpret_cast<uintptr_t>(&slots_[0]);
}

std::atomic<uint64_t>& CmaGate::Slot(uint64_t seq) const {
  return slots_[1 + seq % (kSlots - 1)];
}

bool CmaGate::Arm(uint64_t seq) {
  uint64_t expected = 0;
  return Slot(seq).compare_exchange_strong(expected, Armed(seq));
}

void CmaGate::Withdraw(uint64_t seq, absl::FunctionRef<bool()> peer_gone) {
  std::atomic<uint64_t>& slot = Slot(seq);
  uint64_t value = Armed(seq);
  if (slot.compare_exchange_strong(value, 0)) return;
  // Not armed for `seq`: free (the copy is over) or being copied.
  while (slot.load() == Copying(seq)) {
    if (peer_gone()) {
      // A responder that died mid-copy leaves the slot taken for good.
      slot.store(0);
      return;
    }
    sched_yield();
  }
}

bool CmaGate::Enter(uint64_t seq) {
  uint64_t expected = Armed(seq);
  return Slot(seq).compare_exchange_strong(expected, Copying(seq));
}

void CmaGate::Leave(uint64_t seq) {
  uint64_t expected = Copying(seq);
  Slot(seq).compare_exchange_strong(expected, 0);
}

}  // namespace rpcrdma::fabric::soft
