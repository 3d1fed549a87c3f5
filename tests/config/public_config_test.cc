// rpcrdma/config.h, the public loader: what an application embedding the
// library calls, with the precise errors of the internal loader and a log
// record for every rejected configuration.
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/config.h"
#include "rpcrdma/log.h"

namespace rpcrdma {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class Collect : public LogSink {
 public:
  void Write(const LogRecord& r) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(std::string(LogSeverityName(r.severity)) + " " +
                    std::string(r.message));
  }
  std::mutex mu;
  std::vector<std::string> lines;
};

class PublicConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogSink(sink_); }
  void TearDown() override { SetLogSink(nullptr); }
  std::shared_ptr<Collect> sink_ = std::make_shared<Collect>();
};

TEST_F(PublicConfigTest, ParsesAndValidates) {
  absl::StatusOr<config::TransportConfig> c =
      ParseConfig("fabric: SOFT_TCP\ncredits { max_requests: 64 }\n", "inline");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->fabric(), config::TransportConfig::SOFT_TCP);
  EXPECT_EQ(c->credits().max_requests(), 64u);
  EXPECT_TRUE(sink_->lines.empty());
}

TEST_F(PublicConfigTest, WrongTypeNamesFieldAndLineAndIsLogged) {
  absl::StatusOr<config::TransportConfig> c =
      ParseConfig("\ncredits {\n  max_requests: -1\n}\n", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(c.status().message()),
      StartsWith("app.textproto:3:17: credits.max_requests (uint32): "));
  ASSERT_EQ(sink_->lines.size(), 1u);
  EXPECT_THAT(sink_->lines[0],
              StartsWith("ERROR rejected configuration: app.textproto:3:17: "
                         "credits.max_requests"));
}

TEST_F(PublicConfigTest, OutOfRangeNamesSourceFieldValueAndReason) {
  absl::StatusOr<config::TransportConfig> c =
      ParseConfig("credits { max_requests: 0 }", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "app.textproto: credits.max_requests: 0 is out of range 1..65535 "
            "(RFC 8166 §3.3.1)");
}

TEST_F(PublicConfigTest, LoadsFilesAndNamesMissingOnes) {
  const std::string path = ::testing::TempDir() + "/public_config.textproto";
  {
    std::ofstream out(path, std::ios::trunc);
    out << "timeouts {\n  connect_ms: \"soon\"\n}\n";
  }
  absl::StatusOr<config::TransportConfig> bad = LoadConfigFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              StartsWith(path + ":2:15: timeouts.connect_ms (int64): "));
  {
    std::ofstream out(path, std::ios::trunc);
    out << "timeouts { connect_ms: 2500 }\n";
  }
  absl::StatusOr<config::TransportConfig> good = LoadConfigFile(path);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->timeouts().connect_ms(), 2500);
  absl::StatusOr<config::TransportConfig> missing =
      LoadConfigFile(path + ".absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(".absent"));
}

TEST_F(PublicConfigTest, DefaultConfigIsValid) {
  config::TransportConfig c = DefaultConfig();
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(c.credits().max_requests(), 128u);
  c.mutable_credits()->set_credits_granted(0);
  absl::Status s = ValidateConfig(c, "built");
  EXPECT_THAT(std::string(s.message()),
              StartsWith("built: credits.credits_granted: 0"));
}

}  // namespace
}  // namespace rpcrdma
