// The URIs of the public API, through the one HOST:PORT parser the
// fabrics use too (plugin/fabric/address.h).
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/api/connection.h"
#include "plugin/fabric/address.h"
#include "rpcrdma/address.h"

namespace rpcrdma::api_internal {
namespace {

// The authority of a soft+tcp:// or rdma:// URI, through the one HOST:PORT
// parser the fabrics use too; the error names the URI.
absl::StatusOr<fabric::HostPort> ParseUriHostPort(absl::string_view uri,
                                                  absl::string_view authority) {
  if (absl::EndsWith(authority, "/")) authority.remove_suffix(1);
  absl::StatusOr<fabric::HostPort> host_port = fabric::ParseHostPort(authority);
  if (!host_port.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("uri \"", uri, "\": ", host_port.status().message()));
  }
  return host_port;
}

}  // namespace

absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri) {
  ParsedUri out;
  absl::string_view rest = uri;
  if (absl::ConsumePrefix(&rest, "soft+unix://")) {
    if (rest.empty() || (rest[0] != '/' && rest[0] != '@')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "uri \"", uri,
          "\": soft+unix needs an absolute path (soft+unix:///path) or an "
          "abstract name (soft+unix://@name)"));
    }
    out.fabric = config::TransportConfig::SOFT_UNIX;
    out.address = absl::StrCat("unix:", rest);
  } else if (absl::ConsumePrefix(&rest, "soft+tcp://")) {
    absl::StatusOr<fabric::HostPort> host_port = ParseUriHostPort(uri, rest);
    if (!host_port.ok()) return host_port.status();
    out.fabric = config::TransportConfig::SOFT_TCP;
    out.address = absl::StrCat(
        "tcp:", fabric::FormatHostPort(host_port->host, host_port->port));
  } else if (absl::ConsumePrefix(&rest, "rdma://")) {
    absl::StatusOr<fabric::HostPort> host_port = ParseUriHostPort(uri, rest);
    if (!host_port.ok()) return host_port.status();
    out.fabric = config::TransportConfig::VERBS;
    out.address = fabric::FormatHostPort(host_port->host, host_port->port);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("uri \"", uri,
                     "\": unknown scheme (expected soft+unix://, soft+tcp:// "
                     "or rdma://)"));
  }
  return out;
}

fabric::FabricKind FabricKindOf(const ParsedUri& uri) {
  switch (uri.fabric) {
    case config::TransportConfig::VERBS:
      return fabric::FabricKind::kVerbs;
    case config::TransportConfig::SOFT_TCP:
      return fabric::FabricKind::kSoftTcp;
    default:
      return fabric::FabricKind::kSoftUnix;
  }
}

}  // namespace rpcrdma::api_internal

namespace rpcrdma {

absl::StatusOr<SocketAddress> ResolveUriAddress(absl::string_view uri) {
  absl::StatusOr<api_internal::ParsedUri> parsed = api_internal::ParseUri(uri);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<fabric::ResolvedAddress> resolved =
      fabric::ResolveConnectAddress(api_internal::FabricKindOf(*parsed),
                                    parsed->address);
  if (!resolved.ok()) return resolved.status();
  SocketAddress out;
  std::memcpy(&out.storage, &resolved->storage, resolved->length);
  out.length = resolved->length;
  return out;
}

}  // namespace rpcrdma
