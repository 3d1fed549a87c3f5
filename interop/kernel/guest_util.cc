// The kernel interop tests' shared helpers (guest_util.h).
#include "interop/kernel/guest_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {

std::string GuestPath(absl::string_view name) {
  return absl::StrCat(kExportRoot, "/", name);
}

std::string NfsUri() {
  return absl::StrCat("rdma://", test::RdmaTestHost(), ":", kNfsRdmaPort);
}

config::TransportConfig VerbsConfig() {
  config::TransportConfig c;
  c.set_fabric(config::TransportConfig::VERBS);
  return c;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()),
          static_cast<std::streamsize>(bytes.size()));
  if (!in) return {};
  return bytes;
}

bool WriteText(const std::string& path, absl::string_view text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

bool WriteBytes(const std::string& path, absl::Span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  return static_cast<bool>(out);
}

int64_t SvcRdma(absl::string_view name) {
  int64_t v = -1;
  std::string text = ReadText(absl::StrCat(kSvcRdma, name));
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v)) return -1;
  return v;
}

KernelStats KernelStats::Now() {
  return {SvcRdma("rdma_stat_read"), SvcRdma("rdma_stat_write"),
          SvcRdma("rdma_stat_recv")};
}

std::string Sha256OfFile(const std::string& path) {
  std::string cmd = absl::StrCat("sha256sum '", path, "' 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "";
  char buf[128] = {};
  std::string out;
  if (std::fgets(buf, sizeof(buf), pipe) != nullptr) out = buf;
  pclose(pipe);
  return out.substr(0, out.find(' '));
}

std::string Sha256Of(absl::Span<const uint8_t> bytes) {
  int in[2];
  int out[2];
  if (pipe(in) != 0) return "pipe failed";
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    return "pipe failed";
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execlp("sha256sum", "sha256sum", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  // sha256sum writes only after reading everything, so writing all first
  // cannot deadlock.
  for (size_t at = 0; pid > 0 && at < bytes.size();) {
    const ssize_t n = write(in[1], bytes.data() + at, bytes.size() - at);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  close(in[1]);
  std::string text;
  char buf[128];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) {
    text.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return text.substr(0, text.find(' '));
}

void ExpectSameSha256(absl::Span<const uint8_t> bytes,
                      const std::string& path) {
  const std::string ours = Sha256Of(bytes);
  const std::string guest = Sha256OfFile(path);
  std::printf("sha256 %s: guest %s, received %s\n", path.c_str(), guest.c_str(),
              ours.c_str());
  EXPECT_EQ(guest.size(), 64u);
  EXPECT_EQ(ours, guest);
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    for (size_t j = 0; j < 8 && i + j < n; ++j) {
      v[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  }
  return v;
}

uint64_t ClockSeed() {
  return static_cast<uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());
}

void LogInfo(absl::string_view what, const ConnectionInfo& i) {
  std::printf(
      "%s: peer private data %s (send %u, receive %u, R %d); thresholds "
      "send %u receive %u; remote invalidation %d; version %u (offered %u, "
      "peer range %u..%u)\n",
      std::string(what).c_str(), i.peer_private_data ? "yes" : "no",
      i.peer_send_size, i.peer_receive_size, i.peer_remote_invalidation,
      i.send_threshold, i.receive_threshold, i.remote_invalidation, i.version,
      i.offered_version, i.peer_version_low, i.peer_version_high);
}

void LogCounters(absl::string_view what, const Counters& c) {
  std::printf(
      "%s: calls %lu replies %lu inline %lu read-chunk calls %lu (chunks %lu) "
      "write chunks %lu reply chunks %lu long calls %lu long replies %lu "
      "errors rx %lu send-with-invalidate rx %lu credits %u peak outstanding "
      "%u\n",
      std::string(what).c_str(), c.calls, c.replies, c.inline_calls,
      c.read_chunk_calls, c.read_chunks, c.write_chunks, c.reply_chunks,
      c.long_calls, c.long_replies, c.errors_received, c.remote_invalidations,
      c.credits_granted, c.peak_calls_outstanding);
}

Counters Delta(const Counters& after, const Counters& before) {
  Counters d;
  for (const CounterField& f : kCounterFields) {
    d.*f.field = after.*f.field - before.*f.field;
  }
  return d;
}

}  // namespace rpcrdma::test
