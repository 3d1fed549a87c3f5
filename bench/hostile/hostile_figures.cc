// Memory and latency figures of the hostile-peer attacks (docs/hostile-
// peers.md): for each attack, the server it was reported against runs in
// a process of its own (hostile_figures_server, beside this program), and
// the table gives its resident size idle (after one legitimate call),
// at its peak during the attack (VmHWM, reset before it), and after it;
// the time a legitimate client took to connect and make one call while
// the attack was under way; and what the attack achieved.
//
//   hostile_figures [--only=N]   N: run only the attacks whose name
//                                starts with N (their number)
#include <thrift/protocol/TBinaryProtocol.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "Store.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "bench/hostile/attacks.h"
#include "bench/hostile/raw_calls.h"
#include "bench/hostile/server_process.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace rpcrdma::bench::hostile {
namespace {

using Clock = std::chrono::steady_clock;

// The server binary, in this program's directory.
std::string ServerProgram() {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size());
  self.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return self.substr(0, self.rfind('/') + 1) + "hostile_figures_server";
}

// One legitimate call, its connection included: Store.echo on the
// bridge, or the count program's NULL procedure on the ONC RPC adapter.
absl::Status LegitimateCall(const std::string& uri, bool oncrpc) {
  if (oncrpc) {
    absl::StatusOr<std::unique_ptr<Channel>> channel = Channel::Create(uri, {});
    if (!channel.ok()) return channel.status();
    static uint32_t xid = 0x900000;
    return CallForUint(**channel,
                       OncCall(++xid, 0x2000816b, 1, 1, Opaque(4, 'l')))
        .status();
  }
  try {
    auto socket = std::make_shared<thrift::TRdmaSocket>(uri);
    socket->setRecvTimeout(60000);
    ::rpcrdma::test::StoreClient store(
        std::make_shared<apache::thrift::protocol::TBinaryProtocol>(socket));
    socket->open();
    std::string out;
    store.echo(out, "legitimate");
    if (out != "legitimate") return absl::DataLossError("wrong echo");
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

std::string Mb(uint64_t octets) {
  return absl::StrFormat("%.1f MB", static_cast<double>(octets) / 1e6);
}

struct Row {
  std::string attack;
  std::string before;
  std::string idle, peak, after, legit, outcome;
};

Row Measure(const Attack& attack) {
  Row row{attack.name, attack.before, "-", "-", "-", "-", ""};
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(ServerProgram(), attack.server);
  if (!server.ok()) {
    row.outcome = server.status().ToString();
    return row;
  }
  const bool oncrpc = attack.server.front() == "oncrpc";
  const std::string& uri = (*server)->uri();
  // Idle: serving, after one legitimate call (its first-call set-up is
  // not the attack's).
  (void)LegitimateCall(uri, oncrpc);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t idle = (*server)->Resident();
  const bool peak_reset = (*server)->ResetPeak();

  std::promise<void> underway;
  std::future<void> started = underway.get_future();
  std::string outcome;
  std::thread attacker([&] {
    bool told = false;
    outcome = attack.run(uri, [&] {
      if (!told) underway.set_value();
      told = true;
    });
    if (!told) underway.set_value();
  });
  started.wait();
  const Clock::time_point start = Clock::now();
  const absl::Status legit = LegitimateCall(uri, oncrpc);
  const double legit_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  attacker.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t after = (*server)->Resident();
  const uint64_t peak = (*server)->PeakResident();
  const bool alive = (*server)->Alive();

  row.idle = Mb(idle);
  row.peak = peak_reset ? Mb(peak) : "n/a";
  row.after = alive ? Mb(after) : "-";
  row.legit = legit.ok() ? absl::StrFormat("%.0f ms", legit_ms)
                         : absl::StrCat("FAILED: ", legit.message());
  row.outcome = absl::StrCat(alive ? "server up; " : "SERVER DIED; ", outcome);
  return row;
}

void Print(const std::vector<Row>& rows) {
  std::printf("%-62s | %-9s | %-9s | %-9s | %-9s | %s\n", "attack", "idle RSS",
              "peak RSS", "RSS after", "legit", "outcome (before the fix)");
  for (const Row& r : rows) {
    std::printf("%-62s | %-9s | %-9s | %-9s | %-9s | %s (before: %s)\n",
                r.attack.c_str(), r.idle.c_str(), r.peak.c_str(),
                r.after.c_str(), r.legit.c_str(), r.outcome.c_str(),
                r.before.c_str());
  }
}

}  // namespace
}  // namespace rpcrdma::bench::hostile

int main(int argc, char** argv) {
  using namespace rpcrdma::bench::hostile;  // NOLINT: main
  std::string only;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg(argv[i]);
    if (absl::ConsumePrefix(&arg, "--only=")) {
      only = std::string(arg);
    } else {
      std::fprintf(stderr, "usage: hostile_figures [--only=N]\n");
      return 2;
    }
  }
  std::vector<Row> rows;
  for (const Attack& attack : Attacks()) {
    if (!only.empty() && !absl::StartsWith(attack.name, only)) continue;
    std::fprintf(stderr, "%s ...\n", attack.name.c_str());
    rows.push_back(Measure(attack));
  }
  Print(rows);
  return 0;
}
