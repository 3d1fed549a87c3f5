// Fuzzes the configuration loader (config_loader.h) with hostile text
// format. Whatever parses must be valid (ParseConfigText validates), and
// printing it back must give text that loads to the same message and the
// same resolved settings: a configuration a tool writes out (or a user
// copies from a dump) means what the original meant.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/text_format.h"
#include "plugin/config/config_loader.h"
#include "rpcrdma/config.pb.h"

namespace {

using rpcrdma::config::ResolvedConfig;
using rpcrdma::config::TransportConfig;

bool SameResolved(const ResolvedConfig& a, const ResolvedConfig& b) {
  return a.fabric == b.fabric && a.version_policy == b.version_policy &&
         a.inline_settings == b.inline_settings &&
         a.max_requests == b.max_requests &&
         a.credits_granted == b.credits_granted &&
         a.backchannel_enabled == b.backchannel_enabled &&
         a.backchannel_credits == b.backchannel_credits &&
         a.chunk_limits.max_read_segments == b.chunk_limits.max_read_segments &&
         a.chunk_limits.max_write_chunks == b.chunk_limits.max_write_chunks &&
         a.chunk_limits.max_segments_per_chunk ==
             b.chunk_limits.max_segments_per_chunk &&
         a.max_header_segments == b.max_header_segments &&
         a.max_call_size == b.max_call_size &&
         a.connect_timeout == b.connect_timeout &&
         a.request_deadline == b.request_deadline &&
         a.reconnect_backoff_initial == b.reconnect_backoff_initial &&
         a.reconnect_backoff_max == b.reconnect_backoff_max &&
         a.idle_timeout == b.idle_timeout;
}

// What a loaded configuration promises (config.proto ranges) after
// defaults are applied.
bool Sane(const ResolvedConfig& r) {
  using namespace rpcrdma::config;
  return r.version_policy != TransportConfig::VERSION_POLICY_UNSPECIFIED &&
         r.max_requests >= 1 && r.max_requests <= kMaxCredits &&
         r.credits_granted >= 1 && r.credits_granted <= kMaxCredits &&
         (r.backchannel_enabled ? r.backchannel_credits >= 1 &&
                                      r.backchannel_credits <= r.max_requests
                                : r.backchannel_credits == 0) &&
         r.chunk_limits.max_read_segments >= 1 &&
         r.chunk_limits.max_read_segments <= 256 &&
         r.chunk_limits.max_write_chunks >= 1 &&
         r.chunk_limits.max_write_chunks <= 64 &&
         r.chunk_limits.max_segments_per_chunk >= 1 &&
         r.chunk_limits.max_segments_per_chunk <= 256 &&
         r.max_header_segments >= 1 &&
         r.max_header_segments <= kMaxHeaderSegments &&
         r.max_call_size >= kMinCallSize && r.max_call_size <= kMaxCallSize &&
         r.connect_timeout.count() >= 1 &&
         r.connect_timeout.count() <= kMaxTimeoutMs &&
         r.request_deadline.count() >= 0 &&
         r.request_deadline.count() <= kMaxTimeoutMs &&
         r.reconnect_backoff_initial.count() >= 1 &&
         r.reconnect_backoff_initial <= r.reconnect_backoff_max &&
         r.reconnect_backoff_max.count() <= kMaxTimeoutMs &&
         r.idle_timeout.count() >= 0 && r.idle_timeout.count() <= kMaxTimeoutMs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<TransportConfig> parsed =
      rpcrdma::config::ParseConfigText(text, "fuzz");
  if (!parsed.ok()) {
    // Every refusal is INVALID_ARGUMENT naming the source.
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument ||
        parsed.status().message().find("fuzz") == absl::string_view::npos) {
      __builtin_trap();
    }
    return 0;
  }
  if (!rpcrdma::config::ValidateConfig(*parsed, "fuzz").ok()) __builtin_trap();
  const ResolvedConfig resolved = rpcrdma::config::Resolve(*parsed);
  if (!Sane(resolved)) __builtin_trap();

  std::string printed;
  if (!google::protobuf::TextFormat::PrintToString(*parsed, &printed)) {
    __builtin_trap();
  }
  absl::StatusOr<TransportConfig> again =
      rpcrdma::config::ParseConfigText(printed, "printed");
  if (!again.ok()) __builtin_trap();
  std::string a;
  std::string b;
  if (!parsed->SerializeToString(&a) || !again->SerializeToString(&b) ||
      a != b) {
    __builtin_trap();
  }
  if (!SameResolved(resolved, rpcrdma::config::Resolve(*again))) {
    __builtin_trap();
  }
  return 0;
}
