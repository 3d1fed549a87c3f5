// A stream-socket relay that cuts connections at random: the soak test
// puts it between its Channels and its Server (soft fabric only) so that
// links break at any octet of the soft wire protocol, as a failing cable or
// a peer host crash would, without the fabric's cooperation. Both ends see
// end of stream without DISCONNECT, which is a lost connection
// (soft_wire.h).
#ifndef RPCRDMA_TESTS_SOAK_CUT_PROXY_H_
#define RPCRDMA_TESTS_SOAK_CUT_PROXY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::test {

class CutProxy {
 public:
  // Relays connections made to uri() to `target_uri` (soft+unix://@name or
  // soft+tcp://127.0.0.1:port; the proxy listens on the same kind). While
  // cutting is enabled, every `mean_interval` on average (uniformly
  // 0..2x), one relayed connection picked at random is cut. `seed` makes
  // the choice of intervals and victims repeatable.
  static absl::StatusOr<std::unique_ptr<CutProxy>> Start(
      absl::string_view target_uri, uint64_t seed,
      std::chrono::milliseconds mean_interval);
  CutProxy(const CutProxy&) = delete;
  CutProxy& operator=(const CutProxy&) = delete;
  // Closes every relayed connection and the listener; joins the thread.
  ~CutProxy();

  std::string uri() const { return uri_; }
  void set_cutting(bool on) { cutting_ = on; }
  uint64_t cuts() const { return cuts_; }
  uint64_t connections() const { return connections_; }

 private:
  CutProxy() = default;
  void Run();

  std::string uri_;
  std::string target_;  // soft+... URI of the server
  bool tcp_ = false;
  int listener_ = -1;
  int wake_ = -1;  // eventfd: stop
  uint64_t seed_ = 0;
  std::chrono::milliseconds mean_interval_{100};
  std::atomic<bool> cutting_{true};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> cuts_{0};
  std::atomic<uint64_t> connections_{0};
  std::thread thread_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_SOAK_CUT_PROXY_H_
