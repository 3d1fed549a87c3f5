#include "protobuf/runtime/stream_inbox.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "protobuf/runtime/server_call.h"
#include "rpcrdma/protobuf/program.h"

namespace rpcrdma::protobuf::runtime {

using google::protobuf::Message;

namespace {

struct Answer {
  uint32_t xid;
  Responder responder;
  absl::Status status;
};

void SendAnswers(std::vector<Answer>& answers) {
  for (Answer& a : answers) SendStatusOnly(a.responder, a.xid, a.status);
}

}  // namespace

StreamInbox::StreamInbox(uint64_t stream_id,
                         const google::protobuf::MethodDescriptor& method,
                         size_t buffer)
    : stream_id_(stream_id),
      method_(method),
      prototype_(
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(
              method.input_type())),
      buffer_limit_(std::max<size_t>(buffer, 1)) {}

StreamInbox::~StreamInbox() {
  // A stream goes only once closed (ServerStream's end): nothing is held.
  Close(absl::UnavailableError("the stream is gone"));
}

std::unique_ptr<Message> StreamInbox::NewMessage() const {
  return std::unique_ptr<Message>(prototype_->New());
}

absl::Status StreamInbox::RefusalLocked(uint64_t seq) const {
  if (closed_.has_value()) return *closed_;
  if (count_.has_value() && seq >= *count_) {
    return absl::FailedPreconditionError(
        absl::StrCat("SEND of message ", seq, " of stream ", stream_id_,
                     " after its half-close at ", *count_, " messages"));
  }
  if (seq < read_ || arrived_.contains(seq)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SEND of message ", seq, " of stream ", stream_id_,
                     ": it was sent already; each message is sent once"));
  }
  if (seq >= AdmittedLocked() + kMaxStreamWindow) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "SEND of message ", seq, " of stream ", stream_id_, ": messages ",
        read_, " to ", AdmittedLocked() + kMaxStreamWindow - 1,
        " may be sent now (the reader's buffer and at most ", kMaxStreamWindow,
        " SEND calls waiting)"));
  }
  return absl::OkStatus();
}

void StreamInbox::Send(uint32_t xid, uint64_t seq,
                       std::unique_ptr<Message> message, Responder responder) {
  std::vector<Answer> answers;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status refused = RefusalLocked(seq); !refused.ok()) {
      answers.push_back({xid, std::move(responder), std::move(refused)});
    } else {
      arrived_.emplace(seq, std::move(message));
      peak_held_ = std::max(peak_held_, arrived_.size());
      if (seq < AdmittedLocked()) {
        answers.push_back({xid, std::move(responder), absl::OkStatus()});
      } else {
        // The back-pressure: the client's window of SEND calls is full
        // once enough of them wait here.
        unanswered_.emplace(seq, Waiting{xid, std::move(responder)});
      }
    }
  }
  SendAnswers(answers);
}

void StreamInbox::HalfClose(uint32_t xid, uint64_t count, Responder responder) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (closed_.has_value()) {
      status = *closed_;
    } else if (count_.has_value()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("stream ", stream_id_, " was half-closed already, at ",
                       *count_, " messages"));
    } else if (count < read_ ||
               (!arrived_.empty() && arrived_.rbegin()->first >= count)) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "HALF_CLOSE of stream ", stream_id_, " at ", count,
          " messages, but message ",
          arrived_.empty() ? read_ - 1 : arrived_.rbegin()->first, " arrived"));
    } else {
      count_ = count;
    }
  }
  SendStatusOnly(responder, xid, status);
}

bool StreamInbox::Read(Message& message) {
  std::unique_ptr<Message> taken;
  std::vector<Answer> answers;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return closed_.has_value() || arrived_.contains(read_) ||
             (count_.has_value() && read_ >= *count_);
    };
    mu_.Await(absl::Condition(&ready));
    if (closed_.has_value() || !arrived_.contains(read_)) return false;
    auto node = arrived_.extract(read_);
    taken = std::move(node.mapped());
    ++read_;
    // The slot this message left admits the next waiting SEND.
    for (auto it = unanswered_.begin();
         it != unanswered_.end() && it->first < AdmittedLocked();) {
      answers.push_back(
          {it->second.xid, std::move(it->second.responder), absl::OkStatus()});
      it = unanswered_.erase(it);
    }
  }
  SendAnswers(answers);
  // Moved, not copied: a message's bulk fields may be large.
  message.GetReflection()->Swap(&message, taken.get());
  return true;
}

void StreamInbox::Close(const absl::Status& status) {
  std::vector<Answer> answers;
  {
    absl::MutexLock lock(&mu_);
    if (closed_.has_value()) return;
    closed_ = status.ok() ? absl::FailedPreconditionError(absl::StrCat(
                                "the handler of ", method_.full_name(),
                                " returned before reading every message"))
                          : status;
    arrived_.clear();
    for (auto& [seq, to] : unanswered_) {
      answers.push_back({to.xid, std::move(to.responder), *closed_});
    }
    unanswered_.clear();
  }
  SendAnswers(answers);
}

size_t StreamInbox::held() const {
  absl::MutexLock lock(&mu_);
  return arrived_.size();
}

size_t StreamInbox::peak_held() const {
  absl::MutexLock lock(&mu_);
  return peak_held_;
}

size_t StreamInbox::waiting_sends() const {
  absl::MutexLock lock(&mu_);
  return unanswered_.size();
}

}  // namespace rpcrdma::protobuf::runtime
