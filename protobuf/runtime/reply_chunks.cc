#include "protobuf/runtime/reply_chunks.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protobuf/runtime/proto_options.h"

namespace rpcrdma::protobuf::runtime {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;

namespace {

// "field 2 (index 0) > field 5 (index 1)", as a path reads.
std::string PathText(const std::vector<BulkPathStep>& path) {
  std::string text;
  for (const BulkPathStep& step : path) {
    absl::StrAppend(&text, text.empty() ? "" : " > ", "field ",
                    step.field_number, " (index ", step.index, ")");
  }
  return text;
}

}  // namespace

absl::Status ReplyChunkOffer::Prepare(const MethodDescriptor& method,
                                      ClientContext& context,
                                      Message& response) {
  context_ = &context;
  response_ = &response;
  auto& receives = CallBinding::bulk_receives(context);
  const Descriptor& type = *response.GetDescriptor();
  std::vector<int> order;
  for (size_t r = 0; r < receives.size(); ++r) {
    receives[r].received.reset();
    const FieldDescriptor* field =
        type.FindFieldByNumber(receives[r].field_number);
    if (field == nullptr || field->type() != FieldDescriptor::TYPE_BYTES ||
        field->is_repeated()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReceiveBulkInto(", receives[r].field_number, "): ", type.full_name(),
          " has no singular bytes field of that number"));
    }
    if (receives[r].memory.empty()) {
      // The transport exposes no empty memory (nor could a value land in
      // it).
      return absl::InvalidArgumentError(
          absl::StrCat("ReceiveBulkInto(", receives[r].field_number,
                       ") was given no octets of memory"));
    }
    for (int seen : order) {
      if (receives[static_cast<size_t>(seen)].field_number ==
          receives[r].field_number) {
        return absl::InvalidArgumentError(
            absl::StrCat("ReceiveBulkInto(", receives[r].field_number,
                         ") given twice for one call"));
      }
    }
    order.push_back(static_cast<int>(r));
  }
  landed_.assign(receives.size(), false);
  if (!receives.empty()) {
    // Write chunk j takes the reply's value j in path order: the receives'
    // chunks go in field-number order.
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return receives[static_cast<size_t>(a)].field_number <
             receives[static_cast<size_t>(b)].field_number;
    });
    for (int r : order) {
      Chunk& chunk = chunks_.emplace_back();
      chunk.memory = receives[static_cast<size_t>(r)].memory;
      chunk.receive = r;
    }
    return absl::OkStatus();
  }
  std::vector<uint32_t> sizes = context.reply_bulk_sizes();
  if (sizes.empty()) {
    const ReplyChunks& option = ReplyChunksOf(method);
    sizes.assign(option.bulk_sizes().begin(), option.bulk_sizes().end());
  }
  chunks_.resize(sizes.size());
  for (size_t j = 0; j < sizes.size(); ++j) {
    if (sizes[j] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("reply bulk size ", j, " of ", method.full_name(),
                       " is 0 octets; a write chunk holds at least one"));
    }
    // Not initialized by hand: the server's RDMA Writes fill what is used,
    // and the rest is cut off before the value reaches the response.
    chunks_[j].owned.resize(sizes[j]);
    chunks_[j].memory = absl::MakeSpan(
        reinterpret_cast<uint8_t*>(chunks_[j].owned.data()), sizes[j]);
  }
  return absl::OkStatus();
}

std::vector<absl::Span<uint8_t>> ReplyChunkOffer::results() const {
  std::vector<absl::Span<uint8_t>> out;
  out.reserve(chunks_.size());
  for (const Chunk& c : chunks_) out.push_back(c.memory);
  return out;
}

absl::Status ReplyChunkOffer::Take(uint32_t index, uint32_t length,
                                   BulkValue& bulk) {
  if (index >= result_lengths_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bulk value ", index, " belongs in write chunk ", index,
                     ", which the reply did not return"));
  }
  Chunk& chunk = chunks_[index];
  const uint32_t written = result_lengths_[index];
  // The transport bounds `written` by the chunk; the length word is the
  // server's word alone.
  if (written != length || length > chunk.memory.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bulk value ", index, " claims ", length, " octets, but the server ",
        "wrote ", written, " into its write chunk of ", chunk.memory.size()));
  }
  values_ = std::max(values_, index + 1);
  if (chunk.receive < 0) {
    chunk.owned.resize(length);
    bulk.value = std::move(chunk.owned);
    return absl::OkStatus();
  }
  auto& receive =
      CallBinding::bulk_receives(*context_)[static_cast<size_t>(chunk.receive)];
  if (bulk.path.size() == 1 &&
      bulk.path[0].field_number ==
          static_cast<uint32_t>(receive.field_number) &&
      bulk.path[0].index == 0) {
    // The zero-copy case: the octets are where the caller wants them, and
    // the field stays empty.
    landed_[static_cast<size_t>(chunk.receive)] = true;
    receive.received = length;
    return absl::OkStatus();
  }
  // An earlier field of the response went as a bulk value and took this
  // chunk: it goes to its own field, and DeliverReceives copies the field
  // this memory is for.
  bulk.value.assign(reinterpret_cast<const char*>(chunk.memory.data()), length);
  return absl::OkStatus();
}

absl::Status ReplyChunkOffer::CheckUnusedChunks() const {
  for (size_t j = values_; j < result_lengths_.size(); ++j) {
    if (result_lengths_[j] != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the server wrote ", result_lengths_[j], " octets into write chunk ",
          j, ", but the reply has ", values_, " bulk values in write chunks"));
    }
  }
  return absl::OkStatus();
}

absl::Status ReplyChunkOffer::DeliverReceives() {
  if (context_ == nullptr) return absl::OkStatus();
  auto& receives = CallBinding::bulk_receives(*context_);
  const google::protobuf::Reflection* reflection = response_->GetReflection();
  for (size_t r = 0; r < receives.size(); ++r) {
    if (landed_[r]) continue;
    const FieldDescriptor* field =
        response_->GetDescriptor()->FindFieldByNumber(receives[r].field_number);
    std::string scratch;
    const std::string& value =
        reflection->GetStringReference(*response_, field, &scratch);
    if (value.size() > receives[r].memory.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("field ", field->full_name(), " of the reply holds ",
                       value.size(), " octets, more than the ",
                       receives[r].memory.size(), " given by ReceiveBulkInto"));
    }
    // A value small enough to travel in the message: the one copy it
    // would have had anyway.
    if (!value.empty()) {
      std::memcpy(receives[r].memory.data(), value.data(), value.size());
    }
    receives[r].received = value.size();
    reflection->ClearField(response_, field);
  }
  return absl::OkStatus();
}

absl::Status CheckReplyFitsWriteChunks(const std::vector<BulkValue>& bulk,
                                       const std::vector<uint64_t>& capacities,
                                       const Descriptor& response_type) {
  const size_t n = std::min(bulk.size(), capacities.size());
  for (size_t j = 0; j < n; ++j) {
    if (bulk[j].value.size() > capacities[j]) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the reply's bulk value ", j, " (", PathText(bulk[j].path), " of ",
          response_type.full_name(), ") is ", bulk[j].value.size(),
          " octets, more than the ", capacities[j], " of write chunk ", j,
          " the call offered for it (ReceiveBulkInto, reply_bulk_sizes or "
          "the method's rpcrdma.protobuf.reply_chunks)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace rpcrdma::protobuf::runtime
