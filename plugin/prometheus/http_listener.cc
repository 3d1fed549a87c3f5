#include "plugin/prometheus/http_listener.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::prometheus_internal {
namespace {

struct ListenAddress {
  sockaddr_storage storage{};
  bool ipv6 = false;
};

// "PORT" (loopback), "HOST:PORT" or "[IPV6]:PORT"; HOST may be a name.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text) {
  auto invalid = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat("prometheus: listen address \"", text, "\" ", why,
                     " (expected PORT, HOST:PORT or [IPV6]:PORT)"));
  };
  std::string host = "127.0.0.1";  // a bare port serves this host only
  std::string port_text = text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == std::string::npos) return invalid("has no ]:PORT");
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalid("has an IPv6 address without brackets");
    }
  }
  uint32_t port = 0;
  if (port_text.empty() ||
      !std::all_of(port_text.begin(), port_text.end(),
                   [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(port_text, &port) || port > 65535) {
    return invalid("has no port from 0 to 65535");
  }
  if (host.empty()) return invalid("has an empty host");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  // What looks like an IPv4 or IPv6 literal is one or an error, never a
  // name sent to DNS.
  if (std::all_of(host.begin(), host.end(),
                  [](char c) { return absl::ascii_isdigit(c) || c == '.'; }) ||
      text.front() == '[') {
    hints.ai_flags |= AI_NUMERICHOST;
  }
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prometheus: cannot resolve listen host \"", host,
                     "\": ", gai_strerror(rc)));
  }
  ListenAddress out;
  memcpy(&out.storage, found->ai_addr, found->ai_addrlen);
  out.ipv6 = found->ai_family == AF_INET6;
  freeaddrinfo(found);
  return out;
}

// libmicrohttpd reports why it could not start through its logger only.
void KeepLastError(void* cls, const char* format, va_list args) {
  char line[512];
  vsnprintf(line, sizeof line, format, args);
  *static_cast<std::string*>(cls) =
      std::string(absl::StripAsciiWhitespace(line));
}

MHD_Result Answer(MHD_Connection* connection, unsigned status,
                  const std::string& body, const char* content_type,
                  const char* content_security_policy = nullptr) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (content_security_policy != nullptr) {
    MHD_add_response_header(response, "Content-Security-Policy",
                            content_security_policy);
  }
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result Serve(void* cls, MHD_Connection* connection, const char* url,
                 const char* method, const char* /*version*/,
                 const char* /*upload_data*/, size_t* upload_data_size,
                 void** /*request_state*/) {
  // A request body is never wanted: it is discarded as it arrives and the
  // answer goes out once it is complete.
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  constexpr const char* kText = "text/plain; charset=utf-8";
  const std::string_view path(url);
  if (path != "/metrics" && path != "/status") {
    return Answer(connection, MHD_HTTP_NOT_FOUND,
                  "not found: try /metrics or /status\n", kText);
  }
  if (std::string_view(method) != MHD_HTTP_METHOD_GET &&
      std::string_view(method) != MHD_HTTP_METHOD_HEAD) {
    return Answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                  absl::StrCat("only GET serves ", std::string(path), "\n"),
                  kText);
  }
  const auto& pages = *static_cast<const HttpListener::Pages*>(cls);
  if (path == "/metrics") {
    return Answer(connection, MHD_HTTP_OK, pages.metrics(),
                  "text/plain; version=0.0.4; charset=utf-8");
  }
  const char* format =
      MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, "format");
  if (format == nullptr || std::string_view(format) == "html") {
    // The page needs nothing but its own inline styles: should markup
    // ever slip through, the browser runs no script and fetches nothing.
    return Answer(connection, MHD_HTTP_OK, pages.status_html(),
                  "text/html; charset=utf-8",
                  "default-src 'none'; style-src 'unsafe-inline'");
  }
  if (std::string_view(format) == "json") {
    return Answer(connection, MHD_HTTP_OK, pages.status_json(),
                  "application/json");
  }
  return Answer(connection, MHD_HTTP_BAD_REQUEST,
                "/status: format must be html or json (/status?format=json)\n",
                kText);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const PrometheusExporterOptions& options, Pages pages) {
  auto address = ParseListenAddress(options.listen_address);
  if (!address.ok()) return address.status();
  if (options.max_connections == 0 ||
      options.max_connections_per_address == 0 ||
      options.idle_timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        "prometheus: max_connections, max_connections_per_address and "
        "idle_timeout must be positive");
  }
  std::unique_ptr<HttpListener> listener(new HttpListener(std::move(pages)));
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  if (address->ipv6) flags |= MHD_USE_IPv6;
  listener->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Serve, &listener->pages_,
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&address->storage),
      MHD_OPTION_CONNECTION_LIMIT, options.max_connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, options.max_connections_per_address,
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(options.idle_timeout.count()),
      MHD_OPTION_EXTERNAL_LOGGER, &KeepLastError, &listener->last_error_,
      MHD_OPTION_END);
  if (listener->daemon_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "prometheus: cannot listen on ", options.listen_address,
        listener->last_error_.empty() ? "" : ": ", listener->last_error_));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(listener->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  listener->port_ = info == nullptr ? 0 : info->port;
  return listener;
}

HttpListener::~HttpListener() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace rpcrdma::prometheus_internal
