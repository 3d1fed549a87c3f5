// A raw RPC-over-RDMA peer for the hostile-peer suite: a soft-fabric
// endpoint driven directly (no engine), which sends whatever octets a test
// builds and reports what comes back; plus probes of this process's
// memory, descriptors and threads.
#ifndef RPCRDMA_TESTS_HOSTILE_HOSTILE_PEER_H_
#define RPCRDMA_TESTS_HOSTILE_HOSTILE_PEER_H_

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/soft/soft_fabric.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/xdr.h"
#include "tests/testing/byte_vectors.h"
#include "tests/testing/sanitizer.h"

namespace rpcrdma::test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- Process probes ---------------------------------------------------------

inline size_t CountEntries(const char* dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator(dir)) {
    ++n;
  }
  return n;
}
inline size_t OpenDescriptors() { return CountEntries("/proc/self/fd"); }
inline size_t Threads() { return CountEntries("/proc/self/task"); }
// Resident sizes say nothing under AddressSanitizer (kUnderSanitizer,
// tests/testing/sanitizer.h: its runtime, UBSan's too, also needs free
// descriptors for its own checks).

// Resident memory of this process in octets (VmRSS of /proc/self/status).
inline uint64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "VmRSS:")) {
      return std::stoull(std::string(absl::StripAsciiWhitespace(rest))) * 1024;
    }
  }
  return 0;
}

// Waits until `done()` or `limit` passes; returns done()'s last answer
// (evaluated once per round, so `done` may consume what it looks at).
template <typename Done>
bool WaitFor(Done done, milliseconds limit = milliseconds(5000)) {
  const Clock::time_point until = Clock::now() + limit;
  while (true) {
    if (done()) return true;
    if (Clock::now() >= until) return false;
    poll(nullptr, 0, 2);
  }
}

// The soft fabric address of a Server URI ("soft+unix://@x" -> "unix:@x").
inline std::string FabricAddress(absl::string_view uri) {
  if (absl::ConsumePrefix(&uri, "soft+unix://"))
    return absl::StrCat("unix:", uri);
  if (absl::ConsumePrefix(&uri, "soft+tcp://"))
    return absl::StrCat("tcp:", uri);
  return std::string(uri);
}

// ---- XDR builders -----------------------------------------------------------

// The raw peer's XDR: words appended with the tests' AppendWord, whole
// headers with XdrWriter, words read with LoadBigEndian32 (rpcrdma/xdr.h).

// The process-wide runtime (rpcrdma/runtime.h) keeps its loop threads and
// their descriptors for the life of the process. Started before a test
// takes its baseline, so that what is counted afterwards is what a Server
// or Channel itself holds.
inline void StartSharedRuntime() { (void)Runtime::Default(); }

inline constexpr uint32_t kRdmaMsg = 0, kRdmaNomsg = 1, kRdmaMsgp = 2,
                          kRdmaDone = 3, kRdmaError = 4;
inline constexpr uint32_t kErrVers = 1, kErrChunk = 2;

// RFC 5531 call header (40 octets) of program 0x20000001.
inline std::vector<uint8_t> RpcCall(uint32_t xid, uint32_t proc = 0) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 0u, 2u, 0x20000001u, 1u, proc, 0u, 0u, 0u, 0u}) {
    AppendWord(out, w);
  }
  return out;
}

struct ReadSeg {
  uint32_t position;
  fabric::RemoteRegion region;
};

// An RPC-over-RDMA version one header (RFC 8166 §4.2) with the given read
// list and empty write list and reply chunk, then `payload`.
inline std::vector<uint8_t> Message(uint32_t xid, uint32_t proc,
                                    const std::vector<ReadSeg>& reads,
                                    const std::vector<uint8_t>& payload = {},
                                    uint32_t credits = 1, uint32_t vers = 1) {
  std::vector<uint8_t> out;
  // Appending to a vector, the writes cannot fail.
  XdrWriter header(&out);
  (void)header.WriteUint32("rdma_xid", xid);
  (void)header.WriteUint32("rdma_vers", vers);
  (void)header.WriteUint32("rdma_credit", credits);
  (void)header.WriteUint32("rdma_proc", proc);
  // Each list entry is optional-data (RFC 4506 §4.19): TRUE, then the item.
  for (const ReadSeg& r : reads) {
    (void)header.WriteBool("read list entry", true);
    (void)header.WriteUint32("position", r.position);
    (void)header.WriteUint32("handle", r.region.handle);
    (void)header.WriteUint32("length", r.region.length);
    (void)header.WriteUint64("offset", r.region.offset);
  }
  (void)header.WriteBool("end of read list", false);
  (void)header.WriteBool("write list", false);
  (void)header.WriteBool("reply chunk", false);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// ---- The raw peer -----------------------------------------------------------

class RawPeer {
 public:
  static constexpr size_t kSlot = 64 * 1024;
  static constexpr size_t kSlots = 64;

  // Connects to `address` (soft fabric syntax) with `private_data`; null
  // when the connect does not succeed (its event lands in `failure`).
  static std::unique_ptr<RawPeer> Connect(
      const std::string& address, std::vector<uint8_t> private_data = {},
      std::optional<fabric::ConnectionEvent>* failure = nullptr) {
    auto peer = std::unique_ptr<RawPeer>(new RawPeer());
    auto ep = peer->fabric_->Connect(address, private_data, {});
    if (!ep.ok()) {
      fprintf(stderr, "raw peer: connect: %s\n",
              ep.status().ToString().c_str());
      return nullptr;
    }
    peer->ep_ = std::move(*ep);
    std::optional<fabric::ConnectionEvent> ev;
    WaitFor(
        [&] { return (ev = peer->ep_->PollConnectionEvent()).has_value(); });
    if (!ev || ev->type != fabric::ConnectionEventType::kEstablished) {
      fprintf(stderr, "raw peer: event %d %s\n",
              ev ? static_cast<int>(ev->type) : -1,
              ev ? ev->detail.c_str() : "");
      if (failure != nullptr) *failure = ev;
      return nullptr;
    }
    if (!peer->Setup()) return nullptr;
    return peer;
  }

  // Accepts the next connect request at `listener` (a raw responder under
  // a Channel), answering with `private_data`.
  static std::unique_ptr<RawPeer> Accept(
      fabric::Listener& listener, std::vector<uint8_t> private_data = {}) {
    auto peer = std::unique_ptr<RawPeer>(new RawPeer());
    std::unique_ptr<fabric::ConnectRequest> request;
    WaitFor([&] {
      auto r = listener.PollConnectRequest();
      if (r.ok() && *r != nullptr) request = std::move(*r);
      return request != nullptr;
    });
    if (request == nullptr) return nullptr;
    auto ep = request->Accept(private_data, {});
    if (!ep.ok()) return nullptr;
    peer->ep_ = std::move(*ep);
    if (!peer->Setup()) return nullptr;
    return peer;
  }

  ~RawPeer() {
    if (ep_ != nullptr) {
      ep_->Disconnect();
      WaitFor(
          [this] {
            Pump();
            return disconnected_ && sends_ == 0 && receives_ == 0 &&
                   windows_ == 0;
          },
          milliseconds(2000));
    }
  }

  // Posts one Send, waiting (and serving the peer's RDMA Reads, which a
  // soft endpoint answers while it is polled) while the queue is full.
  void Send(const std::vector<uint8_t>& bytes) {
    WaitFor([this] {
      Pump();
      return sends_ < static_cast<int64_t>(kSlots) || disconnected_;
    });
    const size_t slot = next_send_++ % kSlots;
    std::copy(bytes.begin(), bytes.end(), send_arena_.begin() + slot * kSlot);
    fabric::LocalBuffer b{send_reg_.get(), slot * kSlot, bytes.size()};
    if (ep_->PostSend(1000 + slot, absl::MakeConstSpan(&b, 1)).ok()) ++sends_;
  }

  // Consumes completions and events; the soft fabric serves the peer's
  // RDMA Reads and Writes of this side's memory meanwhile.
  void Pump() {
    fabric::Completion c[16];
    size_t n;
    while ((n = ep_->PollCompletions(absl::MakeSpan(c))) > 0) {
      for (size_t i = 0; i < n; ++i) {
        if (c[i].type == fabric::WorkType::kReceive) {
          --receives_;
          if (c[i].status == fabric::WorkStatus::kSuccess) {
            auto at = recv_arena_.begin() +
                      static_cast<ptrdiff_t>(c[i].wr_id * kSlot);
            received_.emplace_back(at, at + c[i].byte_length);
            if (!disconnected_) PostReceive(c[i].wr_id);
          }
        } else if (c[i].type == fabric::WorkType::kSend) {
          --sends_;
        } else if (c[i].type == fabric::WorkType::kBindWindow) {
          --windows_;
        }
      }
    }
    while (auto ev = ep_->PollConnectionEvent()) {
      if (ev->type != fabric::ConnectionEventType::kEstablished) {
        disconnected_ = true;
      }
    }
  }

  // Exposes `memory` (kept alive by the caller) with `access` rights.
  fabric::RemoteRegion Expose(std::vector<uint8_t>& memory, uint32_t access) {
    auto reg = ep_->Register(absl::MakeSpan(memory));
    fabric::LocalBuffer b{reg->get(), 0, memory.size()};
    auto region = ep_->BindWindow(5000, b, access);
    ++windows_;
    registrations_.push_back(std::move(*reg));
    return *region;
  }

  // The next message received, within `limit`.
  std::optional<std::vector<uint8_t>> Receive(
      milliseconds limit = milliseconds(3000)) {
    WaitFor(
        [this] {
          Pump();
          return !received_.empty() || disconnected_;
        },
        limit);
    if (received_.empty()) return std::nullopt;
    std::vector<uint8_t> m = std::move(received_.front());
    received_.pop_front();
    return m;
  }

  bool WaitDisconnected(milliseconds limit = milliseconds(5000)) {
    return WaitFor(
        [this] {
          Pump();
          return disconnected_;
        },
        limit);
  }
  bool disconnected() {
    Pump();
    return disconnected_;
  }

 private:
  RawPeer() : fabric_(fabric::MakeSoftFabric()) {}

  bool Setup() {
    recv_arena_.resize(kSlot * kSlots);
    send_arena_.resize(kSlot * kSlots);
    auto r = ep_->Register(absl::MakeSpan(recv_arena_));
    auto s = ep_->Register(absl::MakeSpan(send_arena_));
    if (!r.ok() || !s.ok()) return false;
    recv_reg_ = std::move(*r);
    send_reg_ = std::move(*s);
    for (size_t i = 0; i < kSlots; ++i) PostReceive(i);
    return true;
  }
  void PostReceive(size_t slot) {
    fabric::LocalBuffer b{recv_reg_.get(), slot * kSlot, kSlot};
    if (ep_->PostReceive(slot, b).ok()) ++receives_;
  }
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::Endpoint> ep_;
  std::vector<uint8_t> recv_arena_, send_arena_;
  std::unique_ptr<fabric::Registration> recv_reg_, send_reg_;
  std::vector<std::unique_ptr<fabric::Registration>> registrations_;
  std::deque<std::vector<uint8_t>> received_;
  size_t next_send_ = 0;
  int64_t sends_ = 0, receives_ = 0, windows_ = 0;
  bool disconnected_ = false;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_HOSTILE_HOSTILE_PEER_H_
