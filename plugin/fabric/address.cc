#include "plugin/fabric/address.h"

#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric {
namespace {

absl::Status Invalid(absl::string_view text, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("address \"", text, "\": ", what));
}

// RFC 1123 §2.1 host names (letters, digits, hyphens, dots), plus the
// underscore some resolvers allow; anything else cannot resolve.
bool IsHostName(absl::string_view host) {
  if (host.size() > 253) return false;
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' &&
        c != '.' && c != '_') {
      return false;
    }
  }
  return true;
}

bool IsIpv6Literal(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_family = AF_INET6;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  freeaddrinfo(result);
  return true;
}

}  // namespace

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  if (text.empty()) return Invalid(text, "is empty (expected host:port)");
  HostPort out;
  absl::string_view port_text;
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return Invalid(text, "the IPv6 literal has no closing ']'");
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return Invalid(text, "expected :PORT after the bracketed IPv6 address");
    }
    out.host = std::string(text.substr(1, close - 1));
    out.ipv6_literal = true;
    port_text = text.substr(close + 2);
    if (out.host.empty()) return Invalid(text, "the IPv6 literal is empty");
    if (!IsIpv6Literal(out.host)) {
      return Invalid(text,
                     absl::StrCat("\"", out.host, "\" is not an IPv6 address"));
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) {
      return Invalid(text, "has no port (expected host:port)");
    }
    const absl::string_view host = text.substr(0, colon);
    if (absl::StrContains(host, ':')) {
      return Invalid(text, "an IPv6 address needs brackets ([address]:port)");
    }
    if (host.empty()) return Invalid(text, "has no host (expected host:port)");
    if (!IsHostName(host)) {
      return Invalid(text, absl::StrCat("\"", host,
                                        "\" is neither an IPv4 address nor a "
                                        "host name"));
    }
    out.host = std::string(host);
    port_text = text.substr(colon + 1);
  }
  if (port_text.empty()) return Invalid(text, "has an empty port");
  uint32_t port = 0;
  const bool digits =
      std::all_of(port_text.begin(), port_text.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c));
      });
  if (!digits) {
    return Invalid(text,
                   absl::StrCat("port \"", port_text, "\" is not a number"));
  }
  if (port_text.size() > 5 || !absl::SimpleAtoi(port_text, &port) ||
      port > 65535) {
    return Invalid(
        text, absl::StrCat("port ", port_text, " is out of range 0..65535"));
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::string FormatHostPort(absl::string_view host, uint16_t port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<ResolvedAddress> ResolveHostPort(const HostPort& address,
                                                bool passive) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) |
                   (address.ipv6_literal ? AI_NUMERICHOST : 0);
  hints.ai_family = address.ipv6_literal ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &raw);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> result(raw, freeaddrinfo);
  const std::string text = FormatHostPort(address.host, address.port);
  if (rc == EAI_AGAIN) {
    return absl::UnavailableError(absl::StrCat(
        "address \"", text, "\": cannot resolve now: ", gai_strerror(rc)));
  }
  if (rc == EAI_SYSTEM) {
    return absl::UnavailableError(absl::StrCat(
        "address \"", text, "\": resolver failed: ", std::strerror(errno)));
  }
  if (rc != 0 || result == nullptr) {
    return Invalid(
        text, absl::StrCat("host \"", address.host, "\" does not resolve: ",
                           rc != 0 ? gai_strerror(rc) : "none"));
  }
  ResolvedAddress out;
  if (result->ai_addrlen > sizeof(out.storage)) {
    return absl::InternalError("resolved address larger than sockaddr_storage");
  }
  std::memcpy(&out.storage, result->ai_addr, result->ai_addrlen);
  out.length = result->ai_addrlen;
  out.family = result->ai_family;
  return out;
}

}  // namespace rpcrdma::fabric
