#include "interop/xdr_v2/v2_live_session.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "rpcrdma/version_two.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::test {
namespace {

// Calls are NFSv3 NULL (RFC 1813), the program and procedure Wireshark's
// RPC dissector decodes without parsing arguments. The reply carries the
// call's octets after its header, or, for the XIDs below, <argument>
// octets.
constexpr uint32_t kProgram = 100003;
constexpr uint32_t kBulkXid = 5, kInlineReplyXid = 7;
constexpr uint32_t kType = 0x4C495645;  // "LIVE", an optional type
constexpr uint32_t kServerProp = kFirstExperimentalPropertyId + 0x53;
constexpr uint32_t kClientProp = kFirstExperimentalPropertyId + 0x43;

// RFC 5531 call header, AUTH_NONE: 40 octets.
std::vector<uint8_t> CallHeader(uint32_t xid) {
  std::vector<uint8_t> out;
  XdrWriter header(&out);  // appending to a vector: no write fails
  for (uint32_t w : {xid, 0u, 2u, kProgram, 3u, 0u, 0u, 0u, 0u, 0u}) {
    (void)header.WriteUint32("call header", w);
  }
  return out;
}

// Echo or bulk, with a 5000-octet result for a write chunk offered.
HandlerReply Answer(const IncomingCall& call) {
  HandlerReply reply;
  XdrWriter out(&reply.xdr);
  for (uint32_t w : {call.xid, 1u, 0u, 0u, 0u, 0u}) {
    (void)out.WriteUint32("reply header", w);
  }
  absl::Span<const uint8_t> m = call.message;
  if (call.xid == kBulkXid || call.xid == kInlineReplyXid) {
    // The word after the call header is how many octets to answer with
    // (none when the call ends before it).
    const uint32_t length = m.size() < 44 ? 0 : LoadBigEndian32(m.data() + 40);
    reply.xdr.resize(reply.xdr.size() + length, 0x6B);
  } else if (m.size() > 40) {
    reply.xdr.insert(reply.xdr.end(), m.begin() + 40, m.end());
  }
  if (!call.write_chunk_capacities.empty()) {
    (void)out.WriteUint32("result length", 5000);
    reply.results.push_back({static_cast<uint32_t>(reply.xdr.size()),
                             std::vector<uint8_t>(5000, 0x5A)});
  }
  return reply;
}

// The optional handler of both sides: the info reversed, the payload
// echoed; info {0xEE} makes it fail (RDMA2_ERR_SYSTEM).
absl::StatusOr<OptionalMessage> HandleOptional(ConnectionId,
                                               const OptionalMessage& m) {
  if (m.info == std::vector<uint8_t>{0xEE}) {
    return absl::InternalError("the live session's handler fails");
  }
  return OptionalMessage{m.type, {m.info.rbegin(), m.info.rend()}, m.payload};
}

// Grants values below 10, offers 9 for larger ones.
std::optional<std::vector<uint8_t>> Decide(ConnectionId,
                                           const TransportProperty& wanted) {
  if (!wanted.value.empty() && wanted.value[0] >= 10) {
    return std::vector<uint8_t>{9};
  }
  return wanted.value;
}

absl::Status Step(absl::string_view what, absl::Status s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

template <typename T>
absl::Status Step(absl::string_view what, const absl::StatusOr<T>& s) {
  return Step(what, s.status());
}

absl::Status Expect(absl::string_view what, bool holds) {
  return holds ? absl::OkStatus()
               : absl::InternalError(absl::StrCat(what, ": not as expected"));
}

}  // namespace

const std::set<std::string>& V2LiveSessionProcs() {
  static const auto* procs = new std::set<std::string>{
      "RDMA2_MSG",      "RDMA2_NOMSG",   "RDMA2_ERROR",   "RDMA2_OPTIONAL",
      "RDMA2_CONNPROP", "RDMA2_REQPROP", "RDMA2_RESPROP", "RDMA2_UPDPROP"};
  return *procs;
}

const std::set<std::string>& V2LiveSessionErrors() {
  static const auto* errors =
      new std::set<std::string>{"RDMA2_ERR_INVALID_OPTION", "RDMA2_ERR_SYSTEM"};
  return *errors;
}

std::string V2CaptureFromEnvironment() {
  const char* path = std::getenv("RPCRDMA_V2_CAPTURE");
  return path == nullptr ? "" : path;
}

absl::Status RunV2LiveSession(const std::string& listen_uri,
                              const std::string& capture_path) {
  config::TransportConfig config;
  config.set_version_policy(config::TransportConfig::V2);
  config.mutable_inline_threshold()->set_send(16384);
  config.mutable_inline_threshold()->set_receive_grantable(16384);
  config::TransportConfig server_config = config;
  server_config.set_capture_path(capture_path);

  std::atomic<ConnectionId> connection{ConnectionId()};
  ServerOptions server_options;
  server_options.version_two.properties = {{kServerProp, {1}}};
  server_options.version_two.optional_handlers[kType] = HandleOptional;
  server_options.version_two.property_decider = Decide;
  auto server = Server::Create(
      listen_uri, server_config,
      [&connection](IncomingCall call, Responder responder) {
        connection = call.connection;
        (void)responder.Send(Answer(call));
      },
      std::move(server_options));
  if (!server.ok()) return Step("Server::Create", server.status());

  ChannelOptions channel_options;
  channel_options.backward_handler = [](IncomingCall call, Responder r) {
    (void)r.Send(Answer(call));
  };
  channel_options.version_two.properties = {{kClientProp, {2}}};
  channel_options.version_two.optional_handlers[kType] = HandleOptional;
  channel_options.version_two.property_decider = Decide;
  auto channel =
      Channel::Create((*server)->uri(), config, std::move(channel_options));
  if (!channel.ok()) return Step("Channel::Create", channel.status());
  Channel& c = **channel;
  Server& s = **server;
  if (c.connection_info().version != 2) {
    return absl::FailedPreconditionError("the connection is not version two");
  }

  // RDMA2_MSG and RDMA2_NOMSG in every chunk form (§4.2).
  std::vector<uint8_t> bulk(20000, 0x33), result(8192);
  std::vector<CallRequest> calls(5);
  calls[0].xdr = CallHeader(1);  // inline both ways
  calls[1].xdr = CallHeader(2);  // a read chunk, a reply chunk back
  (void)XdrWriter(&calls[1].xdr)
      .WriteUint32("argument length", static_cast<uint32_t>(bulk.size()));
  calls[1].arguments.push_back(
      {static_cast<uint32_t>(calls[1].xdr.size()), bulk});
  calls[2].xdr = CallHeader(3);  // a long call
  calls[2].xdr.resize(calls[2].xdr.size() + 6000, 0x44);
  calls[3].xdr = CallHeader(4);  // a write chunk
  calls[3].results.push_back(absl::MakeSpan(result));
  calls[4].xdr = CallHeader(kBulkXid);  // a long reply
  (void)XdrWriter(&calls[4].xdr).WriteUint32("reply length", 10000);
  for (CallRequest& call : calls) {
    call.max_reply_size = 30000;
    if (absl::Status st = Step("call", c.BlockingCall(std::move(call)));
        !st.ok()) {
      return st;
    }
  }
  // A backward call (RFC 8167 semantics in version two).
  CallRequest backward;
  backward.xdr = CallHeader(6);
  backward.max_reply_size = 1024;
  std::future<absl::StatusOr<Reply>> back = s.Call(connection, backward);
  if (back.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    return absl::DeadlineExceededError("backward call: no reply");
  }
  if (absl::Status st = Step("backward call", back.get()); !st.ok()) return st;

  // §5.3.2 / §5.3.3 and §5.3.4, both roles; §4.1 both ways; §6.2.4.
  std::vector<absl::Status> steps;
  steps.push_back(
      Step("RequestPeerReceiveSize", c.RequestPeerReceiveSize(8192)));
  auto granted = c.RequestPeerProperties({{kServerProp, {5}}});
  steps.push_back(Step("RequestPeerProperties", granted));
  steps.push_back(Expect("a granted property",
                         granted.ok() && granted->done == std::vector{true}));
  auto partly = c.RequestPeerProperties({{kServerProp, {20}}});
  steps.push_back(Step("RequestPeerProperties", partly));
  steps.push_back(Expect("a partly granted property",
                         partly.ok() && partly->other.size() == 1));
  steps.push_back(
      Step("Channel::UpdateReceiveSize", c.UpdateReceiveSize(16384)));
  steps.push_back(Step("Channel::UpdateProperties",
                       c.UpdateProperties({{kClientProp, {3}}})));
  steps.push_back(Step("Server::UpdateReceiveSize",
                       s.UpdateReceiveSize(connection, 16384)));
  steps.push_back(
      Step("Server::RequestPeerProperties",
           s.RequestPeerProperties(connection, {{kClientProp, {7}}})));
  auto echoed = c.SendOptional({kType, {1, 2, 3}, {9, 9}});
  steps.push_back(Step("Channel::SendOptional", echoed));
  steps.push_back(
      Expect("the optional answer",
             echoed.ok() && echoed->info == std::vector<uint8_t>{3, 2, 1}));
  steps.push_back(Step("Server::SendOptional",
                       s.SendOptional(connection, {kType, {4, 5}, {}})));
  steps.push_back(Expect(
      "RDMA2_ERR_INVALID_OPTION",
      absl::IsUnimplemented(c.SendOptional({kType + 1, {}, {}}).status())));
  steps.push_back(
      Expect("RDMA2_ERR_SYSTEM",
             absl::IsInternal(c.SendOptional({kType, {0xEE}, {}}).status())));
  // After the update a 10000-octet reply comes inline.
  CallRequest inline_reply;
  inline_reply.xdr = CallHeader(kInlineReplyXid);
  (void)XdrWriter(&inline_reply.xdr).WriteUint32("reply length", 10000);
  inline_reply.max_reply_size = 10100;
  const Counters before = c.counters();
  steps.push_back(
      Step("call after the update", c.BlockingCall(std::move(inline_reply))));
  steps.push_back(Expect("an inline reply after the update",
                         c.counters().long_replies == before.long_replies));
  for (absl::Status& st : steps) {
    if (!st.ok()) return st;
  }
  channel->reset();
  server->reset();  // closes the capture
  return absl::OkStatus();
}

}  // namespace rpcrdma::test
