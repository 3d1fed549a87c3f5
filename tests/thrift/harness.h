// What the Thrift bridge's tests share: the Store service's handler, servers
// of every kind on a TRdmaServerSocket, and clients on a TRdmaSocket, each
// with a protocol and a wrapping transport as a Thrift user would pick
// them.
#ifndef RPCRDMA_TESTS_THRIFT_HARNESS_H_
#define RPCRDMA_TESTS_THRIFT_HARNESS_H_

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TProtocol.h>
#include <thrift/server/TServer.h>
#include <thrift/transport/TTransport.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "Admin.h"
#include "Store.h"
#include "Watcher.h"
#include "gtest/gtest.h"
#include "rpcrdma/thrift/rdma_server.h"
#include "rpcrdma/thrift/rdma_server_socket.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace rpcrdma::test {

enum class ServerKind { kSimple, kThreaded, kThreadPool, kRdma };
enum class ProtocolKind { kBinary, kCompact, kJson, kHeader };
enum class Wrapper { kPlain, kBuffered, kFramed };
// kRdma: rdma:// on the Soft-RoCE device of the test VM (label vm).
enum class Fabric { kUnix, kTcp, kRdma };

struct Setup {
  ServerKind server = ServerKind::kRdma;
  ProtocolKind protocol = ProtocolKind::kBinary;
  Wrapper wrapper = Wrapper::kPlain;
  Fabric fabric = Fabric::kUnix;
  std::string Name() const;
};
inline void PrintTo(const Setup& setup, std::ostream* os) {
  *os << setup.Name();
}
// Names a parameterized test after its setup.
inline std::string SetupName(const ::testing::TestParamInfo<Setup>& param) {
  return param.param.Name();
}

// Frames and messages of up to 256 MiB (the 64 MiB binaries, framed).
std::shared_ptr<apache::thrift::TConfiguration> LargeMessages();

std::shared_ptr<apache::thrift::protocol::TProtocolFactory> ProtocolFactory(
    ProtocolKind kind);
std::shared_ptr<apache::thrift::protocol::TProtocol> MakeProtocol(
    ProtocolKind kind,
    std::shared_ptr<apache::thrift::transport::TTransport> transport);
std::shared_ptr<apache::thrift::transport::TTransportFactory> TransportFactory(
    Wrapper wrapper);
std::shared_ptr<apache::thrift::transport::TTransport> Wrap(
    Wrapper wrapper,
    std::shared_ptr<apache::thrift::transport::TTransport> transport);

// A URI of `fabric` no other test of this process uses (port 0 on TCP
// and RDMA; rdma:// at $RPCRDMA_TEST_ADDR, the VM's device).
std::string ServerUri(Fabric fabric);

// The fabrics a test binary runs over: the soft fabric's two, or, built
// with RPCRDMA_THRIFT_TEST_VERBS for the VM, rdma:// alone.
// (static: it differs between the binaries built with and without it.)
static inline std::vector<Fabric> TestFabrics() {
#ifdef RPCRDMA_THRIFT_TEST_VERBS
  return {Fabric::kRdma};
#else
  return {Fabric::kUnix, Fabric::kTcp};
#endif
}

// The Store service. Callbacks go to the client's Watcher service over
// the connection of the call, in `callback_protocol`.
class StoreHandler : public StoreIf {
 public:
  explicit StoreHandler(ProtocolKind callback_protocol = ProtocolKind::kBinary)
      : callback_protocol_(callback_protocol) {}
  ~StoreHandler() override;

  void ping() override {}
  void roundTrip(Everything& out, const Everything& value) override {
    out = value;
  }
  void echo(std::string& out, const std::string& data) override { out = data; }
  void sizes(std::vector<int64_t>& out,
             const std::vector<std::string>& blobs) override;
  void make(std::vector<std::string>& out, const std::vector<int32_t>& sizes,
            int8_t fill) override;
  void get(std::string& out, const std::string& key) override;
  void put(const std::string& key, const std::string& value) override;
  int32_t depth(const Nest& nest) override;
  int64_t slow(int32_t millis, int64_t token) override;
  void note(const std::string& what, int32_t millis,
            const std::string& attachment) override;
  int32_t notes() override { return notes_.load(); }
  int32_t callBack(const std::string& key, int32_t times,
                   const std::string& data, bool after) override;
  void fail(std::string& out, const std::string& message) override;

  // Waits until `n` notes were handled; false after 20 s.
  bool WaitForNotes(int32_t n);
  size_t last_attachment_size() const { return last_attachment_.load(); }
  // Calls `slow` is serving right now, and the most at once.
  int32_t slow_peak() const { return slow_peak_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  std::atomic<int32_t> notes_{0};
  std::atomic<size_t> last_attachment_{0};
  std::atomic<int32_t> slow_now_{0};
  std::atomic<int32_t> slow_peak_{0};
  const ProtocolKind callback_protocol_;
  std::vector<std::thread> later_;
};

// The client's Watcher service: records what the server called back.
class WatcherHandler : public WatcherIf {
 public:
  int64_t changed(const std::string& key, int32_t n,
                  const std::string& data) override;
  void poke(const std::string& key) override;
  // Waits until `n` calls arrived; false after 20 s.
  bool WaitFor(size_t n);
  std::vector<std::string> keys();
  size_t bytes() const { return bytes_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> keys_;
  std::atomic<size_t> bytes_{0};
};

// A server of `setup.server` on a TRdmaServerSocket, serving on a thread.
class TestServer {
 public:
  static std::unique_ptr<TestServer> Start(
      const Setup& setup,
      std::shared_ptr<apache::thrift::TProcessor> processor = nullptr,
      config::TransportConfig transport = {},
      std::shared_ptr<apache::thrift::TConfiguration> limits = nullptr);
  ~TestServer();

  // stop(), then waits for serve() to return.
  void Stop();
  std::string uri() const { return uri_; }
  thrift::TRdmaServerSocket& socket() { return *socket_; }
  StoreHandler& handler() { return *handler_; }
  apache::thrift::server::TServer& server() { return *server_; }

 private:
  TestServer() = default;
  std::shared_ptr<StoreHandler> handler_;
  std::shared_ptr<thrift::TRdmaServerSocket> socket_;
  std::shared_ptr<apache::thrift::server::TServer> server_;
  std::thread thread_;
  std::string uri_;
  bool stopped_ = false;
};

// A Store client as a Thrift user writes it, on a TRdmaSocket.
struct TestClient {
  static std::unique_ptr<TestClient> Connect(
      const Setup& setup, const std::string& uri,
      thrift::TRdmaSocketOptions options = {},
      std::shared_ptr<apache::thrift::TConfiguration> limits = nullptr,
      config::TransportConfig transport = {});
  ~TestClient();

  std::shared_ptr<thrift::TRdmaSocket> socket;
  std::shared_ptr<apache::thrift::transport::TTransport> transport;
  std::shared_ptr<apache::thrift::protocol::TProtocol> protocol;
  std::unique_ptr<StoreClient> store;
};

// A value with every field set, `blob_size` octets in its binaries.
Everything FullValue(size_t blob_size);
std::string Pattern(size_t size, uint8_t seed);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_THRIFT_HARNESS_H_
