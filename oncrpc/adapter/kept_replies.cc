#include "oncrpc/adapter/kept_replies.h"

#include <utility>

namespace rpcrdma::oncrpc {

bool KeptReplies::Keep(const CallIdentity& call,
                       std::shared_ptr<const CachedReply> reply,
                       Clock::time_point now) {
  const size_t size = reply->bytes();
  if (size > bounds_.max_bytes || bounds_.max_entries == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  // A second ERR_CHUNK for the same call keeps the reply once.
  for (auto it = oldest_first_.begin(); it != oldest_first_.end(); ++it) {
    if (it->call == call) {
      Erase(it);
      break;
    }
  }
  while (!oldest_first_.empty() &&
         (oldest_first_.size() >= bounds_.max_entries ||
          bytes_ + size > bounds_.max_bytes)) {
    Erase(oldest_first_.begin());
  }
  oldest_first_.push_back(Entry{
      .call = call, .reply = std::move(reply), .bytes = size, .kept_at = now});
  bytes_ += size;
  count_.store(oldest_first_.size());
  return true;
}

std::shared_ptr<const CachedReply> KeptReplies::Take(const CallIdentity& call,
                                                     Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  for (auto it = oldest_first_.begin(); it != oldest_first_.end(); ++it) {
    if (it->call == call) {
      std::shared_ptr<const CachedReply> reply = std::move(it->reply);
      Erase(it);
      return reply;
    }
  }
  return nullptr;
}

void KeptReplies::Closed(uint64_t connection) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = oldest_first_.begin(); it != oldest_first_.end();) {
    if (it->call.connection == connection) {
      Erase(it++);
    } else {
      ++it;
    }
  }
}

void KeptReplies::Erase(std::list<Entry>::iterator entry) {
  bytes_ -= entry->bytes;
  oldest_first_.erase(entry);
  count_.store(oldest_first_.size());
}

void KeptReplies::Expire(Clock::time_point now) {
  while (!oldest_first_.empty() &&
         now - oldest_first_.front().kept_at > bounds_.max_age) {
    Erase(oldest_first_.begin());
  }
}

size_t KeptReplies::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return oldest_first_.size();
}

size_t KeptReplies::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace rpcrdma::oncrpc
