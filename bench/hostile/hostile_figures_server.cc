// The server hostile_figures attacks, in a process of its own so that its
// resident size is the server's alone: the Thrift bridge's Store service
// (tests/thrift/bridge_test.thrift) on a TRdmaServer or a
// TThreadPoolServer, or a counting ONC RPC program on the ONC RPC adapter
// with its duplicate request cache. It prints the URI it serves at on a
// line of its own, then serves until its standard input closes.
//
//   hostile_figures_server rdma <workers> [idle_ms]
//   hostile_figures_server pool <threads> <recv_timeout_ms>
//   hostile_figures_server oncrpc
#include <rpc/rpc.h>
#include <thrift/TConfiguration.h>
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadPoolServer.h>
#include <thrift/transport/TTransport.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "Store.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/api/thrift_baseline.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "rpcrdma/thrift/rdma_server.h"
#include "rpcrdma/thrift/rdma_server_socket.h"

namespace rpcrdma::bench::hostile {
namespace {

using ::rpcrdma::test::Blob;
using ::rpcrdma::test::Everything;
using ::rpcrdma::test::Nest;

// Store as an application serves it; note() takes `millis` as a oneway
// handler that does some work does.
class StoreHandler : public ::rpcrdma::test::StoreIf {
 public:
  void ping() override {}
  void roundTrip(Everything& out, const Everything& value) override {
    out = value;
  }
  void echo(Blob& out, const Blob& data) override { out = data; }
  void sizes(std::vector<int64_t>& out,
             const std::vector<Blob>& blobs) override {
    for (const Blob& blob : blobs) out.push_back(std::ssize(blob));
  }
  void make(std::vector<Blob>& out, const std::vector<int32_t>& sizes,
            int8_t fill) override {
    for (int32_t size : sizes) {
      out.emplace_back(static_cast<size_t>(std::max(size, 0)),
                       static_cast<char>(fill));
    }
  }
  void get(Blob& out, const std::string& key) override { out = key; }
  void put(const std::string&, const Blob&) override {}
  int32_t depth(const Nest&) override { return 0; }
  int64_t slow(int32_t millis, int64_t token) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(millis));
    return token;
  }
  void note(const std::string&, int32_t millis, const Blob&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(millis));
    ++notes_;
  }
  int32_t notes() override { return notes_.load(); }
  int32_t callBack(const std::string&, int32_t, const Blob&, bool) override {
    return 0;
  }
  void fail(std::string& out, const std::string& message) override {
    out = message;
  }

 private:
  std::atomic<int32_t> notes_{0};
};

std::string UniqueUri() {
  return absl::StrCat("soft+unix://@rpcrdma-hostile-figures-", getpid());
}

// Serves until standard input reaches its end (the tool closed it or
// ended).
void WaitForStdinEnd() {
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
}

void PrintUri(const std::string& uri) {
  std::printf("%s\n", uri.c_str());
  std::fflush(stdout);
}

int ServeThrift(bool rdma, int threads, int64_t timeout_ms) {
  config::TransportConfig transport;
  if (rdma && timeout_ms > 0) {
    transport.mutable_timeouts()->set_idle_ms(timeout_ms);
  }
  auto socket = std::make_shared<::rpcrdma::thrift::TRdmaServerSocket>(
      UniqueUri(), transport);
  auto processor = std::make_shared<::rpcrdma::test::StoreProcessor>(
      std::make_shared<StoreHandler>());
  auto protocols =
      std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>();
  std::shared_ptr<apache::thrift::server::TServer> server;
  if (rdma) {
    server = std::make_shared<::rpcrdma::thrift::TRdmaServer>(
        processor, socket, protocols, threads);
  } else {
    // TServerSocket's receive timeout, as a TThreadPoolServer is run.
    socket->setRecvTimeout(static_cast<int>(timeout_ms));
    auto manager =
        apache::thrift::concurrency::ThreadManager::newSimpleThreadManager(
            static_cast<size_t>(threads));
    manager->threadFactory(
        std::make_shared<apache::thrift::concurrency::ThreadFactory>());
    manager->start();
    server = std::make_shared<apache::thrift::server::TThreadPoolServer>(
        processor, socket,
        std::make_shared<apache::thrift::transport::TTransportFactory>(),
        protocols, manager);
  }
  std::thread serving = ServeInBackground(server);
  PrintUri(socket->uri());
  WaitForStdinEnd();
  server->stop();
  serving.join();
  return 0;
}

// The ONC RPC program: COUNT (procedure 1) takes an opaque<> and answers
// how many calls it has executed; it is not idempotent, so a reply the
// duplicate request cache gives the wrong client is visible.
constexpr rpcprog_t kCountProgram = 0x2000816b;
constexpr rpcvers_t kCountVersion = 1;
constexpr rpcproc_t kCount = 1;
std::atomic<u_int> executed{0};

// An XDR routine as libtirpc's variadic xdrproc_t (through void (*)(),
// the cast GCC accepts between function types).
template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

bool_t XdrArgument(XDR* xdrs, char* buffer) {
  char* data = buffer;
  u_int length = 0;
  return xdr_bytes(xdrs, &data, &length, 4096);
}

void CountDispatch(svc_req* request, SVCXPRT* xprt) {
  if (request->rq_proc == NULLPROC) {
    svc_sendreply(xprt, AsXdrProc(&xdr_void), nullptr);
    return;
  }
  if (request->rq_proc != kCount) {
    svcerr_noproc(xprt);
    return;
  }
  std::vector<char> argument(4096);
  if (!svc_getargs(xprt, AsXdrProc(&XdrArgument), argument.data())) {
    svcerr_decode(xprt);
    return;
  }
  u_int count = ++executed;
  svc_sendreply(xprt, AsXdrProc(&xdr_u_int), reinterpret_cast<caddr_t>(&count));
}

int ServeOncRpc() {
  absl::StatusOr<SVCXPRT*> xprt =
      ::rpcrdma::oncrpc::CreateServerTransport(UniqueUri(), {});
  if (!xprt.ok()) {
    std::fprintf(stderr, "%s\n", xprt.status().ToString().c_str());
    return 1;
  }
  if (!svc_rdma_enablecache(*xprt, 64, 0) ||
      !svc_reg(*xprt, kCountProgram, kCountVersion, CountDispatch, nullptr) ||
      !svc_rdma_run_threads(*xprt, 2)) {
    std::fprintf(stderr, "cannot serve the count program\n");
    return 1;
  }
  PrintUri(svc_rdma_uri(*xprt));
  WaitForStdinEnd();
  svc_unreg(kCountProgram, kCountVersion);
  svc_destroy(*xprt);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: hostile_figures_server rdma <workers> [idle_ms]\n"
               "       hostile_figures_server pool <threads> "
               "<recv_timeout_ms>\n"
               "       hostile_figures_server oncrpc\n");
  return 2;
}

}  // namespace
}  // namespace rpcrdma::bench::hostile

int main(int argc, char** argv) {
  using namespace rpcrdma::bench::hostile;  // NOLINT: main
  if (argc < 2) return Usage();
  const std::string kind = argv[1];
  if (kind == "oncrpc") return ServeOncRpc();
  int threads = 0;
  int64_t timeout_ms = 0;
  if (argc < 3 || !absl::SimpleAtoi(argv[2], &threads) || threads < 1 ||
      (argc > 3 && !absl::SimpleAtoi(argv[3], &timeout_ms))) {
    return Usage();
  }
  if (kind == "rdma") return ServeThrift(true, threads, timeout_ms);
  if (kind == "pool") return ServeThrift(false, threads, timeout_ms);
  return Usage();
}
