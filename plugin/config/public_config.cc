// rpcrdma/config.h: the public face of config_loader.h. The loaders return
// their errors and do not log them: the caller has the status (a tool that
// printed it saw every error twice). Channel::Create and Server::Create
// log the configurations they reject.
#include "plugin/config/config_loader.h"
#include "rpcrdma/config.h"

namespace rpcrdma {

absl::StatusOr<config::TransportConfig> LoadConfigFile(
    const std::string& path) {
  return config::LoadConfigFile(path);
}

absl::StatusOr<config::TransportConfig> ParseConfig(
    absl::string_view text, absl::string_view source_name) {
  return config::ParseConfigText(text, source_name);
}

absl::Status ValidateConfig(const config::TransportConfig& config,
                            absl::string_view source_name) {
  return config::ValidateConfig(config, source_name);
}

config::TransportConfig DefaultConfig() { return config::DefaultConfig(); }

}  // namespace rpcrdma
