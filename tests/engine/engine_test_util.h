// Test doubles for the engine: a fake MemoryExposer that models remote
// access rights and invalidation, action filters, and a loopback that
// carries one engine's actions to another like a reliable connected queue
// pair would (in order, receives consumed by Sends, RDMA on exposed memory
// only).
#ifndef RPCRDMA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
#define RPCRDMA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_

#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/private_data.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {

// Handles start at 0x100; a handle's memory is named by offset
// (handle << 32) + index, so a test can tell segments apart.
class FakeExposer : public engine::MemoryExposer {
 public:
  struct Window {
    absl::Span<uint8_t> memory;
    uint32_t access = 0;
    bool valid = true;
  };

  absl::StatusOr<wire::Segment> Expose(absl::Span<uint8_t> memory,
                                       uint32_t access) override {
    if (fail_next_) {
      fail_next_ = false;
      return absl::ResourceExhaustedError("no windows left");
    }
    uint32_t handle = next_handle_++;
    windows[handle] = Window{memory, access, true};
    return wire::Segment{handle, static_cast<uint32_t>(memory.size()),
                         uint64_t{handle} << 32};
  }

  // Local invalidation; false if the handle is unknown or already invalid.
  bool Invalidate(uint32_t handle) {
    auto it = windows.find(handle);
    if (it == windows.end() || !it->second.valid) return false;
    it->second.valid = false;
    return true;
  }

  // What a peer's RDMA access through `s` would reach, or an error when
  // the handle is invalid, lacks the right, or the range is out of bounds.
  absl::StatusOr<absl::Span<uint8_t>> Access(const wire::Segment& s,
                                             uint32_t right) {
    auto it = windows.find(s.handle);
    if (it == windows.end() || !it->second.valid) {
      return absl::PermissionDeniedError(
          absl::StrCat("remote access error: handle ", s.handle));
    }
    uint64_t base = uint64_t{s.handle} << 32;
    if ((it->second.access & right) == 0 || s.offset < base ||
        s.offset - base + s.length > it->second.memory.size()) {
      return absl::PermissionDeniedError("remote access out of bounds/rights");
    }
    return it->second.memory.subspan(s.offset - base, s.length);
  }

  size_t live() const {
    size_t n = 0;
    for (const auto& [h, w] : windows) n += w.valid ? 1 : 0;
    return n;
  }

  std::map<uint32_t, Window> windows;
  bool fail_next_ = false;

 private:
  uint32_t next_handle_ = 0x100;
};

template <typename T>
std::vector<T> Only(const engine::Actions& actions) {
  std::vector<T> out;
  for (const engine::Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

template <typename T>
size_t Count(const engine::Actions& actions) {
  return Only<T>(actions).size();
}

// An RPC call stream: XID, msg_type CALL, rpcvers 2, then `rest` words,
// padded with zero words to the six fixed words of an RPC call header (the
// responder delivers nothing shorter).
inline std::vector<uint8_t> CallStream(uint32_t xid,
                                       std::initializer_list<uint32_t> rest) {
  std::vector<uint8_t> out = Words({xid, 0, 2});
  for (uint32_t w : rest) AppendWord(out, w);
  while (out.size() < 24) AppendWord(out, 0);
  return out;
}

inline std::vector<uint8_t> Concat(
    std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline std::vector<uint8_t> PrivateDataBytes(const wire::PrivateData& pd) {
  auto encoded = wire::EncodePrivateData(pd);
  return std::vector<uint8_t>(encoded->begin(), encoded->end());
}

// One end of the loopback.
struct Side {
  Side(engine::Config config) : engine(config, &exposer) {}  // NOLINT
  FakeExposer exposer;
  engine::Engine engine;
  std::deque<engine::Action> pending;
  uint32_t posted_receives = 0;
  uint32_t receive_size = 0;
  std::vector<engine::DeliverCall> delivered;
  std::vector<engine::CompleteCall> completed;
  std::vector<engine::FailCall> failed;
  std::vector<engine::ReplySent> replies_sent;
  // Version two (version_two.h).
  std::vector<engine::PropertiesAnswered> properties_answered;
  std::vector<engine::PropertiesRequested> properties_requested;
  std::vector<engine::DeliverOptional> optionals;
  std::vector<engine::OptionalAnswered> optional_answers;
  std::vector<std::vector<uint8_t>> sends;  // every Send's bytes
  std::vector<std::optional<uint32_t>> send_invalidates;
  size_t reads_in_flight = 0;
  size_t max_reads_in_flight = 0;

  void Take(engine::Actions& actions) {
    for (engine::Action& a : actions) pending.push_back(std::move(a));
    actions.clear();
  }
  // StartCall / Reply with their actions queued for Loopback::Run.
  absl::StatusOr<engine::CallId> Call(engine::OutgoingCall call) {
    engine::Actions out;
    absl::StatusOr<engine::CallId> id = engine.StartCall(std::move(call), out);
    Take(out);
    return id;
  }
  absl::Status Answer(engine::CallId call, engine::OutgoingReply reply) {
    engine::Actions out;
    absl::Status status = engine.Reply(call, std::move(reply), out);
    Take(out);
    return status;
  }
  // Any other operation of the engine, e.g.
  // side.Do([&](Actions& out) { return engine.StartOptional(..., out); }).
  template <typename F>
  auto Do(F&& operation) {
    engine::Actions out;
    auto result = operation(out);
    Take(out);
    return result;
  }
};

// Carries actions between two engines until both are idle. Every
// violation a real RC queue pair would turn into a fatal completion (no
// posted receive, message longer than the receive buffer, access through
// an invalid handle) is recorded in `errors`.
class Loopback {
 public:
  Loopback(engine::Config requester, engine::Config responder)
      : a(requester), b(responder) {}

  void Connect(uint32_t ord = 4) {
    engine::Actions out;
    a.engine.OnConnected({LocalBytes(b), ord}, out);
    a.Take(out);
    b.engine.OnConnected({LocalBytes(a), ord}, out);
    b.Take(out);
    Run();
  }

  void Run() {
    bool progress = true;
    while (progress) {
      progress = false;
      // With bursts, a side carries out everything it has queued before
      // the other side gets a turn, so the receives a burst consumes are
      // replaced only after the burst: a stricter model of a peer that
      // processes its completions late.
      do {
        if (!a.pending.empty()) {
          Step(a, b);
          progress = true;
        }
      } while (bursts && !a.pending.empty());
      do {
        if (!b.pending.empty()) {
          Step(b, a);
          progress = true;
        }
      } while (bursts && !b.pending.empty());
    }
  }

  Side a;
  Side b;
  std::vector<std::string> errors;
  // With one call in flight, no handle may be live when it ends.
  bool check_live = true;
  // See Run().
  bool bursts = false;

 private:
  static std::vector<uint8_t> LocalBytes(const Side& s) {
    auto pd = s.engine.LocalPrivateData();
    return std::vector<uint8_t>(pd.begin(), pd.end());
  }

  void Step(Side& self, Side& peer) {
    engine::Action action = std::move(self.pending.front());
    self.pending.pop_front();
    engine::Actions out;
    if (auto* p = std::get_if<engine::PostReceives>(&action)) {
      self.posted_receives += p->count;
      self.receive_size = p->buffer_size;
    } else if (auto* s = std::get_if<engine::Send>(&action)) {
      self.sends.push_back(s->bytes);
      self.send_invalidates.push_back(s->invalidate);
      if (s->bytes.size() > self.engine.thresholds().send) {
        errors.push_back("Send longer than the send threshold");
      }
      if (peer.posted_receives == 0) {
        errors.push_back("receiver not ready");
        return;
      }
      if (s->bytes.size() > peer.receive_size) {
        errors.push_back("local length error at the receiver");
        return;
      }
      --peer.posted_receives;
      if (s->invalidate && !peer.exposer.Invalidate(*s->invalidate)) {
        errors.push_back("Send With Invalidate of an invalid handle");
      }
      self.engine.OnSendComplete(s->op, true, out);
      self.Take(out);
      peer.engine.OnReceive(s->bytes, s->invalidate, out);
      peer.Take(out);
    } else if (auto* r = std::get_if<engine::RdmaRead>(&action)) {
      auto src = peer.exposer.Access(r->source, engine::kRemoteRead);
      bool ok = src.ok() && src->size() == r->destination.size();
      if (!ok) {
        errors.push_back("RDMA Read failed");
      } else {
        std::memcpy(r->destination.data(), src->data(), src->size());
      }
      self.engine.OnReadComplete(r->op, ok, out);
      self.Take(out);
    } else if (auto* w = std::get_if<engine::RdmaWrite>(&action)) {
      auto dst = peer.exposer.Access(w->target, engine::kRemoteWrite);
      if (!dst.ok() || dst->size() < w->source.size()) {
        errors.push_back("RDMA Write failed");
      } else {
        std::memcpy(dst->data(), w->source.data(), w->source.size());
      }
    } else if (auto* i = std::get_if<engine::Invalidate>(&action)) {
      if (!self.exposer.Invalidate(i->handle)) {
        errors.push_back("local invalidate of an invalid handle");
      }
      self.engine.OnInvalidated(i->handle, out);
      self.Take(out);
    } else if (auto* d = std::get_if<engine::DeliverCall>(&action)) {
      self.delivered.push_back(std::move(*d));
    } else if (auto* c = std::get_if<engine::CompleteCall>(&action)) {
      if (check_live && self.exposer.live() != 0) {
        errors.push_back("call completed with a live handle");
      }
      self.completed.push_back(std::move(*c));
    } else if (auto* f = std::get_if<engine::FailCall>(&action)) {
      if (check_live && self.exposer.live() != 0) {
        errors.push_back("call failed with a live handle");
      }
      self.failed.push_back(std::move(*f));
    } else if (auto* rs = std::get_if<engine::ReplySent>(&action)) {
      self.replies_sent.push_back(*rs);
    } else if (auto* pa = std::get_if<engine::PropertiesAnswered>(&action)) {
      self.properties_answered.push_back(std::move(*pa));
    } else if (auto* pr = std::get_if<engine::PropertiesRequested>(&action)) {
      self.properties_requested.push_back(std::move(*pr));
    } else if (auto* o = std::get_if<engine::DeliverOptional>(&action)) {
      self.optionals.push_back(std::move(*o));
    } else if (auto* oa = std::get_if<engine::OptionalAnswered>(&action)) {
      self.optional_answers.push_back(std::move(*oa));
    }
  }
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_ENGINE_ENGINE_TEST_UTIL_H_
