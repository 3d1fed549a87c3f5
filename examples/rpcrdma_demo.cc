// RPC-over-RDMA in two processes: this program starts a copy of itself as
// the server, connects to it as the client, makes a few small calls and
// moves a megabyte each way through RDMA chunks, has the server call the
// client back over the same connection (RFC 8167 backchannel), checks every
// byte, and prints which transport paths each call took plus both sides'
// counters. The
// client also writes a capture of every RPC-over-RDMA message to a pcap
// file for Wireshark or rpcrdma-dump.
//
//   rpcrdma_demo [--uri URI] [--capture FILE]
//
//   --uri      where the server listens and the client connects: the soft
//              fabric (default soft+unix://@rpcrdma-demo-PID, or
//              soft+tcp://HOST:PORT) or a real RDMA device (rdma://IP:PORT)
//   --capture  the capture file (default rpcrdma-demo.pcap; "" for none)
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "examples/demo_program.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"

namespace {

using rpcrdma::AcceptStat;
using rpcrdma::Counters;
using rpcrdma::XdrReader;
using rpcrdma::demo::CallHeader;
using rpcrdma::demo::Checksum;
using rpcrdma::demo::Pattern;
using rpcrdma::demo::PutOpaque;
using rpcrdma::demo::PutUint32;
using rpcrdma::demo::ReplyHeader;
namespace demo = rpcrdma::demo;

// The bulk transfers: just under the 1 MiB a server accepts per call.
constexpr uint32_t kBig = 1000000;

// ---------------------------------------------------------------- server

// Answers a forward call other than CALL_ME_BACK.
rpcrdma::HandlerReply Answer(uint32_t xid, demo::Call& call) {
  rpcrdma::HandlerReply reply;
  absl::Span<const uint8_t> data;
  uint32_t n = 0;
  uint32_t seed = 0;
  switch (call.header.procedure) {
    case demo::kPing:
      reply.xdr = ReplyHeader(xid);
      break;
    case demo::kStore:
      if (!call.args.ReadVarOpaque("data", demo::kMaxBulk, &data).ok()) {
        return {ReplyHeader(xid, AcceptStat::kGarbageArgs), {}};
      }
      reply.xdr = ReplyHeader(xid);
      PutUint32(reply.xdr, static_cast<uint32_t>(data.size()));
      PutUint32(reply.xdr, Checksum(data));
      break;
    case demo::kLoad:
    case demo::kList:
      if (!demo::ReadSizeAndSeed(call.args, &n, &seed).ok()) {
        return {ReplyHeader(xid, AcceptStat::kGarbageArgs), {}};
      }
      reply.xdr = ReplyHeader(xid);
      if (call.header.procedure == demo::kList) {
        PutOpaque(reply.xdr, Pattern(n, seed));
        break;
      }
      // DDP-eligible: the length stays in the stream, the octets go as a
      // reply item at the position after it (into the call's write chunk).
      PutUint32(reply.xdr, n);
      reply.results.push_back(
          {static_cast<uint32_t>(reply.xdr.size()), Pattern(n, seed)});
      break;
    default:
      reply.xdr = ReplyHeader(xid, AcceptStat::kProcUnavail);
      break;
  }
  return reply;
}

// CALL_ME_BACK: a backward call to the client on the caller's connection
// (RFC 8167), its payload DDP-eligible, so that the client pulls it with
// RDMA Read; the forward reply carries the client's answer.
void CallBack(rpcrdma::Server& server, const rpcrdma::IncomingCall& call,
              demo::Call& decoded, rpcrdma::Responder responder) {
  const uint32_t xid = call.xid;
  uint32_t n = 0;
  uint32_t seed = 0;
  if (!demo::ReadSizeAndSeed(decoded.args, &n, &seed).ok()) {
    (void)responder.Send({ReplyHeader(xid, AcceptStat::kGarbageArgs), {}});
    return;
  }
  auto payload = std::make_shared<std::vector<uint8_t>>(Pattern(n, seed));
  auto forward = std::make_shared<rpcrdma::Responder>(std::move(responder));
  const uint32_t callback_xid = xid ^ 0xcb000000u;
  rpcrdma::CallRequest req;
  req.xdr = CallHeader(callback_xid, demo::kCallbackProgram, demo::kCbCheck);
  PutUint32(req.xdr, n);
  req.arguments.push_back(
      {static_cast<uint32_t>(req.xdr.size()), absl::MakeConstSpan(*payload)});
  req.max_reply_size = 1024;
  server.Call(
      call.connection, std::move(req),
      [payload, forward, xid, callback_xid](absl::StatusOr<rpcrdma::Reply> r) {
        // The client's size and checksum, or zeros when the backward call
        // failed.
        uint32_t size = 0;
        uint32_t checksum = 0;
        if (r.ok()) {
          absl::StatusOr<XdrReader> results =
              demo::DecodeResults(r->xdr, callback_xid);
          if (results.ok()) {
            (void)demo::ReadSizeAndChecksum(*results, &size, &checksum);
          }
        }
        rpcrdma::HandlerReply reply;
        reply.xdr = ReplyHeader(xid);
        PutUint32(reply.xdr, size);
        PutUint32(reply.xdr, checksum);
        (void)forward->Send(std::move(reply));
      });
}

// The client's side of the backchannel: CB_CHECK answers with the length
// and checksum of what it received.
rpcrdma::HandlerReply AnswerCallback(const rpcrdma::IncomingCall& call) {
  absl::StatusOr<demo::Call> decoded = demo::DecodeCall(call.message);
  absl::Span<const uint8_t> data;
  if (!decoded.ok() || decoded->header.program != demo::kCallbackProgram ||
      decoded->header.procedure != demo::kCbCheck ||
      !decoded->args.ReadVarOpaque("data", demo::kMaxBulk, &data).ok()) {
    return {ReplyHeader(call.xid, AcceptStat::kGarbageArgs), {}};
  }
  rpcrdma::HandlerReply reply;
  reply.xdr = ReplyHeader(call.xid);
  PutUint32(reply.xdr, static_cast<uint32_t>(data.size()));
  PutUint32(reply.xdr, Checksum(data));
  return reply;
}

std::string CountersLine(const Counters& c) {
  std::string line;
  for (const rpcrdma::CounterField& f : rpcrdma::kCounterFields) {
    absl::StrAppend(&line, line.empty() ? "" : " ", c.*f.field);
  }
  return line;
}

bool ParseCountersLine(const std::string& line, Counters& c) {
  std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (f.size() != std::size(rpcrdma::kCounterFields)) return false;
  for (size_t i = 0; i < f.size(); ++i) {
    if (!absl::SimpleAtoi(f[i], &(c.*rpcrdma::kCounterFields[i].field))) {
      return false;
    }
  }
  return true;
}

// The server process: listens on `uri`, says "ready" on stdout, serves
// until stdin closes, then writes its counters on stdout.
int Serve(const std::string& uri) {
  signal(SIGPIPE, SIG_IGN);
  rpcrdma::config::TransportConfig config;
  rpcrdma::Server* self = nullptr;  // set before any client can connect
  auto server = rpcrdma::Server::Create(
      uri, config,
      [&self](rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
        absl::StatusOr<demo::Call> decoded = demo::DecodeCall(call.message);
        if (!decoded.ok()) {
          (void)responder.Send(
              {ReplyHeader(call.xid, AcceptStat::kGarbageArgs), {}});
        } else if (decoded->header.program != demo::kProgram ||
                   decoded->header.version != demo::kVersion) {
          (void)responder.Send(
              {ReplyHeader(call.xid, AcceptStat::kProgUnavail), {}});
        } else if (decoded->header.procedure == demo::kCallMeBack) {
          CallBack(*self, call, *decoded, std::move(responder));
        } else {
          (void)responder.Send(Answer(call.xid, *decoded));
        }
      });
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  self = server->get();
  std::printf("ready %s\n", (*server)->uri().c_str());
  std::fflush(stdout);
  char buf[64];
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;
  }
  std::printf("counters %s\n", CountersLine((*server)->counters()).c_str());
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------- client

struct ServerProcess {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout
  int in = -1;          // its stdin

  bool ReadLine(std::string& line) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, out) == nullptr) return false;
    line = buf;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return true;
  }
};

bool StartServer(const char* self, const std::string& uri, ServerProcess& p) {
  int to_child[2];
  int from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return false;
  if (pipe2(from_child, O_CLOEXEC) != 0) return false;
  p.pid = fork();
  if (p.pid < 0) return false;
  if (p.pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    execl(self, self, "--serve", uri.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "exec %s: %s\n", self, std::strerror(errno));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  p.in = to_child[1];
  p.out = fdopen(from_child[0], "r");
  return p.out != nullptr;
}

// How a call was sent, from the client's counters.
std::string CallPath(const Counters& before, const Counters& after) {
  if (after.read_chunk_calls > before.read_chunk_calls) return "read chunk";
  if (after.long_calls > before.long_calls) return "position-zero read chunk";
  return "inline";
}

// How its reply came back.
std::string ReplyPath(const Counters& before, const Counters& after,
                      const rpcrdma::Reply& reply) {
  const bool write_chunk = !reply.result_lengths.empty();
  const bool reply_chunk = after.long_replies > before.long_replies;
  if (write_chunk && reply_chunk) return "write chunk + reply chunk";
  if (write_chunk) return "write chunk";
  if (reply_chunk) return "reply chunk";
  return "inline";
}

// rpcrdma-dump as the user can run it: its path in the build tree next to
// this program (relative to the current directory when below it).
std::string DumpCommand() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "rpcrdma-dump";
  std::string path(exe, static_cast<size_t>(n));
  // <build>/examples/rpcrdma_demo -> <build>/tools/dump/rpcrdma-dump
  for (int i = 0; i < 2; ++i) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return "rpcrdma-dump";
    path.resize(slash);
  }
  path += "/tools/dump/rpcrdma-dump";
  if (access(path.c_str(), X_OK) != 0) return "rpcrdma-dump";
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) != nullptr) {
    const std::string prefix = std::string(cwd) + "/";
    if (path.rfind(prefix, 0) == 0) path = path.substr(prefix.size());
  }
  return path;
}

// Closes the server's stdin so that it stops, reads its counters line and
// waits for it; true when it exited cleanly (and, with `counters`, said
// them).
bool FinishServer(ServerProcess& server, Counters* counters) {
  if (server.in >= 0) close(server.in);
  server.in = -1;
  bool got = false;
  std::string line;
  while (server.ReadLine(line)) {
    if (line.rfind("counters ", 0) == 0 && counters != nullptr) {
      got = ParseCountersLine(line.substr(9), *counters);
    }
  }
  std::fclose(server.out);
  int status = 0;
  waitpid(server.pid, &status, 0);
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// What a call's results must be, or why they are not ("ok..." when they
// are).
using Check =
    std::function<std::string(const rpcrdma::Reply&, XdrReader& results)>;

// Results "unsigned size, checksum" equal to `size` and `want`.
Check SizeAndChecksum(uint32_t size, uint32_t want) {
  return [size, want](const rpcrdma::Reply&, XdrReader& results) {
    uint32_t got_size = 0;
    uint32_t got = 0;
    if (!demo::ReadSizeAndChecksum(results, &got_size, &got).ok() ||
        got_size != size || got != want) {
      return std::string("FAILED: the server saw other bytes");
    }
    return std::string("ok, server checksum matches");
  };
}

// The client's calls, one method per transport path the demo shows; each
// prints its row of the table.
class DemoClient {
 public:
  explicit DemoClient(rpcrdma::Channel& channel) : channel_(channel) {}

  // Small calls: header and arguments fit the inline threshold.
  void Pings() {
    for (int i = 0; i < 3; ++i) {
      rpcrdma::CallRequest req = Request(demo::kPing);
      Run("ping", std::move(req),
          [](const rpcrdma::Reply&, XdrReader& results) -> std::string {
            return results.remaining() == 0 ? "ok" : "FAILED: bad reply";
          });
    }
  }

  // A large argument, DDP-eligible: the server pulls it with RDMA Read.
  // The length word stays in the stream; the octets are a CallArgument at
  // the position after it.
  void StoreThroughReadChunk() {
    std::vector<uint8_t> data = Pattern(kBig, 1);
    rpcrdma::CallRequest req = Request(demo::kStore);
    PutUint32(req.xdr, kBig);
    req.arguments.push_back(
        {static_cast<uint32_t>(req.xdr.size()), absl::MakeConstSpan(data)});
    Run("store 1000000 bytes", std::move(req),
        SizeAndChecksum(kBig, Checksum(data)));
  }

  // A large result, DDP-eligible: the server pushes it with RDMA Write.
  void LoadThroughWriteChunk() {
    std::vector<uint8_t> result(kBig);
    rpcrdma::CallRequest req = Request(demo::kLoad);
    PutUint32(req.xdr, kBig);
    PutUint32(req.xdr, 2);
    req.results.push_back(absl::MakeSpan(result));
    Run("load 1000000 bytes", std::move(req),
        [&result](const rpcrdma::Reply& r, XdrReader& results) -> std::string {
          uint32_t length = 0;
          if (!results.ReadUint32("length", &length).ok() || length != kBig ||
              r.result_lengths != std::vector<uint32_t>{kBig} ||
              result != Pattern(kBig, 2)) {
            return "FAILED: result bytes differ";
          }
          return "ok, 1000000 bytes verified";
        });
  }

  // A call whose non-DDP arguments exceed the inline threshold.
  void StoreAsLongCall() {
    std::vector<uint8_t> data = Pattern(20000, 3);
    rpcrdma::CallRequest req = Request(demo::kStore);
    PutOpaque(req.xdr, data);
    Run("store 20000 bytes", std::move(req),
        SizeAndChecksum(20000, Checksum(data)));
  }

  // A reply whose non-DDP results exceed the inline threshold.
  void ListAsLongReply() {
    rpcrdma::CallRequest req = Request(demo::kList);
    PutUint32(req.xdr, 20000);
    PutUint32(req.xdr, 4);
    req.max_reply_size =
        static_cast<uint32_t>(ReplyHeader(xid_).size()) + 4 + 20000;
    Run("list 20000 bytes", std::move(req),
        [](const rpcrdma::Reply&, XdrReader& results) -> std::string {
          const std::vector<uint8_t> want = Pattern(20000, 4);
          absl::Span<const uint8_t> data;
          if (!results.ReadVarOpaque("data", demo::kMaxBulk, &data).ok() ||
              results.remaining() != 0 || data != absl::MakeConstSpan(want)) {
            return "FAILED: result bytes differ";
          }
          return "ok, 20000 bytes verified";
        });
  }

  // The server calls the client back (RFC 8167) before it answers;
  // `callbacks` counts the backward calls the client's handler answered.
  void CallMeBack(const std::atomic<int>& callbacks) {
    constexpr uint32_t kCallbackBytes = 65536;
    const uint32_t want = Checksum(Pattern(kCallbackBytes, 5));
    rpcrdma::CallRequest req = Request(demo::kCallMeBack);
    PutUint32(req.xdr, kCallbackBytes);
    PutUint32(req.xdr, 5);
    const Counters before = channel_.counters();
    Run("server calls back", std::move(req),
        [&](const rpcrdma::Reply&, XdrReader& results) -> std::string {
          const Counters after = channel_.counters();
          if (callbacks.load() != 1 ||
              after.backward_calls != before.backward_calls + 1) {
            return "FAILED: no backward call arrived";
          }
          uint32_t size = 0;
          uint32_t got = 0;
          if (!demo::ReadSizeAndChecksum(results, &size, &got).ok() ||
              size != kCallbackBytes || got != want) {
            return "FAILED: the backward call carried other bytes";
          }
          return "ok, 65536 bytes server->client via RDMA Read";
        });
  }

  bool all_ok() const { return all_ok_; }

 private:
  // A call of `procedure` with the next XID and room for a small reply.
  rpcrdma::CallRequest Request(uint32_t procedure) {
    rpcrdma::CallRequest req;
    req.xdr = CallHeader(++xid_, demo::kProgram, procedure);
    req.max_reply_size = 1024;
    return req;
  }

  // Makes the call, checks its results and prints its row: the paths the
  // call and its reply took (from the counters' differences) and the
  // verdict.
  void Run(const std::string& title, rpcrdma::CallRequest req,
           const Check& check) {
    const Counters before = channel_.counters();
    absl::StatusOr<rpcrdma::Reply> reply = channel_.Call(std::move(req)).get();
    const Counters after = channel_.counters();
    absl::StatusOr<XdrReader> results =
        reply.ok() ? demo::DecodeResults(reply->xdr, xid_) : reply.status();
    const std::string verdict =
        results.ok() ? check(*reply, *results)
                     : absl::StrCat("FAILED: ", results.status().ToString());
    if (verdict.rfind("ok", 0) != 0) all_ok_ = false;
    std::printf("  %-20s %-25s %-12s %s\n", title.c_str(),
                CallPath(before, after).c_str(),
                reply.ok() ? ReplyPath(before, after, *reply).c_str() : "-",
                verdict.c_str());
  }

  rpcrdma::Channel& channel_;
  uint32_t xid_ = 0x0de30000;
  bool all_ok_ = true;
};

// Prints both sides' counters; false when the two sides counted the same
// messages differently.
bool PrintCounters(const Counters& client, const Counters& server) {
  std::printf("\n  %-44s %8s %8s\n", "counters", "client", "server");
  auto row = [&](const char* name, uint64_t c, uint64_t s) {
    std::printf("  %-44s %8llu %8llu\n", name,
                static_cast<unsigned long long>(c),
                static_cast<unsigned long long>(s));
  };
  row("calls", client.calls, server.calls);
  row("replies", client.replies, server.replies);
  row("inline calls", client.inline_calls, server.inline_calls);
  row("calls with read chunks", client.read_chunk_calls,
      server.read_chunk_calls);
  row("write chunks offered", client.write_chunks, server.write_chunks);
  row("reply chunks offered", client.reply_chunks, server.reply_chunks);
  row("long calls (RDMA_NOMSG, position-zero chunk)", client.long_calls,
      server.long_calls);
  row("long replies (RDMA_NOMSG, reply chunk)", client.long_replies,
      server.long_replies);
  row("Send With Invalidate (RFC 8797)", client.remote_invalidations,
      server.remote_invalidations);
  row("RDMA_ERROR", client.errors_sent + client.errors_received,
      server.errors_sent + server.errors_received);
  row("backward calls (RFC 8167, server -> client)", client.backward_calls,
      server.backward_calls);
  row("backward replies", client.backward_replies, server.backward_replies);
  return client.calls == server.calls && client.replies == server.replies &&
         client.inline_calls == server.inline_calls &&
         client.read_chunk_calls == server.read_chunk_calls &&
         client.long_calls == server.long_calls &&
         client.long_replies == server.long_replies &&
         client.backward_calls == server.backward_calls &&
         client.backward_replies == server.backward_replies;
}

int RunClient(const char* self, const std::string& uri,
              const std::string& capture) {
  signal(SIGPIPE, SIG_IGN);
  ServerProcess server;
  if (!StartServer(self, uri, server)) {
    std::fprintf(stderr, "cannot start the server process: %s\n",
                 std::strerror(errno));
    return 1;
  }
  std::string line;
  if (!server.ReadLine(line) || line.rfind("ready ", 0) != 0) {
    std::fprintf(stderr, "the server process did not start\n");
    FinishServer(server, nullptr);
    return 1;
  }
  const std::string server_uri = line.substr(6);

  std::printf("rpcrdma demo: RPC-over-RDMA version 1 (RFC 8166)\n");
  std::printf("  server  pid %-7d listening on %s\n", server.pid,
              server_uri.c_str());

  rpcrdma::config::TransportConfig config;
  if (!capture.empty()) config.set_capture_path(capture);
  std::atomic<int> callbacks{0};
  auto channel = rpcrdma::Channel::Create(
      server_uri, config,
      [&callbacks](rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
        ++callbacks;
        (void)responder.Send(AnswerCallback(call));
      });
  if (!channel.ok()) {
    std::fprintf(stderr, "client: %s\n", channel.status().ToString().c_str());
    FinishServer(server, nullptr);
    return 1;
  }
  std::printf("  client  pid %-7d connected\n\n", getpid());

  std::printf("  %-20s %-25s %-12s %s\n", "call", "sent as", "reply via",
              "result");
  DemoClient client(**channel);
  client.Pings();
  client.StoreThroughReadChunk();
  client.LoadThroughWriteChunk();
  client.StoreAsLongCall();
  client.ListAsLongReply();
  client.CallMeBack(callbacks);
  bool all_ok = client.all_ok();

  const Counters client_counters = (*channel)->counters();
  channel->reset();  // disconnects; the capture file is complete
  Counters server_counters;
  if (!FinishServer(server, &server_counters)) {
    std::fprintf(stderr, "the server process failed\n");
    return 1;
  }
  if (!PrintCounters(client_counters, server_counters)) {
    std::printf("\n  FAILED: the two sides' counters disagree\n");
    all_ok = false;
  }

  if (!capture.empty()) {
    std::printf(
        "\n  Every RPC-over-RDMA message of this run is in %s (RoCEv2\n"
        "  frames; RDMA Read/Write payloads are not recorded). Open it in\n"
        "  Wireshark, or run: %s %s\n",
        capture.c_str(), DumpCommand().c_str(), capture.c_str());
  }
  std::printf("\n%s\n", all_ok ? "demo passed" : "demo FAILED");
  return all_ok ? 0 : 1;
}

void Usage() {
  std::fprintf(stderr,
               "usage: rpcrdma_demo [--uri URI] [--capture FILE]\n"
               "  --uri      soft+unix://@NAME (default), soft+unix:///PATH,\n"
               "             soft+tcp://HOST:PORT or rdma://IP:PORT\n"
               "  --capture  pcap file to write (default rpcrdma-demo.pcap;\n"
               "             an empty name writes none)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--serve") == 0) {
    return Serve(argv[2]);
  }
  std::string uri = absl::StrCat("soft+unix://@rpcrdma-demo-", getpid());
  std::string capture = "rpcrdma-demo.pcap";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--uri" || arg == "--capture") && i + 1 < argc) {
      (arg == "--uri" ? uri : capture) = argv[++i];
    } else {
      Usage();
      return 2;
    }
  }
  return RunClient("/proc/self/exe", uri, capture);
}
