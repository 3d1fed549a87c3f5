#include "plugin/config/config_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "plugin/config/field_at.h"
#include "plugin/config/field_hint.h"

namespace rpcrdma::config {
namespace {

using VersionPolicy = TransportConfig::VersionPolicy;

// ------------------------------------------------------- default resolution

bool PrivateDataOn(const TransportConfig& c) {
  return c.has_cm_private_data() ? c.cm_private_data() : true;
}

VersionPolicy Policy(const TransportConfig& c) {
  return c.version_policy() == TransportConfig::VERSION_POLICY_UNSPECIFIED
             ? TransportConfig::V1
             : c.version_policy();
}

bool AllowsV2(VersionPolicy p) {
  return p == TransportConfig::V2 || p == TransportConfig::V2_WITH_FALLBACK;
}

uint32_t DefaultInline(const TransportConfig& c) {
  if (PrivateDataOn(c)) return kInlineDefaultWithPrivateData;
  if (AllowsV2(Policy(c))) return kInlineDefaultV2;
  return kInlineDefaultV1;
}

bool RemoteInvalidationOn(const TransportConfig& c) {
  return c.has_remote_invalidation() ? c.remote_invalidation()
                                     : PrivateDataOn(c);
}

bool BackchannelOn(const TransportConfig& c) {
  return c.backchannel().has_enabled() ? c.backchannel().enabled() : true;
}

// The decoder's own bounds (plugin/wire/chunks.h); the configured limits
// may only tighten them.
constexpr wire::ChunkLimits kDecoderBounds{};

// ------------------------------------------------------------- validation

// One value to check: its field path, its effective value and whether it
// was written in the file or came from a default (named in messages, so
// a user is not told that a field they never wrote is wrong without
// knowing why).
template <typename T>
struct Value {
  absl::string_view path;
  T value;
  bool is_default;
};

template <typename T>
Value<T> Get(absl::string_view path, bool has, T value, T fallback) {
  return Value<T>{path, has ? value : fallback, !has};
}

class Validator {
 public:
  explicit Validator(absl::string_view source) : source_(source) {}

  template <typename T>
  void Error(const Value<T>& v, absl::string_view reason) {
    errors_.push_back(absl::StrCat(source_, ": ", v.path, ": ", v.value,
                                   v.is_default ? " (the default)" : "", " ",
                                   reason));
  }
  void Error(absl::string_view path, absl::string_view reason) {
    errors_.push_back(absl::StrCat(source_, ": ", path, ": ", reason));
  }

  // Checks lo <= value <= hi; returns whether it holds.
  template <typename T>
  bool Range(const Value<T>& v, T lo, T hi, absl::string_view why = "") {
    if (v.value >= lo && v.value <= hi) return true;
    std::string reason = absl::StrCat("is out of range ", lo, "..", hi);
    if (!why.empty()) absl::StrAppend(&reason, " (", why, ")");
    Error(v, reason);
    return false;
  }

  absl::Status Result() const {
    if (errors_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
  }

 private:
  absl::string_view source_;
  std::vector<std::string> errors_;
};

void ValidateEnums(const TransportConfig& c, Validator& v) {
  if (!TransportConfig::Fabric_IsValid(c.fabric())) {
    v.Error(Value<int>{"fabric", c.fabric(), false},
            "is not a known fabric (VERBS, SOFT_UNIX, SOFT_TCP)");
  }
  if (!TransportConfig::VersionPolicy_IsValid(c.version_policy())) {
    v.Error(Value<int>{"version_policy", c.version_policy(), false},
            "is not a known version policy (V1, V2, V2_WITH_FALLBACK)");
  }
}

void ValidateInline(const TransportConfig& c, Validator& v) {
  const InlineThreshold& t = c.inline_threshold();
  const uint32_t fallback = DefaultInline(c);
  const bool private_data = PrivateDataOn(c);
  const bool v2 = AllowsV2(Policy(c));
  const Value<uint32_t> send =
      Get("inline_threshold.send", t.has_send(), t.send(), fallback);
  const Value<uint32_t> receive =
      Get("inline_threshold.receive", t.has_receive(), t.receive(), fallback);
  // Returns whether `size` is usable at all.
  auto check = [&](const Value<uint32_t>& size) {
    if (!v.Range(size, wire::kMinInlineSize, wire::kMaxInlineSize,
                 "RFC 8797 §4.2")) {
      return false;
    }
    if (private_data && size.value % 1024 != 0) {
      v.Error(size,
              "is not a multiple of 1024; CM private data carries sizes in "
              "whole kilo-octets (RFC 8797 §4.2) and would round it down");
    }
    return true;
  };
  check(send);
  if (check(receive) && v2 && receive.value < kInlineDefaultV2) {
    v.Error(receive,
            "is below 4096, which version-two receivers must support "
            "(draft-cel-nfsv4-rpcrdma-version-two-04 §2.3)");
  }
  const Value<uint32_t> grantable =
      Get("inline_threshold.receive_grantable", t.has_receive_grantable(),
          t.receive_grantable(), receive.value);
  v.Range(grantable, wire::kMinInlineSize, wire::kMaxInlineSize,
          "draft-04 §5.2.1: receives are posted this large");
}

void ValidateRemoteInvalidation(const TransportConfig& c, Validator& v) {
  if (c.has_remote_invalidation() && c.remote_invalidation() &&
      !PrivateDataOn(c) && Policy(c) == TransportConfig::V1) {
    v.Error("remote_invalidation",
            "true while cm_private_data is false under version policy V1; "
            "version one exchanges the R flag only in CM private data (RFC "
            "8797 §4.1), so remote invalidation could never be used");
  }
}

void ValidateCredits(const TransportConfig& c, Validator& v) {
  const Credits& cr = c.credits();
  v.Range(Get("credits.max_requests", cr.has_max_requests(), cr.max_requests(),
              kDefaultMaxRequests),
          1u, kMaxCredits, "RFC 8166 §3.3.1");
  v.Range(Get("credits.credits_granted", cr.has_credits_granted(),
              cr.credits_granted(), kDefaultCreditsGranted),
          1u, kMaxCredits, "RFC 8166 §3.3.1");

  const Backchannel& bc = c.backchannel();
  const Value<uint32_t> credits = Get("backchannel.credits", bc.has_credits(),
                                      bc.credits(), kDefaultBackchannelCredits);
  if (!BackchannelOn(c)) {
    if (bc.has_credits()) {
      v.Error(credits, "is set but backchannel.enabled is false");
    }
    return;
  }
  if (!v.Range(credits, 1u, kMaxCredits)) return;
  const uint32_t max_requests =
      cr.has_max_requests() ? cr.max_requests() : kDefaultMaxRequests;
  if (max_requests >= 1 && credits.value > max_requests) {
    v.Error(credits,
            absl::StrCat("exceeds credits.max_requests (", max_requests,
                         "); the backchannel shares the connection "
                         "and cannot be deeper than it"));
  }
}

void ValidateLimits(const TransportConfig& c, Validator& v) {
  const ChunkLimits& l = c.limits();
  v.Range(Get("limits.max_read_segments", l.has_max_read_segments(),
              l.max_read_segments(), kDecoderBounds.max_read_segments),
          1u, kDecoderBounds.max_read_segments);
  v.Range(Get("limits.max_write_chunks", l.has_max_write_chunks(),
              l.max_write_chunks(), kDecoderBounds.max_write_chunks),
          1u, kDecoderBounds.max_write_chunks);
  v.Range(
      Get("limits.max_segments_per_chunk", l.has_max_segments_per_chunk(),
          l.max_segments_per_chunk(), kDecoderBounds.max_segments_per_chunk),
      1u, kDecoderBounds.max_segments_per_chunk);
  v.Range(Get("limits.max_header_segments", l.has_max_header_segments(),
              l.max_header_segments(), kDefaultMaxHeaderSegments),
          1u, kMaxHeaderSegments,
          "the header must fit a 1024-octet inline threshold");
  const Value<uint32_t> call_size =
      Get("limits.max_call_size", l.has_max_call_size(), l.max_call_size(),
          kDefaultMaxCallSize);
  const bool call_size_ok = v.Range(call_size, kMinCallSize, kMaxCallSize);
  const uint64_t largest_call = call_size.value;
  const Value<uint64_t> per_connection =
      Get("limits.max_reassembly_bytes", l.has_max_reassembly_bytes(),
          l.max_reassembly_bytes(),
          kDefaultReassemblyCallsPerConnection * largest_call);
  const Value<uint64_t> per_server =
      Get("limits.max_server_reassembly_bytes",
          l.has_max_server_reassembly_bytes(), l.max_server_reassembly_bytes(),
          kDefaultReassemblyCallsPerServer * largest_call);
  const bool connection_ok =
      v.Range(per_connection, uint64_t{1}, kMaxReassemblyBytes);
  const bool server_ok = v.Range(per_server, uint64_t{1}, kMaxReassemblyBytes);
  if (call_size_ok && connection_ok && per_connection.value < largest_call) {
    v.Error(per_connection,
            absl::StrCat("is below limits.max_call_size (", largest_call,
                         call_size.is_default ? ", the default" : "",
                         "); a largest call could never be served"));
  }
  if (connection_ok && server_ok && per_server.value < per_connection.value) {
    v.Error(per_server,
            absl::StrCat("is below limits.max_reassembly_bytes (",
                         per_connection.value,
                         per_connection.is_default ? ", the default" : "",
                         "); one connection could never use its own budget"));
  }
  v.Range(Get("limits.max_connections", l.has_max_connections(),
              l.max_connections(), kDefaultMaxConnections),
          1u, kMaxConnections);
}

void ValidateTimeouts(const TransportConfig& c, Validator& v) {
  const Timeouts& t = c.timeouts();
  v.Range(Get("timeouts.connect_ms", t.has_connect_ms(), t.connect_ms(),
              kDefaultConnectMs),
          int64_t{1}, kMaxTimeoutMs);
  v.Range(Get("timeouts.request_deadline_ms", t.has_request_deadline_ms(),
              t.request_deadline_ms(), kDefaultRequestDeadlineMs),
          int64_t{0}, kMaxTimeoutMs);
  const Value<int64_t> initial =
      Get("timeouts.reconnect_backoff_initial_ms",
          t.has_reconnect_backoff_initial_ms(),
          t.reconnect_backoff_initial_ms(), kDefaultReconnectBackoffInitialMs);
  const Value<int64_t> max =
      Get("timeouts.reconnect_backoff_max_ms", t.has_reconnect_backoff_max_ms(),
          t.reconnect_backoff_max_ms(), kDefaultReconnectBackoffMaxMs);
  const bool initial_ok = v.Range(initial, int64_t{1}, kMaxTimeoutMs);
  const bool max_ok = v.Range(max, int64_t{1}, kMaxTimeoutMs);
  if (initial_ok && max_ok && initial.value > max.value) {
    v.Error(initial, absl::StrCat("exceeds timeouts.reconnect_backoff_max_ms (",
                                  max.value,
                                  max.is_default ? ", the default" : "", ")"));
  }
  v.Range(Get("timeouts.idle_ms", t.has_idle_ms(), t.idle_ms(), kDefaultIdleMs),
          int64_t{0}, kMaxTimeoutMs);
  v.Range(Get("timeouts.handshake_ms", t.has_handshake_ms(), t.handshake_ms(),
              kDefaultHandshakeMs),
          int64_t{1}, kMaxTimeoutMs);
  v.Range(Get("timeouts.abandoned_call_ms", t.has_abandoned_call_ms(),
              t.abandoned_call_ms(), kDefaultAbandonedCallMs),
          int64_t{1}, kMaxTimeoutMs);
  v.Range(Get("timeouts.handshake_answer_ms", t.has_handshake_answer_ms(),
              t.handshake_answer_ms(), kDefaultHandshakeAnswerMs),
          int64_t{1}, kMaxTimeoutMs);
}

void ValidateExecution(const TransportConfig& c, Validator& v) {
  const Execution& e = c.execution();
  v.Range(Get("execution.handler_threads", e.has_handler_threads(),
              e.handler_threads(), 0u),
          0u, kMaxHandlerThreads);
  v.Range(
      Get("execution.busy_poll_us", e.has_busy_poll_us(), e.busy_poll_us(), 0u),
      0u, kMaxBusyPollUs);
}

// ---------------------------------------------------------------- parsing

class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  ErrorCollector(absl::string_view source, absl::string_view text)
      : source_(source), text_(text) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    // The tokenizer counts lines and columns from zero. A wrong value is
    // reported without its field: name it; an unknown field gets the
    // likely fix.
    if (line >= 0) {
      std::string field =
          FieldAt(text_, line, column, *TransportConfig::descriptor());
      errors_.push_back(absl::StrCat(
          source_, ":", line + 1, ":", column + 1, ": ", field,
          field.empty() ? "" : ": ", message,
          UnknownFieldHint(message, *TransportConfig::descriptor())));
    } else {
      errors_.push_back(absl::StrCat(source_, ": ", message));
    }
  }
  void AddWarning(int /*line*/, google::protobuf::io::ColumnNumber /*column*/,
                  const std::string& /*message*/) override {}

  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  absl::string_view source_;
  absl::string_view text_;
  std::vector<std::string> errors_;
};

absl::Status ErrnoStatus(int error, absl::string_view what,
                         const std::string& path) {
  std::string message = absl::StrCat(what, " ", path, ": ", strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EISDIR:
      return absl::FailedPreconditionError(message);
    default:
      return absl::UnavailableError(message);
  }
}

// Reads at most kMaxConfigFileSize octets of a regular file.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open config file", path);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};

  struct stat st;
  if (fstat(fd, &st) != 0) {
    return ErrnoStatus(errno, "cannot stat config file", path);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("config file ", path, " is not a regular file"));
  }
  if (st.st_size < 0 ||
      static_cast<uint64_t>(st.st_size) > kMaxConfigFileSize) {
    return absl::ResourceExhaustedError(
        absl::StrCat("config file ", path, " is larger than ",
                     kMaxConfigFileSize, " octets"));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t filled = 0;
  while (filled < text.size()) {
    const ssize_t n = read(fd, text.data() + filled, text.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read config file", path);
    }
    if (n == 0) break;  // the file shrank while being read
    filled += static_cast<size_t>(n);
  }
  text.resize(filled);
  // A file that grew after fstat is cut at the size it had; check there is
  // nothing more so a partial read is never parsed as the whole file.
  char extra;
  ssize_t more;
  do {
    more = read(fd, &extra, 1);
  } while (more < 0 && errno == EINTR);
  if (more > 0) {
    return absl::UnavailableError(
        absl::StrCat("config file ", path, " changed while being read"));
  }
  return text;
}

void ValidateCapturePath(const TransportConfig& c, Validator& v) {
  const std::string& path = c.capture_path();
  if (path.empty()) return;
  if (path.size() > 4096) {
    v.Error("capture_path", "is longer than 4096 octets");
  } else if (path.find('\0') != std::string::npos) {
    v.Error("capture_path", "contains a NUL octet");
  } else if (path.back() == '/') {
    v.Error("capture_path", "names a directory, not a file");
  }
}

}  // namespace

absl::Status ValidateConfig(const TransportConfig& config,
                            absl::string_view source_name) {
  Validator v(source_name);
  ValidateEnums(config, v);
  ValidateInline(config, v);
  ValidateRemoteInvalidation(config, v);
  ValidateCredits(config, v);
  ValidateLimits(config, v);
  ValidateTimeouts(config, v);
  ValidateExecution(config, v);
  ValidateCapturePath(config, v);
  return v.Result();
}

absl::StatusOr<TransportConfig> ParseConfigText(absl::string_view text,
                                                absl::string_view source_name) {
  ErrorCollector errors(source_name, text);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  TransportConfig config;
  if (!parser.ParseFromString(std::string(text), &config)) {
    std::string message = errors.Joined();
    if (message.empty()) {
      message = absl::StrCat(source_name, ": not a valid TransportConfig");
    }
    return absl::InvalidArgumentError(message);
  }
  if (absl::Status s = ValidateConfig(config, source_name); !s.ok()) {
    return s;
  }
  return config;
}

absl::StatusOr<TransportConfig> LoadConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  return ParseConfigText(*text, path);
}

TransportConfig DefaultConfig() {
  TransportConfig c;
  c.set_fabric(TransportConfig::FABRIC_UNSPECIFIED);
  c.set_version_policy(TransportConfig::V1);
  c.set_cm_private_data(true);
  c.set_remote_invalidation(true);
  c.mutable_inline_threshold()->set_send(kInlineDefaultWithPrivateData);
  c.mutable_inline_threshold()->set_receive(kInlineDefaultWithPrivateData);
  c.mutable_inline_threshold()->set_receive_grantable(
      kInlineDefaultWithPrivateData);
  c.mutable_credits()->set_max_requests(kDefaultMaxRequests);
  c.mutable_credits()->set_credits_granted(kDefaultCreditsGranted);
  c.mutable_backchannel()->set_enabled(true);
  c.mutable_backchannel()->set_credits(kDefaultBackchannelCredits);
  ChunkLimits* l = c.mutable_limits();
  l->set_max_read_segments(kDecoderBounds.max_read_segments);
  l->set_max_write_chunks(kDecoderBounds.max_write_chunks);
  l->set_max_segments_per_chunk(kDecoderBounds.max_segments_per_chunk);
  l->set_max_header_segments(kDefaultMaxHeaderSegments);
  l->set_max_call_size(kDefaultMaxCallSize);
  l->set_max_reassembly_bytes(kDefaultReassemblyCallsPerConnection *
                              kDefaultMaxCallSize);
  l->set_max_server_reassembly_bytes(kDefaultReassemblyCallsPerServer *
                                     kDefaultMaxCallSize);
  l->set_max_connections(kDefaultMaxConnections);
  Timeouts* t = c.mutable_timeouts();
  t->set_connect_ms(kDefaultConnectMs);
  t->set_request_deadline_ms(kDefaultRequestDeadlineMs);
  t->set_reconnect_backoff_initial_ms(kDefaultReconnectBackoffInitialMs);
  t->set_reconnect_backoff_max_ms(kDefaultReconnectBackoffMaxMs);
  t->set_idle_ms(kDefaultIdleMs);
  t->set_handshake_ms(kDefaultHandshakeMs);
  t->set_abandoned_call_ms(kDefaultAbandonedCallMs);
  t->set_handshake_answer_ms(kDefaultHandshakeAnswerMs);
  c.mutable_execution()->set_handler_threads(0);
  c.mutable_execution()->set_busy_poll_us(0);
  return c;
}

wire::PrivateData InlineSettings::ToPrivateData() const {
  wire::PrivateData d;
  d.remote_invalidation = remote_invalidation;
  d.send_size = send;
  d.receive_size = receive;
  return d;
}

InlineSettings EffectiveInline(const TransportConfig& config) {
  const InlineThreshold& t = config.inline_threshold();
  const uint32_t fallback = DefaultInline(config);
  InlineSettings s;
  s.cm_private_data = PrivateDataOn(config);
  s.remote_invalidation = RemoteInvalidationOn(config);
  s.send = t.has_send() ? t.send() : fallback;
  s.receive = t.has_receive() ? t.receive() : fallback;
  // Below `receive` it grants nothing larger than `receive`.
  s.receive_grantable = std::max(
      s.receive, t.has_receive_grantable() ? t.receive_grantable() : 0u);
  return s;
}

ResolvedConfig Resolve(const TransportConfig& config) {
  ResolvedConfig r;
  r.fabric = config.fabric();
  r.version_policy = Policy(config);
  r.inline_settings = EffectiveInline(config);
  const Credits& cr = config.credits();
  r.max_requests =
      cr.has_max_requests() ? cr.max_requests() : kDefaultMaxRequests;
  r.credits_granted =
      cr.has_credits_granted() ? cr.credits_granted() : kDefaultCreditsGranted;
  r.backchannel_enabled = BackchannelOn(config);
  r.backchannel_credits = !r.backchannel_enabled ? 0
                          : config.backchannel().has_credits()
                              ? config.backchannel().credits()
                              : kDefaultBackchannelCredits;
  const ChunkLimits& l = config.limits();
  if (l.has_max_read_segments()) {
    r.chunk_limits.max_read_segments = l.max_read_segments();
  }
  if (l.has_max_write_chunks()) {
    r.chunk_limits.max_write_chunks = l.max_write_chunks();
  }
  if (l.has_max_segments_per_chunk()) {
    r.chunk_limits.max_segments_per_chunk = l.max_segments_per_chunk();
  }
  r.max_header_segments = l.has_max_header_segments()
                              ? l.max_header_segments()
                              : kDefaultMaxHeaderSegments;
  r.max_call_size =
      l.has_max_call_size() ? l.max_call_size() : kDefaultMaxCallSize;
  r.max_reassembly_bytes =
      l.has_max_reassembly_bytes()
          ? l.max_reassembly_bytes()
          : kDefaultReassemblyCallsPerConnection * r.max_call_size;
  r.max_server_reassembly_bytes =
      l.has_max_server_reassembly_bytes()
          ? l.max_server_reassembly_bytes()
          : kDefaultReassemblyCallsPerServer * r.max_call_size;
  r.max_connections =
      l.has_max_connections() ? l.max_connections() : kDefaultMaxConnections;
  const Timeouts& t = config.timeouts();
  auto ms = [](bool has, int64_t value, int64_t fallback) {
    return std::chrono::milliseconds(has ? value : fallback);
  };
  r.connect_timeout = ms(t.has_connect_ms(), t.connect_ms(), kDefaultConnectMs);
  r.request_deadline = ms(t.has_request_deadline_ms(), t.request_deadline_ms(),
                          kDefaultRequestDeadlineMs);
  r.reconnect_backoff_initial =
      ms(t.has_reconnect_backoff_initial_ms(), t.reconnect_backoff_initial_ms(),
         kDefaultReconnectBackoffInitialMs);
  r.reconnect_backoff_max =
      ms(t.has_reconnect_backoff_max_ms(), t.reconnect_backoff_max_ms(),
         kDefaultReconnectBackoffMaxMs);
  r.idle_timeout = ms(t.has_idle_ms(), t.idle_ms(), kDefaultIdleMs);
  r.handshake_timeout =
      ms(t.has_handshake_ms(), t.handshake_ms(), kDefaultHandshakeMs);
  r.abandoned_call_timeout = ms(t.has_abandoned_call_ms(),
                                t.abandoned_call_ms(), kDefaultAbandonedCallMs);
  r.handshake_answer_timeout =
      ms(t.has_handshake_answer_ms(), t.handshake_answer_ms(),
         kDefaultHandshakeAnswerMs);
  r.handler_threads = config.execution().handler_threads();
  r.busy_poll_us = config.execution().busy_poll_us();
  return r;
}

}  // namespace rpcrdma::config
