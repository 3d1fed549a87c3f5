// The blob store's server (examples/protobuf/README.md): the BlobStore
// service of blob_store.proto over an rpcrdma::Server, its blobs in memory.
//
//   blob_store_server --listen URI [--max-store-bytes N]
//                     [--max-value-bytes N]
//
// prints "listening on URI" (a port of 0 resolved) and serves until
// SIGTERM or SIGINT, then ends every watch, stops and prints "stopped".
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "blob_map.h"
#include "blob_store.rpcrdma.pb.h"
#include "rpcrdma/config.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma/server.h"

namespace rpcrdma::examples::blobstore {
namespace {

using ::rpcrdma::protobuf::Completion;
using ::rpcrdma::protobuf::ServerContext;
using ::rpcrdma::protobuf::ServerWriter;
using ::rpcrdma::protobuf::Status;

// How often an idle watch looks whether its client has gone.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(100);
// The largest limits.max_call_size the transport takes (config.proto).
constexpr uint64_t kMostCallSize = 268435456;
// How long a stopping server waits for its watches' ends to be sent.
constexpr absl::Duration kWatchEndWait = absl::Seconds(5);

class BlobStoreService final : public rdma::BlobStore::Service {
 public:
  explicit BlobStoreService(BlobMap* blobs) : blobs_(blobs) {}

  void Put(ServerContext*, const PutRequest* request, PutReply* reply,
           Completion done) override {
    // The request is the adapter's until `done`: the value is copied out.
    // Above the bulk threshold it arrived by RDMA Read straight into the
    // request's own string.
    absl::StatusOr<uint64_t> revision =
        blobs_->Put(request->key(), request->value());
    if (revision.ok()) reply->set_revision(*revision);
    done.Finish(revision.status());
  }

  void Get(ServerContext*, const GetRequest* request, GetReply* reply,
           Completion done) override {
    uint64_t revision = 0;
    Status status =
        blobs_->Get(request->key(), reply->mutable_value(), &revision);
    reply->set_revision(revision);
    // A large value goes back as an RDMA Write into the client's reply
    // chunk, from the reply's own string.
    done.Finish(std::move(status));
  }

  void Delete(ServerContext*, const DeleteRequest* request, DeleteReply* reply,
              Completion done) override {
    absl::StatusOr<uint64_t> revision = blobs_->Delete(request->key());
    if (revision.ok()) reply->set_revision(*revision);
    done.Finish(revision.status());
  }

  void List(ServerContext*, const ListRequest* request, ListReply* reply,
            Completion done) override {
    done.Finish(blobs_->List(request->prefix(), request->max_entries(), reply));
  }

  // Runs on a thread of its own for the stream; blocks in Write when the
  // client reads slowly (the adapter's flow control), and the watch's
  // backlog bounds what piles up meanwhile.
  Status Watch(ServerContext* context, const WatchRequest* request,
               ServerWriter<Change>* writer) override {
    uint64_t revision = 0;
    absl::StatusOr<std::unique_ptr<BlobMap::Watch>> watch =
        blobs_->AddWatch(request->prefix(), &revision);
    if (!watch.ok()) return watch.status();
    Change watching;
    watching.set_kind(Change::WATCHING);
    watching.set_key(request->prefix());
    watching.set_revision(revision);
    if (!writer->Write(std::move(watching))) return Cancelled(context);
    while (true) {
      absl::StatusOr<std::optional<Change>> next =
          (*watch)->changes().Next(kWatchPoll);
      if (!next.ok()) return next.status();
      if (!next->has_value()) {
        if (context->IsCancelled()) return Cancelled(context);
        continue;
      }
      if (!writer->Write(std::move(**next))) return Cancelled(context);
    }
  }

 private:
  // The client went away, cancelled, or the deadline passed: the adapter
  // has ended the stream already, so what this says goes nowhere.
  static Status Cancelled(ServerContext*) {
    return absl::CancelledError("the watcher went away");
  }

  BlobMap* blobs_;
};

struct Flags {
  std::string listen;
  BlobMapLimits limits;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const absl::string_view name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--listen") {
      flags->listen = value;
    } else if (name == "--max-store-bytes") {
      if (!absl::SimpleAtoi(value, &flags->limits.max_store_bytes))
        return false;
    } else if (name == "--max-value-bytes") {
      if (!absl::SimpleAtoi(value, &flags->limits.max_value_bytes))
        return false;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !flags->listen.empty();
}

int Serve(const Flags& flags) {
  // SIGTERM and SIGINT are blocked in every thread (those the server
  // starts inherit the mask) and taken by sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  BlobMap blobs(flags.limits);
  BlobStoreService service(&blobs);
  protobuf::ServiceSetOptions service_options;
  // Each watch holds a thread and up to a backlog of changes.
  service_options.max_streams = 64;
  protobuf::ServiceSet services(service_options);
  if (Status s = services.Register(&service); !s.ok()) {
    std::fprintf(stderr, "blob_store_server: %s\n", s.ToString().c_str());
    return 1;
  }

  config::TransportConfig config;
  // The largest Put: the largest value, its key and the headers. The
  // transport refuses a larger call before reading any of it.
  const uint64_t max_call_size =
      flags.limits.max_value_bytes + flags.limits.max_key_bytes + 4096;
  if (max_call_size > kMostCallSize) {
    std::fprintf(stderr, "blob_store_server: --max-value-bytes: at most %llu\n",
                 static_cast<unsigned long long>(
                     kMostCallSize - flags.limits.max_key_bytes - 4096));
    return 2;
  }
  config.mutable_limits()->set_max_call_size(
      static_cast<uint32_t>(max_call_size));
  // Handlers copy values of up to max_value_bytes: off the loop threads.
  config.mutable_execution()->set_handler_threads(2);
  ServerOptions options;
  options.on_connection = services.ConnectionObserver();
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(
      flags.listen, config, services.Handler(), std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "blob_store_server: %s\n",
                 server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on %s\n", (*server)->uri().c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  // Watches end first, and their ends reach the clients (UNAVAILABLE "the
  // blob store is stopping") before the server disconnects everyone. A
  // stream counts as open until its end was sent; a client that asks for
  // nothing more is not waited for beyond kWatchEndWait.
  blobs.Close();
  const absl::Time give_up = absl::Now() + kWatchEndWait;
  while (services.stream_counters().open > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (absl::Status s = (*server)->Shutdown(); !s.ok()) {
    std::fprintf(stderr, "blob_store_server: shutdown: %s\n",
                 s.ToString().c_str());
    return 1;
  }
  std::printf("stopped\n");
  return 0;
}

}  // namespace
}  // namespace rpcrdma::examples::blobstore

int main(int argc, char** argv) {
  rpcrdma::examples::blobstore::Flags flags;
  if (!rpcrdma::examples::blobstore::ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: %s --listen URI [--max-store-bytes N] "
                 "[--max-value-bytes N]\n",
                 argv[0]);
    return 2;
  }
  return rpcrdma::examples::blobstore::Serve(flags);
}
