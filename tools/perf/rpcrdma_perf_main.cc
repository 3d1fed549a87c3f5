// rpcrdma-perf: RPC-over-RDMA performance between two processes, like
// ib_send_lat and ib_write_bw but for RPCs. `rpcrdma-perf server URI`
// serves the rpcrdma-perf program (tools/perf_program); `rpcrdma-perf
// client URI` keeps calls in flight on one or more connections for a while
// and reports calls/s, latency percentiles and, with --size, bandwidth
// through read and write chunks.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "rpcrdma/types.h"
#include "tools/perf_program/perf_program.h"
#include "tools/perf_program/tool_support.h"

ABSL_FLAG(std::optional<absl::Duration>, duration, std::nullopt,
          "client: how long to run (default 5s); server: how long to serve "
          "(default: until SIGINT or SIGTERM)");
ABSL_FLAG(uint32_t, connections, 1, "client: connections (Channels)");
ABSL_FLAG(uint32_t, inflight, 1, "client: calls in flight per connection");
ABSL_FLAG(bool, blocking, false,
          "client: a thread per connection making Channel::BlockingCall");
ABSL_FLAG(uint32_t, size, 0, "client: ECHO argument and result octets");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5),
          "client: bound on connecting and deadline of each call");
ABSL_FLAG(std::string, config, "", "transport configuration (text format)");
ABSL_FLAG(bool, json, false, "the result as one JSON object on stdout");
ABSL_FLAG(bool, quiet, false, "no progress lines on stderr");
ABSL_FLAG(bool, help, false, "print the usage text and exit");

namespace {

using rpcrdma::tools::kExitFailure;
using rpcrdma::tools::kExitOk;
using rpcrdma::tools::kExitUsage;
using Clock = std::chrono::steady_clock;

constexpr absl::string_view kUsage = R"(Usage:
  rpcrdma-perf server URI [--duration D] [--config FILE] [--json] [--quiet]
  rpcrdma-perf client URI [--connections N] [--inflight N | --blocking]
                          [--size N] [--duration D] [--config FILE] [--json]
                          [--quiet]

RPC-over-RDMA performance between two processes (or hosts), like
ib_send_lat / ib_write_bw but for RPCs of the rpcrdma-perf program
(0x20008166 version 1: NULL, and ECHO of an opaque argument).

server  listens on URI and serves the program. The first line on stdout is
        the URI clients connect to (a port of 0 is replaced by the one
        bound), so a script can start it and read where to connect. It
        prints calls/s once a second on stderr while calls come, and its
        counters when it ends (after --duration, or at SIGINT/SIGTERM).
client  opens --connections Channels to URI and keeps --inflight calls in
        flight on each for --duration, printing progress once a second on
        stderr. Then it prints the calls, calls/s and round-trip latency
        percentiles (p50/p90/p99/p99.9/max); with --size, ECHO calls move N
        octets each way (argument in a read chunk, result in a write chunk
        when they do not fit inline, RFC 8166 §3.4.5, §3.4.7) and it prints
        the bandwidth each way. For latency use --inflight 1 (the default);
        for calls/s raise --inflight and --connections.

URI: soft+unix:///path, soft+unix://@abstract, soft+tcp://host:port,
rdma://host:port (see rpcrdma-ping --help).

Options:
  --duration D     client: run time (default 5s; e.g. 500ms, 1m);
                   server: serve time (default: until SIGINT or SIGTERM)
  --connections N  client: connections (default 1)
  --inflight N     client: calls in flight per connection (default 1)
  --blocking       client: each connection's calls made one after another
                   by a thread of its own with Channel::BlockingCall, the
                   synchronous path (the lowest latency); with
                   execution { busy_poll_us: N } in --config that thread
                   polls instead of sleeping, as ib_send_lat does
  --size N         client: ECHO N octets each way (default 0: NULL calls).
                   The server accepts calls up to limits.max_call_size
                   (16 MiB by default); larger needs --config on both sides
  --timeout D      client: bound on connecting and deadline of each call
                   (default 5s; a shorter timeouts.connect_ms in --config
                   stays)
  --config FILE    transport configuration in text format (rpcrdma/config.h)
  --json           the result as one JSON object on stdout
  --quiet          no progress lines (--json implies it)
  --help, -h       this text

Exit status: 0 success; 1 a connection or a call failed; 2 usage error.
)";

int Usage(absl::string_view problem) {
  std::cerr << "rpcrdma-perf: " << problem
            << "\nTry 'rpcrdma-perf --help' for more information.\n";
  return kExitUsage;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

nlohmann::json CountersJson(const rpcrdma::Counters& c) {
  nlohmann::json out = nlohmann::json::object();
  for (const rpcrdma::CounterField& f : rpcrdma::kCounterFields) {
    out[f.name] = c.*f.field;
  }
  out["credits_granted"] = c.credits_granted;
  out["peak_calls_outstanding"] = c.peak_calls_outstanding;
  return out;
}

// ---------------------------------------------------------------- server

int RunServer(const std::string& uri,
              const rpcrdma::config::TransportConfig& config) {
  const bool json = absl::GetFlag(FLAGS_json);
  const bool quiet = json || absl::GetFlag(FLAGS_quiet);
  const absl::Duration duration =
      absl::GetFlag(FLAGS_duration).value_or(absl::ZeroDuration());
  // SIGINT and SIGTERM are taken with sigtimedwait below: blocked before
  // the Server's loop thread starts so that it inherits the mask and never
  // receives them itself.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<std::unique_ptr<rpcrdma::Server>> server =
      rpcrdma::Server::Create(uri, config, rpcrdma::perf::ServeCall);
  if (!server.ok()) {
    std::cerr << "rpcrdma-perf: cannot listen on " << uri << ": "
              << server.status() << "\n";
    return kExitFailure;
  }
  std::cout << (*server)->uri() << std::endl;

  const Clock::time_point start = Clock::now();
  uint64_t last_calls = 0;
  for (;;) {
    timespec one_second = {1, 0};
    if (sigtimedwait(&stop_signals, nullptr, &one_second) > 0) break;
    const Clock::duration elapsed = Clock::now() - start;
    const rpcrdma::Counters counters = (*server)->counters();
    if (!quiet && counters.calls != last_calls) {
      std::cerr << absl::StrFormat(
          "[%4.0f s] %9.0f calls/s, %u connection(s)\n", Seconds(elapsed),
          static_cast<double>(counters.calls - last_calls),
          (*server)->connections());
    }
    last_calls = counters.calls;
    if (duration > absl::ZeroDuration() &&
        elapsed >= absl::ToChronoNanoseconds(duration)) {
      break;
    }
  }
  const rpcrdma::Counters counters = (*server)->counters();
  if (json) {
    std::cout << nlohmann::json{{"uri", (*server)->uri()},
                                {"counters", CountersJson(counters)}}
                     .dump()
              << std::endl;
  } else {
    std::cerr << absl::StrFormat(
        "served %u calls (%u with read chunks, %u write chunks), %u "
        "replies\n",
        counters.calls, counters.read_chunk_calls, counters.write_chunks,
        counters.replies);
  }
  return kExitOk;
}

// ---------------------------------------------------------------- client

// One connection and the calls it keeps in flight. Completions run on the
// Channel's loop thread (or, when the connection is down, at once on the
// calling thread), so what they record is guarded.
class Connection {
 public:
  Connection(std::unique_ptr<rpcrdma::Channel> channel, uint32_t inflight,
             uint32_t size, uint32_t first_xid, const std::atomic<bool>& stop,
             absl::Duration timeout)
      : stop_(stop), timeout_(timeout), next_xid_(first_xid) {
    std::mt19937 random(first_xid);
    slots_.resize(inflight);
    for (Slot& slot : slots_) {
      slot.argument.resize(size);
      slot.result.resize(size);
      for (uint8_t& octet : slot.argument) {
        octet = static_cast<uint8_t>(random());
      }
    }
    channel_ = std::move(channel);
  }

  // Joined before the Channel goes.
  ~Connection() {
    if (caller_.joinable()) caller_.join();
  }

  // `blocking`: one thread of its own makes one Channel::BlockingCall after
  // another (the synchronous client's path); otherwise every slot's call is
  // made again from the completion of the last.
  void Start(bool blocking) {
    if (!blocking) {
      for (Slot& slot : slots_) Issue(slot);
      return;
    }
    caller_ = std::thread([this] {
      Slot& slot = slots_.front();
      while (!stop_.load()) {
        rpcrdma::CallRequest request = Prepare(slot);
        outstanding_.fetch_add(1);
        const bool ok =
            Record(slot, channel_->BlockingCall(std::move(request)));
        outstanding_.fetch_sub(1);
        if (!ok) break;
      }
    });
  }

  rpcrdma::Channel& channel() { return *channel_; }
  uint64_t completed() const { return completed_.load(); }
  uint64_t latency_sum_ns() const { return latency_sum_ns_.load(); }
  uint32_t outstanding() const { return outstanding_.load(); }

  // After every call has completed (outstanding() == 0).
  std::vector<int64_t> TakeSamples() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(samples_);
  }
  uint64_t errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  absl::Status first_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  struct Slot {
    std::vector<uint8_t> argument;
    std::vector<uint8_t> result;
    uint32_t xid = 0;
    bool verified = false;
    Clock::time_point start;
  };

  rpcrdma::CallRequest Prepare(Slot& slot) {
    slot.xid = next_xid_.fetch_add(1);
    rpcrdma::CallRequest request =
        slot.argument.empty()
            ? rpcrdma::perf::NullCall(slot.xid)
            : rpcrdma::perf::EchoCall(slot.xid, slot.argument,
                                      absl::MakeSpan(slot.result));
    slot.start = Clock::now();
    request.deadline = slot.start + absl::ToChronoNanoseconds(timeout_);
    return request;
  }

  void Issue(Slot& slot) {
    rpcrdma::CallRequest request = Prepare(slot);
    outstanding_.fetch_add(1);
    channel_->Call(std::move(request),
                   [this, &slot](absl::StatusOr<rpcrdma::Reply> reply) {
                     Done(slot, std::move(reply));
                   });
  }

  void Done(Slot& slot, absl::StatusOr<rpcrdma::Reply> reply) {
    const bool ok = Record(slot, std::move(reply));
    // A failed slot is not reused: with the connection down every new call
    // would fail at once, on this thread, without end.
    if (ok && !stop_.load()) Issue(slot);
    outstanding_.fetch_sub(1);
  }

  // Records the call's latency or its error; true when it succeeded.
  bool Record(Slot& slot, absl::StatusOr<rpcrdma::Reply> reply) {
    const int64_t latency_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                             slot.start)
            .count();
    absl::Status status = Check(slot, reply);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status.ok()) {
        samples_.push_back(latency_ns);
      } else {
        if (errors_++ == 0) first_error_ = status;
      }
    }
    if (status.ok()) {
      latency_sum_ns_.fetch_add(static_cast<uint64_t>(latency_ns));
      completed_.fetch_add(1);
    }
    return status.ok();
  }

  // The reply, and for each slot's first ECHO every octet of it (once per
  // slot: comparing every time would measure memcmp, not the transport).
  static absl::Status Check(Slot& slot,
                            const absl::StatusOr<rpcrdma::Reply>& reply) {
    if (!reply.ok()) return reply.status();
    if (slot.argument.empty()) {
      return rpcrdma::perf::CheckNullReply(*reply, slot.xid);
    }
    absl::Status status =
        rpcrdma::perf::CheckEchoReply(*reply, slot.xid, slot.argument.size());
    if (status.ok() && !slot.verified) {
      if (std::memcmp(slot.argument.data(), slot.result.data(),
                      slot.argument.size()) != 0) {
        return absl::DataLossError(
            "ECHO returned other octets than it was sent");
      }
      slot.verified = true;
    }
    return status;
  }

  const std::atomic<bool>& stop_;
  const absl::Duration timeout_;
  std::vector<Slot> slots_;
  std::atomic<uint32_t> next_xid_;
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> latency_sum_ns_{0};
  std::atomic<uint32_t> outstanding_{0};
  std::mutex mu_;
  std::vector<int64_t> samples_;
  uint64_t errors_ = 0;
  absl::Status first_error_;
  std::thread caller_;  // with Start(blocking)
  // Last, so that it is destroyed first: its destructor completes any call
  // still pending, whose callback uses the members above.
  std::unique_ptr<rpcrdma::Channel> channel_;
};

// Prints calls/s and the mean latency of the last second on stderr.
void PrintProgress(Clock::duration elapsed, uint64_t calls, uint64_t latency_ns,
                   uint32_t size) {
  std::string line = absl::StrFormat(
      "[%4.0f s] %9u calls/s, mean %9.3f us", Seconds(elapsed), calls,
      calls == 0
          ? 0.0
          : rpcrdma::tools::Microseconds(static_cast<double>(latency_ns) /
                                         static_cast<double>(calls)));
  if (size > 0) {
    absl::StrAppendFormat(&line, ", %.3f GB/s each way",
                          static_cast<double>(calls) * size / 1e9);
  }
  std::cerr << line << std::endl;
}

// What the client run asks for, from the flags.
struct ClientOptions {
  bool json = false;
  bool quiet = false;
  uint32_t connection_count = 0;
  uint32_t inflight = 0;
  bool blocking = false;
  uint32_t size = 0;  // 0: NULL calls
  absl::Duration duration;
  absl::Duration timeout;
};

// What the connections did, summed once they stopped.
struct ClientResult {
  double elapsed_s = 0;
  rpcrdma::Counters counters;
  uint64_t errors = 0;
  absl::Status first_error;
  rpcrdma::tools::LatencySummary latency;
};

using Connections = std::vector<std::unique_ptr<Connection>>;

// Opens `options.connection_count` Channels to `uri`; nullopt (after
// saying why) when one fails.
std::optional<Connections> Connect(
    const std::string& uri, const rpcrdma::config::TransportConfig& config,
    const ClientOptions& options, std::atomic<bool>& stop) {
  std::mt19937 random(std::random_device{}());
  Connections connections;
  for (uint32_t i = 0; i < options.connection_count; ++i) {
    absl::StatusOr<std::unique_ptr<rpcrdma::Channel>> channel =
        rpcrdma::Channel::Create(uri, config);
    if (!channel.ok()) {
      std::cerr << "rpcrdma-perf: cannot connect to " << uri << " (connection "
                << i + 1 << " of " << options.connection_count
                << "): " << channel.status() << "\n";
      return std::nullopt;
    }
    connections.push_back(std::make_unique<Connection>(
        *std::move(channel), options.inflight, options.size,
        static_cast<uint32_t>(random()), stop, options.timeout));
  }
  return connections;
}

// Makes calls for `options.duration`, printing each second's figures
// unless quiet.
void RunFor(Connections& connections, const ClientOptions& options,
            Clock::time_point start) {
  const Clock::time_point end =
      start + absl::ToChronoNanoseconds(options.duration);
  for (auto& connection : connections) connection->Start(options.blocking);
  uint64_t last_calls = 0;
  uint64_t last_latency_ns = 0;
  Clock::time_point next_report = start + std::chrono::seconds(1);
  for (Clock::time_point now = start; now < end; now = Clock::now()) {
    std::this_thread::sleep_until(std::min(next_report, end));
    if (Clock::now() < next_report) continue;
    next_report += std::chrono::seconds(1);
    uint64_t calls = 0;
    uint64_t latency_ns = 0;
    for (auto& connection : connections) {
      calls += connection->completed();
      latency_ns += connection->latency_sum_ns();
    }
    if (!options.quiet) {
      PrintProgress(Clock::now() - start, calls - last_calls,
                    latency_ns - last_latency_ns, options.size);
    }
    last_calls = calls;
    last_latency_ns = latency_ns;
  }
}

uint32_t Outstanding(const Connections& connections) {
  uint32_t n = 0;
  for (const auto& connection : connections) n += connection->outstanding();
  return n;
}

// Stops making calls, lets the ones in flight finish (each within its
// deadline), sums what the connections saw and closes them.
ClientResult StopAndCollect(Connections& connections, std::atomic<bool>& stop,
                            absl::Duration timeout, Clock::time_point start) {
  stop.store(true);
  const Clock::time_point drain_deadline = Clock::now() +
                                           absl::ToChronoNanoseconds(timeout) +
                                           std::chrono::seconds(1);
  while (Outstanding(connections) > 0 && Clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ClientResult result;
  result.elapsed_s = Seconds(Clock::now() - start);
  if (const uint32_t stuck = Outstanding(connections); stuck > 0) {
    result.errors += stuck;
    result.first_error = absl::DeadlineExceededError(absl::StrFormat(
        "%u call(s) did not complete by their deadline", stuck));
  }
  std::vector<int64_t> samples;
  for (auto& connection : connections) {
    result.counters += connection->channel().counters();
    std::vector<int64_t> mine = connection->TakeSamples();
    samples.insert(samples.end(), mine.begin(), mine.end());
    result.errors += connection->errors();
    if (result.first_error.ok()) result.first_error = connection->first_error();
  }
  // Destroying the Channels completes calls still pending (after a
  // timeout): their callbacks need the Connections alive until then.
  for (auto& connection : connections) connection.reset();
  result.latency = rpcrdma::tools::Summarize(samples);
  return result;
}

void PrintJson(const std::string& uri, const ClientOptions& options,
               const rpcrdma::ConnectionInfo& info, const ClientResult& r) {
  const double calls_per_second =
      static_cast<double>(r.latency.count) / r.elapsed_s;
  nlohmann::json out = {
      {"uri", uri},
      {"connections", options.connection_count},
      {"inflight", options.inflight},
      {"blocking", options.blocking},
      {"size", options.size},
      {"procedure", options.size == 0 ? "NULL" : "ECHO"},
      {"duration_s", r.elapsed_s},
      {"calls", r.latency.count},
      {"errors", r.errors},
      {"calls_per_second", calls_per_second},
      {"latency", rpcrdma::tools::LatencyJson(r.latency)},
      {"connection", rpcrdma::tools::ConnectionInfoJson(info)},
      {"counters", CountersJson(r.counters)},
  };
  if (options.size > 0) {
    out["gigabytes_per_second_each_way"] =
        calls_per_second * options.size / 1e9;
  }
  if (!r.first_error.ok()) out["first_error"] = r.first_error.ToString();
  std::cout << out.dump() << "\n";
}

void PrintText(const ClientOptions& options, const ClientResult& r) {
  using rpcrdma::tools::Microseconds;
  const double calls_per_second =
      static_cast<double>(r.latency.count) / r.elapsed_s;
  std::cout << absl::StrFormat(
      "%u calls in %.3f s: %.0f calls/s, %u errors\n"
      "latency us: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
      r.latency.count, r.elapsed_s, calls_per_second, r.errors,
      Microseconds(static_cast<double>(r.latency.p50_ns)),
      Microseconds(static_cast<double>(r.latency.p90_ns)),
      Microseconds(static_cast<double>(r.latency.p99_ns)),
      Microseconds(static_cast<double>(r.latency.p999_ns)),
      Microseconds(static_cast<double>(r.latency.max_ns)));
  if (options.size > 0) {
    std::cout << absl::StrFormat(
        "bandwidth: %.3f GB/s each way (%u read-chunk calls, %u write "
        "chunks)\n",
        calls_per_second * options.size / 1e9, r.counters.read_chunk_calls,
        r.counters.write_chunks);
  }
  if (!r.first_error.ok()) {
    std::cout << "first error: " << r.first_error.ToString() << "\n";
  }
}

int RunClient(const std::string& uri,
              const rpcrdma::config::TransportConfig& config) {
  ClientOptions options;
  options.json = absl::GetFlag(FLAGS_json);
  options.quiet = options.json || absl::GetFlag(FLAGS_quiet);
  options.connection_count = absl::GetFlag(FLAGS_connections);
  options.inflight = absl::GetFlag(FLAGS_inflight);
  options.blocking = absl::GetFlag(FLAGS_blocking);
  options.size = absl::GetFlag(FLAGS_size);
  options.duration = absl::GetFlag(FLAGS_duration).value_or(absl::Seconds(5));
  options.timeout = absl::GetFlag(FLAGS_timeout);
  if (options.connection_count == 0 || options.inflight == 0) {
    return Usage("--connections and --inflight must be at least 1");
  }
  if (options.blocking && options.inflight != 1) {
    return Usage("--blocking makes one call at a time: --inflight must be 1");
  }
  if (options.duration <= absl::ZeroDuration() ||
      options.timeout <= absl::ZeroDuration()) {
    return Usage("--duration and --timeout must be positive");
  }
  rpcrdma::config::TransportConfig bounded = config;
  rpcrdma::tools::BoundConnect(absl::ToChronoNanoseconds(options.timeout),
                               bounded);

  std::atomic<bool> stop{false};
  std::optional<Connections> connections = Connect(uri, bounded, options, stop);
  if (!connections.has_value()) return kExitFailure;
  const rpcrdma::ConnectionInfo info =
      connections->front()->channel().connection_info();
  if (!options.json) {
    std::cout << "RPCRDMA-PERF " << uri << ": " << options.connection_count
              << " connection(s) x " << options.inflight << " in flight, "
              << (options.size == 0
                      ? std::string("NULL calls")
                      : absl::StrFormat("ECHO of %u octets", options.size))
              << " for " << absl::FormatDuration(options.duration) << "\n"
              << rpcrdma::tools::ConnectionInfoText(info) << std::flush;
  }
  const Clock::time_point start = Clock::now();
  RunFor(*connections, options, start);
  const ClientResult result =
      StopAndCollect(*connections, stop, options.timeout, start);
  if (options.json) {
    PrintJson(uri, options, info, result);
  } else {
    PrintText(options, result);
  }
  return result.errors == 0 && result.latency.count > 0 ? kExitOk
                                                        : kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away must end calls with a status, not the process.
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::vector<std::string>> operands =
      rpcrdma::tools::SetFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!operands.ok()) return Usage(operands.status().message());
  if (absl::GetFlag(FLAGS_help)) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (operands->size() != 2 ||
      ((*operands)[0] != "server" && (*operands)[0] != "client")) {
    return Usage("give 'server URI' or 'client URI'");
  }
  const bool server = (*operands)[0] == "server";
  absl::StatusOr<rpcrdma::config::TransportConfig> config =
      rpcrdma::tools::LoadConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) {
    std::cerr << "rpcrdma-perf: " << config.status() << "\n";
    return kExitFailure;
  }
  return server ? RunServer((*operands)[1], *config)
                : RunClient((*operands)[1], *config);
}
