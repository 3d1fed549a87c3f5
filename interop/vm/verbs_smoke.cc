// verbs_smoke DEVICE [ADDR]
//
// A minimal verbs and rdma-cm check run inside the Soft-RoCE VM (see
// run-in-vm.sh): opens DEVICE (e.g. rxe0), prints the device limits an
// RPC-over-RDMA transport sizes itself by, checks that port 1 is active and
// that its GID table holds the IPv4-mapped GID of ADDR (RoCE v2), allocates
// a protection domain, registers a memory region, and binds an rdma-cm id
// to ADDR to check that rdma-cm resolves it to DEVICE. ADDR defaults to
// $RPCRDMA_TEST_ADDR. Exits 0 when every step succeeds.

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "verbs_smoke: FAIL: %s\n", what.c_str());
  return 1;
}

std::string Errno(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

// Owns what the checks open, released in reverse order.
struct Resources {
  ibv_device** devices = nullptr;
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_mr* mr = nullptr;
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;

  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources() {
    if (id != nullptr) rdma_destroy_id(id);
    if (channel != nullptr) rdma_destroy_event_channel(channel);
    if (mr != nullptr) ibv_dereg_mr(mr);
    if (pd != nullptr) ibv_dealloc_pd(pd);
    if (context != nullptr) ibv_close_device(context);
    if (devices != nullptr) ibv_free_device_list(devices);
  }
};

const char* YesNo(bool b) { return b ? "yes" : "no"; }

int Run(const std::string& device_name, const std::string& addr) {
  Resources r;
  int num_devices = 0;
  r.devices = ibv_get_device_list(&num_devices);
  if (r.devices == nullptr) return Fail(Errno("ibv_get_device_list"));
  ibv_device* device = nullptr;
  for (int i = 0; i < num_devices; ++i) {
    if (device_name == ibv_get_device_name(r.devices[i])) {
      device = r.devices[i];
    }
  }
  if (device == nullptr) {
    return Fail("no verbs device named " + device_name + " (" +
                std::to_string(num_devices) + " devices)");
  }

  r.context = ibv_open_device(device);
  if (r.context == nullptr) return Fail(Errno("ibv_open_device"));

  ibv_device_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  if (int rc = ibv_query_device(r.context, &attr); rc != 0) {
    errno = rc;
    return Fail(Errno("ibv_query_device"));
  }
  const auto caps = static_cast<std::uint64_t>(attr.device_cap_flags);
  std::printf("device %s\n", device_name.c_str());
  std::printf("  max_qp %d max_qp_wr %d max_cq %d max_cqe %d\n", attr.max_qp,
              attr.max_qp_wr, attr.max_cq, attr.max_cqe);
  std::printf("  max_sge %d max_sge_rd %d\n", attr.max_sge, attr.max_sge_rd);
  std::printf("  max_qp_rd_atom %d max_qp_init_rd_atom %d\n",
              attr.max_qp_rd_atom, attr.max_qp_init_rd_atom);
  std::printf("  max_mr %d max_mr_size %llu max_pd %d\n", attr.max_mr,
              static_cast<unsigned long long>(attr.max_mr_size), attr.max_pd);
  std::printf(
      "  device_cap_flags 0x%llx: MEM_WINDOW %s MEM_MGT_EXTENSIONS %s\n",
      static_cast<unsigned long long>(caps),
      YesNo((caps & IBV_DEVICE_MEM_WINDOW) != 0),
      YesNo((caps & IBV_DEVICE_MEM_MGT_EXTENSIONS) != 0));
  std::printf("  phys_port_cnt %d\n", attr.phys_port_cnt);
  if (attr.phys_port_cnt < 1) return Fail("device has no port");
  if (attr.max_sge < 1 || attr.max_qp_wr < 1 || attr.max_cqe < 1) {
    return Fail("device reports zero max_sge, max_qp_wr or max_cqe");
  }

  ibv_port_attr port;
  std::memset(&port, 0, sizeof(port));
  if (int rc = ibv_query_port(r.context, 1, &port); rc != 0) {
    errno = rc;
    return Fail(Errno("ibv_query_port"));
  }
  std::printf("port 1: state %s link_layer %s active_mtu %d gid_tbl_len %d\n",
              ibv_port_state_str(port.state),
              port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "other",
              128 << port.active_mtu, port.gid_tbl_len);
  if (port.state != IBV_PORT_ACTIVE) return Fail("port 1 is not active");
  if (port.link_layer != IBV_LINK_LAYER_ETHERNET) {
    return Fail("port 1 link layer is not Ethernet");
  }

  // RoCE v2 GIDs of IPv4 addresses are IPv4-mapped IPv6 addresses.
  in_addr v4;
  if (inet_pton(AF_INET, addr.c_str(), &v4) != 1) {
    return Fail("not an IPv4 address: " + addr);
  }
  std::uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  std::memcpy(want + 12, &v4, sizeof(v4));
  int gid_index = -1;
  for (int i = 0; i < port.gid_tbl_len && gid_index < 0; ++i) {
    ibv_gid gid;
    if (ibv_query_gid(r.context, 1, i, &gid) != 0) continue;
    if (std::memcmp(gid.raw, want, sizeof(want)) == 0) gid_index = i;
  }
  if (gid_index < 0) return Fail("no GID for " + addr + " on port 1");
  std::printf("GID index %d is ::ffff:%s\n", gid_index, addr.c_str());

  r.pd = ibv_alloc_pd(r.context);
  if (r.pd == nullptr) return Fail(Errno("ibv_alloc_pd"));
  std::vector<char> buffer(64 * 1024, 'x');
  const int access =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  r.mr = ibv_reg_mr(r.pd, buffer.data(), buffer.size(), access);
  if (r.mr == nullptr) return Fail(Errno("ibv_reg_mr"));
  if (r.mr->addr != buffer.data() || r.mr->length != buffer.size()) {
    return Fail("ibv_reg_mr returned a region of another address or length");
  }
  std::printf("MR: %zu bytes lkey 0x%x rkey 0x%x\n", r.mr->length, r.mr->lkey,
              r.mr->rkey);

  r.channel = rdma_create_event_channel();
  if (r.channel == nullptr) return Fail(Errno("rdma_create_event_channel"));
  if (rdma_create_id(r.channel, &r.id, nullptr, RDMA_PS_TCP) != 0) {
    return Fail(Errno("rdma_create_id"));
  }
  sockaddr_in sin;
  std::memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr = v4;
  if (rdma_bind_addr(r.id, reinterpret_cast<sockaddr*>(&sin)) != 0) {
    return Fail(Errno("rdma_bind_addr"));
  }
  if (r.id->verbs == nullptr) {
    return Fail("rdma-cm bound " + addr + " to no RDMA device");
  }
  const std::string bound = ibv_get_device_name(r.id->verbs->device);
  std::printf("rdma-cm: %s is on %s port %d\n", addr.c_str(), bound.c_str(),
              r.id->port_num);
  if (bound != device_name) {
    return Fail("rdma-cm bound " + addr + " to " + bound + ", not " +
                device_name);
  }
  std::printf("verbs_smoke: OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s DEVICE [ADDR]\n", argv[0]);
    return 2;
  }
  const char* addr = argc == 3 ? argv[2] : std::getenv("RPCRDMA_TEST_ADDR");
  if (addr == nullptr) {
    std::fprintf(stderr, "verbs_smoke: no ADDR and no RPCRDMA_TEST_ADDR\n");
    return 2;
  }
  return Run(argv[1], addr);
}
