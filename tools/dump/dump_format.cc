#include "tools/dump/dump_format.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "bridge/wire/thrift_xdr.h"
#include "oncrpc/rpc_peek.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;
using wire::ChunkLists;
using wire::Segment;
using wire::WriteChunk;

std::string Str(absl::string_view s) { return std::string(s); }

const char* DirectionName(wire::MsgDirection d) {
  return d == wire::MsgDirection::kCall ? "CALL" : "REPLY";
}

json SegmentJson(const Segment& s) {
  return json{{"handle", s.handle}, {"length", s.length}, {"offset", s.offset}};
}

json ChunkJson(const WriteChunk& chunk) {
  json a = json::array();
  for (const Segment& s : chunk) a.push_back(SegmentJson(s));
  return a;
}

void AddChunkLists(const ChunkLists& lists, json& j) {
  json reads = json::array();
  for (const wire::ReadSegment& r : lists.reads) {
    json s = SegmentJson(r.target);
    s["position"] = r.position;
    reads.push_back(std::move(s));
  }
  json writes = json::array();
  for (const WriteChunk& c : lists.writes) writes.push_back(ChunkJson(c));
  j["reads"] = std::move(reads);
  j["writes"] = std::move(writes);
  j["reply"] = lists.reply ? ChunkJson(*lists.reply) : json(nullptr);
}

// The RPC message that follows an RDMA_MSG / RDMA_MSGP / RDMA2_MSG header.
void AddRpc(absl::Span<const uint8_t> message, size_t header_length,
            ProtobufDecoder* protobuf, json& j) {
  if (header_length > message.size()) return;
  std::optional<oncrpc::RpcPeek> peek =
      oncrpc::PeekRpcMessage(message.subspan(header_length));
  if (!peek) return;
  json rpc{{"xid", peek->xid},
           {"direction",
            peek->type == oncrpc::RpcMsgType::kCall ? "CALL" : "REPLY"}};
  if (peek->call) rpc["program"] = peek->call->program;
  // The Thrift bridge's calls (bridge/README.md): the procedure, and the
  // Thrift method and sequence id the call carries.
  if (std::optional<thrift::wire::CallPeek> thrift =
          thrift::wire::PeekCall(message.subspan(header_length))) {
    rpc["procedure"] = thrift::wire::ProcedureName(thrift->procedure);
    if (thrift->info) {
      // The name is whatever octets the peer sent: nlohmann::json throws
      // on a string that is not UTF-8 when it is printed.
      rpc["thrift"] =
          json{{"method", EscapeOctets(thrift->info->name)},
               {"seqid", thrift->info->seqid},
               {"type", thrift::wire::MessageTypeName(thrift->info->type)}};
    }
  }
  if (protobuf != nullptr) {
    if (std::optional<json> p =
            protobuf->Decode(message.subspan(header_length))) {
      rpc["protobuf"] = std::move(*p);
    }
  }
  j["rpc"] = std::move(rpc);
}

json WordsJson(const wire::PropSubset& words) {
  json a = json::array();
  for (uint32_t w : words) a.push_back(w);
  return a;
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §5.2: RBSIZ is a uint32, BRS an
// enum; a zero-length value stands for the Table 1 default (§5.1.1).
json PropsJson(const wire::PropSet& set) {
  json a = json::array();
  for (const wire::PropVal& p : set) {
    json o{{"which", p.which}, {"length", p.data.size()}};
    std::optional<uint32_t> word;
    if (p.data.size() == 4) word = LoadBigEndian32(p.data.data());
    if (p.which == wire::kPropIdRbsiz) {
      o["name"] = "RBSIZ";
      if (p.data.empty()) {
        o["value"] = wire::kDefaultRbsiz;
      } else if (word) {
        o["value"] = *word;
      }
    } else if (p.which == wire::kPropIdBrs) {
      o["name"] = "BRS";
      uint32_t brs = static_cast<uint32_t>(wire::kDefaultBrs);
      if (word) brs = *word;
      if (p.data.empty() || word) {
        static constexpr std::array<const char*, 3> kBrs = {"NONE", "INLINE",
                                                            "GENL"};
        if (brs < kBrs.size()) {
          o["value"] = kBrs[brs];
        } else {
          o["value"] = brs;
        }
      }
    } else {
      o["name"] = nullptr;
    }
    a.push_back(std::move(o));
  }
  return a;
}

json FormatV1(absl::Span<const uint8_t> message, const wire::V1Decoded& d,
              ProtobufDecoder* protobuf, json j) {
  const wire::V1Header& h = d.header;
  j["xid"] = h.xid;
  j["vers"] = h.vers;
  j["credits"] = h.credits;
  j["proc"] = Str(wire::V1ProcName(h.proc()));
  if (const auto* msgp = std::get_if<wire::V1Msgp>(&h.body)) {
    j["align"] = msgp->align;
    j["thresh"] = msgp->thresh;
  }
  if (const ChunkLists* lists = h.chunks()) AddChunkLists(*lists, j);
  if (const auto* e = std::get_if<wire::V1Error>(&h.body)) {
    j["err"] = Str(wire::V1ErrorCodeName(e->code));
    if (e->code == wire::V1ErrorCode::kVers) {
      j["vers_low"] = e->vers_low;
      j["vers_high"] = e->vers_high;
    }
  }
  if (h.proc() == wire::V1Proc::kMsg || h.proc() == wire::V1Proc::kMsgp) {
    AddRpc(message, d.header_length, protobuf, j);
  }
  return j;
}

json FormatV2(absl::Span<const uint8_t> message, const wire::V2Decoded& d,
              ProtobufDecoder* protobuf, json j) {
  const wire::V2Header& h = d.header;
  j["xid"] = h.xid;
  j["vers"] = h.vers;
  j["credits"] = h.credits;
  j["proc"] = Str(wire::V2ProcName(h.proc()));
  if (const wire::V2ChunkLists* c = h.chunks()) {
    j["direction"] = DirectionName(c->direction);
    j["inv_handle"] = c->inv_handle;
    AddChunkLists(c->lists, j);
  }
  std::visit(
      [&j](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::V2Error>) {
          j["err"] = Str(wire::V2ErrorCodeName(body.code));
          switch (body.code) {
            case wire::V2ErrorCode::kVers:
              j["vers_low"] = body.vers_low;
              j["vers_high"] = body.vers_high;
              break;
            case wire::V2ErrorCode::kReadChunks:
            case wire::V2ErrorCode::kWriteChunks:
              j["max_chunks"] = body.max_chunks;
              break;
            case wire::V2ErrorCode::kSegments:
              j["max_segments"] = body.max_segments;
              break;
            case wire::V2ErrorCode::kWriteResource:
              j["chunk_index"] = body.chunk_index;
              j["length_needed"] = body.length_needed;
              break;
            case wire::V2ErrorCode::kReplyResource:
              j["length_needed"] = body.length_needed;
              break;
            default:
              break;
          }
        } else if constexpr (std::is_same_v<T, wire::V2Optional>) {
          j["optdir"] = DirectionName(body.optdir);
          j["opttype"] = body.opttype;
          j["optinfo_length"] = body.optinfo.size();
        } else if constexpr (std::is_same_v<T, wire::V2ConnProp>) {
          j["props"] = PropsJson(body.start);
          j["nochg"] = WordsJson(body.nochg);
        } else if constexpr (std::is_same_v<T, wire::V2ReqProp>) {
          j["props"] = PropsJson(body.want);
        } else if constexpr (std::is_same_v<T, wire::V2ResProp>) {
          j["done"] = WordsJson(body.done);
          j["rejected"] = WordsJson(body.rejected);
          j["props"] = PropsJson(body.other);
        } else if constexpr (std::is_same_v<T, wire::V2UpdProp>) {
          j["props"] = PropsJson(body.now);
        }
      },
      h.body);
  if (h.proc() == wire::V2Proc::kMsg) {
    AddRpc(message, d.header_length, protobuf, j);
  }
  return j;
}

// A dump shows what is on the wire, so it takes every header the XDR allows
// rather than applying a receiver's configured limits. Each count is still
// checked against the octets that remain before anything is allocated.
constexpr uint32_t kNoLimit = std::numeric_limits<uint32_t>::max();
constexpr wire::ChunkLimits kWideChunkLimits{kNoLimit, kNoLimit, kNoLimit};
constexpr wire::V2Limits kWideV2Limits{kWideChunkLimits, kNoLimit, kNoLimit,
                                       kNoLimit, kNoLimit};

// Key order for FormatLine; keys not listed follow in name order.
constexpr std::string_view kKeyOrder[] = {
    "frame", "error", "xid", "vers", "credits", "proc", "direction",
    "inv_handle", "invalidate", "align", "thresh", "reads", "writes", "reply",
    "err", "vers_low", "vers_high", "max_chunks", "max_segments", "chunk_index",
    "length_needed", "optdir", "opttype", "optinfo_length", "props", "nochg",
    "done", "rejected", "rpc",
    // Inside list entries and "rpc".
    "position", "which", "name", "value", "handle", "length", "offset",
    "program", "service", "procedure", "thrift", "method", "seqid", "type",
    // Inside "protobuf".
    "protobuf", "streaming", "stream_id", "seq", "reply_stat", "accept_stat",
    "item", "code", "message", "timeout_ms", "metadata", "message_length",
    "bulk"};

size_t KeyRank(const std::string& key) {
  const auto* it = std::find(std::begin(kKeyOrder), std::end(kKeyOrder), key);
  return static_cast<size_t>(it - std::begin(kKeyOrder));
}

// Each key is ranked once, not at every comparison of the sort: a line is
// formatted per captured message, and a message may carry many chunks.
nlohmann::ordered_json Ordered(const json& j) {
  if (j.is_object()) {
    std::vector<std::pair<size_t, json::const_iterator>> members;
    members.reserve(j.size());
    for (auto it = j.begin(); it != j.end(); ++it) {
      members.emplace_back(KeyRank(it.key()), it);
    }
    std::stable_sort(
        members.begin(), members.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& [rank, it] : members) o[it.key()] = Ordered(it.value());
    return o;
  }
  if (j.is_array()) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const json& e : j) a.push_back(Ordered(e));
    return a;
  }
  return nlohmann::ordered_json(j);
}

// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629 §4
// UTF8-char), or 0 when there is none.
size_t Utf8SequenceLength(absl::string_view s) {
  auto at = [&s](size_t i) { return static_cast<uint8_t>(s[i]); };
  auto continuation = [&](size_t i, uint8_t low = 0x80, uint8_t high = 0xbf) {
    return i < s.size() && at(i) >= low && at(i) <= high;
  };
  const uint8_t lead = at(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    // No overlong forms (E0 A0..BF) and no surrogates (ED 80..9F).
    const uint8_t low = lead == 0xe0 ? 0xa0 : 0x80;
    const uint8_t high = lead == 0xed ? 0x9f : 0xbf;
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    // No overlong forms (F0 90..BF) and nothing past U+10FFFF (F4 80..8F).
    const uint8_t low = lead == 0xf0 ? 0x90 : 0x80;
    const uint8_t high = lead == 0xf4 ? 0x8f : 0xbf;
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4
                                                                            : 0;
  }
  return 0;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsRpcRdmaCandidate(absl::Span<const uint8_t> message) {
  if (message.size() < 8) return false;
  uint32_t vers = LoadBigEndian32(message.data() + 4);
  return vers == wire::kRpcRdmaVersion1 || vers == wire::kRpcRdmaVersion2;
}

std::optional<json> FormatMessage(absl::Span<const uint8_t> message,
                                  const MessageContext& context,
                                  ProtobufDecoder* protobuf) {
  if (!IsRpcRdmaCandidate(message)) return std::nullopt;
  json j = json::object();
  j["frame"] = context.frame;
  const uint32_t vers = LoadBigEndian32(message.data() + 4);
  if (vers == wire::kRpcRdmaVersion1) {
    wire::DecodeResult<wire::V1Decoded> d =
        wire::DecodeV1(message, kWideChunkLimits);
    if (!d.ok()) {
      return json{{"frame", context.frame},
                  {"error", Str(d.status().message())}};
    }
    j = FormatV1(message, *d, protobuf, std::move(j));
  } else {
    wire::DecodeResult<wire::V2Decoded> d =
        wire::DecodeV2(message, kWideV2Limits);
    if (!d.ok()) {
      return json{{"frame", context.frame},
                  {"error", Str(d.status().message())}};
    }
    j = FormatV2(message, *d, protobuf, std::move(j));
  }
  if (context.invalidate) j["invalidate"] = *context.invalidate;
  return j;
}

std::string FormatLine(const json& object, bool pretty) {
  // Every string FormatMessage puts in is valid UTF-8 (EscapeOctets);
  // should one ever not be, a line with U+FFFD in it is still better than
  // the type_error nlohmann::json would throw.
  return Ordered(object).dump(pretty ? 2 : -1, ' ', /*ensure_ascii=*/false,
                              nlohmann::json::error_handler_t::replace);
}

std::string EscapeOctets(absl::string_view octets) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(octets.size());
  while (!octets.empty()) {
    const uint8_t c = static_cast<uint8_t>(octets.front());
    const size_t valid = Utf8SequenceLength(octets);
    if (valid == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      octets.remove_prefix(1);
      continue;
    }
    if (c == '\\') out += '\\';
    out.append(octets.data(), valid);
    octets.remove_prefix(valid);
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> ParseHex(absl::string_view text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start != absl::string_view::npos && text.size() >= start + 2 &&
      text[start] == '0' &&
      (text[start + 1] == 'x' || text[start + 1] == 'X')) {
    text.remove_prefix(start + 2);
  }
  std::vector<uint8_t> out;
  int high = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ':') {
      continue;
    }
    int v = HexDigit(c);
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", absl::string_view(&text[i], 1), "' at position ", i,
                       " is not a hex digit"));
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  if (high >= 0) {
    return absl::InvalidArgumentError("odd number of hex digits");
  }
  return out;
}

}  // namespace rpcrdma::dump
