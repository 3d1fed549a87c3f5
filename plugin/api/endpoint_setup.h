// What a Channel and a Server do first, the same way: parse the URI, check
// the configuration against it and make the fabric, open the capture, and
// resolve the settings.
#ifndef RPCRDMA_PLUGIN_API_ENDPOINT_SETUP_H_
#define RPCRDMA_PLUGIN_API_ENDPOINT_SETUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/connection.h"
#include "plugin/config/config_loader.h"
#include "plugin/fabric/fabric.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma::api_internal {

struct EndpointSetup {
  ParsedUri uri;
  std::unique_ptr<fabric::Fabric> fabric;
  std::shared_ptr<CaptureTap> capture;  // null without capture_path
  config::ResolvedConfig resolved;
};

// INVALID_ARGUMENT naming what is wrong with the URI or the configuration;
// a capture that cannot be opened fails as OpenCaptureFor says.
absl::StatusOr<EndpointSetup> SetUpEndpoint(
    absl::string_view uri, const config::TransportConfig& config);

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_ENDPOINT_SETUP_H_
