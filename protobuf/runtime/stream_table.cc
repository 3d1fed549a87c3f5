#include "protobuf/runtime/stream_table.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace rpcrdma::protobuf::runtime {

StreamTable::StreamTable(StreamTableOptions options)
    : options_(options),
      // A random first id, so that a client of a server that restarted
      // does not meet its old ids on the new server's streams.
      next_id_((uint64_t{std::random_device()()} << 32) |
               std::random_device()()) {}

StreamTable::~StreamTable() { Shutdown(); }

absl::StatusOr<std::shared_ptr<ServerStream>> StreamTable::Open(
    ConnectionId connection, const google::protobuf::MethodDescriptor& method,
    std::optional<Clock::time_point> deadline) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) {
    ++refused_;
    return absl::UnavailableError("the server is stopping");
  }
  if (tracking_ && !live_.contains(connection)) {
    ++refused_;
    return absl::UnavailableError("the stream's connection is gone");
  }
  if (streams_.size() >= options_.max_total) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat(streams_.size(),
                     " streams are open on this server, the most it may have "
                     "(ServiceSetOptions::max_streams); try again later"));
  }
  size_t& open = per_connection_[connection];
  if (open >= options_.max_per_connection) {
    ++refused_;
    return absl::ResourceExhaustedError(absl::StrCat(
        open,
        " streams are open on this connection, the most it may have "
        "(ServiceSetOptions::max_streams_per_connection); read one "
        "to its end or cancel it first"));
  }
  const uint64_t id = next_id_++;
  auto stream = std::make_shared<ServerStream>(
      id, method, options_.buffer, options_.bulk_threshold, deadline,
      [this, id] { Remove(id); });
  ++open;
  ++opened_;
  streams_.emplace(id, Entry{connection, stream});
  if (deadline.has_value()) {
    deadlines_.emplace(*deadline, id);
    if (!watcher_.joinable())
      watcher_ = std::thread([this] { WatchDeadlines(); });
  }
  return stream;
}

std::shared_ptr<ServerStream> StreamTable::Find(ConnectionId connection,
                                                uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.connection != connection) {
    return nullptr;
  }
  return it->second.stream;
}

void StreamTable::ConnectionAccepted(ConnectionId connection) {
  absl::MutexLock lock(&mu_);
  tracking_ = true;
  live_.insert(connection);
}

void StreamTable::AbortConnection(ConnectionId connection,
                                  const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    live_.erase(connection);
  }
  // An Open after the erase is refused; one before it is aborted here.
  AbortAll(status, connection);
}

void StreamTable::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  AbortAll(absl::UnavailableError("the server is stopping"), std::nullopt);
  if (watcher_.joinable()) watcher_.join();
}

StreamTableCounts StreamTable::counts() {
  std::vector<std::shared_ptr<ServerStream>> live;
  StreamTableCounts c;
  {
    absl::MutexLock lock(&mu_);
    c.opened = opened_;
    c.refused = refused_;
    c.open = streams_.size();
    c.peak_buffered = peak_buffered_;
    c.peak_received = peak_received_;
    for (auto& [id, entry] : streams_) live.push_back(entry.stream);
  }
  for (const auto& stream : live) {
    c.buffered += stream->buffered();
    c.peak_buffered = std::max(c.peak_buffered, stream->peak_buffered());
    if (StreamInbox* inbox = stream->inbox()) {
      c.received += inbox->held();
      c.held_sends += inbox->waiting_sends();
      c.peak_received = std::max(c.peak_received, inbox->peak_held());
    }
  }
  return c;
}

void StreamTable::Remove(uint64_t id) {
  std::shared_ptr<ServerStream> gone;  // released after the lock
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  gone = std::move(it->second.stream);
  auto count = per_connection_.find(it->second.connection);
  if (count != per_connection_.end() && --count->second == 0) {
    per_connection_.erase(count);
  }
  streams_.erase(it);
  for (auto d = deadlines_.begin(); d != deadlines_.end(); ++d) {
    if (d->second == id) {
      deadlines_.erase(d);
      break;
    }
  }
  peak_buffered_ = std::max(peak_buffered_, gone->peak_buffered());
  if (StreamInbox* inbox = gone->inbox()) {
    peak_received_ = std::max(peak_received_, inbox->peak_held());
  }
}

void StreamTable::AbortAll(const absl::Status& status,
                           std::optional<ConnectionId> connection) {
  std::vector<std::shared_ptr<ServerStream>> streams;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, entry] : streams_) {
      if (!connection.has_value() || entry.connection == *connection) {
        streams.push_back(entry.stream);
      }
    }
  }
  for (const auto& stream : streams) stream->Abort(status);
}

void StreamTable::WatchDeadlines() {
  mu_.Lock();
  while (!shutdown_) {
    if (deadlines_.empty()) {
      auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return shutdown_ || !deadlines_.empty();
      };
      mu_.Await(absl::Condition(&wake));
      continue;
    }
    const Clock::time_point first = deadlines_.begin()->first;
    const Clock::time_point now = Clock::now();
    if (first > now) {
      auto wake = [this, first]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return shutdown_ || deadlines_.empty() ||
               deadlines_.begin()->first < first;
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake),
                           absl::FromChrono(first - now));
      continue;
    }
    std::vector<std::shared_ptr<ServerStream>> expired;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      auto it = streams_.find(deadlines_.begin()->second);
      if (it != streams_.end()) expired.push_back(it->second.stream);
      deadlines_.erase(deadlines_.begin());
    }
    mu_.Unlock();
    // The server ends the stream itself, so that a client that never
    // reads still frees it (protobuf/README.md, "Streams").
    for (const auto& stream : expired) {
      stream->Abort(absl::DeadlineExceededError(
          "the stream's deadline passed before its end"));
    }
    expired.clear();
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace rpcrdma::protobuf::runtime
