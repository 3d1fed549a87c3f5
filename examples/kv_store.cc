// A key/value store as an RPC program over rpcrdma: a Server and a Channel
// in one process, over the software fabric (or any URI given as argv[1]).
// docs/writing-an-rpc-program.md walks through it; ctest runs it
// (kv_store_example, label soft; kv_store.verbs over rdma:// in the VM).
//
// The program, in RFC 5531 language:
//
//   enum kvstat { KV_OK = 0, KV_NOENT = 1, KV_TOOBIG = 2 };
//   union kvget switch (kvstat status) {
//     case KV_OK: opaque value<>;        /* DDP-eligible */
//     default:    void;
//   };
//   program KV_PROG {
//     version KV_V1 {
//       void   KV_NULL(void) = 0;
//       kvstat KV_PUT(string key<255>, opaque value<>) = 1; /* value DDP */
//       kvget  KV_GET(string key<255>) = 2;
//     } = 1;
//   } = 0x20000123;
//   /* Served by the client, called by the server on the same connection
//      (RFC 8167 backchannel) after every KV_PUT. */
//   program KV_CB_PROG {
//     version KV_CB_V1 { void KV_CB_CHANGED(string key<255>) = 1; } = 1;
//   } = 0x40000123;
//
// The messages are encoded with the XDR codec (<rpcrdma/xdr.h>, RFC 4506)
// and RFC 5531 header codec (<rpcrdma/rpc_msg.h>) that librpcrdma installs:
// this file includes nothing but installed headers, and
// scripts/check-install.sh builds it against an installed tree alone.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"

namespace kv {

using rpcrdma::AcceptStat;
using rpcrdma::XdrReader;
using rpcrdma::XdrWriter;

constexpr uint32_t kProgram = 0x20000123;
constexpr uint32_t kCallbackProgram = 0x40000123;
constexpr uint32_t kVersion = 1;
constexpr uint32_t kNull = 0;
constexpr uint32_t kPut = 1;
constexpr uint32_t kGet = 2;
constexpr uint32_t kChanged = 1;

constexpr uint32_t kOk = 0;
constexpr uint32_t kNoEnt = 1;
constexpr uint32_t kTooBig = 2;

constexpr uint32_t kMaxKey = 255;
// The example's own bound on a value: well inside the largest call a
// server accepts by default (limits.max_call_size: 16 MiB plus a 4 KiB page
// for the headers).
constexpr uint32_t kMaxValue = 1 << 20;
// The largest reply stream the client accepts, without the value that
// travels in a write chunk: reply header, status, length word.
constexpr uint32_t kMaxReplySize = 1024;

// ------------------------------------------------------------------ XDR

std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t program,
                                uint32_t procedure) {
  rpcrdma::CallHeader header;
  header.xid = xid;
  header.program = program;
  header.version = kVersion;
  header.procedure = procedure;
  header.credential = rpcrdma::AuthNone();
  header.verifier = rpcrdma::AuthNone();
  std::vector<uint8_t> out;
  (void)rpcrdma::EncodeCallHeader(header, out);  // AUTH_NONE fits
  return out;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid,
                                 AcceptStat status = AcceptStat::kSuccess) {
  rpcrdma::ReplyHeader header;
  header.xid = xid;
  header.verifier = rpcrdma::AuthNone();
  header.accept_stat = status;
  std::vector<uint8_t> out;
  (void)rpcrdma::EncodeReplyHeader(header, out);
  return out;
}

// A reply that is only its header: an RFC 5531 refusal, or void results
// (more results are appended to its xdr).
rpcrdma::HandlerReply HeaderOnly(uint32_t xid,
                                 AcceptStat status = AcceptStat::kSuccess) {
  rpcrdma::HandlerReply reply;
  reply.xdr = ReplyHeader(xid, status);
  return reply;
}

// Append XDR items to a stream. An XdrWriter made over a vector appends
// (growing it), so its writes cannot fail: the statuses are dropped.
void AppendKey(std::vector<uint8_t>& stream, absl::string_view key) {
  (void)XdrWriter(&stream).WriteString("key", key);
}
void AppendUint32(std::vector<uint8_t>& stream, uint32_t value) {
  (void)XdrWriter(&stream).WriteUint32("u", value);
}

absl::StatusOr<std::string> ReadKey(XdrReader& reader) {
  std::string key;
  if (absl::Status s = reader.ReadString("key", kMaxKey, &key); !s.ok()) {
    return s;
  }
  return key;
}

// The results of a reply to `xid`, after its RFC 5531 header.
absl::StatusOr<XdrReader> Results(const rpcrdma::Reply& reply, uint32_t xid) {
  auto decoded = rpcrdma::DecodeReplyHeader(reply.xdr);
  if (!decoded.ok()) return decoded.status();
  if (decoded->header.xid != xid) {
    return absl::DataLossError("the reply answers another XID");
  }
  if (absl::Status s = rpcrdma::ReplyStatus(decoded->header); !s.ok()) {
    return s;
  }
  return XdrReader(
      absl::MakeConstSpan(reply.xdr).subspan(decoded->body_offset));
}

// --------------------------------------------------------------- server

class Store {
 public:
  // Serves calls on the Server's loop thread.
  void Serve(rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
    auto decoded = rpcrdma::DecodeCallHeader(call.message);
    if (!decoded.ok()) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kGarbageArgs));
      return;
    }
    const rpcrdma::CallHeader& header = decoded->header;
    if (header.program != kProgram || header.version != kVersion) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kProgUnavail));
      return;
    }
    // The complete call: a DDP-eligible argument sent as a read chunk has
    // been pulled and put back at its position.
    XdrReader args(
        absl::MakeConstSpan(call.message).subspan(decoded->body_offset));
    switch (header.procedure) {
      case kNull:
        (void)responder.Send(HeaderOnly(call.xid));
        return;
      case kPut:
        return Put(call, args, std::move(responder));
      case kGet:
        return Get(call, args, std::move(responder));
      default:
        (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kProcUnavail));
    }
  }

  void set_server(rpcrdma::Server* server) { server_ = server; }

 private:
  void Put(const rpcrdma::IncomingCall& call, XdrReader& args,
           rpcrdma::Responder responder) {
    absl::StatusOr<std::string> key = ReadKey(args);
    absl::Span<const uint8_t> value;
    if (!key.ok() || !args.ReadVarOpaque("value", kMaxValue, &value).ok()) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kGarbageArgs));
      return;
    }
    values_[*key].assign(value.begin(), value.end());
    rpcrdma::HandlerReply reply = HeaderOnly(call.xid);
    AppendUint32(reply.xdr, kOk);
    (void)responder.Send(std::move(reply));
    NotifyChanged(call.connection, *key);
  }

  void Get(const rpcrdma::IncomingCall& call, XdrReader& args,
           rpcrdma::Responder responder) {
    absl::StatusOr<std::string> key = ReadKey(args);
    if (!key.ok()) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kGarbageArgs));
      return;
    }
    rpcrdma::HandlerReply reply = HeaderOnly(call.xid);
    auto it = values_.find(*key);
    if (it == values_.end()) {
      AppendUint32(reply.xdr, kNoEnt);
    } else if (!call.write_chunk_capacities.empty() &&
               it->second.size() > call.write_chunk_capacities[0]) {
      // The client's result buffer is too small: say so rather than let
      // the transport answer ERR_CHUNK.
      AppendUint32(reply.xdr, kTooBig);
    } else {
      AppendUint32(reply.xdr, kOk);
      // opaque value<>: the length word stays in the stream, the octets
      // are a reply item at the position after it. They go into the
      // client's write chunk, or inline when it offered none.
      AppendUint32(reply.xdr, static_cast<uint32_t>(it->second.size()));
      reply.results.push_back(
          {static_cast<uint32_t>(reply.xdr.size()), it->second});
    }
    (void)responder.Send(std::move(reply));
  }

  // KV_CB_CHANGED(key) to the client on `connection`, over the backchannel.
  void NotifyChanged(rpcrdma::ConnectionId connection, const std::string& key) {
    rpcrdma::CallRequest request;
    request.xdr = CallHeader(next_callback_xid_++, kCallbackProgram, kChanged);
    AppendKey(request.xdr, key);
    request.max_reply_size = kMaxReplySize;
    server_->Call(connection, std::move(request),
                  [key](absl::StatusOr<rpcrdma::Reply> reply) {
                    if (!reply.ok()) {
                      std::fprintf(stderr, "KV_CB_CHANGED %s: %s\n",
                                   key.c_str(),
                                   reply.status().ToString().c_str());
                    }
                  });
  }

  rpcrdma::Server* server_ = nullptr;
  std::map<std::string, std::vector<uint8_t>> values_;
  uint32_t next_callback_xid_ = 1;
};

// --------------------------------------------------------------- client

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      absl::string_view uri) {
    auto client = std::unique_ptr<Client>(new Client());
    rpcrdma::config::TransportConfig config;
    config.mutable_timeouts()->set_connect_ms(10000);
    Client* self = client.get();
    auto channel = rpcrdma::Channel::Create(
        uri, config,
        [self](rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
          self->OnCallback(std::move(call), std::move(responder));
        });
    if (!channel.ok()) return channel.status();
    client->channel_ = std::move(*channel);
    return client;
  }

  // KV_PUT: the value is DDP-eligible; above the inline threshold the
  // server pulls it from `value` with RDMA Read, without a copy here.
  absl::Status Put(absl::string_view key, absl::Span<const uint8_t> value) {
    const uint32_t xid = NextXid();
    rpcrdma::CallRequest request;
    request.xdr = CallHeader(xid, kProgram, kPut);
    AppendKey(request.xdr, key);
    AppendUint32(request.xdr, static_cast<uint32_t>(value.size()));
    request.arguments.push_back(
        {static_cast<uint32_t>(request.xdr.size()), value});
    request.max_reply_size = kMaxReplySize;
    request.deadline = std::chrono::steady_clock::now() + kDeadline;
    // Storing the same value twice does no harm: let the Channel send the
    // call again, with the same XID, after a reconnect.
    request.retry_on_reconnect = true;
    absl::StatusOr<rpcrdma::Reply> reply =
        channel_->Call(std::move(request)).get();
    if (!reply.ok()) return reply.status();
    absl::StatusOr<XdrReader> results = Results(*reply, xid);
    if (!results.ok()) return results.status();
    uint32_t status = 0;
    if (absl::Status s = results->ReadUint32("kvstat", &status); !s.ok()) {
      return s;
    }
    return status == kOk ? absl::OkStatus()
                         : absl::InternalError(absl::StrCat("kvstat ", status));
  }

  // KV_GET into `buffer`, which becomes the call's write chunk: the server
  // writes the value there with RDMA Write. Returns the value's length.
  absl::StatusOr<uint32_t> Get(absl::string_view key,
                               absl::Span<uint8_t> buffer) {
    const uint32_t xid = NextXid();
    rpcrdma::CallRequest request;
    request.xdr = CallHeader(xid, kProgram, kGet);
    AppendKey(request.xdr, key);
    request.results.push_back(buffer);
    request.max_reply_size = kMaxReplySize;
    request.deadline = std::chrono::steady_clock::now() + kDeadline;
    absl::StatusOr<rpcrdma::Reply> reply =
        channel_->Call(std::move(request)).get();
    if (!reply.ok()) return reply.status();
    absl::StatusOr<XdrReader> results = Results(*reply, xid);
    if (!results.ok()) return results.status();
    uint32_t status = 0;
    uint32_t length = 0;
    if (!results->ReadUint32("kvstat", &status).ok()) {
      return absl::DataLossError("no kvstat");
    }
    if (status == kNoEnt) return absl::NotFoundError(std::string(key));
    if (status != kOk)
      return absl::InternalError(absl::StrCat("kvstat ", status));
    if (!results->ReadUint32("length", &length).ok() ||
        reply->result_lengths.size() != 1 ||
        reply->result_lengths[0] != length) {
      return absl::DataLossError("the value did not arrive in the buffer");
    }
    return length;
  }

  // Starts a KV_NULL and cancels it at once: the completion is CANCELLED,
  // or OK when the reply won the race.
  absl::Status NullCancelled() {
    rpcrdma::CallRequest request;
    request.xdr = CallHeader(NextXid(), kProgram, kNull);
    request.max_reply_size = kMaxReplySize;
    std::promise<absl::Status> done;
    rpcrdma::Channel::CallId id = channel_->Call(
        std::move(request), [&done](absl::StatusOr<rpcrdma::Reply> reply) {
          done.set_value(reply.status());
        });
    channel_->Cancel(id);
    return done.get_future().get();
  }

  // Waits until `count` KV_CB_CHANGED calls have arrived.
  std::vector<std::string> WaitForChanges(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_cv_.wait_for(lock, kDeadline,
                         [&] { return changed_.size() >= count; });
    return changed_;
  }

  rpcrdma::Counters counters() const { return channel_->counters(); }

 private:
  static constexpr std::chrono::seconds kDeadline{10};

  Client() = default;

  uint32_t NextXid() { return next_xid_++; }

  // Backward calls from the server, on the Channel's loop thread.
  void OnCallback(rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
    auto decoded = rpcrdma::DecodeCallHeader(call.message);
    if (!decoded.ok() || decoded->header.program != kCallbackProgram ||
        decoded->header.procedure != kChanged) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kProcUnavail));
      return;
    }
    XdrReader args(
        absl::MakeConstSpan(call.message).subspan(decoded->body_offset));
    absl::StatusOr<std::string> key = ReadKey(args);
    if (!key.ok()) {
      (void)responder.Send(HeaderOnly(call.xid, AcceptStat::kGarbageArgs));
      return;
    }
    (void)responder.Send(HeaderOnly(call.xid));
    std::lock_guard<std::mutex> lock(mutex_);
    changed_.push_back(*key);
    changed_cv_.notify_all();
  }

  // XIDs must differ among calls in flight; start somewhere unlikely to
  // repeat a previous run's, as ONC RPC clients do.
  std::atomic<uint32_t> next_xid_{static_cast<uint32_t>(
      std::chrono::steady_clock::now().time_since_epoch().count())};
  std::mutex mutex_;
  std::condition_variable changed_cv_;
  std::vector<std::string> changed_;
  // Last, so that it is destroyed first: its loop thread calls OnCallback.
  std::unique_ptr<rpcrdma::Channel> channel_;
};

}  // namespace kv

int main(int argc, char** argv) {
  const std::string uri =
      argc > 1 ? argv[1] : absl::StrCat("soft+unix://@kv-store-", getpid());

  kv::Store store;
  rpcrdma::config::TransportConfig config;
  auto server = rpcrdma::Server::Create(
      uri, config,
      [&store](rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
        store.Serve(std::move(call), std::move(responder));
      });
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  store.set_server(server->get());

  auto client = kv::Client::Connect((*server)->uri());
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().ToString().c_str());
    return 1;
  }

  bool ok = true;
  auto check = [&ok](const char* what, bool good, const absl::Status& status) {
    std::printf("%-36s %s\n", what,
                good ? "ok" : ("FAILED " + status.ToString()).c_str());
    ok = ok && good;
  };

  // A small value travels inline; a large one as a read chunk (PUT) and a
  // write chunk (GET).
  const std::vector<uint8_t> small = {'h', 'e', 'l', 'l', 'o'};
  std::vector<uint8_t> large(1000000);
  for (size_t i = 0; i < large.size(); ++i) {
    large[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  }
  absl::Status put = (*client)->Put("greeting", small);
  check("KV_PUT greeting (5 octets)", put.ok(), put);
  put = (*client)->Put("blob", large);
  check("KV_PUT blob (1000000 octets)", put.ok(), put);

  std::vector<uint8_t> buffer(kv::kMaxValue);
  absl::StatusOr<uint32_t> got = (*client)->Get("blob", absl::MakeSpan(buffer));
  check("KV_GET blob",
        got.ok() && *got == large.size() &&
            std::equal(large.begin(), large.end(), buffer.begin()),
        got.status());
  got = (*client)->Get("greeting", absl::MakeSpan(buffer));
  check("KV_GET greeting",
        got.ok() && *got == small.size() &&
            std::equal(small.begin(), small.end(), buffer.begin()),
        got.status());
  got = (*client)->Get("missing", absl::MakeSpan(buffer));
  check("KV_GET missing -> NOT_FOUND",
        got.status().code() == absl::StatusCode::kNotFound, got.status());

  absl::Status cancelled = (*client)->NullCancelled();
  check("KV_NULL cancelled", cancelled.ok() || absl::IsCancelled(cancelled),
        cancelled);

  const std::vector<std::string> changes = (*client)->WaitForChanges(2);
  check("KV_CB_CHANGED x2 (backchannel)",
        changes == std::vector<std::string>{"greeting", "blob"},
        absl::OkStatus());

  const rpcrdma::Counters c = (*client)->counters();
  std::printf(
      "client counters: %llu calls, %llu with read chunks, %llu write "
      "chunks, %llu backward calls\n",
      static_cast<unsigned long long>(c.calls),
      static_cast<unsigned long long>(c.read_chunk_calls),
      static_cast<unsigned long long>(c.write_chunks),
      static_cast<unsigned long long>(c.backward_calls));
  const bool paths =
      c.read_chunk_calls == 1 && c.write_chunks == 3 && c.backward_calls == 2;
  check("large value moved by RDMA Read/Write", paths, absl::OkStatus());
  std::printf("%s\n", ok && paths ? "kv_store passed" : "kv_store FAILED");
  return ok && paths ? 0 : 1;
}
