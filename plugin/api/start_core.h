// What Channel::Create and Server::Create do alike around their cores:
// check the version-two options, read the environment beneath the
// program's configuration (environment.h), take the runtime (the default
// one unless named), make the core and start it; a core whose start fails
// is shut down again, and the failure names the environment variable
// behind it.
#ifndef RPCRDMA_PLUGIN_API_START_CORE_H_
#define RPCRDMA_PLUGIN_API_START_CORE_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/api/environment.h"
#include "plugin/api/runtime_loops.h"
#include "plugin/api/version_two_user.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/types.h"
#include "rpcrdma/version_two.h"

namespace rpcrdma::api_internal {

// `make(runtime)` returns a std::shared_ptr<Core> to a Core with
// Start(uri, config) and Shutdown(deadline); `drain` bounds the shutdown
// of one that failed to start.
template <typename MakeCore>
auto StartCore(absl::string_view uri, const config::TransportConfig& config,
               const VersionTwoOptions& version_two,
               std::shared_ptr<Runtime> runtime, Deadline drain, MakeCore make)
    -> absl::StatusOr<decltype(make(std::shared_ptr<Runtime>()))> {
  if (absl::Status s = VersionTwoUser::Validate(version_two); !s.ok()) {
    return s;
  }
  absl::StatusOr<Environment> env = Environment::Read(config);
  if (!env.ok()) return env.status();
  absl::StatusOr<std::shared_ptr<Runtime>> chosen =
      RuntimeAccess::OrDefault(std::move(runtime));
  if (!chosen.ok()) return chosen.status();
  auto core = make(*std::move(chosen));
  if (absl::Status s = core->Start(uri, env->config()); !s.ok()) {
    core->Shutdown(drain).IgnoreError();
    return env->Annotate(std::move(s));
  }
  return core;
}

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_START_CORE_H_
