#include "blob_map.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::examples::blobstore {

absl::StatusOr<std::optional<Change>> ChangeQueue::Next(
    absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !changes_.empty() || !ended_.ok();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  // What was queued before the end is still sent; a watcher that fell
  // behind is ended at once, as its queue is no longer every change.
  if (!changes_.empty() && !absl::IsResourceExhausted(ended_)) {
    Change change = std::move(changes_.front());
    changes_.pop_front();
    return change;
  }
  if (!ended_.ok()) return ended_;
  return std::nullopt;
}

void ChangeQueue::Push(const Change& change) {
  absl::MutexLock lock(&mu_);
  if (!ended_.ok()) return;
  if (changes_.size() >= backlog_) {
    changes_.clear();
    ended_ = absl::ResourceExhaustedError(absl::StrCat(
        "the watcher fell more than ", backlog_, " changes behind"));
    return;
  }
  changes_.push_back(change);
}

void ChangeQueue::End(absl::Status why) {
  absl::MutexLock lock(&mu_);
  if (ended_.ok()) ended_ = std::move(why);
}

BlobMap::Watch::~Watch() { map_->RemoveWatch(queue_.get()); }

absl::Status BlobMap::CheckKey(absl::string_view key) const {
  if (key.empty()) return absl::InvalidArgumentError("the key is empty");
  if (key.size() > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a key of ", key.size(), " octets is longer than the ",
                     limits_.max_key_bytes, " this store takes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> BlobMap::Put(absl::string_view key,
                                      std::string value) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() > limits_.max_value_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a value of ", value.size(), " octets is larger than the ",
                     limits_.max_value_bytes, " this store takes"));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("the blob store is stopping");
  auto it = entries_.find(key);
  const uint64_t freed =
      it == entries_.end()
          ? 0
          : key.size() + it->second.value.size() + kEntryOverhead;
  const uint64_t needed = key.size() + value.size() + kEntryOverhead;
  if (stored_bytes_ - freed + needed > limits_.max_store_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "storing ", value.size(), " octets under \"", key,
        "\" would take the store past its bound of ", limits_.max_store_bytes,
        " octets (", stored_bytes_, " held)"));
  }
  if (it == entries_.end()) {
    it = entries_.emplace(std::string(key), Entry{}).first;
  }
  stored_bytes_ = stored_bytes_ - freed + needed;
  it->second.value = std::move(value);
  it->second.revision = ++revision_;
  Change change;
  change.set_kind(Change::PUT);
  change.set_key(std::string(key));
  change.set_size(it->second.value.size());
  change.set_revision(revision_);
  Notify(change);
  return revision_;
}

absl::Status BlobMap::Get(absl::string_view key, std::string* value,
                          uint64_t* revision) const {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no blob \"", key, "\""));
  }
  *value = it->second.value;
  *revision = it->second.revision;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> BlobMap::Delete(absl::string_view key) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("the blob store is stopping");
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no blob \"", key, "\""));
  }
  stored_bytes_ -= key.size() + it->second.value.size() + kEntryOverhead;
  entries_.erase(it);
  Change change;
  change.set_kind(Change::DELETE);
  change.set_key(std::string(key));
  change.set_revision(++revision_);
  Notify(change);
  return revision_;
}

absl::Status BlobMap::List(absl::string_view prefix, uint32_t max_entries,
                           ListReply* reply) const {
  if (prefix.size() > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a prefix of ", prefix.size(), " octets is longer than any key"));
  }
  const uint32_t most = max_entries == 0
                            ? kMaxListEntries
                            : std::min(max_entries, kMaxListEntries);
  absl::MutexLock lock(&mu_);
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && absl::StartsWith(it->first, prefix); ++it) {
    if (static_cast<uint32_t>(reply->entries_size()) == most) {
      reply->set_truncated(true);
      break;
    }
    ListReply::Entry* entry = reply->add_entries();
    entry->set_key(it->first);
    entry->set_size(it->second.value.size());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BlobMap::Watch>> BlobMap::AddWatch(
    absl::string_view prefix, uint64_t* revision) {
  if (prefix.size() > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a prefix of ", prefix.size(), " octets is longer than any key"));
  }
  auto queue = std::make_shared<ChangeQueue>(limits_.watch_backlog);
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("the blob store is stopping");
  watches_.push_back(WatchEntry{std::string(prefix), queue});
  *revision = revision_;
  return std::unique_ptr<Watch>(new Watch(this, std::move(queue)));
}

void BlobMap::RemoveWatch(const ChangeQueue* queue) {
  absl::MutexLock lock(&mu_);
  std::erase_if(watches_, [queue](const WatchEntry& watch) {
    return watch.queue.get() == queue;
  });
}

void BlobMap::Notify(const Change& change) {
  for (const WatchEntry& watch : watches_) {
    if (absl::StartsWith(change.key(), watch.prefix)) {
      watch.queue->Push(change);
    }
  }
}

void BlobMap::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  for (const WatchEntry& watch : watches_) {
    watch.queue->End(absl::UnavailableError("the blob store is stopping"));
  }
}

uint64_t BlobMap::stored_bytes() const {
  absl::MutexLock lock(&mu_);
  return stored_bytes_;
}

}  // namespace rpcrdma::examples::blobstore
