// rpcrdma/config.h, the public loader: what an application embedding the
// library calls, with the precise errors of the internal loader, returned
// and not also logged (Create logs what it rejects: tests/api/log_test.cc).
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
using ::testing::Not;
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

TEST_F(PublicConfigTest, WrongTypeNamesFieldAndLineAndIsReturnedNotLogged) {
  absl::StatusOr<config::TransportConfig> c =
      ParseConfig("\ncredits {\n  max_requests: -1\n}\n", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(c.status().message()),
      StartsWith("app.textproto:3:17: credits.max_requests (uint32): "));
  // A caller that prints the status shows the error once.
  EXPECT_TRUE(sink_->lines.empty());
}

TEST_F(PublicConfigTest, MisspeltFieldGetsTheNameItMeant) {
  absl::StatusOr<config::TransportConfig> c =
      ParseConfig("credit { max_requests: 32 }\n", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("no field named \"credit\". (did you mean "
                        "\"credits\"?)"));
  c = ParseConfig("credits { max_request: 32 }\n", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("(did you mean \"max_requests\"?)"));
  c = ParseConfig("credits { elephant: 32 }\n", "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              Not(HasSubstr("did you mean")));
}

// A block left open: the next field is reported as unknown in the open
// block; the hint names the block it belongs to.
TEST_F(PublicConfigTest, MissingClosingBraceIsNamedAsSuch) {
  absl::StatusOr<config::TransportConfig> c = ParseConfig(
      "credits {\n  max_requests: 32\n\ntimeouts { connect_ms: 100 }\n",
      "app.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("app.textproto:4:10: "));
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("(\"timeouts\" is a field of "
                        "rpcrdma.config.TransportConfig: is a \"}\" missing "
                        "before it?)"));
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
