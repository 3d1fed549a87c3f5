// Loads a TransportConfig from a text protobuf file and checks it.
//
// The schema, with every field's unit, range and default, is
// plugin/proto/rpcrdma/config.proto. Errors carry the source name so a user can
// find the mistake:
//   - syntax errors and unknown fields:  "<source>:<line>:<column>: <what>"
//   - invalid values: "<source>: <field.path>: <reason>", one line per
//     offending field
//   - a missing file: NOT_FOUND naming the path.
#ifndef RPCRDMA_PLUGIN_CONFIG_CONFIG_LOADER_H_
#define RPCRDMA_PLUGIN_CONFIG_CONFIG_LOADER_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/private_data.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma::config {

// Defaults (see config.proto for where each comes from).
inline constexpr uint32_t kInlineDefaultWithPrivateData = 4096;  // kernel
inline constexpr uint32_t kInlineDefaultV1 = 1024;       // RFC 8166 §3.3.3
inline constexpr uint32_t kInlineDefaultV2 = 4096;       // draft-04 §2.3
inline constexpr uint32_t kDefaultMaxRequests = 128;     // kernel client
inline constexpr uint32_t kDefaultCreditsGranted = 128;  // kernel server
inline constexpr uint32_t kDefaultBackchannelCredits = 2;
inline constexpr uint32_t kDefaultMaxHeaderSegments = 8;
inline constexpr uint32_t kDefaultMaxCallSize = (16u << 20) + 4096;
inline constexpr int64_t kDefaultConnectMs = 60000;
inline constexpr int64_t kDefaultRequestDeadlineMs = 60000;
inline constexpr int64_t kDefaultReconnectBackoffInitialMs = 5000;
inline constexpr int64_t kDefaultReconnectBackoffMaxMs = 30000;
inline constexpr int64_t kDefaultIdleMs = 300000;
inline constexpr int64_t kDefaultHandshakeMs = kDefaultConnectMs;
inline constexpr int64_t kDefaultAbandonedCallMs = 5000;
inline constexpr int64_t kDefaultHandshakeAnswerMs = 5000;
// Multiples of limits.max_call_size (config.proto says why).
inline constexpr uint64_t kDefaultReassemblyCallsPerConnection = 2;
inline constexpr uint64_t kDefaultReassemblyCallsPerServer = 8;
inline constexpr uint32_t kDefaultMaxConnections = 220;

// Bounds the validator enforces.
inline constexpr uint32_t kMaxCredits = 65535;
inline constexpr uint32_t kMaxHeaderSegments = 32;
inline constexpr uint32_t kMinCallSize = 1024;
inline constexpr uint32_t kMaxCallSize = 1u << 28;
inline constexpr int64_t kMaxTimeoutMs = 86400000;  // one day
inline constexpr uint64_t kMaxReassemblyBytes = uint64_t{1} << 40;
inline constexpr uint32_t kMaxConnections = 1u << 20;
inline constexpr uint32_t kMaxHandlerThreads = 1024;
inline constexpr uint32_t kMaxBusyPollUs = 1000000;
// Largest configuration file LoadConfigFile reads.
inline constexpr size_t kMaxConfigFileSize = 1 << 20;

// Reads `path`, parses it (ParseConfigText) and validates it.
// NOT_FOUND when the file does not exist, PERMISSION_DENIED when it cannot
// be read, FAILED_PRECONDITION when it is not a regular file,
// RESOURCE_EXHAUSTED when larger than kMaxConfigFileSize, INVALID_ARGUMENT
// for a syntax or validation error.
absl::StatusOr<TransportConfig> LoadConfigFile(const std::string& path);

// Parses text format with google::protobuf::TextFormat: unknown fields,
// unknown enum names and repeated scalars are errors, reported as
// "<source_name>:<line>:<column>: <message>" (1-based). The parsed message
// is then validated with ValidateConfig, so a config returned by this
// function or by LoadConfigFile is always valid.
absl::StatusOr<TransportConfig> ParseConfigText(absl::string_view text,
                                                absl::string_view source_name);

// Checks every field against the ranges and rules documented in
// config.proto, using the default of each unset field where a rule relates
// fields. On failure returns INVALID_ARGUMENT whose message has one line
// "<source_name>: <field.path>: <reason>" per offending field.
absl::Status ValidateConfig(const TransportConfig& config,
                            absl::string_view source_name);

// A configuration with every field set explicitly to its default.
TransportConfig DefaultConfig();

// The inline settings of `config` with defaults applied: what this endpoint
// advertises in RFC 8797 private data (or, without it, its own limits).
struct InlineSettings {
  bool cm_private_data = true;
  bool remote_invalidation = true;
  uint32_t send = kInlineDefaultWithPrivateData;
  uint32_t receive = kInlineDefaultWithPrivateData;
  // Version two: the largest receive size granted on request (§5.3.2).
  uint32_t receive_grantable = kInlineDefaultWithPrivateData;

  // The private data this endpoint sends (RFC 8797 §4).
  wire::PrivateData ToPrivateData() const;
  friend bool operator==(const InlineSettings&,
                         const InlineSettings&) = default;
};
InlineSettings EffectiveInline(const TransportConfig& config);

// Every setting of `config` with defaults applied. Meaningful for a config
// that passed ValidateConfig.
struct ResolvedConfig {
  TransportConfig::Fabric fabric = TransportConfig::FABRIC_UNSPECIFIED;
  // Never VERSION_POLICY_UNSPECIFIED: that resolves to V1.
  TransportConfig::VersionPolicy version_policy = TransportConfig::V1;
  InlineSettings inline_settings;
  uint32_t max_requests = kDefaultMaxRequests;
  uint32_t credits_granted = kDefaultCreditsGranted;
  bool backchannel_enabled = true;
  // Zero when the backchannel is disabled.
  uint32_t backchannel_credits = kDefaultBackchannelCredits;
  // What the decoders accept from a peer.
  wire::ChunkLimits chunk_limits;
  // What this endpoint puts into one header it sends.
  uint32_t max_header_segments = kDefaultMaxHeaderSegments;
  // Largest reassembled call accepted as a responder.
  uint32_t max_call_size = kDefaultMaxCallSize;
  // Reassembly memory per connection and per Server (responder).
  uint64_t max_reassembly_bytes =
      kDefaultReassemblyCallsPerConnection * kDefaultMaxCallSize;
  uint64_t max_server_reassembly_bytes =
      kDefaultReassemblyCallsPerServer * kDefaultMaxCallSize;
  uint32_t max_connections = kDefaultMaxConnections;
  std::chrono::milliseconds connect_timeout{kDefaultConnectMs};
  // Zero: no default deadline.
  std::chrono::milliseconds request_deadline{kDefaultRequestDeadlineMs};
  std::chrono::milliseconds reconnect_backoff_initial{
      kDefaultReconnectBackoffInitialMs};
  std::chrono::milliseconds reconnect_backoff_max{
      kDefaultReconnectBackoffMaxMs};
  // Zero: never close an idle connection.
  std::chrono::milliseconds idle_timeout{kDefaultIdleMs};
  std::chrono::milliseconds handshake_timeout{kDefaultHandshakeMs};
  std::chrono::milliseconds abandoned_call_timeout{kDefaultAbandonedCallMs};
  std::chrono::milliseconds handshake_answer_timeout{kDefaultHandshakeAnswerMs};
  // Zero: handlers run on the loop thread.
  uint32_t handler_threads = 0;
  // Zero: no busy polling.
  uint32_t busy_poll_us = 0;
};
ResolvedConfig Resolve(const TransportConfig& config);

}  // namespace rpcrdma::config

#endif  // RPCRDMA_PLUGIN_CONFIG_CONFIG_LOADER_H_
