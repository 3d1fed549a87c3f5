#include "protobuf/runtime/wire_codec.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protobuf/runtime/reply_status.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"

namespace rpcrdma::protobuf::runtime {

std::vector<uint8_t> AdapterCallHeader(uint32_t xid, uint32_t program,
                                       uint32_t procedure) {
  CallHeader header;
  header.xid = xid;
  header.program = program;
  header.version = kProgramVersion;
  header.procedure = procedure;
  header.credential = AuthNone();
  header.verifier = AuthNone();
  std::vector<uint8_t> xdr;
  (void)EncodeCallHeader(header, xdr);  // AUTH_NONE: cannot fail
  return xdr;
}
namespace {

absl::Span<const uint8_t> AsBytes(absl::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

uint32_t Narrow(size_t n) { return static_cast<uint32_t>(n); }

}  // namespace

void AppendNextArgs(const NextArgs& args, std::vector<uint8_t>& out) {
  XdrWriter w(&out);
  (void)w.WriteUint64("stream id", args.stream_id);
  (void)w.WriteUint64("seq", args.seq);
}

absl::Status ReadStreamId(XdrReader& in, uint64_t& out) {
  if (absl::Status s = in.ReadUint64("stream id", &out); !s.ok()) return s;
  if (in.remaining() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.remaining(), " octets follow the stream id; expected none"));
  }
  return absl::OkStatus();
}

absl::Status ReadNextArgs(XdrReader& in, NextArgs& out) {
  if (absl::Status s = in.ReadUint64("stream id", &out.stream_id); !s.ok()) {
    return s;
  }
  if (absl::Status s = in.ReadUint64("seq", &out.seq); !s.ok()) return s;
  if (in.remaining() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.remaining(), " octets follow the NEXT arguments; expected none"));
  }
  return absl::OkStatus();
}

void AppendStreamNumberArgs(const StreamNumberArgs& args,
                            std::vector<uint8_t>& out) {
  XdrWriter w(&out);
  (void)w.WriteUint64("stream id", args.stream_id);
  (void)w.WriteUint64("number", args.number);
}

absl::Status ReadStreamNumberArgs(XdrReader& in, StreamNumberArgs& out) {
  if (absl::Status s = in.ReadUint64("stream id", &out.stream_id); !s.ok()) {
    return s;
  }
  return in.ReadUint64("number", &out.number);
}

absl::Status ReadStatus(XdrReader& in, absl::Status& status,
                        Metadata& trailing) {
  uint32_t code = 0;
  std::string message;
  if (absl::Status s = in.ReadUint32("status code", &code); !s.ok()) return s;
  if (absl::Status s =
          in.ReadString("status message", kMaxStatusMessage, &message);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadMetadata(in, trailing); !s.ok()) return s;
  status =
      code == 0 ? absl::OkStatus() : absl::Status(CodeFromWire(code), message);
  return absl::OkStatus();
}

void AppendMetadata(const Metadata& metadata, XdrWriter& out) {
  // Appending to a vector cannot fail for items under 4 GiB; the sizes
  // were bounded when the metadata was accepted (Channel, Completion).
  (void)out.WriteUint32("metadata count", Narrow(metadata.size()));
  for (const auto& [key, value] : metadata) {
    (void)out.WriteString("metadata key", key);
    (void)out.WriteVarOpaque("metadata value", AsBytes(value));
  }
}

absl::Status ReadMetadata(XdrReader& in, Metadata& out) {
  uint32_t count = 0;
  if (absl::Status s = in.ReadUint32("metadata count", &count); !s.ok()) {
    return s;
  }
  if (count > kMaxMetadataEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata count ", count, " exceeds the limit of ",
                     kMaxMetadataEntries, " pairs"));
  }
  for (uint32_t i = 0; i < count; ++i) {
    std::string key;
    absl::Span<const uint8_t> value;
    if (absl::Status s = in.ReadString("metadata key", kMaxMetadataKey, &key);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            in.ReadVarOpaque("metadata value", kMaxMetadataValue, &value);
        !s.ok()) {
      return s;
    }
    out.emplace(
        std::move(key),
        std::string(reinterpret_cast<const char*>(value.data()), value.size()));
  }
  return absl::OkStatus();
}

absl::Status AppendPayload(const google::protobuf::Message& message,
                           const std::vector<BulkValue>& bulk,
                           std::vector<uint8_t>& out,
                           std::vector<BulkItem>& items) {
  const size_t size = message.ByteSizeLong();
  if (size > std::numeric_limits<int32_t>::max()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        message.GetDescriptor()->full_name(), " serializes to ", size,
        " octets without its bulk fields; protobuf's limit is 2 GiB"));
  }
  XdrWriter w(&out);
  (void)w.WriteUint32("message length", Narrow(size));
  // Serialized straight into the stream: the one copy of the small
  // fields, which a serializer makes anyway.
  const size_t at = out.size();
  out.resize(at + XdrRoundUp(size), 0);
  message.SerializeWithCachedSizesToArray(out.data() + at);
  (void)w.WriteUint32("bulk count", Narrow(bulk.size()));
  for (const BulkValue& b : bulk) {
    (void)w.WriteUint32("path steps", Narrow(b.path.size()));
    for (const BulkPathStep& step : b.path) {
      (void)w.WriteUint32("path field", step.field_number);
      (void)w.WriteUint32("path index", step.index);
    }
    (void)w.WriteUint32("bulk length", Narrow(b.value.size()));
    items.push_back({Narrow(out.size()), AsBytes(b.value)});
  }
  return absl::OkStatus();
}

absl::Status ReadPayload(XdrReader& in, google::protobuf::Message& message,
                         ChunkedValues* chunked) {
  absl::Span<const uint8_t> serialized;
  if (absl::Status s = in.ReadVarOpaque(
          "message", std::numeric_limits<int32_t>::max(), &serialized);
      !s.ok()) {
    return s;
  }
  if (!message.ParseFromArray(serialized.data(),
                              static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the message does not parse as ",
                     message.GetDescriptor()->full_name()));
  }
  uint32_t count = 0;
  if (absl::Status s = in.ReadUint32("bulk count", &count); !s.ok()) return s;
  // Each value takes at least 12 octets (steps, one step, its length), so
  // a count beyond what was received is refused before anything is held.
  if (count > in.remaining() / 12) {
    return absl::InvalidArgumentError(
        absl::StrCat("bulk count ", count, " is more than the ", in.remaining(),
                     " octets left can hold"));
  }
  BulkFieldRestorer restorer(message);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t steps = 0;
    if (absl::Status s = in.ReadUint32("path steps", &steps); !s.ok()) {
      return s;
    }
    if (steps == 0 || steps > kMaxBulkPathSteps) {
      return absl::InvalidArgumentError(
          absl::StrCat("bulk value ", i, " has a path of ", steps,
                       " steps; it must have 1 to ", kMaxBulkPathSteps));
    }
    BulkValue bulk;
    bulk.path.resize(steps);
    for (BulkPathStep& step : bulk.path) {
      if (absl::Status s = in.ReadUint32("path field", &step.field_number);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = in.ReadUint32("path index", &step.index); !s.ok()) {
        return s;
      }
    }
    if (chunked != nullptr && i < chunked->count()) {
      uint32_t length = 0;
      if (absl::Status s = in.ReadUint32("bulk length", &length); !s.ok()) {
        return s;
      }
      if (absl::Status s = chunked->Take(i, length, bulk); !s.ok()) return s;
      if (absl::Status s = restorer.Restore(bulk); !s.ok()) return s;
      continue;
    }
    absl::Span<const uint8_t> value;
    // The length is checked against the octets received before any copy.
    if (absl::Status s = in.ReadVarOpaque(
            "bulk value", std::numeric_limits<uint32_t>::max(), &value);
        !s.ok()) {
      return s;
    }
    bulk.value.assign(reinterpret_cast<const char*>(value.data()),
                      value.size());
    if (absl::Status s = restorer.Restore(bulk); !s.ok()) return s;
  }
  if (in.remaining() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.remaining(), " octets follow the payload; expected none"));
  }
  return absl::OkStatus();
}

}  // namespace rpcrdma::protobuf::runtime
