#include "bridge/client_core.h"

#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::thrift::internal {
namespace {

using apache::thrift::transport::TTransportException;

// What a delivered reply's pieces point into.
struct ReplyMemory {
  Buffer xdr;
  std::vector<Buffer> results;
};

// The power of two at least `n` (4096 at least), never above `cap`.
uint32_t RoundUpToPowerOfTwo(uint64_t n, uint64_t cap) {
  uint64_t p = 4096;
  while (p < n) p <<= 1;
  return static_cast<uint32_t>(std::min({p, cap, uint64_t{~uint32_t{0}}}));
}

TTransportException::TTransportExceptionType TypeFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
      return TTransportException::END_OF_FILE;
    case absl::StatusCode::kDeadlineExceeded:
      return TTransportException::TIMED_OUT;
    case absl::StatusCode::kCancelled:
      return TTransportException::INTERRUPTED;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kFailedPrecondition:
      return TTransportException::CORRUPTED_DATA;
    default:
      return TTransportException::UNKNOWN;
  }
}

}  // namespace

ClientCore::ClientCore(CallPort& port, ClientLimits limits,
                       std::function<void(const absl::Status&)> broken)
    : port_(port), broken_(std::move(broken)), limits_(std::move(limits)) {
  writer_.set_limits(limits_.writer);
}

void ClientCore::set_limits(const ClientLimits& limits) {
  std::lock_guard<std::mutex> lock(mu_);
  // The receive timeout is the socket's (setRecvTimeout, before open() or
  // after), not the connection's: a connection's limits leave it alone.
  const std::chrono::milliseconds timeout = limits_.timeout;
  limits_ = limits;
  limits_.timeout = timeout;
  writer_.set_limits(limits.writer);
}

void ClientCore::set_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  limits_.timeout = timeout;
}

void ClientCore::Fail(const absl::Status& status, absl::string_view what) {
  if (status.code() == absl::StatusCode::kUnavailable && broken_) {
    broken_(status);
  }
  // RFC 8166 §4.5.2: ERR_CHUNK for a call is a call larger than the server
  // takes (TRdmaServerSocket sizes limits.max_call_size from its
  // MaxMessageSize).
  const bool too_large = status.code() == absl::StatusCode::kInvalidArgument &&
                         absl::StrContains(status.message(), "ERR_CHUNK");
  throw TTransportException(
      TypeFor(status.code()),
      absl::StrCat("rpcrdma: ", what, ": ", status.ToString(),
                   too_large ? " (the call exceeds what the server accepts: "
                               "its limits.max_call_size, by default its "
                               "MaxMessageSize)"
                             : ""));
}

void ClientCore::Write(const uint8_t* data, uint32_t length) {
  if (absl::Status s = writer_.Write(data, length); !s.ok()) {
    throw TTransportException(TTransportException::CORRUPTED_DATA,
                              absl::StrCat("rpcrdma: ", s.message()));
  }
}

CallRequest ClientCore::BuildCall(uint32_t xid, bool oneway,
                                  const wire::OutgoingMessage& message,
                                  std::vector<Buffer>& results) {
  CallRequest request;
  request.xdr = wire::CallHeader(
      xid, oneway ? wire::Procedure::kOneway : wire::Procedure::kCall);
  uint32_t max_reply = 0;
  std::vector<uint32_t> chunks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    max_reply = limits_.inline_reply;
    if (!oneway) {
      if (auto it = profiles_.find(message.info.name); it != profiles_.end()) {
        max_reply = std::max(max_reply, it->second.max_reply);
        chunks = it->second.chunks;
      }
    }
    if (chunks.size() > limits_.max_write_chunks) {
      chunks.resize(limits_.max_write_chunks);
    }
    if (limits_.timeout.count() > 0) {
      request.deadline = std::chrono::steady_clock::now() + limits_.timeout;
    }
  }
  wire::XdrWriter(request.xdr).Uint32(max_reply);
  std::vector<uint32_t> positions;
  wire::EncodeMessage(message, request.xdr, positions);
  uint64_t read_segments = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    request.arguments.push_back({positions[i], message.bulk[i].data});
    read_segments += Segments(message.bulk[i].data.size());
  }
  request.max_reply_size = max_reply;
  OfferChunks(request, chunks, read_segments, results);
  return request;
}

uint64_t ClientCore::Segments(uint64_t octets) const {
  const uint64_t segment = std::max<uint32_t>(limits_.max_segment_size, 1);
  return std::max<uint64_t>(1, (octets + segment - 1) / segment);
}

void ClientCore::OfferChunks(CallRequest& request,
                             const std::vector<uint32_t>& capacities,
                             uint64_t reserved, std::vector<Buffer>& results) {
  uint64_t left = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t used = reserved;
    if (request.max_reply_size > limits_.inline_reply) {
      used += Segments(request.max_reply_size);
    }
    left = limits_.header_segments > used ? limits_.header_segments - used : 0;
  }
  for (uint32_t capacity : capacities) {
    if (capacity == 0 || Segments(capacity) > left) break;
    left -= Segments(capacity);
    results.emplace_back(capacity);
    request.results.push_back(results.back().span());
  }
}

void ClientCore::Flush() {
  if (writer_.empty()) return;
  const wire::OutgoingMessage message = writer_.View();
  const bool oneway = message.info.type == wire::kTypeOneway;
  const bool borrows = writer_.borrows();
  Outstanding call;
  call.xid = port_.NextXid();
  call.method = message.info.name;
  CallRequest request = BuildCall(call.xid, oneway, message, call.results);
  // The runs move with their memory: `request` still points into them.
  call.owned = writer_.TakeOwned();
  if (oneway) {
    if (!borrows) {
      port_.Send(std::move(request),
                 [owned = std::move(call.owned)](absl::StatusOr<Reply>) {});
      return;
    }
    // The server reads the caller's memory before it answers, which it
    // does on receipt (THRIFT_ONEWAY): wait for that, not for the handler.
    absl::StatusOr<Reply> reply = port_.Await(port_.Start(std::move(request)));
    if (!reply.ok()) Fail(reply.status(), "oneway call");
    absl::StatusOr<size_t> offset =
        wire::DecodeReplyHeader(reply->xdr.span(), call.xid);
    if (!offset.ok()) Fail(offset.status(), "oneway call");
    wire::XdrReader in(reply->xdr.span().subspan(*offset));
    absl::StatusOr<uint32_t> status = in.Uint32("thrift_status");
    if (status.ok() &&
        *status == static_cast<uint32_t>(wire::Status::kRefused)) {
      absl::StatusOr<std::string> reason = in.String("reason", 4096);
      Fail(absl::FailedPreconditionError(reason.ok() ? *reason
                                                     : "no reason given"),
           "the server refused the oneway call");
    }
    return;
  }
  call.ticket = port_.Start(std::move(request));
  if (borrows) call.outcome = port_.Await(call.ticket);
  std::lock_guard<std::mutex> lock(mu_);
  outstanding_.push_back(std::move(call));
}

size_t ClientCore::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_.size();
}

void ClientCore::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  outstanding_.clear();
  reader_.Clear();
  writer_.Reset();
}

void ClientCore::Learn(const std::string& method,
                       const wire::Deferred& deferred) {
  std::lock_guard<std::mutex> lock(mu_);
  // A reply over the MaxMessageSize is discarded, not fetched: what a
  // hostile server claims for it must not size the chunks of later calls
  // (a 2 GiB write chunk offered with every call of the method).
  uint64_t total = deferred.reduced_size;
  for (uint32_t size : deferred.bulk_sizes) total += size;
  if (total > limits_.max_message_size) return;
  Profile& p = profiles_[method];
  const size_t chunked =
      std::min(deferred.bulk_sizes.size(), limits_.max_write_chunks);
  if (p.chunks.size() < chunked) p.chunks.resize(chunked, 0);
  uint64_t reduced = deferred.reduced_size;
  for (size_t i = 0; i < deferred.bulk_sizes.size(); ++i) {
    if (i < chunked) {
      p.chunks[i] =
          std::max(p.chunks[i], RoundUpToPowerOfTwo(deferred.bulk_sizes[i],
                                                    limits_.max_message_size));
    } else {
      reduced += XdrRoundUp(deferred.bulk_sizes[i]);
    }
  }
  p.max_reply = static_cast<uint32_t>(std::max<uint64_t>(
      p.max_reply,
      std::min<uint64_t>(reduced + 64, limits_.max_message_size + 4096)));
}

absl::StatusOr<Reply> ClientCore::Fetch(const Outstanding& call,
                                        const wire::Deferred& deferred,
                                        uint32_t xid,
                                        std::vector<Buffer>& results) {
  uint64_t total = 0;
  for (uint32_t size : deferred.bulk_sizes) total += size;
  size_t chunked = 0;
  uint64_t max_reply = deferred.reduced_size;
  uint64_t max_message_size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chunked = std::min(deferred.bulk_sizes.size(), limits_.max_write_chunks);
    max_message_size = limits_.max_message_size;
  }
  // Write chunks for the first items, as many as the transport header
  // has segments for beside the reply chunk the rest needs.
  for (;;) {
    max_reply = deferred.reduced_size;
    for (size_t i = 0; i < deferred.bulk_sizes.size(); ++i) {
      if (deferred.bulk_sizes[i] == 0 && i < chunked) chunked = i;
      if (i >= chunked) max_reply += XdrRoundUp(deferred.bulk_sizes[i]);
    }
    uint64_t segments = Segments(max_reply);
    for (size_t i = 0; i < chunked; ++i) {
      segments += Segments(deferred.bulk_sizes[i]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (chunked == 0 || segments <= limits_.header_segments) break;
    --chunked;
  }
  const bool discard =
      total > max_message_size || max_reply > ~uint32_t{0} - 4096;
  CallRequest request;
  request.xdr = wire::CallHeader(xid, wire::Procedure::kFetch);
  wire::EncodeFetchArgs(
      {deferred.ticket, discard, static_cast<uint32_t>(max_reply)},
      request.xdr);
  if (discard) {
    request.max_reply_size = 64;
    (void)port_.Await(port_.Start(std::move(request)));
    return absl::ResourceExhaustedError(absl::StrCat(
        "reply to ", call.method, " of at least ", total,
        " octets exceeds the MaxMessageSize of ", max_message_size));
  }
  request.max_reply_size = static_cast<uint32_t>(max_reply);
  std::vector<uint32_t> capacities(
      deferred.bulk_sizes.begin(),
      deferred.bulk_sizes.begin() + static_cast<ptrdiff_t>(chunked));
  OfferChunks(request, capacities, 0, results);
  return port_.Await(port_.Start(std::move(request)));
}

bool ClientCore::Take(const Outstanding& call, uint32_t xid,
                      absl::StatusOr<Reply> reply, std::vector<Buffer> results,
                      bool fetched) {
  if (!reply.ok()) {
    Fail(reply.status(), fetched ? "fetching a large reply" : "call");
  }
  auto memory = std::make_shared<ReplyMemory>();
  memory->xdr = std::move(reply->xdr);
  memory->results = std::move(results);
  absl::StatusOr<size_t> offset =
      wire::DecodeReplyHeader(memory->xdr.span(), xid);
  if (!offset.ok()) Fail(offset.status(), "reply");
  wire::XdrReader in(memory->xdr.span().subspan(*offset));
  absl::StatusOr<uint32_t> status = in.Uint32("thrift_status");
  if (!status.ok()) Fail(status.status(), "reply");
  switch (static_cast<wire::Status>(*status)) {
    case wire::Status::kOk:
      break;
    case wire::Status::kNoReply:
      // The server's processor wrote no reply (a oneway call whose header
      // the bridge could not read): there is nothing to read.
      return false;
    case wire::Status::kRefused: {
      absl::StatusOr<std::string> reason = in.String("reason", 4096);
      Fail(absl::FailedPreconditionError(reason.ok() ? *reason
                                                     : "no reason given"),
           "the server refused the call");
    }
    case wire::Status::kDeferred: {
      absl::StatusOr<wire::Deferred> deferred = wire::DecodeDeferred(in);
      if (!deferred.ok()) Fail(deferred.status(), "reply");
      if (fetched) {
        Fail(absl::DataLossError("a fetched reply was deferred again"),
             "reply");
      }
      Learn(call.method, *deferred);
      std::vector<Buffer> fetch_results;
      const uint32_t fetch_xid = port_.NextXid();
      absl::StatusOr<Reply> fetch =
          Fetch(call, *deferred, fetch_xid, fetch_results);
      return Take(call, fetch_xid, std::move(fetch), std::move(fetch_results),
                  /*fetched=*/true);
    }
    default:
      Fail(absl::DataLossError(absl::StrCat("unknown thrift_status ", *status)),
           "reply");
  }
  if (reply->result_lengths.size() > memory->results.size()) {
    Fail(absl::DataLossError("more write chunks returned than offered"),
         "reply");
  }
  std::vector<absl::Span<const uint8_t>> chunked;
  for (size_t i = 0; i < reply->result_lengths.size(); ++i) {
    chunked.push_back(
        memory->results[i].span().subspan(0, reply->result_lengths[i]));
  }
  uint64_t max_message_size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    max_message_size = limits_.max_message_size;
  }
  absl::StatusOr<wire::IncomingMessage> message =
      wire::DecodeMessage(in, chunked, max_message_size);
  if (!message.ok()) Fail(message.status(), "reply");
  reader_.Reset(*std::move(message), std::move(memory));
  ++messages_;
  return !reader_.exhausted();
}

void ClientCore::NextReply() {
  for (;;) {
    Outstanding call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (outstanding_.empty()) {
        reader_.Clear();
        return;
      }
      call = std::move(outstanding_.front());
      outstanding_.pop_front();
    }
    absl::StatusOr<Reply> reply = call.outcome.has_value()
                                      ? *std::move(call.outcome)
                                      : port_.Await(call.ticket);
    std::vector<Buffer> results = std::move(call.results);
    if (Take(call, call.xid, std::move(reply), std::move(results),
             /*fetched=*/false)) {
      return;
    }
  }
}

uint32_t ClientCore::Read(uint8_t* buffer, uint32_t length) {
  if (length == 0) return 0;
  if (!reader_.active() || reader_.exhausted()) NextReply();
  return reader_.Read(buffer, length);
}

const uint8_t* ClientCore::Borrow(uint32_t* length) {
  if (!reader_.active() || reader_.exhausted()) return nullptr;
  return reader_.Borrow(length);
}

void ClientCore::Consume(uint32_t length) {
  if (!reader_.Consume(length)) {
    throw TTransportException(TTransportException::BAD_ARGS,
                              "rpcrdma: consume() past the message's end");
  }
}

uint32_t ClientCore::ReadEnd() {
  const uint64_t consumed = reader_.consumed();
  if (reader_.active() && !reader_.exhausted()) reader_.Clear();
  return static_cast<uint32_t>(std::min<uint64_t>(consumed, ~uint32_t{0}));
}

}  // namespace rpcrdma::thrift::internal
