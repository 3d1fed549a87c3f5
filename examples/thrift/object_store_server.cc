// The object store's server (docs/thrift.md): an ordinary Thrift
// TThreadedServer whose server transport is a TRdmaServerSocket. Watchers
// are told of changes through callbacks to the client's ObjectWatcher on
// the connection the watch came from (RFC 8167 backward calls).
//
//   object_store_server URI
// prints "listening on <URI>" (a port of 0 resolved) and serves until
// SIGTERM or SIGINT.
#include <signal.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TTransportException.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ObjectStore.h"
#include "ObjectWatcher.h"
#include "rpcrdma/thrift/rdma_server.h"
#include "rpcrdma/thrift/rdma_server_socket.h"

namespace {

using apache::thrift::protocol::TBinaryProtocol;
using rpcrdma::examples::store::NoSuchObject;
using rpcrdma::examples::store::ObjectInfo;
using rpcrdma::examples::store::ObjectStoreIf;
using rpcrdma::examples::store::ObjectStoreProcessor;
using rpcrdma::examples::store::ObjectWatcherClient;
using rpcrdma::thrift::TRdmaConnection;

class Store : public ObjectStoreIf {
 public:
  void put(ObjectInfo& info, const std::string& name,
           const std::string& data) override {
    std::vector<std::shared_ptr<TRdmaConnection>> watchers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Object& o = objects_[name];
      o.data = data;  // Thrift's API hands the blob over as a std::string
      ++o.version;
      info.name = name;
      info.size = static_cast<int64_t>(data.size());
      info.version = o.version;
      for (auto& [prefix, connections] : watchers_) {
        if (name.rfind(prefix, 0) != 0) continue;
        watchers.insert(watchers.end(), connections.begin(), connections.end());
      }
    }
    // A backward call on each watcher's own connection, answered by the
    // client's ObjectWatcher before put() returns.
    for (const std::shared_ptr<TRdmaConnection>& connection : watchers) {
      if (!connection->isOpen()) continue;
      try {
        ObjectWatcherClient watcher(
            std::make_shared<TBinaryProtocol>(connection->callbackTransport()));
        watcher.changed(info);
      } catch (const apache::thrift::TException& e) {
        std::fprintf(stderr, "object_store_server: telling %s: %s\n",
                     connection->peer().c_str(), e.what());
      }
    }
  }

  void get(std::string& data, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(name);
    if (it == objects_.end()) {
      NoSuchObject missing;
      missing.name = name;
      throw missing;
    }
    data = it->second.data;
  }

  void listObjects(std::vector<ObjectInfo>& out,
                   const std::string& prefix) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, o] : objects_) {
      if (name.rfind(prefix, 0) != 0) continue;
      ObjectInfo info;
      info.name = name;
      info.size = static_cast<int64_t>(o.data.size());
      info.version = o.version;
      out.push_back(info);
    }
  }

  void watch(const std::string& prefix) override {
    // The connection of the call this thread serves.
    std::shared_ptr<TRdmaConnection> connection = TRdmaConnection::current();
    if (connection == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    watchers_[prefix].push_back(std::move(connection));
  }

 private:
  struct Object {
    std::string data;
    int64_t version = 0;
  };
  std::mutex mu_;
  std::map<std::string, Object> objects_;
  std::map<std::string, std::vector<std::shared_ptr<TRdmaConnection>>>
      watchers_;
};

class Announce : public apache::thrift::server::TServerEventHandler {
 public:
  explicit Announce(std::shared_ptr<rpcrdma::thrift::TRdmaServerSocket> socket)
      : socket_(std::move(socket)) {}
  void preServe() override {
    std::printf("listening on %s\n", socket_->uri().c_str());
    std::fflush(stdout);
  }

 private:
  std::shared_ptr<rpcrdma::thrift::TRdmaServerSocket> socket_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s URI\n", argv[0]);
    return 2;
  }
  // SIGTERM and SIGINT are taken by a thread of their own, which stops the
  // server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // The one line that differs from a TServerSocket server.
  auto socket = std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(argv[1]);
  apache::thrift::server::TThreadedServer server(
      std::make_shared<ObjectStoreProcessor>(std::make_shared<Store>()), socket,
      std::make_shared<apache::thrift::transport::TTransportFactory>(),
      std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>());
  server.setServerEventHandler(std::make_shared<Announce>(socket));
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
  });
  try {
    server.serve();
  } catch (const apache::thrift::TException& e) {
    std::fprintf(stderr, "object_store_server: %s\n", e.what());
    kill(getpid(), SIGTERM);
    stopper.join();
    return 1;
  }
  stopper.join();
  return 0;
}
