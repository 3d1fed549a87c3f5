// RPC-over-RDMA version two transport header codec
// (draft-cel-nfsv4-rpcrdma-version-two-04 §5 and §6.2).
//
// Error classification used by the decoder:
//   - rdma_vers != 2                          kBadVersion (value = vers seen)
//   - rdma_proc not in §6.2 rpcrdma2_proc     kBadProc
//   - msg_type or rdma_err out of range       kBadDiscriminant
//   - a count or opaque length above the configured V2Limits
//                                             kBadLength
//   - a count or opaque length that runs past the end of the message
//                                             kTruncated (the header ends
//                                             inside that field, as in the
//                                             shared chunk-list codec)
//   - a known property (§5.2) whose rdma_data is neither empty nor a valid
//     value of the property's XDR type        kBadPropertyValue (value =
//                                             the property id)
#include "plugin/wire/v2.h"

#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::wire {
namespace {

// Smallest encodings, used to reject counts the rest of the message cannot
// hold before anything is allocated.
constexpr size_t kMinPropValSize = 8;  // rdma_which + rdma_data length
constexpr size_t kSubsetWordSize = 4;

DecodeError Error(DecodeErrorKind kind, size_t offset, std::string message,
                  uint32_t value = 0) {
  return DecodeError{kind, offset, std::move(message), value};
}

// Maps an XdrReader failure: OUT_OF_RANGE means the message ended inside the
// field; INVALID_ARGUMENT (only ReadVarOpaque's limit check here) means a
// length above the configured bound.
DecodeError FromXdr(const absl::Status& status, size_t offset) {
  return Error(absl::IsOutOfRange(status) ? DecodeErrorKind::kTruncated
                                          : DecodeErrorKind::kBadLength,
               offset, std::string(status.message()));
}

std::optional<DecodeError> ReadU32(XdrReader& r, absl::string_view field,
                                   uint32_t* out) {
  size_t at = r.offset();
  if (absl::Status st = r.ReadUint32(field, out); !st.ok()) {
    return FromXdr(st, at);
  }
  return std::nullopt;
}

// RFC 5531 §9 msg_type: CALL (0) or REPLY (1); anything else is not a value
// of the enum.
std::optional<DecodeError> ReadDirection(XdrReader& r, absl::string_view field,
                                         MsgDirection* out) {
  size_t at = r.offset();
  uint32_t v = 0;
  if (auto err = ReadU32(r, field, &v)) return err;
  if (v > 1) {
    return Error(DecodeErrorKind::kBadDiscriminant, at,
                 absl::StrCat(field, " (offset ", at, ") is ", v,
                              "; msg_type is CALL (0) or REPLY (1)"));
  }
  *out = static_cast<MsgDirection>(v);
  return std::nullopt;
}

// Validates the value of a property this implementation knows (§5.1.1,
// §5.2). A zero-length value means the default and is always valid; unknown
// ids are not checked at all. On success `*interpreted` is set for known ids.
std::optional<DecodeError> CheckKnownProperty(const PropVal& p, size_t offset,
                                              KnownProperties* interpreted) {
  const size_t len = p.data.size();
  switch (p.which) {
    case kPropIdRbsiz: {  // §5.2.1: typedef uint32 rpcrdma2_prop_rbsiz
      if (len == 0) {
        interpreted->rbsiz = kDefaultRbsiz;
        return std::nullopt;
      }
      if (len != 4) {
        return Error(DecodeErrorKind::kBadPropertyValue, offset,
                     absl::StrCat("RDMA2_PROPID_RBSIZ value has ", len,
                                  " octets; a uint32 has 4"),
                     p.which);
      }
      interpreted->rbsiz = LoadBigEndian32(p.data.data());
      return std::nullopt;
    }
    case kPropIdBrs: {  // §5.2.2: enum rpcrdma2_bkreqsup
      if (len == 0) {
        interpreted->brs = kDefaultBrs;
        return std::nullopt;
      }
      if (len != 4) {
        return Error(DecodeErrorKind::kBadPropertyValue, offset,
                     absl::StrCat("RDMA2_PROPID_BRS value has ", len,
                                  " octets; an enum has 4"),
                     p.which);
      }
      uint32_t v = LoadBigEndian32(p.data.data());
      if (v > static_cast<uint32_t>(BackwardRequestSupport::kGeneral)) {
        return Error(DecodeErrorKind::kBadPropertyValue, offset,
                     absl::StrCat("RDMA2_PROPID_BRS value ", v,
                                  " is not an rpcrdma2_bkreqsup (0..2)"),
                     p.which);
      }
      interpreted->brs = static_cast<BackwardRequestSupport>(v);
      return std::nullopt;
    }
    default:
      // §5.1.1: "no error is to be reported if rdma_which is unknown".
      return std::nullopt;
  }
}

std::optional<DecodeError> DecodePropSet(XdrReader& r, absl::string_view field,
                                         const V2Limits& limits, PropSet* out) {
  size_t at = r.offset();
  uint32_t count = 0;
  if (auto err = ReadU32(r, field, &count)) return err;
  if (count > limits.max_properties) {
    return Error(
        DecodeErrorKind::kBadLength, at,
        absl::StrCat(field, " (offset ", at, ") has ", count,
                     " properties; the limit is ", limits.max_properties));
  }
  if (r.remaining() < size_t{count} * kMinPropValSize) {
    return Error(
        DecodeErrorKind::kTruncated, at,
        absl::StrCat(field, " (offset ", at, ") claims ", count,
                     " properties (at least ", size_t{count} * kMinPropValSize,
                     " octets) but only ", r.remaining(), " octets remain"));
  }
  out->clear();
  out->reserve(count);
  KnownProperties scratch;
  for (uint32_t i = 0; i < count; ++i) {
    size_t item_at = r.offset();
    PropVal p;
    if (auto err = ReadU32(r, "rdma_which", &p.which)) return err;
    size_t data_at = r.offset();
    absl::Span<const uint8_t> data;
    if (absl::Status st =
            r.ReadVarOpaque("rdma_data", limits.max_property_length, &data);
        !st.ok()) {
      return FromXdr(st, data_at);
    }
    p.data.assign(data.begin(), data.end());
    if (auto err = CheckKnownProperty(p, item_at, &scratch)) return err;
    out->push_back(std::move(p));
  }
  return std::nullopt;
}

std::optional<DecodeError> DecodeSubset(XdrReader& r, absl::string_view field,
                                        const V2Limits& limits,
                                        PropSubset* out) {
  size_t at = r.offset();
  uint32_t count = 0;
  if (auto err = ReadU32(r, field, &count)) return err;
  if (count > limits.max_subset_words) {
    return Error(
        DecodeErrorKind::kBadLength, at,
        absl::StrCat(field, " (offset ", at, ") has ", count,
                     " words; the limit is ", limits.max_subset_words));
  }
  if (r.remaining() < size_t{count} * kSubsetWordSize) {
    return Error(
        DecodeErrorKind::kTruncated, at,
        absl::StrCat(field, " (offset ", at, ") claims ", count,
                     " words but only ", r.remaining(), " octets remain"));
  }
  out->assign(count, 0);
  for (uint32_t& word : *out) {
    if (auto err = ReadU32(r, field, &word)) return err;
  }
  return std::nullopt;
}

std::optional<DecodeError> DecodeChunkListsV2(XdrReader& r,
                                              const V2Limits& limits,
                                              V2ChunkLists* out) {
  if (auto err = ReadDirection(r, "rdma_direction", &out->direction)) {
    return err;
  }
  if (auto err = ReadU32(r, "rdma_inv_handle", &out->inv_handle)) return err;
  DecodeResult<ChunkLists> lists = DecodeChunkLists(r, limits.chunks);
  if (!lists.ok()) return lists.error();
  out->lists = std::move(lists).value();
  return std::nullopt;
}

std::optional<DecodeError> DecodeErrorBody(XdrReader& r, V2Error* out) {
  size_t at = r.offset();
  uint32_t code = 0;
  if (auto err = ReadU32(r, "rdma_err", &code)) return err;
  out->code = static_cast<V2ErrorCode>(code);
  switch (out->code) {
    case V2ErrorCode::kVers:
      if (auto err = ReadU32(r, "rdma_vers_low", &out->vers_low)) return err;
      return ReadU32(r, "rdma_vers_high", &out->vers_high);
    case V2ErrorCode::kBadXdr:
    case V2ErrorCode::kInvalidProc:
    case V2ErrorCode::kInvalidOption:
    case V2ErrorCode::kSystem:
      return std::nullopt;
    case V2ErrorCode::kReadChunks:
    case V2ErrorCode::kWriteChunks:
      return ReadU32(r, "rdma_max_chunks", &out->max_chunks);
    case V2ErrorCode::kSegments:
      return ReadU32(r, "rdma_max_segments", &out->max_segments);
    case V2ErrorCode::kWriteResource:
      if (auto err = ReadU32(r, "rdma_chunk_index", &out->chunk_index)) {
        return err;
      }
      return ReadU32(r, "rdma_length_needed", &out->length_needed);
    case V2ErrorCode::kReplyResource:
      return ReadU32(r, "rdma_length_needed", &out->length_needed);
  }
  return Error(DecodeErrorKind::kBadDiscriminant, at,
               absl::StrCat("rdma_err (offset ", at, ") is ", code,
                            "; rpcrdma2_errcode is 1..10"));
}

std::optional<DecodeError> DecodeOptional(XdrReader& r, const V2Limits& limits,
                                          V2Optional* out) {
  if (auto err = ReadDirection(r, "rdma_optdir", &out->optdir)) return err;
  if (auto err = ReadU32(r, "rdma_opttype", &out->opttype)) return err;
  size_t at = r.offset();
  absl::Span<const uint8_t> info;
  if (absl::Status st =
          r.ReadVarOpaque("rdma_optinfo", limits.max_optinfo_length, &info);
      !st.ok()) {
    return FromXdr(st, at);
  }
  out->optinfo.assign(info.begin(), info.end());
  return std::nullopt;
}

// ---- Encoding -------------------------------------------------------------

absl::Status CheckCount(absl::string_view field, size_t count) {
  if (count > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has more elements than XDR can express"));
  }
  return absl::OkStatus();
}

absl::Status EncodeDirection(absl::string_view field, MsgDirection d,
                             XdrWriter& w) {
  uint32_t v = static_cast<uint32_t>(d);
  if (v > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", v, "; msg_type is CALL (0) or REPLY (1)"));
  }
  return w.WriteUint32(field, v);
}

absl::Status EncodePropSet(absl::string_view field, const PropSet& set,
                           XdrWriter& w) {
  if (absl::Status st = CheckCount(field, set.size()); !st.ok()) return st;
  if (absl::Status st = w.WriteUint32(field, static_cast<uint32_t>(set.size()));
      !st.ok()) {
    return st;
  }
  for (const PropVal& p : set) {
    if (absl::Status st = w.WriteUint32("rdma_which", p.which); !st.ok()) {
      return st;
    }
    if (absl::Status st = w.WriteVarOpaque("rdma_data", p.data); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status EncodeSubset(absl::string_view field, const PropSubset& subset,
                          XdrWriter& w) {
  if (absl::Status st = CheckCount(field, subset.size()); !st.ok()) return st;
  if (absl::Status st =
          w.WriteUint32(field, static_cast<uint32_t>(subset.size()));
      !st.ok()) {
    return st;
  }
  for (uint32_t word : subset) {
    if (absl::Status st = w.WriteUint32(field, word); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status EncodeChunkListsV2(const V2ChunkLists& c, XdrWriter& w) {
  if (absl::Status st = EncodeDirection("rdma_direction", c.direction, w);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = w.WriteUint32("rdma_inv_handle", c.inv_handle);
      !st.ok()) {
    return st;
  }
  return EncodeChunkLists(c.lists, w);
}

absl::Status EncodeErrorBody(const V2Error& e, XdrWriter& w) {
  const uint32_t code = static_cast<uint32_t>(e.code);
  switch (e.code) {
    case V2ErrorCode::kVers:
    case V2ErrorCode::kBadXdr:
    case V2ErrorCode::kInvalidProc:
    case V2ErrorCode::kReadChunks:
    case V2ErrorCode::kWriteChunks:
    case V2ErrorCode::kSegments:
    case V2ErrorCode::kWriteResource:
    case V2ErrorCode::kReplyResource:
    case V2ErrorCode::kInvalidOption:
    case V2ErrorCode::kSystem:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("rdma_err ", code, " is not an rpcrdma2_errcode"));
  }
  absl::Status st = w.WriteUint32("rdma_err", code);
  if (!st.ok()) return st;
  switch (e.code) {
    case V2ErrorCode::kVers:
      st = w.WriteUint32("rdma_vers_low", e.vers_low);
      if (st.ok()) st = w.WriteUint32("rdma_vers_high", e.vers_high);
      return st;
    case V2ErrorCode::kReadChunks:
    case V2ErrorCode::kWriteChunks:
      return w.WriteUint32("rdma_max_chunks", e.max_chunks);
    case V2ErrorCode::kSegments:
      return w.WriteUint32("rdma_max_segments", e.max_segments);
    case V2ErrorCode::kWriteResource:
      st = w.WriteUint32("rdma_chunk_index", e.chunk_index);
      if (st.ok()) st = w.WriteUint32("rdma_length_needed", e.length_needed);
      return st;
    case V2ErrorCode::kReplyResource:
      return w.WriteUint32("rdma_length_needed", e.length_needed);
    default:
      return absl::OkStatus();  // void arms
  }
}

size_t ErrorBodySize(const V2Error& e) {
  switch (e.code) {
    case V2ErrorCode::kVers:
    case V2ErrorCode::kWriteResource:
      return 12;
    case V2ErrorCode::kReadChunks:
    case V2ErrorCode::kWriteChunks:
    case V2ErrorCode::kSegments:
    case V2ErrorCode::kReplyResource:
      return 8;
    default:
      return 4;
  }
}

size_t PropSetSize(const PropSet& set) {
  size_t size = 4;
  for (const PropVal& p : set) size += 8 + XdrRoundUp(p.data.size());
  return size;
}

size_t SubsetSize(const PropSubset& subset) { return 4 + 4 * subset.size(); }

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// The body of a property exchange (§5.3.1 to §5.3.4: RDMA2_CONNPROP,
// RDMA2_REQPROP, RDMA2_RESPROP, RDMA2_UPDPROP), `proc` being one of them.
std::optional<DecodeError> DecodePropertyBody(XdrReader& r, V2Proc proc,
                                              const V2Limits& limits,
                                              V2Body* out) {
  std::optional<DecodeError> err;
  if (proc == V2Proc::kConnProp) {
    V2ConnProp body;
    err = DecodePropSet(r, "rdma_start", limits, &body.start);
    if (!err) err = DecodeSubset(r, "rdma_nochg", limits, &body.nochg);
    *out = std::move(body);
  } else if (proc == V2Proc::kReqProp) {
    V2ReqProp body;
    err = DecodePropSet(r, "rdma_want", limits, &body.want);
    *out = std::move(body);
  } else if (proc == V2Proc::kResProp) {
    V2ResProp body;
    err = DecodeSubset(r, "rdma_done", limits, &body.done);
    if (!err) err = DecodeSubset(r, "rdma_rejected", limits, &body.rejected);
    if (!err) err = DecodePropSet(r, "rdma_other", limits, &body.other);
    *out = std::move(body);
  } else {
    V2UpdProp body;
    err = DecodePropSet(r, "rdma_now", limits, &body.now);
    *out = std::move(body);
  }
  return err;
}

// The body rdma_proc `proc` (read at `proc_at`) selects (§6.2
// rpcrdma2_proc), into `out`.
std::optional<DecodeError> DecodeV2Body(XdrReader& r, uint32_t proc,
                                        size_t proc_at, const V2Limits& limits,
                                        V2Body* out) {
  std::optional<DecodeError> err;
  switch (static_cast<V2Proc>(proc)) {
    case V2Proc::kMsg: {
      V2Msg body;
      err = DecodeChunkListsV2(r, limits, &body.chunks);
      *out = std::move(body);
      return err;
    }
    case V2Proc::kNoMsg: {
      V2NoMsg body;
      err = DecodeChunkListsV2(r, limits, &body.chunks);
      *out = std::move(body);
      return err;
    }
    case V2Proc::kError: {
      V2Error body;
      err = DecodeErrorBody(r, &body);
      *out = body;
      return err;
    }
    case V2Proc::kOptional: {
      V2Optional body;
      err = DecodeOptional(r, limits, &body);
      *out = std::move(body);
      return err;
    }
    case V2Proc::kConnProp:
    case V2Proc::kReqProp:
    case V2Proc::kResProp:
    case V2Proc::kUpdProp:
      return DecodePropertyBody(r, static_cast<V2Proc>(proc), limits, out);
  }
  return Error(DecodeErrorKind::kBadProc, proc_at,
               absl::StrCat("rdma_proc (offset ", proc_at, ") is ", proc,
                            "; not an rpcrdma2_proc"));
}

}  // namespace

absl::string_view MsgDirectionName(MsgDirection d) {
  switch (d) {
    case MsgDirection::kCall:
      return "CALL";
    case MsgDirection::kReply:
      return "REPLY";
  }
  return "UNKNOWN_MSG_TYPE";
}

absl::string_view V2ProcName(V2Proc proc) {
  switch (proc) {
    case V2Proc::kMsg:
      return "RDMA2_MSG";
    case V2Proc::kNoMsg:
      return "RDMA2_NOMSG";
    case V2Proc::kError:
      return "RDMA2_ERROR";
    case V2Proc::kOptional:
      return "RDMA2_OPTIONAL";
    case V2Proc::kConnProp:
      return "RDMA2_CONNPROP";
    case V2Proc::kReqProp:
      return "RDMA2_REQPROP";
    case V2Proc::kResProp:
      return "RDMA2_RESPROP";
    case V2Proc::kUpdProp:
      return "RDMA2_UPDPROP";
  }
  return "RDMA2_UNKNOWN_PROC";
}

absl::string_view V2ErrorCodeName(V2ErrorCode code) {
  switch (code) {
    case V2ErrorCode::kVers:
      return "RDMA2_ERR_VERS";
    case V2ErrorCode::kBadXdr:
      return "RDMA2_ERR_BAD_XDR";
    case V2ErrorCode::kInvalidProc:
      return "RDMA2_ERR_INVALID_PROC";
    case V2ErrorCode::kReadChunks:
      return "RDMA2_ERR_READ_CHUNKS";
    case V2ErrorCode::kWriteChunks:
      return "RDMA2_ERR_WRITE_CHUNKS";
    case V2ErrorCode::kSegments:
      return "RDMA2_ERR_SEGMENTS";
    case V2ErrorCode::kWriteResource:
      return "RDMA2_ERR_WRITE_RESOURCE";
    case V2ErrorCode::kReplyResource:
      return "RDMA2_ERR_REPLY_RESOURCE";
    case V2ErrorCode::kInvalidOption:
      return "RDMA2_ERR_INVALID_OPTION";
    case V2ErrorCode::kSystem:
      return "RDMA2_ERR_SYSTEM";
  }
  return "RDMA2_ERR_UNKNOWN";
}

// ---- Transport properties (§5.1.1, §5.2) ---------------------------------

// A property id may appear more than once in a set (§5.1.1 neither allows
// nor forbids it); the last occurrence wins. On failure the DecodeError's
// offset is the index of the offending element in `set` (there is no header
// to point into) and its value is the property id.
DecodeResult<KnownProperties> InterpretProperties(const PropSet& set) {
  KnownProperties known;
  for (size_t i = 0; i < set.size(); ++i) {
    if (auto err = CheckKnownProperty(set[i], i, &known)) {
      err->message = absl::StrCat("property ", i, ": ", err->message);
      return *std::move(err);
    }
  }
  return known;
}

PropVal MakeRbsizProperty(uint32_t octets) {
  PropVal p;
  p.which = kPropIdRbsiz;
  p.data.resize(4);
  StoreBigEndian32(p.data.data(), octets);
  return p;
}

PropVal MakeBrsProperty(BackwardRequestSupport brs) {
  PropVal p;
  p.which = kPropIdBrs;
  p.data.resize(4);
  StoreBigEndian32(p.data.data(), static_cast<uint32_t>(brs));
  return p;
}

// §5.1.1: "bit number N mod 32 in word N div 32". XDR does not number the
// bits of a uint32; this codec reads bit 0 as the least significant bit of
// the word (value 1 << (N mod 32)), the convention of NFSv4's bitmap4
// (RFC 7530 §3.3.7).
bool SubsetContains(const PropSubset& subset, size_t index) {
  const size_t word = index / 32;
  if (word >= subset.size()) return false;  // "treated as containing zero"
  return ((subset[word] >> (index % 32)) & 1u) != 0;
}

void SubsetAdd(PropSubset& subset, size_t index) {
  const size_t word = index / 32;
  if (word >= subset.size()) subset.resize(word + 1, 0);
  subset[word] |= uint32_t{1} << (index % 32);
}

// ---- Header ---------------------------------------------------------------

V2Proc V2Header::proc() const {
  // The variant's alternatives are in rpcrdma2_proc order, but the numbers
  // skip 2 and 3, so index and proc number differ from RDMA2_ERROR on.
  static constexpr V2Proc kByIndex[] = {
      V2Proc::kMsg,      V2Proc::kNoMsg,   V2Proc::kError,   V2Proc::kOptional,
      V2Proc::kConnProp, V2Proc::kReqProp, V2Proc::kResProp, V2Proc::kUpdProp,
  };
  static_assert(std::size(kByIndex) == std::variant_size_v<V2Body>);
  return kByIndex[body.index()];
}

const V2ChunkLists* V2Header::chunks() const {
  if (const auto* m = std::get_if<V2Msg>(&body)) return &m->chunks;
  if (const auto* n = std::get_if<V2NoMsg>(&body)) return &n->chunks;
  return nullptr;
}

DecodeResult<V2Decoded> DecodeV2(absl::Span<const uint8_t> message,
                                 const V2Limits& limits) {
  XdrReader r(message);
  V2Decoded out;
  V2Header& h = out.header;
  if (auto err = ReadU32(r, "rdma_xid", &h.xid)) return *err;
  if (auto err = ReadU32(r, "rdma_vers", &h.vers)) return *err;
  // Reported before anything else is read: a peer speaking another version
  // gets RDMA2_ERR_VERS even if the rest of its header is short.
  if (h.vers != kRpcRdmaVersion2) {
    return Error(DecodeErrorKind::kBadVersion, 4,
                 absl::StrCat("rdma_vers is ", h.vers, "; this codec decodes ",
                              kRpcRdmaVersion2),
                 h.vers);
  }
  if (auto err = ReadU32(r, "rdma_credit", &h.credits)) return *err;
  const size_t proc_at = r.offset();
  uint32_t proc = 0;
  if (auto err = ReadU32(r, "rdma_proc", &proc)) return *err;

  if (auto err = DecodeV2Body(r, proc, proc_at, limits, &h.body)) {
    return *std::move(err);
  }
  out.header_length = r.offset();
  return out;
}

size_t V2EncodedSize(const V2Header& header) {
  const size_t fixed = 16;  // xid, vers, credit, proc
  return fixed +
         std::visit(Overloaded{
                        [](const V2Msg& m) {
                          return 8 + ChunkListsEncodedSize(m.chunks.lists);
                        },
                        [](const V2NoMsg& m) {
                          return 8 + ChunkListsEncodedSize(m.chunks.lists);
                        },
                        [](const V2Error& e) { return ErrorBodySize(e); },
                        [](const V2Optional& o) {
                          return 12 + XdrRoundUp(o.optinfo.size());
                        },
                        [](const V2ConnProp& c) {
                          return PropSetSize(c.start) + SubsetSize(c.nochg);
                        },
                        [](const V2ReqProp& q) { return PropSetSize(q.want); },
                        [](const V2ResProp& s) {
                          return SubsetSize(s.done) + SubsetSize(s.rejected) +
                                 PropSetSize(s.other);
                        },
                        [](const V2UpdProp& u) { return PropSetSize(u.now); },
                    },
                    header.body);
}

// Fails with INVALID_ARGUMENT for a header no §6.2 encoding can express (a
// msg_type or rpcrdma2_errcode out of range, an array with more than 2^32-1
// elements) and RESOURCE_EXHAUSTED when `buffer` is too small. rdma_vers is
// written as given, so an RDMA2_ERR_VERS reply can echo a peer's version.
// Property values are opaque at this layer and written as given.
absl::StatusOr<size_t> EncodeV2(const V2Header& header,
                                absl::Span<uint8_t> buffer) {
  XdrWriter w(buffer);
  absl::Status st = w.WriteUint32("rdma_xid", header.xid);
  if (st.ok()) st = w.WriteUint32("rdma_vers", header.vers);
  if (st.ok()) st = w.WriteUint32("rdma_credit", header.credits);
  if (st.ok()) {
    st = w.WriteUint32("rdma_proc", static_cast<uint32_t>(header.proc()));
  }
  if (!st.ok()) return st;
  st = std::visit(
      Overloaded{
          [&](const V2Msg& m) { return EncodeChunkListsV2(m.chunks, w); },
          [&](const V2NoMsg& m) { return EncodeChunkListsV2(m.chunks, w); },
          [&](const V2Error& e) { return EncodeErrorBody(e, w); },
          [&](const V2Optional& o) {
            absl::Status s = EncodeDirection("rdma_optdir", o.optdir, w);
            if (s.ok()) s = w.WriteUint32("rdma_opttype", o.opttype);
            if (s.ok()) s = w.WriteVarOpaque("rdma_optinfo", o.optinfo);
            return s;
          },
          [&](const V2ConnProp& c) {
            absl::Status s = EncodePropSet("rdma_start", c.start, w);
            if (s.ok()) s = EncodeSubset("rdma_nochg", c.nochg, w);
            return s;
          },
          [&](const V2ReqProp& q) {
            return EncodePropSet("rdma_want", q.want, w);
          },
          [&](const V2ResProp& s) {
            absl::Status t = EncodeSubset("rdma_done", s.done, w);
            if (t.ok()) t = EncodeSubset("rdma_rejected", s.rejected, w);
            if (t.ok()) t = EncodePropSet("rdma_other", s.other, w);
            return t;
          },
          [&](const V2UpdProp& u) {
            return EncodePropSet("rdma_now", u.now, w);
          },
      },
      header.body);
  if (!st.ok()) return st;
  return w.offset();
}

// Returns an empty vector for a header EncodeV2 rejects as inexpressible
// (a valid encoding is never empty: it has at least 16 octets).
std::vector<uint8_t> EncodeV2(const V2Header& header) {
  std::vector<uint8_t> out(V2EncodedSize(header));
  absl::StatusOr<size_t> n = EncodeV2(header, absl::MakeSpan(out));
  if (!n.ok()) return {};
  out.resize(*n);
  return out;
}

// §6.2.4: xid and vers are copied from the incoming header, proc is
// RDMA2_ERROR, credit is the connection's grant. A message too short to hold
// rdma_vers gets version 2 (the version this codec speaks); one too short to
// hold rdma_xid gets xid 0, as there is nothing to copy.
V2Header V2ErrorReplyFor(absl::Span<const uint8_t> bad_message,
                         const DecodeError& error, uint32_t credits,
                         uint32_t supported_low, uint32_t supported_high) {
  V2Header reply;
  if (bad_message.size() >= 4) reply.xid = LoadBigEndian32(bad_message.data());
  reply.vers = bad_message.size() >= 8 ? LoadBigEndian32(bad_message.data() + 4)
                                       : kRpcRdmaVersion2;
  reply.credits = credits;
  V2Error e;
  switch (error.kind) {
    case DecodeErrorKind::kBadVersion:
      e.code = V2ErrorCode::kVers;
      e.vers_low = supported_low;
      e.vers_high = supported_high;
      break;
    case DecodeErrorKind::kBadProc:
      e.code = V2ErrorCode::kInvalidProc;
      break;
    case DecodeErrorKind::kTooManyReadSegments:
      e.code = V2ErrorCode::kReadChunks;
      e.max_chunks = error.value;
      break;
    case DecodeErrorKind::kTooManyWriteChunks:
      e.code = V2ErrorCode::kWriteChunks;
      e.max_chunks = error.value;
      break;
    case DecodeErrorKind::kTooManySegments:
      e.code = V2ErrorCode::kSegments;
      e.max_segments = error.value;
      break;
    default:
      e.code = V2ErrorCode::kBadXdr;
      break;
  }
  reply.body = e;
  return reply;
}

}  // namespace rpcrdma::wire
