#include "plugin/fabric/soft/soft_fabric.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "plugin/fabric/soft/soft_endpoint.h"
#include "plugin/fabric/soft/soft_socket.h"
#include "plugin/fabric/soft/soft_wire.h"

namespace rpcrdma::fabric {
namespace {

using soft::DecodeFrame;
using soft::FrameStream;
using soft::FrameType;
using soft::SoftEndpoint;
using soft::UniqueFd;

// The soft fabric carries what rdma-cm carries on InfiniBand and RoCE, no
// more, so a program tested on it keeps working on hardware.
absl::Status CheckPrivateData(absl::Span<const uint8_t> private_data,
                              size_t limit, absl::string_view what) {
  if (private_data.size() > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft fabric: ", what, " private data of ",
                     private_data.size(), " octets exceeds ", limit));
  }
  return absl::OkStatus();
}

// Sends REJECT on a stream whose CONNECT was read, and closes it.
void SendReject(FrameStream& stream, absl::Span<const uint8_t> private_data) {
  if (!stream.open()) return;
  soft::AppendReject(stream.output(), private_data);
  // A fresh socket's buffer always has room for this small frame.
  stream.Flush();
  shutdown(stream.fd(), SHUT_WR);
  stream.Close();
}

class SoftConnectRequest : public ConnectRequest {
 public:
  SoftConnectRequest(const SoftFabricOptions& options, FrameStream stream,
                     std::vector<uint8_t> private_data,
                     uint32_t initiator_depth, uint32_t responder_resources)
      : options_(options),
        stream_(std::move(stream)),
        private_data_(std::move(private_data)),
        initiator_depth_(initiator_depth),
        responder_resources_(responder_resources),
        peer_address_(soft::PeerAddressOf(stream_.fd()).value_or("")) {}
  // A request neither accepted nor rejected is rejected, as rdma-cm does
  // when its identifier is destroyed.
  ~SoftConnectRequest() override {
    if (!answered_) SendReject(stream_, {});
  }

  absl::Span<const uint8_t> private_data() const override {
    return private_data_;
  }
  std::string peer_address() const override { return peer_address_; }

  absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) override {
    if (answered_) {
      return absl::FailedPreconditionError(
          "soft fabric: connect request already answered");
    }
    if (absl::Status s =
            CheckPrivateData(private_data, kMaxAcceptPrivateData, "accept");
        !s.ok())
      return s;
    if (absl::Status s = soft::ValidateEndpointOptions(options_, options);
        !s.ok()) {
      return s;
    }
    answered_ = true;
    absl::StatusOr<std::unique_ptr<SoftEndpoint>> ep = SoftEndpoint::Accept(
        options_, options, std::move(stream_), initiator_depth_,
        responder_resources_, private_data);
    if (!ep.ok()) return ep.status();
    return std::unique_ptr<Endpoint>(*std::move(ep));
  }

  absl::Status Reject(absl::Span<const uint8_t> private_data) override {
    if (answered_) {
      return absl::FailedPreconditionError(
          "soft fabric: connect request already answered");
    }
    if (absl::Status s =
            CheckPrivateData(private_data, kMaxRejectPrivateData, "reject");
        !s.ok())
      return s;
    answered_ = true;
    SendReject(stream_, private_data);
    return absl::OkStatus();
  }

 private:
  SoftFabricOptions options_;
  FrameStream stream_;
  std::vector<uint8_t> private_data_;
  uint32_t initiator_depth_;
  uint32_t responder_resources_;
  std::string peer_address_;
  bool answered_ = false;
};

class SoftListener : public Listener {
 public:
  SoftListener(const SoftFabricOptions& options, UniqueFd listen_fd,
               std::string address, std::string unix_path)
      : options_(options),
        listen_(std::move(listen_fd)),
        address_(std::move(address)),
        unix_path_(std::move(unix_path)) {}
  ~SoftListener() override {
    if (!unix_path_.empty()) unlink(unix_path_.c_str());
  }

  absl::Status Init() {
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    signal_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    // Made now, while descriptors are at hand: it is what wakes the owner
    // when accepting resumes after a descriptor shortage.
    timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!epoll_.valid() || !signal_.valid() || !timer_.valid()) {
      return absl::UnavailableError(absl::StrCat(
          "soft fabric: epoll/eventfd: ", absl::string_view(strerror(errno))));
    }
    for (int fd : {listen_.get(), signal_.get(), timer_.get()}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        return absl::UnavailableError("soft fabric: epoll_ctl failed");
      }
    }
    return absl::OkStatus();
  }

  std::string address() const override { return address_; }
  int event_fd() const override { return epoll_.get(); }

  absl::StatusOr<std::unique_ptr<ConnectRequest>> PollConnectRequest()
      override {
    const Clock::time_point now = Clock::now();
    // Only the sockets epoll reports are read, so a wake-up costs what is
    // ready, not what is pending: ten thousand clients connecting at once
    // would otherwise make every accept read every half-open socket.
    epoll_event events[64];
    int n;
    do {
      n = epoll_wait(epoll_.get(), events, 64, 0);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == timer_.get()) {
          DrainTimer();
        } else if (fd == listen_.get()) {
          if (!paused_until_) AcceptAll(now);
        } else if (fd != signal_.get()) {
          ReadConnect(fd);
        }
      }
    } while (n == 64);
    if (paused_until_ && now >= *paused_until_) {
      Resume();
      AcceptAll(now);
    }
    CloseOverdue(now);
    ArmTimer(now);
    std::unique_ptr<ConnectRequest> request;
    if (!ready_.empty()) {
      request = std::move(ready_.front());
      ready_.pop_front();
    }
    UpdateSignal();
    if (request == nullptr && !errors_.empty()) {
      absl::Status error = std::move(errors_.front());
      errors_.pop_front();
      UpdateSignal();
      return error;
    }
    return request;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    FrameStream stream;
    Clock::time_point accepted;
  };

  void AcceptAll(Clock::time_point now) {
    while (true) {
      const int fd = accept4(listen_.get(), nullptr, nullptr,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM) {
          Pause(errno, now);
        } else {
          backoff_ms_ = 0;
        }
        return;  // EAGAIN: nothing more waiting
      }
      backoff_ms_ = 0;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
      pending_.emplace(fd, Pending{FrameStream(UniqueFd(fd)), now});
      arrivals_.push_back({now, fd});
      ReadConnect(fd);  // the CONNECT usually came with the connect
    }
  }

  // Pending sockets are accepted in time order, so the handshake deadlines
  // fall due from the front of arrivals_; an entry whose socket was since
  // answered (or whose number was reused by a later socket) is skipped.
  void CloseOverdue(Clock::time_point now) {
    if (options_.handshake_timeout_ms <= 0) {
      arrivals_.clear();
      return;
    }
    const auto timeout =
        std::chrono::milliseconds(options_.handshake_timeout_ms);
    while (!arrivals_.empty()) {
      const auto [accepted, fd] = arrivals_.front();
      auto it = pending_.find(fd);
      if (it == pending_.end() || it->second.accepted != accepted) {
        arrivals_.pop_front();
        continue;
      }
      if (now - accepted < timeout) break;
      arrivals_.pop_front();
      errors_.push_back(absl::DeadlineExceededError(
          absl::StrCat("soft fabric: no connect request within ",
                       options_.handshake_timeout_ms, " ms of the accept")));
      epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
      pending_.erase(it);  // closes the socket
    }
  }

  // A descriptor or memory limit: stop watching the listening socket (it
  // stays readable while connections wait) until the pause ends.
  void Pause(int error, Clock::time_point now) {
    backoff_ms_ = backoff_ms_ == 0
                      ? kAcceptBackoffInitialMs
                      : std::min(backoff_ms_ * 2, kAcceptBackoffMaxMs);
    paused_until_ = now + std::chrono::milliseconds(backoff_ms_);
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listen_.get(), nullptr);
    errors_.push_back(absl::ResourceExhaustedError(
        absl::StrCat("soft fabric: accept: ", strerror(error),
                     "; accepting again in ", backoff_ms_, " ms")));
  }

  void Resume() {
    paused_until_.reset();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_.get();
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.get(), &ev);
  }

  // The timer wakes the owner at the end of a pause or at the earliest
  // handshake deadline.
  void ArmTimer(Clock::time_point now) {
    std::optional<Clock::time_point> next = paused_until_;
    if (options_.handshake_timeout_ms > 0 && !arrivals_.empty()) {
      const Clock::time_point due =
          arrivals_.front().first +
          std::chrono::milliseconds(options_.handshake_timeout_ms);
      if (!next || due < *next) next = due;
    }
    itimerspec spec{};
    if (next) {
      const int64_t ns = std::max<int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(*next - now)
              .count(),
          1);
      spec.it_value.tv_sec = ns / 1000000000;
      spec.it_value.tv_nsec = ns % 1000000000;
    }
    timerfd_settime(timer_.get(), 0, &spec, nullptr);
  }

  void DrainTimer() {
    uint64_t expirations = 0;
    ssize_t n = read(timer_.get(), &expirations, sizeof(expirations));
    (void)n;
  }

  // Reads from a socket that has not yet delivered its CONNECT frame.
  void ReadConnect(int fd) {
    auto it = pending_.find(fd);
    if (it == pending_.end()) return;
    FrameStream& stream = it->second.stream;
    const FrameStream::IoResult read = stream.Read(4096);
    absl::StatusOr<soft::DecodeResult> decoded = DecodeFrame(stream.input());
    const bool complete = decoded.ok() && decoded->consumed > 0;
    if (!complete && decoded.ok() && read != FrameStream::IoResult::kEnd &&
        read != FrameStream::IoResult::kError) {
      return;  // more to come, or the handshake deadline
    }
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    FrameStream owned = std::move(stream);
    pending_.erase(it);
    if (!complete || decoded->frame.type != FrameType::kConnect) {
      return;  // closed: garbage or end of stream before CONNECT
    }
    const soft::Frame& f = decoded->frame;
    std::vector<uint8_t> private_data(f.data.begin(), f.data.end());
    const uint32_t initiator_depth = f.initiator_depth;
    const uint32_t responder_resources = f.responder_resources;
    owned.Consume(decoded->consumed);
    if (options_.reject_all.has_value()) {
      SendReject(owned, *options_.reject_all);
      return;
    }
    ready_.push_back(std::make_unique<SoftConnectRequest>(
        options_, std::move(owned), std::move(private_data), initiator_depth,
        responder_resources));
  }

  void UpdateSignal() {
    const bool ready = !ready_.empty() || !errors_.empty();
    if (ready && !signaled_) {
      const uint64_t one = 1;
      signaled_ = write(signal_.get(), &one, sizeof(one)) == sizeof(one);
    } else if (!ready && signaled_) {
      uint64_t value = 0;
      signaled_ = read(signal_.get(), &value, sizeof(value)) != sizeof(value);
    }
  }

  SoftFabricOptions options_;
  UniqueFd listen_;
  std::string address_;
  std::string unix_path_;
  UniqueFd epoll_;
  UniqueFd signal_;
  UniqueFd timer_;
  bool signaled_ = false;
  absl::flat_hash_map<int, Pending> pending_;  // by socket
  std::deque<std::pair<Clock::time_point, int>> arrivals_;
  std::deque<absl::Status> errors_;  // for PollConnectRequest to report
  std::optional<Clock::time_point> paused_until_;
  uint32_t backoff_ms_ = 0;
  std::deque<std::unique_ptr<ConnectRequest>> ready_;
};

class SoftFabric : public Fabric {
 public:
  explicit SoftFabric(SoftFabricOptions options) : options_(options) {}

  absl::string_view name() const override { return "soft"; }

  absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) override {
    if (absl::Status s =
            CheckPrivateData(private_data, kMaxConnectPrivateData, "connect");
        !s.ok())
      return s;
    if (absl::Status s = soft::ValidateEndpointOptions(options_, options);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<soft::SocketAddress> parsed = soft::ParseAddress(address);
    if (!parsed.ok()) return parsed.status();
    bool in_progress = false;
    absl::StatusOr<UniqueFd> fd = soft::StartConnect(*parsed, in_progress);
    absl::StatusOr<std::unique_ptr<SoftEndpoint>> ep =
        fd.ok() ? SoftEndpoint::Connect(options_, options,
                                        FrameStream(*std::move(fd)),
                                        in_progress, private_data)
                : SoftEndpoint::Unreachable(options_, options,
                                            std::string(fd.status().message()));
    if (!ep.ok()) return ep.status();
    return std::unique_ptr<Endpoint>(*std::move(ep));
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address) override {
    absl::StatusOr<soft::SocketAddress> parsed =
        soft::ParseAddress(address, /*passive=*/true);
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<UniqueFd> fd = soft::ListenOn(*parsed);
    if (!fd.ok()) return fd.status();
    absl::StatusOr<std::string> bound = soft::LocalAddressOf(fd->get());
    if (!bound.ok()) return bound.status();
    auto listener = std::make_unique<SoftListener>(
        options_, *std::move(fd), *std::move(bound), parsed->unix_path);
    if (absl::Status s = listener->Init(); !s.ok()) return s;
    return std::unique_ptr<Listener>(std::move(listener));
  }

 private:
  SoftFabricOptions options_;
};

}  // namespace

std::unique_ptr<Fabric> MakeSoftFabric(SoftFabricOptions options) {
  options.max_message_size = std::min<uint32_t>(
      options.max_message_size, static_cast<uint32_t>(soft::kMaxSendPayload));
  return std::make_unique<SoftFabric>(std::move(options));
}

}  // namespace rpcrdma::fabric
