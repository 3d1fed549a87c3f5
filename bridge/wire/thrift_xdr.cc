#include "bridge/wire/thrift_xdr.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::thrift::wire {
namespace {

// RFC 5531 §8.2 opaque_auth: flavor and body, at most 400 octets.
constexpr uint32_t kMaxAuthBody = 400;
constexpr uint32_t kRpcVersion = 2;
constexpr uint32_t kMsgCall = 0;
constexpr uint32_t kMsgReply = 1;
constexpr uint32_t kMsgAccepted = 0;

absl::Status SkipAuth(XdrReader& in, absl::string_view which) {
  if (auto flavor = in.Uint32(which); !flavor.ok()) return flavor.status();
  return in.Opaque(which, kMaxAuthBody).status();
}

// ---- Reading a Thrift message header (PeekMessageHeader) -----------------

class Bytes {
 public:
  explicit Bytes(absl::Span<const uint8_t> in) : in_(in) {}
  bool Has(size_t n) const { return in_.size() - at_ >= n; }
  std::optional<uint8_t> Byte() {
    if (!Has(1)) return std::nullopt;
    return in_[at_++];
  }
  std::optional<uint32_t> Word() {
    if (!Has(4)) return std::nullopt;
    uint32_t w = LoadBigEndian32(in_.data() + at_);
    at_ += 4;
    return w;
  }
  std::optional<std::string> Text(size_t n) {
    if (!Has(n)) return std::nullopt;
    std::string s(reinterpret_cast<const char*>(in_.data() + at_), n);
    at_ += n;
    return s;
  }
  // TCompactProtocol's varint (ULEB128), at most five octets.
  std::optional<uint32_t> Varint() {
    uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      std::optional<uint8_t> b = Byte();
      if (!b) return std::nullopt;
      value |= uint32_t{*b & 0x7fu} << shift;
      if ((*b & 0x80) == 0) return value;
    }
    return std::nullopt;
  }
  size_t at() const { return at_; }
  absl::Span<const uint8_t> rest() const { return in_.subspan(at_); }

 private:
  absl::Span<const uint8_t> in_;
  size_t at_ = 0;
};

bool PlausibleType(uint32_t type) {
  return type >= kTypeCall && type <= kTypeOneway;
}

// TBinaryProtocol, strict: version | type, name, seqid.
std::optional<MessageInfo> PeekStrictBinary(Bytes in) {
  std::optional<uint32_t> version = in.Word();
  if (!version || (*version & 0xffff0000u) != 0x80010000u) return std::nullopt;
  std::optional<uint32_t> length = in.Word();
  if (!length || *length > kMaxNameLength) return std::nullopt;
  std::optional<std::string> name = in.Text(*length);
  std::optional<uint32_t> seqid = in.Word();
  if (!name || !seqid || !PlausibleType(*version & 0xff)) return std::nullopt;
  return MessageInfo{*std::move(name), static_cast<int32_t>(*seqid),
                     *version & 0xff};
}

// TBinaryProtocol without strict_write: name, type octet, seqid.
std::optional<MessageInfo> PeekOldBinary(Bytes in) {
  std::optional<uint32_t> length = in.Word();
  if (!length || *length == 0 || *length > kMaxNameLength) return std::nullopt;
  std::optional<std::string> name = in.Text(*length);
  std::optional<uint8_t> type = in.Byte();
  std::optional<uint32_t> seqid = in.Word();
  if (!name || !type || !seqid || !PlausibleType(*type)) return std::nullopt;
  return MessageInfo{*std::move(name), static_cast<int32_t>(*seqid), *type};
}

// TCompactProtocol: 0x82, version | type << 5, varint seqid, name.
std::optional<MessageInfo> PeekCompact(Bytes in) {
  std::optional<uint8_t> id = in.Byte();
  std::optional<uint8_t> version_type = in.Byte();
  if (!id || *id != 0x82 || !version_type || (*version_type & 0x1f) != 1) {
    return std::nullopt;
  }
  std::optional<uint32_t> seqid = in.Varint();
  std::optional<uint32_t> length = in.Varint();
  if (!seqid || !length || *length > kMaxNameLength) return std::nullopt;
  std::optional<std::string> name = in.Text(*length);
  const uint32_t type = *version_type >> 5;
  if (!name || !PlausibleType(type)) return std::nullopt;
  return MessageInfo{*std::move(name), static_cast<int32_t>(*seqid), type};
}

// TJSONProtocol: [1,"name",type,seqid,...
std::optional<MessageInfo> PeekJson(Bytes in) {
  auto expect = [&](char c) {
    std::optional<uint8_t> b = in.Byte();
    return b && *b == static_cast<uint8_t>(c);
  };
  auto integer = [&]() -> std::optional<int64_t> {
    int64_t value = 0;
    bool negative = false;
    bool any = false;
    while (in.Has(1)) {
      const uint8_t c = in.rest()[0];
      if (c == '-' && !any && !negative) {
        negative = true;
      } else if (c >= '0' && c <= '9' && value < (int64_t{1} << 40)) {
        value = value * 10 + (c - '0');
        any = true;
      } else {
        break;
      }
      in.Byte();
    }
    if (!any) return std::nullopt;
    return negative ? -value : value;
  };
  if (!expect('[')) return std::nullopt;
  std::optional<int64_t> version = integer();
  if (!version || *version != 1 || !expect(',') || !expect('"')) {
    return std::nullopt;
  }
  std::string name;
  for (;;) {
    std::optional<uint8_t> c = in.Byte();
    if (!c || name.size() > kMaxNameLength) return std::nullopt;
    if (*c == '"') break;
    if (*c == '\\') {
      // Escapes other than the simple ones stay as written.
      std::optional<uint8_t> e = in.Byte();
      if (!e) return std::nullopt;
      name.push_back(*e == 'n'   ? '\n'
                     : *e == 't' ? '\t'
                                 : static_cast<char>(*e));
      continue;
    }
    name.push_back(static_cast<char>(*c));
  }
  if (!expect(',')) return std::nullopt;
  std::optional<int64_t> type = integer();
  if (!type || !expect(',')) return std::nullopt;
  std::optional<int64_t> seqid = integer();
  if (!seqid || !PlausibleType(static_cast<uint32_t>(*type))) {
    return std::nullopt;
  }
  return MessageInfo{std::move(name), static_cast<int32_t>(*seqid),
                     static_cast<uint32_t>(*type)};
}

std::optional<MessageInfo> PeekUnframed(absl::Span<const uint8_t> head) {
  if (head.empty()) return std::nullopt;
  switch (head[0]) {
    case 0x80:
      return PeekStrictBinary(Bytes(head));
    case 0x82:
      return PeekCompact(Bytes(head));
    case '[':
      return PeekJson(Bytes(head));
    default:
      return PeekOldBinary(Bytes(head));
  }
}

// THeaderTransport (0x0FFF magic): flags, seqid, header words; the header
// names the payload's protocol and its transforms.
std::optional<MessageInfo> PeekHeaderFrame(absl::Span<const uint8_t> frame) {
  Bytes in(frame);
  std::optional<uint32_t> magic_flags = in.Word();
  std::optional<uint32_t> seqid = in.Word();
  std::optional<uint8_t> words_high = in.Byte();
  std::optional<uint8_t> words_low = in.Byte();
  if (!magic_flags || (*magic_flags >> 16) != 0x0fff || !seqid || !words_high ||
      !words_low) {
    return std::nullopt;
  }
  const size_t header_length = 4u * ((size_t{*words_high} << 8) | *words_low);
  MessageInfo info{"", static_cast<int32_t>(*seqid), kTypeUnknown};
  Bytes header(in.rest().subspan(0, std::min(header_length, in.rest().size())));
  std::optional<uint32_t> protocol = header.Varint();
  std::optional<uint32_t> transforms = header.Varint();
  if (!protocol || !transforms) return info;
  if (*transforms != 0 || in.rest().size() < header_length) return info;
  std::optional<MessageInfo> inner =
      PeekUnframed(in.rest().subspan(header_length));
  return inner ? *inner : info;
}

}  // namespace

const char* ProcedureName(uint32_t procedure) {
  switch (static_cast<Procedure>(procedure)) {
    case Procedure::kNull:
      return "THRIFT_NULL";
    case Procedure::kCall:
      return "THRIFT_CALL";
    case Procedure::kOneway:
      return "THRIFT_ONEWAY";
    case Procedure::kFetch:
      return "THRIFT_FETCH";
  }
  return "unknown";
}

const char* MessageTypeName(uint32_t type) {
  switch (type) {
    case kTypeCall:
      return "CALL";
    case kTypeReply:
      return "REPLY";
    case kTypeException:
      return "EXCEPTION";
    case kTypeOneway:
      return "ONEWAY";
    default:
      return "unknown";
  }
}

std::optional<MessageInfo> PeekMessageHeader(absl::Span<const uint8_t> head) {
  head = head.subspan(0, std::min(head.size(), kPeekLength));
  // Frames (TFramedTransport, THeaderTransport) start with a length word;
  // a THeaderTransport's frame may sit in a TFramedTransport's.
  for (int frames = 0; frames <= 2; ++frames) {
    if (std::optional<MessageInfo> unframed = PeekUnframed(head)) {
      return unframed;
    }
    if (head.size() < 8) return std::nullopt;
    head = head.subspan(4);
    if (head[0] == 0x0f && head[1] == 0xff) return PeekHeaderFrame(head);
  }
  return std::nullopt;
}

// ---- XDR -------------------------------------------------------------------

// Appending to a vector fails only for an item over 4 GiB, which no
// message of the bridge holds (its limits are far lower).
void XdrWriter::Uint32(uint32_t value) {
  (void)xdr_.WriteUint32("word", value);
}

void XdrWriter::Padding(size_t length) {
  out_.resize(out_.size() + XdrPad(length), 0);
}

void XdrWriter::Opaque(absl::Span<const uint8_t> data) {
  (void)xdr_.WriteVarOpaque("opaque", data);
}

void XdrWriter::String(absl::string_view text) {
  (void)xdr_.WriteString("string", text);
}

absl::StatusOr<uint32_t> XdrReader::Uint32(absl::string_view field) {
  uint32_t w = 0;
  if (!xdr_.ReadUint32(field, &w).ok()) {
    return absl::DataLossError(absl::StrCat("XDR ends before ", field));
  }
  return w;
}

absl::StatusOr<int32_t> XdrReader::Int32(absl::string_view field) {
  absl::StatusOr<uint32_t> w = Uint32(field);
  if (!w.ok()) return w.status();
  return static_cast<int32_t>(*w);
}

absl::StatusOr<absl::Span<const uint8_t>> XdrReader::Opaque(
    absl::string_view field, uint32_t limit) {
  if (xdr_.remaining() < 4) {
    return absl::DataLossError(absl::StrCat("XDR ends before ", field));
  }
  const uint32_t length = LoadBigEndian32(xdr_.rest().data());
  absl::Span<const uint8_t> data;
  absl::Status s = xdr_.ReadVarOpaque(field, limit, &data);
  // rpcrdma::XdrReader says INVALID_ARGUMENT for a length over the limit
  // and OUT_OF_RANGE for one past the end.
  if (absl::IsInvalidArgument(s)) {
    return absl::DataLossError(
        absl::StrCat(field, " of ", length, " octets exceeds ", limit));
  }
  if (!s.ok()) {
    return absl::DataLossError(
        absl::StrCat(field, " of ", length, " octets runs past the XDR"));
  }
  return data;
}

absl::StatusOr<std::string> XdrReader::String(absl::string_view field,
                                              uint32_t limit) {
  absl::StatusOr<absl::Span<const uint8_t>> data = Opaque(field, limit);
  if (!data.ok()) return data.status();
  return std::string(data->begin(), data->end());
}

absl::Status XdrReader::Skip(size_t octets, absl::string_view field) {
  absl::Span<const uint8_t> skipped;
  if (!xdr_.ReadFixedOpaque(field, octets, &skipped).ok()) {
    return absl::DataLossError(absl::StrCat("XDR ends inside ", field));
  }
  return absl::OkStatus();
}

std::vector<uint8_t> CallHeader(uint32_t xid, Procedure procedure) {
  std::vector<uint8_t> out;
  out.reserve(64);
  XdrWriter w(out);
  for (uint32_t word : {xid, kMsgCall, kRpcVersion, kProgram, kVersion,
                        static_cast<uint32_t>(procedure), 0u, 0u, 0u, 0u}) {
    w.Uint32(word);
  }
  return out;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid, uint32_t accept_stat) {
  std::vector<uint8_t> out;
  out.reserve(64);
  XdrWriter w(out);
  for (uint32_t word : {xid, kMsgReply, kMsgAccepted, 0u, 0u, accept_stat}) {
    w.Uint32(word);
  }
  if (accept_stat == kProgMismatch) {
    w.Uint32(kVersion);  // low
    w.Uint32(kVersion);  // high
  }
  return out;
}

absl::StatusOr<DecodedCallHeader> DecodeCallHeader(
    absl::Span<const uint8_t> message) {
  XdrReader in(message);
  DecodedCallHeader h;
  absl::StatusOr<uint32_t> xid = in.Uint32("xid");
  absl::StatusOr<uint32_t> type = in.Uint32("msg_type");
  absl::StatusOr<uint32_t> rpcvers = in.Uint32("rpcvers");
  absl::StatusOr<uint32_t> prog = in.Uint32("prog");
  absl::StatusOr<uint32_t> vers = in.Uint32("vers");
  absl::StatusOr<uint32_t> proc = in.Uint32("proc");
  if (!rpcvers.ok()) return rpcvers.status();
  if (*type != kMsgCall) return absl::DataLossError("not an RPC call");
  h.xid = *xid;
  h.rpc_version = *rpcvers;
  // RFC 5531 §9: a call of another RPC version is answered RPC_MISMATCH;
  // what follows its version need not be this version's header.
  if (*rpcvers != kRpcVersion) return h;
  if (!proc.ok()) return proc.status();
  absl::StatusOr<uint32_t> cred_flavor = in.Uint32("cred");
  if (!cred_flavor.ok()) return cred_flavor.status();
  absl::StatusOr<absl::Span<const uint8_t>> cred =
      in.Opaque("cred", kMaxAuthBody);
  if (!cred.ok()) return cred.status();
  absl::StatusOr<uint32_t> verf_flavor = in.Uint32("verf");
  if (!verf_flavor.ok()) return verf_flavor.status();
  absl::StatusOr<absl::Span<const uint8_t>> verf =
      in.Opaque("verf", kMaxAuthBody);
  if (!verf.ok()) return verf.status();
  h.program = *prog;
  h.version = *vers;
  h.procedure = *proc;
  h.cred_flavor = *cred_flavor;
  h.cred_body = *cred;
  h.verf_flavor = *verf_flavor;
  h.verf_body = *verf;
  h.body_offset = in.position();
  return h;
}

namespace {

constexpr uint32_t kAuthNone = 0;
constexpr uint32_t kAuthSys = 1;
constexpr uint32_t kMsgDenied = 1;
constexpr uint32_t kRpcMismatch = 0;
constexpr uint32_t kAuthError = 1;

// RFC 5531 Appendix A: struct authsys_parms { unsigned int stamp;
// string machinename<255>; unsigned int uid; unsigned int gid;
// unsigned int gids<16>; }, filling the body exactly.
bool WellFormedAuthSys(absl::Span<const uint8_t> body) {
  XdrReader in(body);
  if (!in.Uint32("stamp").ok()) return false;
  if (!in.Opaque("machinename", 255).ok()) return false;
  if (!in.Uint32("uid").ok() || !in.Uint32("gid").ok()) return false;
  absl::StatusOr<uint32_t> gids = in.Uint32("gids");
  if (!gids.ok() || *gids > 16) return false;
  if (!in.Skip(size_t{*gids} * 4, "gids").ok()) return false;
  return in.remaining() == 0;
}

}  // namespace

uint32_t CheckCallAuth(const DecodedCallHeader& header) {
  switch (header.cred_flavor) {
    case kAuthNone:
      if (!header.cred_body.empty()) return kAuthBadCred;
      break;
    case kAuthSys:
      if (!WellFormedAuthSys(header.cred_body)) return kAuthBadCred;
      break;
    default:
      return kAuthBadCred;
  }
  if (header.verf_flavor != kAuthNone || !header.verf_body.empty()) {
    return kAuthBadVerf;
  }
  return kAuthOk;
}

std::vector<uint8_t> RpcMismatchReply(uint32_t xid) {
  std::vector<uint8_t> out;
  XdrWriter w(out);
  for (uint32_t word :
       {xid, kMsgReply, kMsgDenied, kRpcMismatch, kRpcVersion, kRpcVersion}) {
    w.Uint32(word);
  }
  return out;
}

std::vector<uint8_t> AuthErrorReply(uint32_t xid, uint32_t auth_stat) {
  std::vector<uint8_t> out;
  XdrWriter w(out);
  for (uint32_t word : {xid, kMsgReply, kMsgDenied, kAuthError, auth_stat}) {
    w.Uint32(word);
  }
  return out;
}

absl::StatusOr<size_t> DecodeReplyHeader(absl::Span<const uint8_t> message,
                                         uint32_t expected_xid) {
  XdrReader in(message);
  absl::StatusOr<uint32_t> xid = in.Uint32("xid");
  absl::StatusOr<uint32_t> type = in.Uint32("msg_type");
  absl::StatusOr<uint32_t> reply_stat = in.Uint32("reply_stat");
  if (!reply_stat.ok()) return reply_stat.status();
  if (*xid != expected_xid || *type != kMsgReply) {
    return absl::DataLossError("not the reply to this call");
  }
  if (*reply_stat != kMsgAccepted) {
    return absl::FailedPreconditionError("the server denied the RPC call");
  }
  if (absl::Status s = SkipAuth(in, "verf"); !s.ok()) return s;
  absl::StatusOr<uint32_t> accept_stat = in.Uint32("accept_stat");
  if (!accept_stat.ok()) return accept_stat.status();
  switch (*accept_stat) {
    case 0:
      return in.position();
    case kProgUnavail:
      return absl::FailedPreconditionError(
          "the server does not serve the Thrift bridge program (PROG_UNAVAIL)");
    case kProgMismatch:
      return absl::FailedPreconditionError(
          "the server serves another version of the Thrift bridge program "
          "(PROG_MISMATCH)");
    case kProcUnavail:
      return absl::FailedPreconditionError(
          "the server does not know the procedure (PROC_UNAVAIL)");
    case kGarbageArgs:
      return absl::FailedPreconditionError(
          "the server could not decode the call (GARBAGE_ARGS)");
    default:
      return absl::FailedPreconditionError(absl::StrCat(
          "the server refused the call (accept_stat ", *accept_stat, ")"));
  }
}

// ---- thrift_message --------------------------------------------------------

void EncodeMessage(const OutgoingMessage& message, std::vector<uint8_t>& out,
                   std::vector<uint32_t>& positions) {
  XdrWriter w(out);
  w.String(message.info.name);
  w.Int32(message.info.seqid);
  w.Uint32(message.info.type);
  w.Opaque(message.leading);
  w.Uint32(static_cast<uint32_t>(message.bulk.size()));
  for (const OutgoingMessage::Bulk& b : message.bulk) {
    w.Uint32(static_cast<uint32_t>(b.data.size()));
    positions.push_back(static_cast<uint32_t>(w.size()));
    w.Opaque(b.following);
  }
}

size_t EncodedMessageSize(const OutgoingMessage& message, size_t reduced) {
  size_t size = 4 + XdrRoundUp(message.info.name.size()) + 8 + 4 +
                XdrRoundUp(message.leading.size()) + 4;
  for (size_t i = 0; i < message.bulk.size(); ++i) {
    size += 4 + (i < reduced ? 0 : XdrRoundUp(message.bulk[i].data.size())) +
            4 + XdrRoundUp(message.bulk[i].following.size());
  }
  return size;
}

absl::StatusOr<IncomingMessage> DecodeMessage(
    XdrReader& in, absl::Span<const absl::Span<const uint8_t>> chunked,
    uint64_t max_size) {
  IncomingMessage m;
  absl::StatusOr<std::string> name = in.String("name", kMaxNameLength);
  if (!name.ok()) return name.status();
  absl::StatusOr<int32_t> seqid = in.Int32("seqid");
  absl::StatusOr<uint32_t> type = in.Uint32("type");
  if (!type.ok()) return type.status();
  m.info = MessageInfo{*std::move(name), *seqid, *type};
  auto add = [&](absl::Span<const uint8_t> piece) -> absl::Status {
    m.size += piece.size();
    if (m.size > max_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("Thrift message exceeds the MaxMessageSize of ",
                       max_size, " octets"));
    }
    if (!piece.empty()) m.pieces.push_back(piece);
    return absl::OkStatus();
  };
  constexpr uint32_t kNoLimit = ~uint32_t{0};
  absl::StatusOr<absl::Span<const uint8_t>> leading =
      in.Opaque("leading", kNoLimit);
  if (!leading.ok()) return leading.status();
  if (absl::Status s = add(*leading); !s.ok()) return s;
  absl::StatusOr<uint32_t> count = in.Uint32("bulk count");
  if (!count.ok()) return count.status();
  // Each item takes at least eight octets of the stream.
  if (*count > in.remaining() / 8) {
    return absl::DataLossError(
        absl::StrCat("bulk count ", *count, " runs past the XDR"));
  }
  for (uint32_t i = 0; i < *count; ++i) {
    absl::StatusOr<absl::Span<const uint8_t>> data;
    if (i < chunked.size()) {
      absl::StatusOr<uint32_t> length = in.Uint32("bulk data");
      if (!length.ok()) return length.status();
      if (*length != chunked[i].size()) {
        return absl::DataLossError(absl::StrCat(
            "bulk item ", i, " states ", *length, " octets, its write chunk ",
            "holds ", chunked[i].size()));
      }
      data = chunked[i];
    } else {
      data = in.Opaque("bulk data", kNoLimit);
      if (!data.ok()) return data.status();
    }
    if (absl::Status s = add(*data); !s.ok()) return s;
    absl::StatusOr<absl::Span<const uint8_t>> following =
        in.Opaque("following", kNoLimit);
    if (!following.ok()) return following.status();
    if (absl::Status s = add(*following); !s.ok()) return s;
  }
  // A reply returns every write chunk offered (RFC 8166 §3.4.7), those
  // it did not use empty.
  for (size_t i = *count; i < chunked.size(); ++i) {
    if (!chunked[i].empty()) {
      return absl::DataLossError(absl::StrCat("write chunk ", i,
                                              " holds data for none of the ",
                                              *count, " bulk items"));
    }
  }
  return m;
}

// ---- thrift_fetch_args, thrift_deferred -------------------------------------

void EncodeFetchArgs(const FetchArgs& args, std::vector<uint8_t>& out) {
  XdrWriter w(out);
  w.Uint32(args.ticket);
  w.Uint32(args.discard ? 1 : 0);
  w.Uint32(args.max_reply);
}

absl::StatusOr<FetchArgs> DecodeFetchArgs(absl::Span<const uint8_t> args) {
  XdrReader in(args);
  absl::StatusOr<uint32_t> ticket = in.Uint32("ticket");
  absl::StatusOr<uint32_t> discard = in.Uint32("discard");
  absl::StatusOr<uint32_t> max_reply = in.Uint32("max_reply");
  if (!max_reply.ok()) return max_reply.status();
  if (*discard > 1) return absl::DataLossError("discard is not a bool");
  return FetchArgs{*ticket, *discard == 1, *max_reply};
}

void EncodeDeferred(const Deferred& deferred, std::vector<uint8_t>& out) {
  XdrWriter w(out);
  w.Uint32(deferred.ticket);
  w.Uint32(deferred.reduced_size);
  w.Uint32(static_cast<uint32_t>(deferred.bulk_sizes.size()));
  for (uint32_t size : deferred.bulk_sizes) w.Uint32(size);
}

absl::StatusOr<Deferred> DecodeDeferred(XdrReader& in) {
  Deferred d;
  absl::StatusOr<uint32_t> ticket = in.Uint32("ticket");
  absl::StatusOr<uint32_t> reduced = in.Uint32("reduced_size");
  absl::StatusOr<uint32_t> count = in.Uint32("bulk_sizes count");
  if (!count.ok()) return count.status();
  if (*count > in.remaining() / 4) {
    return absl::DataLossError("bulk_sizes runs past the XDR");
  }
  d.ticket = *ticket;
  d.reduced_size = *reduced;
  for (uint32_t i = 0; i < *count; ++i) {
    d.bulk_sizes.push_back(*in.Uint32("bulk size"));
  }
  return d;
}

std::optional<CallPeek> PeekCall(absl::Span<const uint8_t> rpc_message) {
  absl::StatusOr<DecodedCallHeader> h = DecodeCallHeader(rpc_message);
  if (!h.ok() || h->rpc_version != kRpcVersion || h->program != kProgram ||
      h->version != kVersion) {
    return std::nullopt;
  }
  CallPeek peek;
  peek.procedure = h->procedure;
  if (h->procedure == static_cast<uint32_t>(Procedure::kCall) ||
      h->procedure == static_cast<uint32_t>(Procedure::kOneway)) {
    XdrReader in(rpc_message.subspan(h->body_offset));
    absl::StatusOr<uint32_t> max_reply = in.Uint32("max_reply");
    absl::StatusOr<std::string> name = in.String("name", kMaxNameLength);
    absl::StatusOr<int32_t> seqid = in.Int32("seqid");
    absl::StatusOr<uint32_t> type = in.Uint32("type");
    if (max_reply.ok() && name.ok() && seqid.ok() && type.ok()) {
      peek.info = MessageInfo{*std::move(name), *seqid, *type};
    }
  }
  return peek;
}

}  // namespace rpcrdma::thrift::wire
