// The object store's client (docs/thrift.md): the generated
// ObjectStoreClient on a TRdmaSocket, serving its ObjectWatcher on the same
// connection for the server's change notifications (RFC 8167).
//
//   object_store_client URI
// watches "photos/", stores an 8 MiB blob and reads it back, and checks
// every answer and the notification; exits 0 when all went well.
#include <thrift/protocol/TBinaryProtocol.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ObjectStore.h"
#include "ObjectWatcher.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace {

using rpcrdma::examples::store::NoSuchObject;
using rpcrdma::examples::store::ObjectInfo;
using rpcrdma::examples::store::ObjectStoreClient;
using rpcrdma::examples::store::ObjectWatcherIf;
using rpcrdma::examples::store::ObjectWatcherProcessor;

// Called by the server, on a thread of the TRdmaSocket.
class Watcher : public ObjectWatcherIf {
 public:
  void changed(const ObjectInfo& info) override {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.push_back(info);
    cv_.notify_all();
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [&] { return changes_.size() >= n; });
  }
  ObjectInfo last() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_.back();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ObjectInfo> changes_;
};

bool Check(bool ok, const char* what) {
  std::printf("%-44s %s\n", what, ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s URI\n", argv[0]);
    return 2;
  }
  auto watcher = std::make_shared<Watcher>();
  rpcrdma::thrift::TRdmaSocketOptions options;
  options.callback_processor =
      std::make_shared<ObjectWatcherProcessor>(watcher);
  // The one line that differs from a TSocket client (with the watcher: a
  // TSocket client could not be called back at all).
  auto socket = std::make_shared<rpcrdma::thrift::TRdmaSocket>(
      argv[1], rpcrdma::config::TransportConfig(), options);
  ObjectStoreClient store(
      std::make_shared<apache::thrift::protocol::TBinaryProtocol>(socket));
  bool ok = true;
  try {
    socket->open();
    store.watch("photos/");
    std::string blob(8 << 20, '\0');
    for (size_t i = 0; i < blob.size(); ++i) {
      blob[i] = static_cast<char>(i * 131 + (i >> 12));
    }
    ObjectInfo info;
    store.put(info, "photos/cat.jpg", blob);
    ok &= Check(
        info.size == static_cast<int64_t>(blob.size()) && info.version == 1,
        "put photos/cat.jpg (8 MiB)");
    ok &= Check(watcher->WaitFor(1) && watcher->last().name == "photos/cat.jpg",
                "told of the change (callback)");
    std::string back;
    store.get(back, "photos/cat.jpg");
    ok &= Check(back == blob, "get photos/cat.jpg");
    try {
      store.get(back, "photos/dog.jpg");
      ok &= Check(false, "get photos/dog.jpg -> NoSuchObject");
    } catch (const NoSuchObject& missing) {
      ok &= Check(missing.name == "photos/dog.jpg",
                  "get photos/dog.jpg -> NoSuchObject");
    }
    store.put(info, "notes/todo.txt", "buy milk");
    std::vector<ObjectInfo> photos;
    store.listObjects(photos, "photos/");
    ok &= Check(photos.size() == 1 && photos[0].version == 1, "list photos/");
    const rpcrdma::Counters c = socket->counters();
    std::printf(
        "calls %lu, with read chunks %lu, write chunks %lu, "
        "callbacks %lu\n",
        static_cast<unsigned long>(c.calls),
        static_cast<unsigned long>(c.read_chunk_calls),
        static_cast<unsigned long>(c.write_chunks),
        static_cast<unsigned long>(c.backward_calls));
    ok &= Check(c.read_chunk_calls >= 1 && c.backward_calls == 1,
                "blob by RDMA Read, one callback");
    socket->close();
  } catch (const apache::thrift::TException& e) {
    std::printf("object_store_client: %s\n", e.what());
    ok = false;
  }
  std::printf("object store example %s\n", ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}
