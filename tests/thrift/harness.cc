#include "tests/thrift/harness.h"

#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/protocol/THeaderProtocol.h>
#include <thrift/protocol/TJSONProtocol.h>
#include <thrift/server/TSimpleServer.h>
#include <thrift/server/TThreadPoolServer.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

using apache::thrift::TConfiguration;
using apache::thrift::protocol::TProtocol;
using apache::thrift::protocol::TProtocolFactory;
using apache::thrift::transport::TTransport;
using apache::thrift::transport::TTransportFactory;
using thrift::TRdmaConnection;
using thrift::TRdmaServer;
using thrift::TRdmaServerSocket;
using thrift::TRdmaServerSocketOptions;
using thrift::TRdmaSocket;
using thrift::TRdmaSocketOptions;

namespace {

const char* ServerName(ServerKind k) {
  switch (k) {
    case ServerKind::kSimple:
      return "Simple";
    case ServerKind::kThreaded:
      return "Threaded";
    case ServerKind::kThreadPool:
      return "ThreadPool";
    case ServerKind::kRdma:
      return "RdmaServer";
  }
  return "?";
}

const char* ProtocolName(ProtocolKind k) {
  switch (k) {
    case ProtocolKind::kBinary:
      return "Binary";
    case ProtocolKind::kCompact:
      return "Compact";
    case ProtocolKind::kJson:
      return "Json";
    case ProtocolKind::kHeader:
      return "Header";
  }
  return "?";
}

const char* WrapperName(Wrapper w) {
  switch (w) {
    case Wrapper::kPlain:
      return "Plain";
    case Wrapper::kBuffered:
      return "Buffered";
    case Wrapper::kFramed:
      return "Framed";
  }
  return "?";
}

class LargeFramedFactory : public TTransportFactory {
 public:
  std::shared_ptr<TTransport> getTransport(
      std::shared_ptr<TTransport> transport) override {
    return std::make_shared<apache::thrift::transport::TFramedTransport>(
        std::move(transport), LargeMessages());
  }
};

// Tells when the server is serving (it listens).
class Ready : public apache::thrift::server::TServerEventHandler {
 public:
  void preServe() override {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [this] { return ready_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

}  // namespace

std::string Setup::Name() const {
  const char* fabric_name = fabric == Fabric::kUnix  ? "SoftUnix"
                            : fabric == Fabric::kTcp ? "SoftTcp"
                                                     : "Rdma";
  return absl::StrCat(ServerName(server), "_", ProtocolName(protocol), "_",
                      WrapperName(wrapper), "_", fabric_name);
}

std::shared_ptr<TConfiguration> LargeMessages() {
  return std::make_shared<TConfiguration>(256 << 20, 256 << 20);
}

std::shared_ptr<TProtocolFactory> ProtocolFactory(ProtocolKind kind) {
  switch (kind) {
    case ProtocolKind::kBinary:
      return std::make_shared<
          apache::thrift::protocol::TBinaryProtocolFactory>();
    case ProtocolKind::kCompact:
      return std::make_shared<
          apache::thrift::protocol::TCompactProtocolFactory>();
    case ProtocolKind::kJson:
      return std::make_shared<apache::thrift::protocol::TJSONProtocolFactory>();
    case ProtocolKind::kHeader:
      return std::make_shared<
          apache::thrift::protocol::THeaderProtocolFactory>();
  }
  return nullptr;
}

std::shared_ptr<TProtocol> MakeProtocol(ProtocolKind kind,
                                        std::shared_ptr<TTransport> transport) {
  return ProtocolFactory(kind)->getProtocol(std::move(transport));
}

std::shared_ptr<TTransportFactory> TransportFactory(Wrapper wrapper) {
  switch (wrapper) {
    case Wrapper::kPlain:
      return std::make_shared<TTransportFactory>();
    case Wrapper::kBuffered:
      return std::make_shared<
          apache::thrift::transport::TBufferedTransportFactory>();
    case Wrapper::kFramed:
      return std::make_shared<LargeFramedFactory>();
  }
  return nullptr;
}

std::shared_ptr<TTransport> Wrap(Wrapper wrapper,
                                 std::shared_ptr<TTransport> transport) {
  return TransportFactory(wrapper)->getTransport(std::move(transport));
}

std::string ServerUri(Fabric fabric) {
  static std::atomic<int> counter{0};
  if (fabric == Fabric::kTcp) return "soft+tcp://127.0.0.1:0";
  if (fabric == Fabric::kRdma) {
    // rdma-cm resolves no route to 127.0.0.1 over Soft-RoCE: server and
    // client use the device's address.
    const char* addr = std::getenv("RPCRDMA_TEST_ADDR");
    return absl::StrCat(
        "rdma://", addr != nullptr && *addr != '\0' ? addr : "192.0.2.1", ":0");
  }
  return absl::StrCat("soft+unix://@rpcrdma-thrift-test-", ProcessTag(), "-",
                      counter++);
}

// ---- StoreHandler ----------------------------------------------------------

StoreHandler::~StoreHandler() {
  for (std::thread& t : later_) t.join();
}

void StoreHandler::sizes(std::vector<int64_t>& out,
                         const std::vector<std::string>& blobs) {
  for (const std::string& b : blobs) out.push_back(b.size());
}

void StoreHandler::make(std::vector<std::string>& out,
                        const std::vector<int32_t>& sizes, int8_t fill) {
  for (int32_t size : sizes) {
    out.emplace_back(static_cast<size_t>(size), static_cast<char>(fill));
  }
}

void StoreHandler::get(std::string& out, const std::string& key) {
  if (key.empty()) {
    Invalid bad;
    bad.why = "empty key";
    throw bad;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(key);
  if (it == values_.end()) {
    NotFound missing;
    missing.key = key;
    missing.code = 404;
    throw missing;
  }
  out = it->second;
}

void StoreHandler::put(const std::string& key, const std::string& value) {
  if (key.empty()) {
    Invalid bad;
    bad.why = "empty key";
    throw bad;
  }
  std::lock_guard<std::mutex> lock(mu_);
  values_[key] = value;
}

int32_t StoreHandler::depth(const Nest& nest) {
  int32_t d = 1;
  for (const Nest* n = &nest; n->__isset.child && n->child != nullptr;
       n = n->child.get()) {
    ++d;
  }
  return d;
}

int64_t StoreHandler::slow(int32_t millis, int64_t token) {
  const int32_t now = ++slow_now_;
  for (int32_t peak = slow_peak_.load(); now > peak;) {
    if (slow_peak_.compare_exchange_weak(peak, now)) break;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(millis));
  --slow_now_;
  return token;
}

void StoreHandler::note(const std::string& /*what*/, int32_t millis,
                        const std::string& attachment) {
  std::this_thread::sleep_for(std::chrono::milliseconds(millis));
  last_attachment_ = attachment.size();
  std::lock_guard<std::mutex> lock(mu_);
  ++notes_;
  cv_.notify_all();
}

bool StoreHandler::WaitForNotes(int32_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(20),
                      [&] { return notes_.load() >= n; });
}

int32_t StoreHandler::callBack(const std::string& key, int32_t times,
                               const std::string& data, bool after) {
  std::shared_ptr<TRdmaConnection> connection = TRdmaConnection::current();
  if (connection == nullptr) {
    Invalid bad;
    bad.why = "no connection for this call";
    throw bad;
  }
  auto call_back = [connection, key, times, data,
                    protocol = callback_protocol_] {
    WatcherClient watcher(
        MakeProtocol(protocol, connection->callbackTransport()));
    int64_t answered = 0;
    for (int32_t i = 0; i < times; ++i) {
      answered += watcher.changed(key, i, data) == i ? 1 : 0;
    }
    watcher.poke(key);
    return answered;
  };
  if (!after) return static_cast<int32_t>(call_back());
  // After the call has been answered, from another thread.
  std::lock_guard<std::mutex> lock(mu_);
  later_.emplace_back([call_back] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      call_back();
    } catch (const apache::thrift::TException& e) {
      std::fprintf(stderr, "late callback failed: %s\n", e.what());
    }
  });
  return 0;
}

void StoreHandler::fail(std::string& /*out*/, const std::string& message) {
  throw std::runtime_error(message);
}

// ---- WatcherHandler
// -------------------------------------------------------------

int64_t WatcherHandler::changed(const std::string& key, int32_t n,
                                const std::string& data) {
  bytes_ += data.size();
  std::lock_guard<std::mutex> lock(mu_);
  keys_.push_back(key);
  cv_.notify_all();
  return n;
}

void WatcherHandler::poke(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  keys_.push_back("poke:" + key);
  cv_.notify_all();
}

bool WatcherHandler::WaitFor(size_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(20),
                      [&] { return keys_.size() >= n; });
}

std::vector<std::string> WatcherHandler::keys() {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_;
}

// ---- TestServer
// ------------------------------------------------------------------

std::unique_ptr<TestServer> TestServer::Start(
    const Setup& setup, std::shared_ptr<apache::thrift::TProcessor> processor,
    config::TransportConfig transport, std::shared_ptr<TConfiguration> limits) {
  std::unique_ptr<TestServer> s(new TestServer());
  s->handler_ = std::make_shared<StoreHandler>(setup.protocol);
  if (processor == nullptr) {
    processor = std::make_shared<StoreProcessor>(s->handler_);
  }
  s->socket_ = std::make_shared<TRdmaServerSocket>(
      ServerUri(setup.fabric), transport, TRdmaServerSocketOptions{},
      limits != nullptr ? limits : LargeMessages());
  std::shared_ptr<TTransportFactory> transports =
      TransportFactory(setup.wrapper);
  std::shared_ptr<TProtocolFactory> protocols = ProtocolFactory(setup.protocol);
  switch (setup.server) {
    case ServerKind::kSimple:
      s->server_ = std::make_shared<apache::thrift::server::TSimpleServer>(
          processor, s->socket_, transports, protocols);
      break;
    case ServerKind::kThreaded:
      s->server_ = std::make_shared<apache::thrift::server::TThreadedServer>(
          processor, s->socket_, transports, protocols);
      break;
    case ServerKind::kThreadPool: {
      auto threads =
          apache::thrift::concurrency::ThreadManager::newSimpleThreadManager(4);
      threads->threadFactory(
          std::make_shared<apache::thrift::concurrency::ThreadFactory>());
      threads->start();
      s->server_ = std::make_shared<apache::thrift::server::TThreadPoolServer>(
          processor, s->socket_, transports, protocols, threads);
      break;
    }
    case ServerKind::kRdma: {
      auto server =
          std::make_shared<TRdmaServer>(processor, s->socket_, protocols, 4);
      server->setInputTransportFactory(transports);
      server->setOutputTransportFactory(transports);
      s->server_ = server;
      break;
    }
  }
  auto ready = std::make_shared<Ready>();
  s->server_->setServerEventHandler(ready);
  s->thread_ = std::thread([server = s->server_] { server->serve(); });
  if (!ready->Wait()) throw std::runtime_error("server did not start");
  s->uri_ = s->socket_->uri();
  return s;
}

void TestServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  server_->stop();
  thread_.join();
}

TestServer::~TestServer() { Stop(); }

// ---- TestClient
// ---------------------------------------------------------------

std::unique_ptr<TestClient> TestClient::Connect(
    const Setup& setup, const std::string& uri, TRdmaSocketOptions options,
    std::shared_ptr<TConfiguration> limits, config::TransportConfig transport) {
  auto c = std::make_unique<TestClient>();
  c->socket = std::make_shared<TRdmaSocket>(
      uri, transport, std::move(options),
      limits != nullptr ? limits : LargeMessages());
  c->transport = Wrap(setup.wrapper, c->socket);
  c->protocol = MakeProtocol(setup.protocol, c->transport);
  c->store = std::make_unique<StoreClient>(c->protocol);
  c->transport->open();
  return c;
}

TestClient::~TestClient() {
  if (transport != nullptr) transport->close();
}

// ---- Values
// -------------------------------------------------------------------

std::string Pattern(size_t size, uint8_t seed) {
  std::string s(size, '\0');
  uint32_t x = 0x9e3779b9u * (seed + 1u);
  for (size_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

Everything FullValue(size_t blob_size) {
  Everything v;
  v.flag = true;
  v.tiny = -7;
  v.small = -1234;
  v.medium = 123456789;
  v.large = -1234567890123456789;
  v.real = 3.25e-7;
  v.text = "gr\xc3\xbc\xc3\x9f \"quoted\" \\ and \n newline";
  v.data = Pattern(blob_size, 1);
  v.color = Color::BLUE;
  v.stamp = 1700000000123;
  v.numbers = {1, -2, 3, 2147483647, -2147483647 - 1};
  v.tags = {"a", "b", "zeta"};
  v.names = {{1, "one"}, {-5, "minus five"}};
  Inner inner;
  inner.id = 9;
  inner.__set_label("nine");
  inner.payload = Pattern(blob_size / 2, 2);
  v.inners = {inner, Inner()};
  v.by_name = {{"x", inner}};
  v.index = {{"primes", {2, 3, 5, 7}}, {"empty", {}}};
  v.__set_maybe(inner);
  v.blobs = {Pattern(blob_size, 3), "", Pattern(17, 4)};
  v.must = 77;
  v.colors = {Color::RED, Color::GREEN};
  v.binary_map = {{Pattern(5, 5), Pattern(blob_size / 3, 6)}};
  v.nested = {{{{"k", {1, 2, 3}}}}, {}};
  return v;
}

}  // namespace rpcrdma::test
