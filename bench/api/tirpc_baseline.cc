#include "bench/api/tirpc_baseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace rpcrdma::bench {
namespace {

// libtirpc's xdrproc_t is variadic and xdr_void takes no arguments: the
// cast goes through void (*)(), the one GCC accepts between function types.
template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

// The program rpcrdma-perf speaks (tools/perf_program), here over TCP.
constexpr rpcprog_t kProgram = 0x20008166;
constexpr rpcvers_t kVersion = 1;
constexpr rpcproc_t kEcho = 1;
constexpr u_int kLargestEcho = 64u << 20;

struct Opaque {
  char* data = nullptr;
  u_int length = 0;
};

bool_t XdrOpaque(XDR* xdrs, Opaque* o) {
  return xdr_bytes(xdrs, &o->data, &o->length, kLargestEcho);
}

void Dispatch(svc_req* request, SVCXPRT* xprt) {
  switch (request->rq_proc) {
    case NULLPROC:
      svc_sendreply(xprt, AsXdrProc(xdr_void), nullptr);
      return;
    case kEcho: {
      Opaque o;
      if (!svc_getargs(xprt, AsXdrProc(XdrOpaque),
                       reinterpret_cast<caddr_t>(&o))) {
        svcerr_decode(xprt);
        return;
      }
      svc_sendreply(xprt, AsXdrProc(XdrOpaque), reinterpret_cast<caddr_t>(&o));
      svc_freeargs(xprt, AsXdrProc(XdrOpaque), reinterpret_cast<caddr_t>(&o));
      return;
    }
    default:
      svcerr_noproc(xprt);
  }
}

}  // namespace

std::unique_ptr<TirpcServer> TirpcServer::Start() {
  std::unique_ptr<TirpcServer> s(new TirpcServer());
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return nullptr;
  }
  s->port_ = ntohs(addr.sin_port);
  SVCXPRT* xprt = svc_vc_create(fd, 0, 0);
  // Protocol 0: registered with the dispatcher only, not with rpcbind.
  if (xprt == nullptr || !svc_register(xprt, kProgram, kVersion, Dispatch, 0)) {
    return nullptr;
  }
  s->thread_ = std::thread([server = s.get()] {
    // libtirpc's own loop (svc_run) until stopped: poll its descriptors,
    // serve what is ready.
    while (!server->stop_.load()) {
      std::vector<pollfd> fds(svc_pollfd, svc_pollfd + svc_max_pollfd);
      const int n = poll(fds.data(), fds.size(), 50);
      if (n > 0) svc_getreq_poll(fds.data(), n);
    }
  });
  return s;
}

TirpcServer::~TirpcServer() {
  stop_.store(true);
  thread_.join();
}

TirpcClient::TirpcClient(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return;
  }
  netbuf server{sizeof addr, sizeof addr, &addr};
  client_ = clnt_vc_create(fd_, &server, kProgram, kVersion, 0, 0);
}

TirpcClient::~TirpcClient() {
  if (client_ != nullptr) clnt_destroy(static_cast<CLIENT*>(client_));
  if (fd_ >= 0) close(fd_);
}

bool TirpcClient::Null() {
  if (client_ == nullptr) return false;
  timeval timeout{5, 0};
  return clnt_call(static_cast<CLIENT*>(client_), NULLPROC, AsXdrProc(xdr_void),
                   nullptr, AsXdrProc(xdr_void), nullptr,
                   timeout) == RPC_SUCCESS;
}

bool TirpcClient::Echo(const std::vector<uint8_t>& data,
                       std::vector<uint8_t>& result) {
  if (client_ == nullptr) return false;
  timeval timeout{5, 0};
  Opaque in{reinterpret_cast<char*>(const_cast<uint8_t*>(data.data())),
            static_cast<u_int>(data.size())};
  // Decoded straight into the caller's buffer.
  result.resize(data.size());
  Opaque out{reinterpret_cast<char*>(result.data()),
             static_cast<u_int>(result.size())};
  return clnt_call(static_cast<CLIENT*>(client_), kEcho, AsXdrProc(XdrOpaque),
                   reinterpret_cast<caddr_t>(&in), AsXdrProc(XdrOpaque),
                   reinterpret_cast<caddr_t>(&out), timeout) == RPC_SUCCESS;
}

}  // namespace rpcrdma::bench
