// Tests for the transport configuration schema and its loader. Expected
// defaults are the Linux kernel's values, written out as numbers here (not
// taken from the loader's constants) so a changed default fails a test.
#include "plugin/config/config_loader.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "plugin/wire/private_data.h"

#ifndef RPCRDMA_CONFIG_EXAMPLES_DIR
#error "RPCRDMA_CONFIG_EXAMPLES_DIR must name plugin/proto/examples"
#endif

namespace rpcrdma::config {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kExamples = RPCRDMA_CONFIG_EXAMPLES_DIR;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// Writes `content` to a fresh file under the test temporary directory.
std::string WriteTemp(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  return path;
}

// Checks every resolved value against the kernel-derived defaults.
void ExpectKernelDefaults(const ResolvedConfig& r) {
  EXPECT_EQ(r.fabric, TransportConfig::FABRIC_UNSPECIFIED);
  EXPECT_EQ(r.version_policy, TransportConfig::V1);
  EXPECT_TRUE(r.inline_settings.cm_private_data);
  EXPECT_TRUE(r.inline_settings.remote_invalidation);
  EXPECT_EQ(r.inline_settings.send, 4096u);     // RPCRDMA_DEF_INLINE
  EXPECT_EQ(r.inline_settings.receive, 4096u);  // RPCRDMA_DEF_INLINE
  EXPECT_EQ(r.max_requests, 128u);              // RPCRDMA_DEF_SLOT_TABLE
  EXPECT_EQ(r.credits_granted, 128u);
  EXPECT_TRUE(r.backchannel_enabled);
  EXPECT_EQ(r.backchannel_credits, 2u);  // RPCRDMA_MAX_BC_REQUESTS
  EXPECT_EQ(r.chunk_limits.max_read_segments, 256u);
  EXPECT_EQ(r.chunk_limits.max_write_chunks, 64u);
  EXPECT_EQ(r.chunk_limits.max_segments_per_chunk, 256u);
  EXPECT_EQ(r.max_header_segments, 8u);  // RPCRDMA_MAX_HDR_SEGS
  // 16 MiB and a page, sized as nfsd sizes NFSSVC_MAXBLKSIZE + a page.
  EXPECT_EQ(r.max_call_size, 16781312u);
  EXPECT_EQ(r.connect_timeout, milliseconds(60000));
  EXPECT_EQ(r.request_deadline, milliseconds(60000));
  EXPECT_EQ(r.reconnect_backoff_initial, milliseconds(5000));
  EXPECT_EQ(r.reconnect_backoff_max, milliseconds(30000));
  EXPECT_EQ(r.idle_timeout, milliseconds(300000));
  // Two largest calls per connection, eight per Server (nfsd's 8 threads).
  EXPECT_EQ(r.max_reassembly_bytes, 2u * 16781312u);
  EXPECT_EQ(r.max_server_reassembly_bytes, 8u * 16781312u);
  EXPECT_EQ(r.max_connections, 220u);  // svc_check_conn_limits, 8 threads
  EXPECT_EQ(r.handshake_timeout, milliseconds(60000));
  EXPECT_EQ(r.abandoned_call_timeout, milliseconds(5000));
  EXPECT_EQ(r.handshake_answer_timeout, milliseconds(5000));
  EXPECT_EQ(r.handler_threads, 0u);  // on the loop, as before a pool
  EXPECT_EQ(r.busy_poll_us, 0u);     // the kernel never busy-polls
}

// ---------------------------------------------------------------- defaults

TEST(ConfigDefaults, EmptyConfigResolvesToKernelValues) {
  ExpectKernelDefaults(Resolve(TransportConfig{}));
}

TEST(ConfigDefaults, DefaultConfigSetsEveryFieldToKernelValues) {
  const TransportConfig c = DefaultConfig();
  EXPECT_TRUE(c.has_cm_private_data());
  EXPECT_TRUE(c.has_remote_invalidation());
  EXPECT_TRUE(c.inline_threshold().has_send());
  EXPECT_TRUE(c.inline_threshold().has_receive());
  EXPECT_TRUE(c.credits().has_max_requests());
  EXPECT_TRUE(c.credits().has_credits_granted());
  EXPECT_TRUE(c.backchannel().has_enabled());
  EXPECT_TRUE(c.backchannel().has_credits());
  EXPECT_TRUE(c.limits().has_max_read_segments());
  EXPECT_TRUE(c.limits().has_max_write_chunks());
  EXPECT_TRUE(c.limits().has_max_segments_per_chunk());
  EXPECT_TRUE(c.limits().has_max_header_segments());
  EXPECT_TRUE(c.timeouts().has_connect_ms());
  EXPECT_TRUE(c.timeouts().has_request_deadline_ms());
  EXPECT_TRUE(c.timeouts().has_reconnect_backoff_initial_ms());
  EXPECT_TRUE(c.timeouts().has_reconnect_backoff_max_ms());
  EXPECT_TRUE(c.timeouts().has_idle_ms());
  EXPECT_TRUE(c.timeouts().has_handshake_ms());
  EXPECT_TRUE(c.timeouts().has_abandoned_call_ms());
  EXPECT_TRUE(c.timeouts().has_handshake_answer_ms());
  EXPECT_TRUE(c.limits().has_max_reassembly_bytes());
  EXPECT_TRUE(c.limits().has_max_server_reassembly_bytes());
  EXPECT_TRUE(c.limits().has_max_connections());
  ExpectKernelDefaults(Resolve(c));
  EXPECT_TRUE(ValidateConfig(c, "defaults").ok());
}

TEST(ConfigDefaults, EmptyTextIsValidAndDefault) {
  auto c = ParseConfigText("", "empty.textproto");
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectKernelDefaults(Resolve(*c));
  auto comment_only = ParseConfigText("# nothing here\n", "comment.textproto");
  ASSERT_TRUE(comment_only.ok()) << comment_only.status();
  ExpectKernelDefaults(Resolve(*comment_only));
}

TEST(ConfigDefaults, Rfc8166_3_3_3_WithoutPrivateDataInlineIs1024AndNoR) {
  auto c = ParseConfigText("cm_private_data: false", "t");
  ASSERT_TRUE(c.ok()) << c.status();
  const InlineSettings s = EffectiveInline(*c);
  EXPECT_FALSE(s.cm_private_data);
  EXPECT_FALSE(s.remote_invalidation);
  EXPECT_EQ(s.send, 1024u);
  EXPECT_EQ(s.receive, 1024u);
}

TEST(ConfigDefaults, Draft04_2_3_VersionTwoWithoutPrivateDataInlineIs4096) {
  for (const char* policy : {"V2", "V2_WITH_FALLBACK"}) {
    auto c = ParseConfigText(
        std::string("cm_private_data: false\nversion_policy: ") + policy, "t");
    ASSERT_TRUE(c.ok()) << c.status();
    const InlineSettings s = EffectiveInline(*c);
    EXPECT_EQ(s.send, 4096u) << policy;
    EXPECT_EQ(s.receive, 4096u) << policy;
    EXPECT_FALSE(s.remote_invalidation) << policy;
  }
}

TEST(ConfigDefaults, UnspecifiedVersionPolicyResolvesToV1) {
  auto c = ParseConfigText("version_policy: VERSION_POLICY_UNSPECIFIED", "t");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Resolve(*c).version_policy, TransportConfig::V1);
}

TEST(ConfigDefaults, Rfc8797_4_DefaultPrivateDataMatchesKernelOctets) {
  // The kernel client with FRWR sends R set and 4096/4096:
  // f6ab0e18 01 01 03 03.
  auto octets =
      wire::EncodePrivateData(EffectiveInline(DefaultConfig()).ToPrivateData());
  ASSERT_TRUE(octets.ok()) << octets.status();
  EXPECT_THAT(*octets,
              ElementsAre(0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03));
}

TEST(ConfigDefaults, DisabledBackchannelResolvesToZeroCredits) {
  auto c = ParseConfigText("backchannel { enabled: false }", "t");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(Resolve(*c).backchannel_enabled);
  EXPECT_EQ(Resolve(*c).backchannel_credits, 0u);
}

TEST(ConfigDefaults, RemoteInvalidationCanBeTurnedOffAlone) {
  auto c = ParseConfigText("remote_invalidation: false", "t");
  ASSERT_TRUE(c.ok()) << c.status();
  const InlineSettings s = EffectiveInline(*c);
  EXPECT_TRUE(s.cm_private_data);
  EXPECT_FALSE(s.remote_invalidation);
  EXPECT_FALSE(s.ToPrivateData().remote_invalidation);
}

// ---------------------------------------------------------------- examples

std::vector<std::string> ExampleFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kExamples)) {
    if (entry.path().extension() == ".textproto") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ConfigExamples, EveryExampleLoads) {
  const std::vector<std::string> files = ExampleFiles();
  ASSERT_GE(files.size(), 2u);
  for (const std::string& path : files) {
    auto c = LoadConfigFile(path);
    EXPECT_TRUE(c.ok()) << path << ": " << c.status();
  }
}

TEST(ConfigExamples, DefaultExampleIsDefaultConfig) {
  auto c = LoadConfigFile(kExamples + "/default.textproto");
  ASSERT_TRUE(c.ok()) << c.status();
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(DefaultConfig(), *c)) << diff;
  ExpectKernelDefaults(Resolve(*c));
}

TEST(ConfigExamples, TunedExampleValues) {
  auto c = LoadConfigFile(kExamples + "/tuned.textproto");
  ASSERT_TRUE(c.ok()) << c.status();
  const ResolvedConfig r = Resolve(*c);
  EXPECT_EQ(r.fabric, TransportConfig::VERBS);
  EXPECT_EQ(r.version_policy, TransportConfig::V2_WITH_FALLBACK);
  EXPECT_TRUE(r.inline_settings.cm_private_data);
  EXPECT_TRUE(r.inline_settings.remote_invalidation);
  EXPECT_EQ(r.inline_settings.send, 16384u);
  EXPECT_EQ(r.inline_settings.receive, 16384u);
  EXPECT_EQ(r.max_requests, 256u);
  EXPECT_EQ(r.credits_granted, 512u);
  EXPECT_TRUE(r.backchannel_enabled);  // left out: default
  EXPECT_EQ(r.backchannel_credits, 16u);
  EXPECT_EQ(r.chunk_limits.max_read_segments, 64u);
  EXPECT_EQ(r.chunk_limits.max_write_chunks, 4u);
  EXPECT_EQ(r.chunk_limits.max_segments_per_chunk, 64u);
  EXPECT_EQ(r.max_header_segments, 16u);
  EXPECT_EQ(r.max_call_size, 4198400u);
  EXPECT_EQ(r.connect_timeout, milliseconds(10000));
  EXPECT_EQ(r.request_deadline, milliseconds(0));
  EXPECT_EQ(r.reconnect_backoff_initial, milliseconds(250));
  EXPECT_EQ(r.reconnect_backoff_max, milliseconds(10000));
  EXPECT_EQ(r.idle_timeout, milliseconds(0));
}

// -------------------------------------------------------------- validation

struct InvalidCase {
  const char* text;
  const char* path;    // field path in the message
  const char* reason;  // substring of the reason
};

class ConfigInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ConfigInvalid, RejectedWithFileFieldAndReason) {
  const InvalidCase& c = GetParam();
  auto parsed = ParseConfigText(c.text, "bad.textproto");
  ASSERT_FALSE(parsed.ok()) << c.text;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message = Message(parsed.status());
  EXPECT_THAT(message,
              HasSubstr(std::string("bad.textproto: ") + c.path + ": "));
  EXPECT_THAT(message, HasSubstr(c.reason));

  // ValidateConfig on the same message, parsed without validation, gives
  // the same answer under another source name.
  TransportConfig raw;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.text, &raw));
  absl::Status s = ValidateConfig(raw, "other.textproto");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s),
              HasSubstr(std::string("other.textproto: ") + c.path + ": "));
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ConfigInvalid,
    ::testing::Values(
        // Enums: proto3 text format accepts unknown numbers.
        InvalidCase{"fabric: 7", "fabric", "7 is not a known fabric"},
        InvalidCase{"version_policy: 9", "version_policy",
                    "9 is not a known version policy"},
        // Inline thresholds: RFC 8797 §4.2 range and granularity.
        InvalidCase{"inline_threshold { send: 512 }", "inline_threshold.send",
                    "512 is out of range 1024..262144"},
        InvalidCase{"inline_threshold { send: 0 }", "inline_threshold.send",
                    "0 is out of range 1024..262144"},
        InvalidCase{"inline_threshold { receive: 262145 }",
                    "inline_threshold.receive",
                    "262145 is out of range 1024..262144"},
        InvalidCase{"cm_private_data: false inline_threshold { send: 300000 }",
                    "inline_threshold.send",
                    "300000 is out of range 1024..262144"},
        InvalidCase{"inline_threshold { send: 3000 }", "inline_threshold.send",
                    "3000 is not a multiple of 1024"},
        InvalidCase{"inline_threshold { receive: 5000 }",
                    "inline_threshold.receive",
                    "5000 is not a multiple of 1024"},
        // draft-04 §2.3: version-two receivers must take 4096.
        InvalidCase{"version_policy: V2 inline_threshold { receive: 2048 }",
                    "inline_threshold.receive", "2048 is below 4096"},
        InvalidCase{"version_policy: V2_WITH_FALLBACK "
                    "inline_threshold { receive: 1024 }",
                    "inline_threshold.receive", "1024 is below 4096"},
        // RFC 8797 §4.1: R only travels in private data in version one.
        InvalidCase{"cm_private_data: false remote_invalidation: true",
                    "remote_invalidation", "cm_private_data is false"},
        InvalidCase{"version_policy: V1 cm_private_data: false "
                    "remote_invalidation: true",
                    "remote_invalidation", "RFC 8797 §4.1"},
        // Credits.
        InvalidCase{"credits { max_requests: 0 }", "credits.max_requests",
                    "0 is out of range 1..65535"},
        InvalidCase{"credits { max_requests: 65536 }", "credits.max_requests",
                    "65536 is out of range 1..65535"},
        InvalidCase{"credits { credits_granted: 0 }", "credits.credits_granted",
                    "0 is out of range 1..65535"},
        InvalidCase{"credits { credits_granted: 4294967295 }",
                    "credits.credits_granted",
                    "4294967295 is out of range 1..65535"},
        // Backchannel.
        InvalidCase{"backchannel { credits: 0 }", "backchannel.credits",
                    "0 is out of range 1..65535"},
        InvalidCase{"backchannel { credits: 200 }", "backchannel.credits",
                    "200 exceeds credits.max_requests (128)"},
        InvalidCase{"credits { max_requests: 1 }", "backchannel.credits",
                    "2 (the default) exceeds credits.max_requests (1)"},
        InvalidCase{"backchannel { enabled: false credits: 4 }",
                    "backchannel.credits",
                    "4 is set but backchannel.enabled is false"},
        // Chunk limits.
        InvalidCase{"limits { max_read_segments: 0 }",
                    "limits.max_read_segments", "0 is out of range 1..256"},
        InvalidCase{"limits { max_read_segments: 257 }",
                    "limits.max_read_segments", "257 is out of range 1..256"},
        InvalidCase{"limits { max_write_chunks: 0 }", "limits.max_write_chunks",
                    "0 is out of range 1..64"},
        InvalidCase{"limits { max_write_chunks: 65 }",
                    "limits.max_write_chunks", "65 is out of range 1..64"},
        InvalidCase{"limits { max_segments_per_chunk: 0 }",
                    "limits.max_segments_per_chunk",
                    "0 is out of range 1..256"},
        InvalidCase{"limits { max_segments_per_chunk: 1000 }",
                    "limits.max_segments_per_chunk",
                    "1000 is out of range 1..256"},
        InvalidCase{"limits { max_header_segments: 0 }",
                    "limits.max_header_segments", "0 is out of range 1..32"},
        InvalidCase{"limits { max_header_segments: 33 }",
                    "limits.max_header_segments", "33 is out of range 1..32"},
        InvalidCase{"limits { max_call_size: 1023 }", "limits.max_call_size",
                    "1023 is out of range 1024..268435456"},
        InvalidCase{"limits { max_call_size: 268435457 }",
                    "limits.max_call_size",
                    "268435457 is out of range 1024..268435456"},
        // Timeouts.
        InvalidCase{"timeouts { connect_ms: 0 }", "timeouts.connect_ms",
                    "0 is out of range 1..86400000"},
        InvalidCase{"timeouts { connect_ms: -1 }", "timeouts.connect_ms",
                    "-1 is out of range 1..86400000"},
        InvalidCase{"timeouts { connect_ms: 86400001 }", "timeouts.connect_ms",
                    "86400001 is out of range 1..86400000"},
        InvalidCase{"timeouts { request_deadline_ms: -5 }",
                    "timeouts.request_deadline_ms",
                    "-5 is out of range 0..86400000"},
        InvalidCase{"timeouts { request_deadline_ms: 100000000 }",
                    "timeouts.request_deadline_ms",
                    "100000000 is out of range 0..86400000"},
        InvalidCase{"timeouts { reconnect_backoff_initial_ms: 0 }",
                    "timeouts.reconnect_backoff_initial_ms",
                    "0 is out of range 1..86400000"},
        InvalidCase{"timeouts { reconnect_backoff_max_ms: -30000 }",
                    "timeouts.reconnect_backoff_max_ms",
                    "-30000 is out of range 1..86400000"},
        InvalidCase{"timeouts { reconnect_backoff_initial_ms: 40000 }",
                    "timeouts.reconnect_backoff_initial_ms",
                    "40000 exceeds timeouts.reconnect_backoff_max_ms "
                    "(30000, the default)"},
        InvalidCase{"timeouts { reconnect_backoff_initial_ms: 5000 "
                    "reconnect_backoff_max_ms: 1000 }",
                    "timeouts.reconnect_backoff_initial_ms",
                    "5000 exceeds timeouts.reconnect_backoff_max_ms (1000)"},
        InvalidCase{"timeouts { reconnect_backoff_max_ms: 1000 }",
                    "timeouts.reconnect_backoff_initial_ms",
                    "5000 (the default) exceeds "
                    "timeouts.reconnect_backoff_max_ms (1000)"},
        InvalidCase{"timeouts { idle_ms: -1 }", "timeouts.idle_ms",
                    "-1 is out of range 0..86400000"},
        InvalidCase{"timeouts { idle_ms: 86400001 }", "timeouts.idle_ms",
                    "86400001 is out of range 0..86400000"},
        // Reassembly budgets (RFC 5666 §11) and the connection limit.
        InvalidCase{"limits { max_reassembly_bytes: 1000 }",
                    "limits.max_reassembly_bytes",
                    "1000 is below limits.max_call_size (16781312, the "
                    "default)"},
        InvalidCase{"limits { max_call_size: 4096 max_reassembly_bytes: 4095 }",
                    "limits.max_reassembly_bytes",
                    "4095 is below limits.max_call_size (4096)"},
        InvalidCase{"limits { max_reassembly_bytes: 0 }",
                    "limits.max_reassembly_bytes",
                    "0 is out of range 1..1099511627776"},
        InvalidCase{"limits { max_reassembly_bytes: 1099511627777 }",
                    "limits.max_reassembly_bytes",
                    "1099511627777 is out of range 1..1099511627776"},
        InvalidCase{"limits { max_server_reassembly_bytes: 2000000 }",
                    "limits.max_server_reassembly_bytes",
                    "2000000 is below limits.max_reassembly_bytes (33562624, "
                    "the default)"},
        InvalidCase{"limits { max_reassembly_bytes: 8000000 "
                    "max_server_reassembly_bytes: 7999999 }",
                    "limits.max_server_reassembly_bytes",
                    "7999999 is below limits.max_reassembly_bytes (8000000)"},
        InvalidCase{"limits { max_connections: 0 }", "limits.max_connections",
                    "0 is out of range 1..1048576"},
        InvalidCase{"limits { max_connections: 1048577 }",
                    "limits.max_connections",
                    "1048577 is out of range 1..1048576"},
        InvalidCase{"timeouts { handshake_ms: 0 }", "timeouts.handshake_ms",
                    "0 is out of range 1..86400000"},
        InvalidCase{"timeouts { handshake_answer_ms: 0 }",
                    "timeouts.handshake_answer_ms",
                    "0 is out of range 1..86400000"},
        InvalidCase{"timeouts { abandoned_call_ms: 86400001 }",
                    "timeouts.abandoned_call_ms",
                    "86400001 is out of range 1..86400000"},
        InvalidCase{"execution { handler_threads: 1025 }",
                    "execution.handler_threads",
                    "1025 is out of range 0..1024"},
        InvalidCase{"execution { busy_poll_us: 1000001 }",
                    "execution.busy_poll_us",
                    "1000001 is out of range 0..1000000"}));

class ConfigValid : public ::testing::TestWithParam<const char*> {};

TEST_P(ConfigValid, Accepted) {
  auto parsed = ParseConfigText(GetParam(), "good.textproto");
  EXPECT_TRUE(parsed.ok()) << GetParam() << "\n" << parsed.status();
}

// The edges of every range, and combinations the rules allow.
INSTANTIATE_TEST_SUITE_P(
    Edges, ConfigValid,
    ::testing::Values(
        "fabric: VERBS", "fabric: SOFT_UNIX", "fabric: SOFT_TCP",
        "version_policy: V2", "inline_threshold { send: 1024 receive: 262144 }",
        "inline_threshold { send: 262144 receive: 1024 }",
        // Without private data nothing is encoded, so any size in range.
        "cm_private_data: false inline_threshold { send: 3000 receive: 1500 }",
        "version_policy: V2 inline_threshold { receive: 4096 }",
        "version_policy: V2 cm_private_data: false",
        // Version two signals remote invalidation in its own headers.
        "version_policy: V2 cm_private_data: false remote_invalidation: true",
        "cm_private_data: false remote_invalidation: false",
        "credits { max_requests: 1 credits_granted: 1 } "
        "backchannel { credits: 1 }",
        "credits { max_requests: 65535 credits_granted: 65535 } "
        "backchannel { credits: 65535 }",
        "credits { max_requests: 1 } backchannel { enabled: false }",
        "backchannel { credits: 128 }",
        "limits { max_read_segments: 1 max_write_chunks: 1 "
        "max_segments_per_chunk: 1 max_header_segments: 1 }",
        "limits { max_read_segments: 256 max_write_chunks: 64 "
        "max_segments_per_chunk: 256 max_header_segments: 32 }",
        "timeouts { connect_ms: 1 request_deadline_ms: 0 idle_ms: 0 }",
        "timeouts { connect_ms: 86400000 request_deadline_ms: 86400000 "
        "idle_ms: 86400000 }",
        "timeouts { reconnect_backoff_initial_ms: 30000 }",
        "timeouts { reconnect_backoff_initial_ms: 1 "
        "reconnect_backoff_max_ms: 1 }",
        // A largest call of 256 MiB: the budgets follow it by default.
        "limits { max_call_size: 268435456 }",
        "limits { max_call_size: 1024 max_reassembly_bytes: 1024 "
        "max_server_reassembly_bytes: 1024 max_connections: 1 }",
        "limits { max_reassembly_bytes: 1099511627776 "
        "max_server_reassembly_bytes: 1099511627776 "
        "max_connections: 1048576 }",
        "timeouts { handshake_ms: 1 abandoned_call_ms: 1 "
        "handshake_answer_ms: 1 }",
        "timeouts { handshake_ms: 86400000 abandoned_call_ms: 86400000 "
        "handshake_answer_ms: 86400000 }",
        "execution { handler_threads: 0 busy_poll_us: 0 }",
        "execution { handler_threads: 1024 busy_poll_us: 1000000 }"));

TEST(ConfigValidate, EveryOffendingFieldIsReported) {
  auto parsed = ParseConfigText(
      "credits { max_requests: 0 }\n"
      "limits { max_write_chunks: 100 }\n"
      "timeouts { idle_ms: -1 }\n",
      "many.textproto");
  ASSERT_FALSE(parsed.ok());
  const std::string m = Message(parsed.status());
  EXPECT_THAT(m, HasSubstr("many.textproto: credits.max_requests: 0 is out"));
  EXPECT_THAT(m,
              HasSubstr("many.textproto: limits.max_write_chunks: 100 is out"));
  EXPECT_THAT(m, HasSubstr("many.textproto: timeouts.idle_ms: -1 is out"));
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 2);
}

// ------------------------------------------------------------------ syntax

TEST(ConfigSyntax, ErrorNamesLineAndColumn) {
  auto parsed = ParseConfigText(
      "credits {\n"
      "  max_requests: 12\n"
      "  credits_granted 5\n"
      "}\n",
      "syntax.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(parsed.status()), StartsWith("syntax.textproto:3:19: "));
  EXPECT_THAT(Message(parsed.status()), HasSubstr("Expected \":\""));
}

TEST(ConfigSyntax, UnknownFieldIsRejected) {
  auto parsed = ParseConfigText(
      "cm_private_data: true\n"
      "credits {\n"
      "  max_request: 5\n"
      "}\n",
      "unknown.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(parsed.status()), StartsWith("unknown.textproto:3:"));
  EXPECT_THAT(Message(parsed.status()), HasSubstr("max_request"));
}

TEST(ConfigSyntax, UnknownTopLevelFieldIsRejected) {
  auto parsed = ParseConfigText("inline_send: 4096\n", "top.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Message(parsed.status()), StartsWith("top.textproto:1:"));
  EXPECT_THAT(Message(parsed.status()), HasSubstr("inline_send"));
}

TEST(ConfigSyntax, UnknownEnumNameIsRejected) {
  // TextFormat reports an unknown enum name at the token after it, here the
  // start of line 3.
  auto parsed = ParseConfigText("\nfabric: RDMA\n", "enum.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(parsed.status()), StartsWith("enum.textproto:3:1: "));
  EXPECT_THAT(Message(parsed.status()),
              HasSubstr("Unknown enumeration value of \"RDMA\" for field "
                        "\"fabric\""));
}

TEST(ConfigSyntax, NegativeUnsignedIsRejected) {
  auto parsed =
      ParseConfigText("credits { max_requests: -1 }", "neg.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Message(parsed.status()), StartsWith("neg.textproto:1:"));
}

// a value of the wrong type names its field (path and type) and
// its line, not only "Expected integer".
TEST(ConfigSyntax, WrongTypeNamesFieldAndLine) {
  auto negative = ParseConfigText(
      "cm_private_data: true\n"
      "credits {\n"
      "  max_requests: -1\n"
      "}\n",
      "neg.textproto");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(negative.status()),
            "neg.textproto:3:17: credits.max_requests (uint32): Expected "
            "integer, got: -");
  auto text = ParseConfigText(
      "timeouts { connect_ms: 10 }\n"
      "credits { credits_granted: \"many\" }\n",
      "string.textproto");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(Message(text.status()),
            "string.textproto:2:28: credits.credits_granted (uint32): Expected "
            "integer, got: \"many\"");
  auto fraction =
      ParseConfigText("timeouts { connect_ms: 1.5 }", "float.textproto");
  ASSERT_FALSE(fraction.ok());
  EXPECT_THAT(
      Message(fraction.status()),
      StartsWith("float.textproto:1:24: timeouts.connect_ms (int64): "));
  auto boolean = ParseConfigText("cm_private_data: 3", "bool.textproto");
  ASSERT_FALSE(boolean.ok());
  EXPECT_THAT(Message(boolean.status()),
              StartsWith("bool.textproto:1:18: cm_private_data (bool): "));
}

TEST(ConfigSyntax, RepeatedScalarIsRejected) {
  auto parsed = ParseConfigText(
      "cm_private_data: true\n"
      "cm_private_data: false\n",
      "twice.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Message(parsed.status()), StartsWith("twice.textproto:2:"));
  EXPECT_THAT(Message(parsed.status()), HasSubstr("cm_private_data"));
}

TEST(ConfigSyntax, UnterminatedBlockIsRejected) {
  auto parsed = ParseConfigText("timeouts {\n  idle_ms: 1\n", "open.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Message(parsed.status()), StartsWith("open.textproto:"));
}

// ------------------------------------------------------------------- files

TEST(ConfigFile, MissingFileIsNotFoundWithPath) {
  const std::string path = ::testing::TempDir() + "/no-such-config.textproto";
  std::filesystem::remove(path);
  auto loaded = LoadConfigFile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(loaded.status()), HasSubstr(path));
}

TEST(ConfigFile, DirectoryIsRejected) {
  auto loaded = LoadConfigFile(::testing::TempDir());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ConfigFile, OversizedFileIsRejectedBeforeReading) {
  const std::string path =
      WriteTemp("huge.textproto", std::string(kMaxConfigFileSize + 1, ' '));
  auto loaded = LoadConfigFile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(loaded.status()), HasSubstr(path));
}

TEST(ConfigFile, ValidFileLoads) {
  const std::string path = WriteTemp(
      "ok.textproto", "fabric: SOFT_TCP\ncredits { max_requests: 32 }\n");
  auto loaded = LoadConfigFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->fabric(), TransportConfig::SOFT_TCP);
  EXPECT_EQ(Resolve(*loaded).max_requests, 32u);
}

TEST(ConfigFile, SyntaxErrorNamesFileAndLine) {
  const std::string path =
      WriteTemp("syntax.textproto", "# comment\n\ncredits {\n  max_requests:");
  auto loaded = LoadConfigFile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(loaded.status()), StartsWith(path + ":4:"));
}

TEST(ConfigFile, ValidationErrorNamesFileAndField) {
  const std::string path =
      WriteTemp("invalid.textproto", "credits { credits_granted: 0 }\n");
  auto loaded = LoadConfigFile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(loaded.status()),
            path +
                ": credits.credits_granted: 0 is out of range 1..65535 "
                "(RFC 8166 §3.3.1)");
}

}  // namespace
}  // namespace rpcrdma::config
