// The exporter's /status page in a real browser: while a Channel makes
// calls to a Server over the soft fabric, headless Chromium loads the page
// and prints the DOM it built, which must show the Server and the Channel,
// the settled version and thresholds, non-zero call counters and a drawn
// latency chart, and an application's markup only as text. Skipped when
// `chromium` is not installed (Debian: apt-get install chromium).
//
// With RPCRDMA_STATUS_SCREENSHOT=<file.png> set, it also saves a
// screenshot of the page there (how docs/status-page.png is made).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/prometheus.h"
#include "tests/api/status_fixture.h"

namespace rpcrdma {
namespace {

// The path of `program` on PATH, or "" when it is not there.
std::string FindProgram(const std::string& program) {
  const char* path = getenv("PATH");
  std::string dirs = path == nullptr ? "/usr/bin:/bin" : path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate =
        absl::StrCat(dirs.substr(start, end - start), "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// A fresh profile directory, so that no user's Chromium profile is read or
// written; removed with the object.
class ProfileDirectory {
 public:
  ProfileDirectory() {
    const char* tmp = getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(tmp == nullptr ? "/tmp" : tmp, "/rpcrdma-chromium-XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ProfileDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs headless Chromium on `url` with `flags`, killed after 20 s: its
// standard output ("" when it could not run).
std::string RunChromium(const std::string& chromium, const std::string& profile,
                        const std::vector<std::string>& flags,
                        const std::string& url) {
  std::string command = absl::StrCat(
      "timeout -k 2 20 ", chromium,
      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage"
      " --no-first-run --user-data-dir=",
      profile);
  for (const std::string& flag : flags) absl::StrAppend(&command, " ", flag);
  absl::StrAppend(&command, " ", url, " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

TEST(PrometheusStatusBrowser, ChromiumShowsPeersSettingsCountersAndCharts) {
  const std::string chromium = FindProgram("chromium");
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (Debian: apt-get install "
                    "chromium; scripts/install-deps.sh lists it)";
  }
  test::Peers peers = test::Connect("browser");
  ASSERT_NE(peers.channel, nullptr);
  auto exporter = PrometheusExporter::Create("127.0.0.1:0");
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  ASSERT_TRUE((*exporter)
                  ->Register(*peers.server,
                             {{"service", "kv"}, {"note", test::kHostileLabel}})
                  .ok());
  ASSERT_TRUE((*exporter)->Register(*peers.channel, {{"peer", "kv-1"}}).ok());

  // Calls run while the browser loads the page.
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> completed{0};
  std::thread caller([&] {
    for (uint32_t xid = 1; !stop.load(); ++xid) {
      if (test::CallOnce(*peers.channel, xid)) ++completed;
    }
  });
  for (int i = 0; i < 500 && completed.load() < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(completed.load(), 20u);

  ProfileDirectory profile;
  ASSERT_FALSE(profile.path().empty());
  const std::string url =
      absl::StrCat("http://127.0.0.1:", (*exporter)->port(), "/status");
  const std::string dom =
      RunChromium(chromium, profile.path(), {"--dump-dom"}, url);
  if (const char* shot = getenv("RPCRDMA_STATUS_SCREENSHOT"); shot != nullptr) {
    RunChromium(chromium, profile.path(),
                {absl::StrCat("--screenshot=", shot), "--window-size=1100,960",
                 "--hide-scrollbars"},
                url);
  }
  stop = true;
  caller.join();

  ASSERT_TRUE(absl::StrContains(dom, "<h1>rpcrdma status</h1>")) << dom;
  EXPECT_TRUE(absl::StrContains(dom, "data-role=\"server\""));
  EXPECT_TRUE(absl::StrContains(dom, "data-role=\"channel\""));
  EXPECT_TRUE(absl::StrContains(dom, "<span class=\"label\">peer=kv-1</span>"));
  EXPECT_TRUE(absl::StrContains(
      dom,
      absl::StrCat("<code class=\"uri\">", peers.server->uri(), "</code>")));
  // The label's markup is a text node of the DOM, not an element.
  EXPECT_FALSE(absl::StrContains(dom, "<script")) << dom;
  EXPECT_TRUE(absl::StrContains(
      dom, "note=&lt;script&gt;alert('x')&lt;/script&gt;&amp;\"</span>"))
      << dom;

  const ConnectionInfo info = peers.channel->connection_info();
  EXPECT_TRUE(absl::StrContains(dom, absl::StrCat("<tr><th>version</th><td>",
                                                  info.version, "</td></tr>")));
  EXPECT_TRUE(absl::StrContains(
      dom, absl::StrCat("<tr><th>send threshold</th><td>", info.send_threshold,
                        " octets</td></tr>")));
  EXPECT_TRUE(absl::StrContains(
      dom, absl::StrCat("<tr><th>receive threshold</th><td>",
                        info.receive_threshold, " octets</td></tr>")));

  // `calls` for each side, in total and on its connection: all counted.
  const std::regex calls_row(
      "data-counter=\"calls\"><th "
      "title=\"[^\"]*\">calls</th><td>([0-9]+)</td>");
  int rows = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), calls_row);
       it != std::sregex_iterator(); ++it) {
    ++rows;
    EXPECT_GT(std::stoull((*it)[1].str()), 0u) << it->str();
  }
  EXPECT_EQ(rows, 4) << dom;

  // The Channel's round trips and the Server's reply times drawn as bars.
  for (const char* histogram : {"call_rtt", "reply_time"}) {
    const std::regex chart(absl::StrCat(
        "data-histogram=\"", histogram,
        "\"><figcaption>[^<]*: [1-9][0-9]* calls[^<]*</figcaption>"
        "<svg class=\"histogram\"[^>]*>(<text[^>]*>[^<]*</text>)*"
        "<rect class=\"bar\" data-bucket=\"[0-9]+\" data-count=\"[1-9]"));
    EXPECT_TRUE(std::regex_search(dom, chart)) << histogram << "\n" << dom;
  }
}

}  // namespace
}  // namespace rpcrdma
