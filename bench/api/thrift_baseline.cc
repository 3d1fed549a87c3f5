#include "bench/api/thrift_baseline.h"

#include <thrift/TConfiguration.h>
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TNonblockingServer.h>
#include <thrift/server/TSimpleServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TNonblockingServerSocket.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "Bench.h"

namespace rpcrdma::bench {
namespace {

// Tells when a server is serving (its socket listens).
class Ready : public apache::thrift::server::TServerEventHandler {
 public:
  void preServe() override {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return ready_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

using apache::thrift::TConfiguration;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::transport::TBufferedTransport;
using apache::thrift::transport::TBufferedTransportFactory;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransport;

class Handler : public thrift::BenchIf {
 public:
  void ping() override {}
  void echo(std::string& result, const std::string& data) override {
    result = data;
  }
};

// Thrift 0.17's framed transport never resets the size it has read on a
// connection, which dies past TConfiguration's message limit (thrift.md,
// fixed upstream in 0.23): clients reconnect before that.
constexpr uint64_t kReconnectAfter = 64ull << 20;

// Frames of 16 MiB and more: the default frame limit (16384000) is below
// a 16 MiB echo.
std::shared_ptr<TConfiguration> LargeMessages() {
  return std::make_shared<TConfiguration>(256 << 20, 64 << 20);
}

class LargeFramedTransportFactory
    : public apache::thrift::transport::TTransportFactory {
 public:
  std::shared_ptr<TTransport> getTransport(
      std::shared_ptr<TTransport> transport) override {
    return std::make_shared<TFramedTransport>(std::move(transport),
                                              LargeMessages());
  }
};

std::shared_ptr<TTransport> Wrap(std::shared_ptr<TTransport> socket,
                                 ThriftFraming framing) {
  if (framing == ThriftFraming::kFramed) {
    return std::make_shared<TFramedTransport>(std::move(socket),
                                              LargeMessages());
  }
  return std::make_shared<TBufferedTransport>(std::move(socket));
}

}  // namespace

std::thread ServeInBackground(
    const std::shared_ptr<apache::thrift::server::TServer>& server) {
  auto ready = std::make_shared<Ready>();
  server->setServerEventHandler(ready);
  std::thread thread([server] { server->serve(); });
  ready->Wait();
  return thread;
}

std::unique_ptr<ThriftServer> ThriftServer::Start(Kind kind,
                                                  ThriftFraming framing,
                                                  int workers) {
  std::unique_ptr<ThriftServer> s(new ThriftServer());
  auto processor =
      std::make_shared<thrift::BenchProcessor>(std::make_shared<Handler>());
  auto protocol = std::make_shared<TBinaryProtocolFactory>();
  if (kind == Kind::kSimple) {
    auto socket = std::make_shared<apache::thrift::transport::TServerSocket>(
        "127.0.0.1", 0);
    std::shared_ptr<apache::thrift::transport::TTransportFactory> transports;
    if (framing == ThriftFraming::kFramed) {
      transports = std::make_shared<LargeFramedTransportFactory>();
    } else {
      transports = std::make_shared<TBufferedTransportFactory>();
    }
    s->server_ = std::make_shared<apache::thrift::server::TSimpleServer>(
        processor, socket, transports, protocol);
    s->thread_ = ServeInBackground(s->server_);
    s->port_ = socket->getPort();
  } else {
    auto socket =
        std::make_shared<apache::thrift::transport::TNonblockingServerSocket>(
            "127.0.0.1", 0);
    auto threads =
        apache::thrift::concurrency::ThreadManager::newSimpleThreadManager(
            static_cast<size_t>(workers));
    threads->threadFactory(
        std::make_shared<apache::thrift::concurrency::ThreadFactory>());
    threads->start();
    auto server = std::make_shared<apache::thrift::server::TNonblockingServer>(
        processor, protocol, socket, threads);
    s->server_ = server;
    s->thread_ = ServeInBackground(s->server_);
    s->port_ = server->getListenPort();
  }
  return s;
}

ThriftServer::~ThriftServer() {
  server_->stop();
  thread_.join();
}

struct ThriftClient::State {
  std::shared_ptr<TTransport> transport;
  std::unique_ptr<thrift::BenchClient> client;
};

ThriftClient::ThriftClient(int port, ThriftFraming framing)
    : port_(port), framing_(framing) {
  Reconnect();
}

ThriftClient::~ThriftClient() {
  if (state_ != nullptr) state_->transport->close();
}

void ThriftClient::Reconnect() {
  if (state_ != nullptr) state_->transport->close();
  state_ = std::make_unique<State>();
  auto socket = std::make_shared<TSocket>("127.0.0.1", port_);
  socket->setNoDelay(true);
  state_->transport = Wrap(socket, framing_);
  state_->client = std::make_unique<thrift::BenchClient>(
      std::make_shared<TBinaryProtocol>(state_->transport));
  state_->transport->open();
  bytes_ = 0;
}

void ThriftClient::Ping() { state_->client->ping(); }

void ThriftClient::Echo(std::string& result, const std::string& data) {
  if (bytes_ + 2 * data.size() > kReconnectAfter) Reconnect();
  bytes_ += 2 * data.size();
  state_->client->echo(result, data);
}

struct ThriftConcurrentClient::State {
  std::shared_ptr<TTransport> transport;
  std::unique_ptr<thrift::BenchConcurrentClient> client;
};

ThriftConcurrentClient::ThriftConcurrentClient(int port)
    : state_(std::make_unique<State>()) {
  auto socket = std::make_shared<TSocket>("127.0.0.1", port);
  socket->setNoDelay(true);
  state_->transport = std::make_shared<TFramedTransport>(socket);
  auto sync =
      std::make_shared<apache::thrift::async::TConcurrentClientSyncInfo>();
  state_->client = std::make_unique<thrift::BenchConcurrentClient>(
      std::make_shared<TBinaryProtocol>(state_->transport), sync);
  state_->transport->open();
}

ThriftConcurrentClient::~ThriftConcurrentClient() {
  state_->transport->close();
}

void ThriftConcurrentClient::Ping() { state_->client->ping(); }

}  // namespace rpcrdma::bench
