#include "plugin/api/endpoint_setup.h"

#include <utility>

namespace rpcrdma::api_internal {

absl::StatusOr<EndpointSetup> SetUpEndpoint(
    absl::string_view uri, const config::TransportConfig& config) {
  EndpointSetup setup;
  absl::StatusOr<ParsedUri> parsed = ParseUri(uri);
  if (!parsed.ok()) return parsed.status();
  setup.uri = *std::move(parsed);
  absl::StatusOr<std::unique_ptr<fabric::Fabric>> fab =
      MakeFabricFor(setup.uri, config);
  if (!fab.ok()) return fab.status();
  setup.fabric = *std::move(fab);
  absl::StatusOr<std::shared_ptr<CaptureTap>> capture = OpenCaptureFor(config);
  if (!capture.ok()) return capture.status();
  setup.capture = *std::move(capture);
  setup.resolved = config::Resolve(config);
  return setup;
}

}  // namespace rpcrdma::api_internal
