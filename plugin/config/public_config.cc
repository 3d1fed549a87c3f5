// rpcrdma/config.h: the public face of config_loader.h.
#include "plugin/config/config_loader.h"
#include "plugin/log/logging.h"
#include "rpcrdma/config.h"

namespace rpcrdma {
namespace {

template <typename T>
T Logged(T result) {
  if (!result.ok()) {
    const absl::Status& s = [&]() -> const absl::Status& {
      if constexpr (std::is_same_v<T, absl::Status>) {
        return result;
      } else {
        return result.status();
      }
    }();
    RPCRDMA_LOG(kError, 0, "rejected configuration: ", s.message());
  }
  return result;
}

}  // namespace

absl::StatusOr<config::TransportConfig> LoadConfigFile(
    const std::string& path) {
  return Logged(config::LoadConfigFile(path));
}

absl::StatusOr<config::TransportConfig> ParseConfig(
    absl::string_view text, absl::string_view source_name) {
  return Logged(config::ParseConfigText(text, source_name));
}

absl::Status ValidateConfig(const config::TransportConfig& config,
                            absl::string_view source_name) {
  return Logged(config::ValidateConfig(config, source_name));
}

config::TransportConfig DefaultConfig() { return config::DefaultConfig(); }

}  // namespace rpcrdma
