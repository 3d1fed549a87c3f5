#include "protobuf/runtime/server_stream.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "protobuf/runtime/bulk_fields.h"
#include "protobuf/runtime/server_call.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf::runtime {

using google::protobuf::Message;

ServerStream::ServerStream(
    uint64_t id, const google::protobuf::MethodDescriptor& method,
    size_t buffer, size_t bulk_threshold,
    std::optional<std::chrono::steady_clock::time_point> deadline,
    std::function<void()> on_done)
    : id_(id),
      method_(method),
      buffer_limit_(std::max<size_t>(buffer, 1)),
      bulk_threshold_(bulk_threshold),
      deadline_(deadline),
      on_done_(std::move(on_done)),
      inbox_(method.client_streaming()
                 ? std::make_unique<StreamInbox>(id, method, buffer)
                 : nullptr) {}

ServerStream::~ServerStream() = default;

bool ServerStream::Write(std::unique_ptr<Message> message) {
  AbortIfExpired();
  std::deque<Outgoing> out;
  {
    absl::MutexLock lock(&mu_);
    // The back-pressure: a client that does not ask holds the writer here,
    // and the stream never holds more than buffer_limit_ messages.
    auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return aborted_ || held_.size() < buffer_limit_;
    };
    mu_.Await(absl::Condition(&room));
    if (aborted_) return false;
    held_.push_back(std::move(message));
    peak_held_ = std::max(peak_held_, held_.size());
    out = TakeReadyLocked();
  }
  Send(std::move(out));
  return true;
}

void ServerStream::Finish(absl::Status status, Metadata trailing) {
  // A handler that returns once the deadline passed (it saw IsCancelled)
  // does not end the stream with its own status: the client has given up
  // at its deadline, and must read DEADLINE_EXCEEDED, not a status that
  // raced the watcher.
  AbortIfExpired();
  // No Read will come: SEND calls held, or still to come, get the end.
  if (inbox_ != nullptr) inbox_->Close(status);
  std::deque<Outgoing> out;
  {
    absl::MutexLock lock(&mu_);
    handler_done_ = true;
    if (!aborted_) {
      end_ = std::move(status);
      trailing_ = std::move(trailing);
      out = TakeReadyLocked();
    }
  }
  Send(std::move(out));
}

void ServerStream::Next(uint32_t xid, uint64_t seq, Responder responder) {
  Waiting to{xid, std::move(responder)};
  std::deque<Outgoing> out;
  {
    absl::MutexLock lock(&mu_);
    if (aborted_) {
      out.push_back({std::move(to), nullptr, *end_, {}});
    } else if (seq < sent_ || seq >= sent_ + kMaxStreamWindow ||
               waiting_.contains(seq)) {
      // A hostile or broken client: answered, so that its credit comes
      // back, but the stream goes on for the calls that are in order.
      out.push_back(
          {std::move(to),
           nullptr,
           absl::InvalidArgumentError(absl::StrCat(
               "NEXT for message ", seq, " of stream ", id_, ": messages ",
               sent_, " to ", sent_ + kMaxStreamWindow - 1,
               " may be asked for, each once")),
           {}});
    } else {
      waiting_.emplace(seq, std::move(to));
      out = TakeReadyLocked();
    }
  }
  Send(std::move(out));
}

void ServerStream::Abort(absl::Status status) {
  std::deque<Outgoing> out;
  {
    absl::MutexLock lock(&mu_);
    // Nothing to end once the end and every message before it are sent;
    // an end sent ahead of held messages still leaves them to drop.
    if (aborted_ || (end_sent_ && held_.empty())) return;
    aborted_ = true;
    cancelled_->store(true);
    held_.clear();
    end_ = status;
    trailing_.clear();
    end_sent_ = true;
    for (auto& [seq, to] : waiting_) {
      out.push_back({std::move(to), nullptr, status, {}});
    }
    waiting_.clear();
  }
  // After the flag: a handler whose Read fails sees IsCancelled(). (Once
  // the end was sent the handler has returned, and Finish closed it.)
  if (inbox_ != nullptr) inbox_->Close(status);
  Send(std::move(out));
}

size_t ServerStream::buffered() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

size_t ServerStream::peak_buffered() const {
  absl::MutexLock lock(&mu_);
  return peak_held_;
}

std::deque<ServerStream::Outgoing> ServerStream::TakeReadyLocked() {
  std::deque<Outgoing> out;
  while (!held_.empty()) {
    auto it = waiting_.find(sent_);
    if (it == waiting_.end()) break;
    out.push_back({std::move(it->second), std::move(held_.front()), {}, {}});
    waiting_.erase(it);
    held_.pop_front();
    ++sent_;
  }
  if (!end_.has_value()) return out;
  // Every call asking at or beyond the end gets it: the client's window
  // may reach past the last message.
  const uint64_t end_at = sent_ + held_.size();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->first < end_at) {
      ++it;
      continue;
    }
    if (it->first == end_at) end_sent_ = true;
    out.push_back({std::move(it->second), nullptr, *end_, trailing_});
    waiting_.erase(it++);
  }
  return out;
}

void ServerStream::Send(std::deque<Outgoing> out) {
  for (Outgoing& o : out) {
    if (o.message != nullptr) {
      SendMessage(o.to, *o.message);
    } else {
      SendEnd(o.to, o.end, o.trailing);
    }
  }
  MaybeDone();
}

void ServerStream::SendMessage(Waiting& to, Message& message) {
  std::vector<uint8_t> xdr = AcceptedHeader(to.xid, AcceptStat::kSuccess);
  XdrWriter w(&xdr);
  (void)w.WriteUint32("kind", static_cast<uint32_t>(StreamItem::kMessage));
  // As a unary response's: the large fields are lent to the transport
  // from the message's own strings until the reply is sent.
  auto bulk = std::make_shared<std::vector<BulkValue>>(
      ExtractBulkFields(message, bulk_threshold_));
  std::vector<BulkItem> items;
  if (absl::Status s = AppendPayload(message, *bulk, xdr, items); !s.ok()) {
    SendEnd(to, absl::InternalError(s.message()), {});
    Abort(
        absl::InternalError(absl::StrCat("a message of ", method_.full_name(),
                                         " could not be sent: ", s.message())));
    return;
  }
  std::vector<ReplyItem> results;
  results.reserve(items.size());
  for (const BulkItem& item : items) {
    results.push_back(ReplyItem::Lent(item.position, item.octets));
  }
  (void)to.responder.Send(
      HandlerReply(std::move(xdr), std::move(results), [bulk] {}));
}

void ServerStream::SendEnd(Waiting& to, const absl::Status& status,
                           const Metadata& trailing) {
  std::vector<uint8_t> xdr = AcceptedHeader(to.xid, AcceptStat::kSuccess);
  XdrWriter w(&xdr);
  (void)w.WriteUint32("kind", static_cast<uint32_t>(StreamItem::kEnd));
  AppendStatus(status, trailing, xdr);
  (void)to.responder.Send(HandlerReply(std::move(xdr)));
}

void ServerStream::AbortIfExpired() {
  if (deadline_.has_value() && std::chrono::steady_clock::now() >= *deadline_) {
    Abort(absl::DeadlineExceededError(
        "the stream's deadline passed before its end"));
  }
}

void ServerStream::MaybeDone() {
  std::function<void()> done;
  {
    absl::MutexLock lock(&mu_);
    // The end may go out before messages ahead of it (their NEXT calls
    // can reach the server after the end's, served on other threads): the
    // stream stays until those are sent too.
    if (done_reported_ || !handler_done_ || !end_sent_) return;
    if (!aborted_ && !held_.empty()) return;
    done_reported_ = true;
    done = std::move(on_done_);
  }
  if (done) done();
}

}  // namespace rpcrdma::protobuf::runtime
