// rpcrdma-ping: connects to an rpcrdma-perf server, prints what the
// connection settled, then makes NULL (or ECHO) calls and prints each
// round-trip time, like ping(8) and rping(1).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "rpcrdma/channel.h"
#include "rpcrdma/types.h"
#include "tools/perf_program/perf_program.h"
#include "tools/perf_program/tool_support.h"

ABSL_FLAG(uint32_t, count, 5, "calls to make; 0 = until interrupted");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), "time between calls");
ABSL_FLAG(uint32_t, size, 0, "ECHO argument octets; 0 = NULL calls");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5),
          "bound on connecting and deadline of each call");
ABSL_FLAG(std::string, config, "", "transport configuration (text format)");
ABSL_FLAG(bool, json, false, "one JSON object on stdout at the end");
ABSL_FLAG(bool, help, false, "print the usage text and exit");

namespace {

using rpcrdma::tools::kExitFailure;
using rpcrdma::tools::kExitOk;
using rpcrdma::tools::kExitUsage;

constexpr absl::string_view kUsage = R"(Usage: rpcrdma-ping [options] URI

Connects to URI, where `rpcrdma-perf server` listens, prints what the
connection settled (RPC-over-RDMA version, inline thresholds and private
data of RFC 8797, remote invalidation), then makes calls of the rpcrdma-perf
program (0x20008166 version 1) and prints the round-trip time of each, then
a summary. URI is one of
  soft+unix:///path, soft+unix://@abstract   the soft fabric, Unix socket
  soft+tcp://host:port                       the soft fabric over TCP
  rdma://host:port                           verbs (rdma-core)

Options:
  --count N       calls to make (default 5; 0 = until interrupted)
  --interval D    time between the starts of calls (default 1s; e.g. 200ms)
  --size N        make ECHO calls with an N-octet argument (read chunk when
                  it does not fit inline) and result (write chunk), checking
                  every octet; default 0: NULL calls
  --timeout D     bound on connecting and deadline of each call (default
                  5s; a shorter timeouts.connect_ms in --config stays)
  --config FILE   transport configuration in text format (rpcrdma/config.h)
  --json          print one JSON object at the end instead of text
  --help, -h      this text

Exit status: 0 every call succeeded; 1 the connection failed or a call
failed; 2 usage error.
)";

volatile std::sig_atomic_t interrupted = 0;
void OnInterrupt(int) { interrupted = 1; }

int Usage(absl::string_view problem) {
  std::cerr << "rpcrdma-ping: " << problem
            << "\nTry 'rpcrdma-ping --help' for more information.\n";
  return kExitUsage;
}

// One call's outcome.
struct Sample {
  uint32_t seq = 0;
  uint32_t xid = 0;
  absl::Status status;
  int64_t rtt_ns = 0;
};

// Makes call `seq` and checks its reply (and, for ECHO, every octet).
Sample Ping(rpcrdma::Channel& channel, uint32_t seq, uint32_t xid,
            const std::vector<uint8_t>& argument, std::vector<uint8_t>& result,
            absl::Duration timeout) {
  Sample sample{seq, xid, absl::OkStatus(), 0};
  // So that octets left from the previous call cannot pass for this one's.
  std::fill(result.begin(), result.end(), uint8_t{0});
  rpcrdma::CallRequest request =
      argument.empty()
          ? rpcrdma::perf::NullCall(xid)
          : rpcrdma::perf::EchoCall(xid, argument, absl::MakeSpan(result));
  const auto start = std::chrono::steady_clock::now();
  request.deadline = start + absl::ToChronoNanoseconds(timeout);
  absl::StatusOr<rpcrdma::Reply> reply = channel.Call(std::move(request)).get();
  sample.rtt_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!reply.ok()) {
    sample.status = reply.status();
  } else if (argument.empty()) {
    sample.status = rpcrdma::perf::CheckNullReply(*reply, xid);
  } else {
    sample.status = rpcrdma::perf::CheckEchoReply(*reply, xid, argument.size());
    if (sample.status.ok() &&
        std::memcmp(argument.data(), result.data(), argument.size()) != 0) {
      sample.status =
          absl::DataLossError("ECHO returned other octets than it was sent");
    }
  }
  return sample;
}

// What the run asks for, from the flags.
struct Options {
  uint32_t count = 0;
  absl::Duration interval;
  absl::Duration timeout;
  uint32_t size = 0;  // 0: NULL calls
  bool json = false;
};

// The calls made, and how long making them took.
struct Run {
  std::vector<Sample> samples;
  int64_t elapsed_ms = 0;
};

// Prints one call's line (text output only).
void PrintSample(const Sample& s) {
  if (s.status.ok()) {
    std::cout << absl::StrFormat(
        "seq=%u xid=0x%08x time=%.3f us\n", s.seq, s.xid,
        rpcrdma::tools::Microseconds(static_cast<double>(s.rtt_ns)));
  } else {
    std::cout << absl::StrFormat("seq=%u xid=0x%08x failed: %s\n", s.seq, s.xid,
                                 s.status.ToString());
  }
  std::cout << std::flush;
}

// Makes the calls, one per interval, until `count` or ^C.
Run PingLoop(rpcrdma::Channel& channel, const Options& options) {
  std::vector<uint8_t> argument(options.size);
  std::vector<uint8_t> result(options.size);
  std::mt19937 random(std::random_device{}());
  for (uint8_t& octet : argument) octet = static_cast<uint8_t>(random());
  // XIDs start at a random value, as ONC RPC clients' do, so that two runs
  // against one server are told apart in a capture.
  const uint32_t first_xid = static_cast<uint32_t>(random());

  std::signal(SIGINT, OnInterrupt);
  Run run;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t seq = 1;
       (options.count == 0 || seq <= options.count) && !interrupted; ++seq) {
    if (seq > 1) {
      // Sleep in short steps so that ^C ends the run at once.
      const auto due =
          start + absl::ToChronoNanoseconds(options.interval * (seq - 1));
      while (!interrupted && std::chrono::steady_clock::now() < due) {
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
            due - std::chrono::steady_clock::now(),
            std::chrono::milliseconds(50)));
      }
      if (interrupted) break;
    }
    run.samples.push_back(
        Ping(channel, seq, first_xid + seq, argument, result, options.timeout));
    if (!options.json) PrintSample(run.samples.back());
  }
  run.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return run;
}

// The summary: one JSON object, or ping(8)'s statistics lines. Returns the
// exit status (every call answered, and at least one made).
int Report(const std::string& uri, const Options& options,
           const rpcrdma::ConnectionInfo& info, const Run& run) {
  std::vector<int64_t> rtts;
  nlohmann::json calls = nlohmann::json::array();
  for (const Sample& s : run.samples) {
    nlohmann::json call = {
        {"seq", s.seq}, {"xid", s.xid}, {"ok", s.status.ok()}};
    if (s.status.ok()) {
      rtts.push_back(s.rtt_ns);
      call["rtt_us"] =
          rpcrdma::tools::Microseconds(static_cast<double>(s.rtt_ns));
    } else {
      call["error"] = s.status.ToString();
    }
    calls.push_back(std::move(call));
  }
  const size_t sent = run.samples.size();
  const size_t lost = sent - rtts.size();
  const rpcrdma::tools::LatencySummary summary =
      rpcrdma::tools::Summarize(rtts);
  if (options.json) {
    nlohmann::json out = {
        {"uri", uri},
        {"program", rpcrdma::perf::kProgram},
        {"procedure", options.size == 0 ? "NULL" : "ECHO"},
        {"size", options.size},
        {"connection", rpcrdma::tools::ConnectionInfoJson(info)},
        {"calls", std::move(calls)},
        {"sent", sent},
        {"ok", rtts.size()},
        {"lost", lost},
        {"time_ms", run.elapsed_ms},
        {"rtt", rpcrdma::tools::LatencyJson(summary)},
    };
    std::cout << out.dump() << "\n";
  } else {
    std::cout << absl::StrFormat(
        "--- %s rpcrdma-ping statistics ---\n"
        "%u calls, %u ok, %u lost (%.0f%%), time %d ms\n",
        uri, sent, rtts.size(), lost,
        sent == 0
            ? 0.0
            : 100.0 * static_cast<double>(lost) / static_cast<double>(sent),
        run.elapsed_ms);
    if (!rtts.empty()) {
      using rpcrdma::tools::Microseconds;
      std::cout << absl::StrFormat(
          "rtt min/avg/max/p50/p99 = %.3f/%.3f/%.3f/%.3f/%.3f us\n",
          Microseconds(static_cast<double>(summary.min_ns)),
          Microseconds(summary.avg_ns),
          Microseconds(static_cast<double>(summary.max_ns)),
          Microseconds(static_cast<double>(summary.p50_ns)),
          Microseconds(static_cast<double>(summary.p99_ns)));
    }
  }
  return lost == 0 && sent != 0 ? kExitOk : kExitFailure;
}

int PingUri(const std::string& uri) {
  Options options;
  options.json = absl::GetFlag(FLAGS_json);
  options.count = absl::GetFlag(FLAGS_count);
  options.interval = absl::GetFlag(FLAGS_interval);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.size = absl::GetFlag(FLAGS_size);
  if (options.interval < absl::ZeroDuration() ||
      options.timeout <= absl::ZeroDuration()) {
    return Usage("--interval must not be negative, --timeout must be positive");
  }
  absl::StatusOr<rpcrdma::config::TransportConfig> config =
      rpcrdma::tools::LoadConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) {
    std::cerr << "rpcrdma-ping: " << config.status() << "\n";
    return kExitFailure;
  }
  rpcrdma::tools::BoundConnect(absl::ToChronoNanoseconds(options.timeout),
                               *config);
  absl::StatusOr<std::unique_ptr<rpcrdma::Channel>> channel =
      rpcrdma::Channel::Create(uri, *config);
  if (!channel.ok()) {
    std::cerr << "rpcrdma-ping: cannot connect to " << uri << ": "
              << channel.status() << "\n";
    return kExitFailure;
  }
  const rpcrdma::ConnectionInfo info = (*channel)->connection_info();
  if (!options.json) {
    std::cout << "RPCRDMA-PING " << uri << ": "
              << (options.size == 0
                      ? std::string("NULL calls")
                      : absl::StrCat("ECHO of ", options.size, " octets"))
              << " to program 0x"
              << absl::StrFormat("%08x", rpcrdma::perf::kProgram) << "\n"
              << rpcrdma::tools::ConnectionInfoText(info) << std::flush;
  }
  const Run run = PingLoop(**channel, options);
  return Report(uri, options, info, run);
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away must end calls with a status, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::vector<std::string>> operands =
      rpcrdma::tools::SetFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!operands.ok()) return Usage(operands.status().message());
  if (absl::GetFlag(FLAGS_help)) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (operands->size() != 1) return Usage("give exactly one URI");
  return PingUri(operands->front());
}
