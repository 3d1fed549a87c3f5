// The soak test's Server side and its tallies: a Server of the soak
// program (soak_calls.h) that answers some calls at once and some later
// from another thread, and makes backward calls (RFC 8167) when a call
// asks for one.
#ifndef RPCRDMA_TESTS_SOAK_SOAK_SERVER_H_
#define RPCRDMA_TESTS_SOAK_SOAK_SERVER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/soak/soak_calls.h"

namespace rpcrdma::test {

// The only ways a call may fail in the soak (channel.h).
bool IsCleanStatus(absl::StatusCode code);

struct SoakStats {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> unavailable{0};
  std::atomic<uint64_t> deadline_exceeded{0};
  std::atomic<uint64_t> cancelled{0};
  std::atomic<uint64_t> other{0};
  std::atomic<uint64_t> retried_calls{0};
  std::atomic<uint64_t> shapes[kShapes] = {};
  std::atomic<uint64_t> backward_calls{0};
  std::atomic<uint64_t> backward_ok{0};
  std::atomic<uint64_t> backward_failed{0};  // UNAVAILABLE, NOT_FOUND, ...
  std::atomic<uint64_t> backward_served{0};  // answered by a Channel
  std::atomic<uint64_t> delayed_replies{0};
  std::atomic<uint64_t> dropped_calls{0};  // never answered by the Server
  std::atomic<uint64_t> channels_replaced{0};
  std::atomic<uint64_t> reconnects{0};
  // Version two (--soak_version=2): receive buffer sizes raised and
  // optional messages answered, of those tried.
  std::atomic<uint64_t> v2_updates{0};
  std::atomic<uint64_t> v2_updates_ok{0};
  std::atomic<uint64_t> v2_optionals{0};
  std::atomic<uint64_t> v2_optionals_ok{0};

  void Count(bool retried, absl::StatusCode code);
  // The Server's counters, recorded when it goes away.
  void SetWire(std::string wire);
  uint64_t completed() const {
    return ok + unavailable + deadline_exceeded + cancelled + other;
  }
  void Fail(std::string what);
  // One line per kind of failure (messages alike but for their numbers).
  std::vector<std::string> failures() const;
  // One line: calls, outcomes, breaks, reconnects.
  std::string Summary(const std::string& transport, uint64_t cuts) const;

 private:
  mutable std::mutex mu_;
  std::string wire_;
  // By kind: how many, and the first message.
  std::map<std::string, std::pair<uint64_t, std::string>> failure_kinds_;
};

// The optional message type the soak Server answers (echoing it) under
// version two.
inline constexpr uint32_t kSoakOptionalType = 0x534F414B;  // "SOAK"

class SoakServer {
 public:
  SoakServer(const config::TransportConfig& config, const std::string& uri,
             uint64_t seed, SoakStats* stats);
  // Stops the answering thread (dropping answers not yet due), then the
  // Server. Every backward call has completed when it returns.
  ~SoakServer();

  const absl::Status& status() const { return status_; }
  std::string uri() const { return server_ ? server_->uri() : ""; }

 private:
  struct Job {
    std::chrono::steady_clock::time_point due;
    // An answer due at `due`, or a backward call to make.
    std::unique_ptr<Responder> responder;
    HandlerReply reply;
    ConnectionId connection;
    uint32_t backward_size = 0;
  };
  void Handle(IncomingCall call, Responder responder);
  void Run();
  void CallBackward(ConnectionId connection, uint32_t size);

  SoakStats* stats_;
  absl::Status status_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Responder> never_answered_;  // kept until the Server is gone
  bool stop_ = false;
  std::mt19937_64 rng_;  // the answering thread's
  std::atomic<uint32_t> next_backward_xid_{0x80000000u};
  std::atomic<uint64_t> backward_done_{0};
  std::thread thread_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_SOAK_SOAK_SERVER_H_
