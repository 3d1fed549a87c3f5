// nfs3d: an NFS version 3 server (RFC 1813) of one local directory, over
// RPC-over-RDMA through the ONC RPC adapter, and over TCP through
// libtirpc's own transport with the same rpcgen dispatcher; MOUNT version
// 3 over TCP on a fixed port, so the Linux client mounts it without
// rpcbind:
//
//   nfs3d --export /srv/data --nfs rdma://192.0.2.1:20049
//         --mount-port 20048 --listen 192.0.2.1 --client 192.0.2.0/24
//   mount -t nfs -o OPTIONS server:/srv/data /mnt
// where OPTIONS is vers=3,proto=rdma,port=20049,mountproto=tcp,
// mountport=20048,nolock (one word).
//
// Options:
//   --export DIR      the directory served (required)
//   --alias PATH      another name MOUNT accepts for it (e.g. /export)
//   --nfs URI         NFS over RPC-over-RDMA (rdma://, soft+tcp://,
//                     soft+unix://); may be repeated; default
//                     rdma://127.0.0.1:20049
//   --nfs-tcp-port N  NFS over TCP as well (0: not)
//   --mount-port N    MOUNT over TCP (default 20048)
//   --listen ADDR     the address MOUNT and NFS over TCP listen at
//                     (default 127.0.0.1; 0.0.0.0 or :: for every
//                     interface)
//   --client NET      a client that may MOUNT the export: an address or
//                     ADDRESS/PREFIX; may be repeated; default the
//                     loopback addresses. MOUNT's EXPORT lists them.
// Nothing listens beyond the loopback addresses unless told to.
//   --threads N       dispatch threads per RDMA listener (default 4);
//                     the file system work is done by as many file
//                     workers as there are dispatch threads in all
//   --config FILE     the adapter's configuration (rpcrdma.oncrpc.config.
//                     AdapterConfig text: transport, DDP policies); NFSv3
//                     gets the NFSv3 binding unless the file gives one
//   --rsize N         FSINFO rtmax and wtmax (default 1048576)
//   --no-root-squash  uid 0 acts as root (default: as the anonymous user)
//   --all-squash      every caller acts as the anonymous user
//   --anonuid N, --anongid N
//                     the anonymous user (default 65534, 65534)
// Each call acts as its caller (AUTH_SYS; AUTH_NONE is the anonymous
// user), as exports(5) says for these options: examples/nfs3d/
// credentials.h.
// SIGUSR2 closes every RDMA connection (the clients reconnect and send
// again what had no reply: a test of the duplicate request cache).
// It prints "nfs3d: ready" with its URIs once it serves, a line for each
// connection it accepts and loses, and, on SIGUSR1 and when it ends
// (SIGTERM, SIGINT), each RDMA listener's counters and what each live
// connection settled (RFC 8797 private data, thresholds, remote
// invalidation).
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/nfs3d/export.h"
#include "examples/nfs3d/listener.h"
#include "examples/nfs3d/mount3_service.h"
#include "examples/nfs3d/nfs3_server.h"
#include "examples/nfs3d/reply_cache.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "rpcrdma/oncrpc/svc_rdma.h"

extern "C" {
// rpcgen's dispatchers (*_svc.c), which their headers do not declare.
void nfs_program_3(struct svc_req* request, SVCXPRT* transport);
void mount_program_3(struct svc_req* request, SVCXPRT* transport);
}

namespace {

using rpcrdma::oncrpc::AdapterConfig;
using rpcrdma::oncrpc::DdpPolicy;

struct Options {
  std::string export_path;
  std::string alias;
  std::vector<std::string> nfs_uris;
  int nfs_tcp_port = 0;
  int mount_port = 20048;
  std::string listen_address = rpcrdma::nfs3d::kDefaultListenAddress;
  std::vector<std::string> clients;
  unsigned threads = 4;
  std::string config_path;
  uint32_t rsize = 1u << 20;
  rpcrdma::nfs3d::ExportOptions export_options;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "nfs3d: %s\nusage: nfs3d --export DIR [--alias PATH] "
               "[--nfs URI]... [--nfs-tcp-port N] [--mount-port N] "
               "[--threads N] [--config FILE] [--rsize N] [--no-root-squash] "
               "[--all-squash] [--anonuid N] [--anongid N] [--listen ADDR] "
               "[--client NET]...\n",
               why);
  std::exit(2);
}

// A uid or gid: a number below 2^32 - 1 (which is no id).
uint32_t Id(const char* text, const char* option) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long id = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || id >= 0xffffffffull) {
    Usage((std::string(option) + " needs a uid or gid").c_str());
  }
  return static_cast<uint32_t>(id);
}

// getopt_long's table of the options above.
constexpr option kLongOptions[] = {
    {"export", required_argument, nullptr, 'e'},
    {"alias", required_argument, nullptr, 'a'},
    {"nfs", required_argument, nullptr, 'n'},
    {"nfs-tcp-port", required_argument, nullptr, 't'},
    {"mount-port", required_argument, nullptr, 'm'},
    {"threads", required_argument, nullptr, 'j'},
    {"config", required_argument, nullptr, 'c'},
    {"rsize", required_argument, nullptr, 'r'},
    {"no-root-squash", no_argument, nullptr, 'R'},
    {"all-squash", no_argument, nullptr, 'A'},
    {"anonuid", required_argument, nullptr, 'u'},
    {"anongid", required_argument, nullptr, 'g'},
    {"listen", required_argument, nullptr, 'l'},
    {"client", required_argument, nullptr, 'C'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0}};

Options Parse(int argc, char** argv) {
  Options o;
  for (int c; (c = getopt_long(argc, argv, "", kLongOptions, nullptr)) != -1;) {
    switch (c) {
      case 'e':
        o.export_path = optarg;
        break;
      case 'a':
        o.alias = optarg;
        break;
      case 'n':
        o.nfs_uris.push_back(optarg);
        break;
      case 't':
        o.nfs_tcp_port = std::atoi(optarg);
        break;
      case 'm':
        o.mount_port = std::atoi(optarg);
        break;
      case 'j':
        o.threads = static_cast<unsigned>(std::atoi(optarg));
        break;
      case 'c':
        o.config_path = optarg;
        break;
      case 'r':
        o.rsize = static_cast<uint32_t>(std::atoi(optarg));
        break;
      case 'R':
        o.export_options.root_squash = false;
        break;
      case 'A':
        o.export_options.all_squash = true;
        break;
      case 'u':
        o.export_options.anonuid = Id(optarg, "--anonuid");
        break;
      case 'g':
        o.export_options.anongid = Id(optarg, "--anongid");
        break;
      case 'l':
        o.listen_address = optarg;
        break;
      case 'C':
        if (!rpcrdma::nfs3d::Mount3Service::ParseClient(optarg).ok()) {
          Usage("--client needs an address or ADDRESS/PREFIX");
        }
        o.clients.push_back(optarg);
        break;
      case 'h':
        Usage("an NFSv3 server over RPC-over-RDMA");
      default:
        Usage("unknown option");
    }
  }
  if (o.export_path.empty()) Usage("--export is required");
  if (o.nfs_uris.empty()) o.nfs_uris.push_back("rdma://127.0.0.1:20049");
  if (o.clients.empty()) {
    o.clients = rpcrdma::nfs3d::Mount3Service::DefaultClients();
  }
  if (o.threads == 0) Usage("--threads must be at least 1");
  return o;
}

// A TCP listener at `address` and `port`, served by libtirpc's svc_vc.
SVCXPRT* ServeTcp(const std::string& address, int port, rpcprog_t program,
                  rpcvers_t version, void (*dispatch)(svc_req*, SVCXPRT*)) {
  absl::StatusOr<rpcrdma::nfs3d::UniqueFd> listener =
      rpcrdma::nfs3d::ListenTcp(address, port);
  if (!listener.ok()) {
    std::fprintf(stderr, "nfs3d: %s\n", listener.status().ToString().c_str());
    std::exit(1);
  }
  // svc_vc owns the socket from here (svc_destroy closes it).
  const int fd = listener->release();
  SVCXPRT* xprt = svc_vc_create(fd, 0, 0);
  if (xprt == nullptr || !svc_reg(xprt, program, version, dispatch, nullptr)) {
    std::fprintf(stderr, "nfs3d: cannot serve TCP port %d\n", port);
    std::exit(1);
  }
  return xprt;
}

// The connections alive now, by listener (for what they settled).
std::mutex connections_mu;
std::map<rpcrdma::ConnectionId, std::string> connections;

void NoteConnection(const rpcrdma::ServerConnectionEvent& event) {
  std::lock_guard<std::mutex> lock(connections_mu);
  if (event.type == rpcrdma::ServerConnectionEvent::Type::kAccepted) {
    connections[event.connection] = event.peer;
    std::printf("nfs3d: connection %llu from %s\n",
                static_cast<unsigned long long>(event.connection.value()),
                event.peer.c_str());
  } else {
    connections.erase(event.connection);
    std::printf("nfs3d: connection %llu closed: %s\n",
                static_cast<unsigned long long>(event.connection.value()),
                event.status.ToString().c_str());
  }
  std::fflush(stdout);
}

void DropConnections(const std::vector<SVCXPRT*>& listeners) {
  std::map<rpcrdma::ConnectionId, std::string> now;
  {
    std::lock_guard<std::mutex> lock(connections_mu);
    now = connections;
  }
  for (const auto& [id, peer] : now) {
    for (SVCXPRT* xprt : listeners) {
      (void)rpcrdma::oncrpc::ServerOf(xprt)->Disconnect(id, "SIGUSR2");
    }
  }
}

void PrintCounters(const std::vector<SVCXPRT*>& listeners) {
  {
    std::lock_guard<std::mutex> lock(connections_mu);
    for (const auto& [id, peer] : connections) {
      for (SVCXPRT* xprt : listeners) {
        absl::StatusOr<rpcrdma::ConnectionInfo> i =
            rpcrdma::oncrpc::ServerOf(xprt)->connection_info(id);
        if (!i.ok()) continue;
        std::printf(
            "nfs3d: settled connection=%llu peer=%s version=%u "
            "peer_private_data=%d peer_send_size=%u peer_receive_size=%u "
            "peer_remote_invalidation=%d send_threshold=%u "
            "receive_threshold=%u remote_invalidation=%d\n",
            static_cast<unsigned long long>(id.value()), peer.c_str(),
            i->version, i->peer_private_data, i->peer_send_size,
            i->peer_receive_size, i->peer_remote_invalidation,
            i->send_threshold, i->receive_threshold, i->remote_invalidation);
      }
    }
  }
  for (SVCXPRT* xprt : listeners) {
    const rpcrdma::Counters c = rpcrdma::oncrpc::ServerOf(xprt)->counters();
    std::string fields;
    for (const rpcrdma::CounterField& f : rpcrdma::kCounterFields) {
      absl::StrAppend(&fields, " ", f.name, "=", c.*f.field);
    }
    std::printf(
        "nfs3d: counters %s%s credits_granted=%u duplicate_replies=%lu\n",
        svc_rdma_uri(xprt), fields.c_str(), c.credits_granted,
        svc_rdma_cache_hits(xprt));
  }
  std::fflush(stdout);
}

// Signals are taken by one thread (HandleSignals), not by the dispatchers:
// every thread started after this inherits the mask.
sigset_t BlockServiceSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// The adapter's configuration: --config's file if given, NFSv3's DDP
// binding unless that file gives one, and the connection log.
absl::StatusOr<AdapterConfig> AdapterConfigFor(const Options& options) {
  AdapterConfig config;
  if (!options.config_path.empty()) {
    absl::StatusOr<AdapterConfig> loaded =
        AdapterConfig::Load(options.config_path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  // RFC 8267 §4: READ data into the write chunk a call offers, WRITE data
  // from its read chunk, READDIR(PLUS) and READLINK through its reply
  // chunk.
  config.policies.try_emplace({NFS_PROGRAM, NFS_V3},
                              DdpPolicy::Nfs3(options.rsize));
  config.on_connection = NoteConnection;
  return config;
}

// An RDMA listener at `uri` serving NFSv3 on `threads` dispatch threads,
// or nullptr once it has said why it cannot.
SVCXPRT* ServeNfsOverRdma(const std::string& uri, const AdapterConfig& config,
                          unsigned threads) {
  absl::StatusOr<SVCXPRT*> xprt =
      rpcrdma::oncrpc::CreateServerTransport(uri, config);
  if (!xprt.ok()) {
    std::fprintf(stderr, "nfs3d: %s: %s\n", uri.c_str(),
                 xprt.status().ToString().c_str());
    return nullptr;
  }
  if (!rpcrdma::nfs3d::KeepNonIdempotentReplies(*xprt) ||
      !svc_reg(*xprt, NFS_PROGRAM, NFS_V3, nfs_program_3, nullptr) ||
      !svc_rdma_run_threads(*xprt, threads)) {
    std::fprintf(stderr, "nfs3d: cannot serve %s\n", uri.c_str());
    return nullptr;
  }
  return *xprt;
}

// The line the tests and scripts wait for: every listener is serving.
void PrintReady(const Options& options,
                const std::vector<SVCXPRT*>& listeners) {
  std::printf("nfs3d: ready export=%s mount_port=%d",
              options.export_path.c_str(), options.mount_port);
  for (SVCXPRT* xprt : listeners) std::printf(" nfs=%s", svc_rdma_uri(xprt));
  if (options.nfs_tcp_port != 0) {
    std::printf(" nfs_tcp_port=%d", options.nfs_tcp_port);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// SIGUSR2 drops the connections, SIGUSR1 prints the counters, SIGTERM and
// SIGINT print them and end the process.
void HandleSignals(const sigset_t& signals,
                   const std::vector<SVCXPRT*>& listeners) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&signals, &signal_number) != 0) continue;
    if (signal_number == SIGUSR2) {
      DropConnections(listeners);
      continue;
    }
    PrintCounters(listeners);
    if (signal_number == SIGUSR1) continue;
    // Stopping: each listener's Server closes its connections and its
    // capture file (capture_path), whose last frames are lost otherwise.
    for (SVCXPRT* xprt : listeners) svc_destroy(xprt);
    std::_Exit(0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  const sigset_t signals = BlockServiceSignals();

  absl::StatusOr<std::unique_ptr<rpcrdma::nfs3d::Export>> exported =
      rpcrdma::nfs3d::Export::Open(options.export_path);
  if (!exported.ok()) {
    std::fprintf(stderr, "nfs3d: %s\n", exported.status().ToString().c_str());
    return 1;
  }
  rpcrdma::nfs3d::Mount3Service mount(**exported, options.alias,
                                      options.clients);
  rpcrdma::nfs3d::Mount3Service::Install(&mount);
  // A worker for each thread that may dispatch an NFS call (those of the
  // RDMA listeners, svc_run's for NFS over TCP), so that no call waits for
  // a worker. This thread starts them and never changes its credentials.
  const unsigned file_threads =
      options.threads * static_cast<unsigned>(options.nfs_uris.size()) +
      (options.nfs_tcp_port != 0 ? 1 : 0);
  rpcrdma::nfs3d::Nfs3Server nfs(*std::move(exported),
                                 {.max_read = options.rsize,
                                  .max_write = options.rsize,
                                  .file_threads = file_threads},
                                 options.export_options);
  rpcrdma::nfs3d::Nfs3Server::Install(&nfs);

  const absl::StatusOr<AdapterConfig> config = AdapterConfigFor(options);
  if (!config.ok()) {
    std::fprintf(stderr, "nfs3d: %s\n", config.status().ToString().c_str());
    return 1;
  }
  ServeTcp(options.listen_address, options.mount_port, MOUNT_PROGRAM, MOUNT_V3,
           mount_program_3);
  if (options.nfs_tcp_port != 0) {
    ServeTcp(options.listen_address, options.nfs_tcp_port, NFS_PROGRAM, NFS_V3,
             nfs_program_3);
  }
  std::vector<SVCXPRT*> listeners;
  for (const std::string& uri : options.nfs_uris) {
    SVCXPRT* xprt = ServeNfsOverRdma(uri, *config, options.threads);
    if (xprt == nullptr) return 1;
    listeners.push_back(xprt);
  }
  PrintReady(options, listeners);

  std::thread(HandleSignals, signals, listeners).detach();
  svc_run();  // the TCP transports; the RDMA ones have their threads
  return 0;
}
