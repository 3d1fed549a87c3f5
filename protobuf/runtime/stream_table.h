// The open server streams of a ServiceSet (protobuf/README.md, "Streams"):
// each found by its id and the connection it was opened on, at most
// max_per_connection of them per connection, each ended at its deadline
// (by one watcher thread) and when its connection goes.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_STREAM_TABLE_H_
#define RPCRDMA_PROTOBUF_RUNTIME_STREAM_TABLE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "protobuf/runtime/server_stream.h"
#include "rpcrdma/ids.h"

namespace rpcrdma::protobuf::runtime {

struct StreamTableOptions {
  size_t max_per_connection = 16;
  size_t max_total = 256;  // over every connection
  size_t buffer = 4;
  size_t bulk_threshold = 4096;
};

struct StreamTableCounts {
  uint64_t opened = 0;
  uint64_t refused = 0;
  size_t open = 0;
  size_t buffered = 0;       // messages held now, all streams
  size_t peak_buffered = 0;  // the most one stream has held
  size_t received = 0;       // client messages held now, not read
  size_t peak_received = 0;  // the most one stream has held of those
  size_t held_sends = 0;     // SEND calls whose answer is held now
};

class StreamTable {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StreamTable(StreamTableOptions options);
  StreamTable(const StreamTable&) = delete;
  StreamTable& operator=(const StreamTable&) = delete;
  ~StreamTable();

  // A new stream of `method` on `connection`, ended with DEADLINE_EXCEEDED
  // at `deadline`. RESOURCE_EXHAUSTED when the connection has
  // max_per_connection streams open, or all connections together
  // max_total (one that ended counts until its handler has returned: its
  // thread is still there); UNAVAILABLE after Shutdown.
  absl::StatusOr<std::shared_ptr<ServerStream>> Open(
      ConnectionId connection, const google::protobuf::MethodDescriptor& method,
      std::optional<Clock::time_point> deadline);
  // Null unless `id` is a stream open on `connection`.
  std::shared_ptr<ServerStream> Find(ConnectionId connection, uint64_t id);
  // The connection observer's events. Once one connection was reported,
  // streams open only on connections reported and not yet gone: an open
  // served while its connection's loss is reported is refused rather
  // than left behind after AbortConnection. Aborts every stream of a
  // connection that is gone.
  void ConnectionAccepted(ConnectionId connection);
  void AbortConnection(ConnectionId connection, const absl::Status& status);
  // Aborts every stream with UNAVAILABLE and refuses new ones.
  void Shutdown();
  StreamTableCounts counts();

 private:
  struct Entry {
    ConnectionId connection;
    std::shared_ptr<ServerStream> stream;
  };
  void Remove(uint64_t id);
  void WatchDeadlines();
  void AbortAll(const absl::Status& status,
                std::optional<ConnectionId> connection);

  const StreamTableOptions options_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Entry> streams_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ConnectionId, size_t> per_connection_
      ABSL_GUARDED_BY(mu_);
  std::multimap<Clock::time_point, uint64_t> deadlines_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_);
  uint64_t opened_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  size_t peak_buffered_ ABSL_GUARDED_BY(mu_) = 0;
  size_t peak_received_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  bool tracking_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<ConnectionId> live_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;  // started with the first deadline
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_STREAM_TABLE_H_
