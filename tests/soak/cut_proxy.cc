#include "tests/soak/cut_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {
namespace {

constexpr absl::string_view kUnixScheme = "soft+unix://@";
constexpr absl::string_view kTcpScheme = "soft+tcp://127.0.0.1:";

// A socket address for an abstract Unix name or a loopback TCP port.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

Address UnixAddress(absl::string_view name) {
  Address a;
  auto* un = reinterpret_cast<sockaddr_un*>(&a.storage);
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path + 1, name.data(), name.size());
  a.length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

Address TcpAddress(uint16_t port) {
  Address a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.length = sizeof(sockaddr_in);
  return a;
}

absl::StatusOr<Address> ParseTarget(absl::string_view uri, bool& tcp) {
  if (absl::StartsWith(uri, kUnixScheme)) {
    tcp = false;
    return UnixAddress(uri.substr(kUnixScheme.size()));
  }
  uint32_t port = 0;
  if (absl::StartsWith(uri, kTcpScheme) &&
      absl::SimpleAtoi(uri.substr(kTcpScheme.size()), &port) && port < 65536) {
    tcp = true;
    return TcpAddress(static_cast<uint16_t>(port));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cut proxy: cannot relay to \"", uri, "\""));
}

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// One relayed connection: two sockets and what each direction still has
// to deliver. End of stream from one side is passed on as a half close
// once everything before it is delivered, so an orderly close (the soft
// fabric's DISCONNECT, or an error ACK followed by a shutdown) still
// reaches the other side; a cut closes both sockets at once.
struct Relay {
  int fd[2] = {-1, -1};             // 0: the Channel's side, 1: the Server's
  std::vector<uint8_t> pending[2];  // bytes waiting to be written to fd[i]
  bool eof[2] = {false, false};     // fd[i] reached end of stream
  bool shut[2] = {false, false};    // fd[i] was shut for writing
  bool dead = false;

  void Close() {
    for (int& f : fd) {
      if (f >= 0) {
        shutdown(f, SHUT_RDWR);
        close(f);
        f = -1;
      }
    }
    dead = true;
  }
};

// Moves what fd[from] has into pending[to]; false on a socket error.
bool Pump(Relay& r, int from) {
  const int to = 1 - from;
  uint8_t buf[65536];
  while (!r.eof[from] && r.pending[to].size() < (1u << 20)) {
    ssize_t n = recv(r.fd[from], buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) {
      r.eof[from] = true;
      break;
    }
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    r.pending[to].insert(r.pending[to].end(), buf, buf + n);
  }
  return true;
}

// Writes pending[to]; passes a half close on. False on a socket error.
bool Flush(Relay& r, int to) {
  while (!r.pending[to].empty()) {
    ssize_t n = send(r.fd[to], r.pending[to].data(), r.pending[to].size(),
                     MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    r.pending[to].erase(r.pending[to].begin(), r.pending[to].begin() + n);
  }
  if (r.eof[1 - to] && !r.shut[to]) {
    shutdown(r.fd[to], SHUT_WR);
    r.shut[to] = true;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CutProxy>> CutProxy::Start(
    absl::string_view target_uri, uint64_t seed,
    std::chrono::milliseconds mean_interval) {
  std::unique_ptr<CutProxy> p(new CutProxy());
  bool tcp = false;
  absl::StatusOr<Address> target = ParseTarget(target_uri, tcp);
  if (!target.ok()) return target.status();
  p->target_ = std::string(target_uri);
  p->tcp_ = tcp;
  p->seed_ = seed;
  p->mean_interval_ = mean_interval;
  static std::atomic<int> counter{0};
  const std::string name = absl::StrCat(
      "rpcrdma-soak-proxy-", ::rpcrdma::test::ProcessTag(), "-", counter++);
  Address listen = tcp ? TcpAddress(0) : UnixAddress(name);
  p->listener_ = socket(tcp ? AF_INET : AF_UNIX,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p->listener_ < 0 ||
      bind(p->listener_, reinterpret_cast<sockaddr*>(&listen.storage),
           listen.length) != 0 ||
      ::listen(p->listener_, 128) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cut proxy: listen: ", std::strerror(errno)));
  }
  if (tcp) {
    sockaddr_in bound{};
    socklen_t len = sizeof(bound);
    getsockname(p->listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    p->uri_ = absl::StrCat(kTcpScheme, ntohs(bound.sin_port));
  } else {
    p->uri_ = absl::StrCat(kUnixScheme, name);
  }
  p->wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->wake_ < 0) return absl::UnavailableError("cut proxy: eventfd");
  CutProxy* raw = p.get();
  p->thread_ = std::thread([raw] { raw->Run(); });
  return p;
}

CutProxy::~CutProxy() {
  stop_ = true;
  if (wake_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (listener_ >= 0) close(listener_);
  if (wake_ >= 0) close(wake_);
}

void CutProxy::Run() {
  using Clock = std::chrono::steady_clock;
  std::mt19937_64 rng(seed_);
  auto next_interval = [&] {
    return std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
        0, 2 * mean_interval_.count())(rng));
  };
  Clock::time_point next_cut = Clock::now() + next_interval();
  bool tcp = false;
  const Address target = *ParseTarget(target_, tcp);
  std::vector<Relay> relays;

  while (!stop_) {
    std::vector<pollfd> fds;
    fds.push_back({wake_, POLLIN, 0});
    fds.push_back({listener_, POLLIN, 0});
    for (const Relay& r : relays) {
      for (int side = 0; side < 2; ++side) {
        short events = r.eof[side] ? 0 : POLLIN;
        if (!r.pending[side].empty()) events |= POLLOUT;
        // A side with nothing to wait for is left out (negative fd):
        // after its end of stream it would report POLLHUP at once forever.
        fds.push_back({events == 0 ? -1 : r.fd[side], events, 0});
      }
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_cut - Clock::now());
    poll(fds.data(), fds.size(),
         static_cast<int>(std::max<int64_t>(0, wait.count())));
    if (stop_) break;

    if (fds[1].revents & POLLIN) {
      while (true) {
        int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) break;
        int server =
            socket(tcp_ ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (server < 0 ||
            connect(server, reinterpret_cast<const sockaddr*>(&target.storage),
                    target.length) != 0) {
          if (server >= 0) close(server);
          close(client);
          continue;
        }
        SetNonBlocking(client);
        SetNonBlocking(server);
        Relay r;
        r.fd[0] = client;
        r.fd[1] = server;
        relays.push_back(std::move(r));
        ++connections_;
      }
    }
    // Relays accepted in this round have no entry in fds yet.
    const size_t polled = (fds.size() - 2) / 2;
    for (size_t i = 0; i < polled; ++i) {
      Relay& r = relays[i];
      for (int side = 0; side < 2 && !r.dead; ++side) {
        const short revents = fds[2 + 2 * i + side].revents;
        if ((revents & (POLLIN | POLLHUP | POLLERR)) && !Pump(r, side)) {
          r.Close();
        }
      }
      for (int side = 0; side < 2 && !r.dead; ++side) {
        if (!Flush(r, side)) r.Close();
      }
      if (!r.dead && r.shut[0] && r.shut[1]) r.Close();
    }
    if (Clock::now() >= next_cut) {
      next_cut = Clock::now() + next_interval();
      size_t live = 0;
      for (const Relay& r : relays) live += r.dead ? 0 : 1;
      if (cutting_ && live > 0) {
        size_t victim = std::uniform_int_distribution<size_t>(0, live - 1)(rng);
        for (Relay& r : relays) {
          if (r.dead) continue;
          if (victim-- == 0) {
            r.Close();
            ++cuts_;
            break;
          }
        }
      }
    }
    std::erase_if(relays, [](const Relay& r) { return r.dead; });
  }
  for (Relay& r : relays) r.Close();
}

}  // namespace rpcrdma::test
