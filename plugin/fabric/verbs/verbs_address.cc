#include "plugin/fabric/verbs/verbs_address.h"

#include <netdb.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::verbs {

absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", address, "' has no port"));
  }
  absl::string_view host = address.substr(0, colon);
  const absl::string_view port_text = address.substr(colon + 1);
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  } else if (absl::StrContains(host, ':')) {
    return absl::InvalidArgumentError(
        absl::StrCat("IPv6 address '", address, "' needs brackets"));
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port > 65535 ||
      port_text.empty() || port_text[0] == '+' || port_text[0] == '-') {
    return absl::InvalidArgumentError(
        absl::StrCat("bad port in address '", address, "'"));
  }
  SocketAddress out;
  out.host = std::string(host);
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string port_string = std::to_string(port);
  if (int rc =
          getaddrinfo(out.host.c_str(), port_string.c_str(), &hints, &result);
      rc != 0 || result == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address '", address, "': ", rc != 0 ? gai_strerror(rc) : "none"));
  }
  std::memset(&out.storage, 0, sizeof(out.storage));
  std::memcpy(&out.storage, result->ai_addr,
              std::min<size_t>(result->ai_addrlen, sizeof(out.storage)));
  freeaddrinfo(result);
  return out;
}

std::string FormatAddress(absl::string_view host, uint16_t port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace rpcrdma::fabric::verbs
