// The blob store's state, apart from the RPC layer: named values held in
// memory within fixed bounds, a revision that counts every change, and
// the watches that are told of each change in the order it was made.
#ifndef RPCRDMA_EXAMPLES_PROTOBUF_BLOB_MAP_H_
#define RPCRDMA_EXAMPLES_PROTOBUF_BLOB_MAP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "blob_store.pb.h"

namespace rpcrdma::examples::blobstore {

struct BlobMapLimits {
  // Keys, values and kEntryOverhead per entry together.
  uint64_t max_store_bytes = uint64_t{256} << 20;
  uint64_t max_value_bytes = uint64_t{16} << 20;
  size_t max_key_bytes = 1024;
  // Changes a watch holds that its stream has not sent yet; a watcher that
  // falls further behind is ended rather than let the server's memory grow.
  size_t watch_backlog = 256;
};

// What an entry costs beyond its key and value (the map's node, the
// string headers), so that many empty values are bounded too.
inline constexpr uint64_t kEntryOverhead = 64;
// List answers at most this many entries, whatever it is asked.
inline constexpr uint32_t kMaxListEntries = 1000;

// The changes one Watch has still to send.
class ChangeQueue {
 public:
  explicit ChangeQueue(size_t backlog) : backlog_(backlog) {}

  // The next change, or nullopt when none came within `timeout`; an error
  // when the watch has ended (UNAVAILABLE: the store closed;
  // RESOURCE_EXHAUSTED: the watcher fell too far behind).
  absl::StatusOr<std::optional<Change>> Next(absl::Duration timeout);

 private:
  friend class BlobMap;
  void Push(const Change& change);
  void End(absl::Status why);

  const size_t backlog_;
  absl::Mutex mu_;
  std::deque<Change> changes_ ABSL_GUARDED_BY(mu_);
  absl::Status ended_ ABSL_GUARDED_BY(mu_);
};

class BlobMap {
 public:
  explicit BlobMap(BlobMapLimits limits) : limits_(limits) {}

  // The revision after the change. INVALID_ARGUMENT for a bad key,
  // RESOURCE_EXHAUSTED past the value's or the store's bound,
  // UNAVAILABLE once closed.
  absl::StatusOr<uint64_t> Put(absl::string_view key, std::string value);
  // NOT_FOUND when there is no such key.
  absl::Status Get(absl::string_view key, std::string* value,
                   uint64_t* revision) const;
  absl::StatusOr<uint64_t> Delete(absl::string_view key);
  absl::Status List(absl::string_view prefix, uint32_t max_entries,
                    ListReply* reply) const;

  // A watch of the keys starting with `prefix`, told of every change from
  // now on until it is destroyed; `*revision` is the store's revision at
  // the start.
  class Watch {
   public:
    ~Watch();
    ChangeQueue& changes() { return *queue_; }

   private:
    friend class BlobMap;
    Watch(BlobMap* map, std::shared_ptr<ChangeQueue> queue)
        : map_(map), queue_(std::move(queue)) {}
    BlobMap* map_;
    std::shared_ptr<ChangeQueue> queue_;
  };
  absl::StatusOr<std::unique_ptr<Watch>> AddWatch(absl::string_view prefix,
                                                  uint64_t* revision);

  // Ends every watch (UNAVAILABLE) and refuses further changes: the
  // server is stopping.
  void Close();

  uint64_t stored_bytes() const;

 private:
  struct Entry {
    std::string value;
    uint64_t revision = 0;
  };
  struct WatchEntry {
    std::string prefix;
    std::shared_ptr<ChangeQueue> queue;
  };
  absl::Status CheckKey(absl::string_view key) const;
  void Notify(const Change& change) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveWatch(const ChangeQueue* queue);

  const BlobMapLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<WatchEntry> watches_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rpcrdma::examples::blobstore

#endif  // RPCRDMA_EXAMPLES_PROTOBUF_BLOB_MAP_H_
