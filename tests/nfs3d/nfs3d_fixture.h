// What nfs3d's tests share: a server of a fresh export directory under the
// test's temporary directory, installed for rpcgen's dispatcher, and a
// client of it (nfs3_client.h) calling as root (authunix_create_default).
//
// Needs CAP_DAC_READ_SEARCH (open_by_handle_at), as the server does: the
// tests are skipped without it.
#ifndef RPCRDMA_TESTS_NFS3D_NFS3D_FIXTURE_H_
#define RPCRDMA_TESTS_NFS3D_NFS3D_FIXTURE_H_

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "examples/nfs3d/credentials.h"
#include "examples/nfs3d/export.h"
#include "examples/nfs3d/nfs3_server.h"
#include "gtest/gtest.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "tests/nfs3d/nfs3_client.h"

namespace rpcrdma::nfs3d {

class Nfs3dFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string(test->test_suite_name()) + "-" +
            std::to_string(getpid()) + "-" + test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "export");
    absl::StatusOr<std::unique_ptr<Export>> exported =
        Export::Open(dir_ / "export");
    if (!exported.ok() && absl::IsFailedPrecondition(exported.status())) {
      GTEST_SKIP() << exported.status();
    }
    ASSERT_TRUE(exported.ok()) << exported.status();
    // The client calls as root, acting on root's export as root:
    // no_root_squash. The tests of squashing choose their own (Serve).
    server_ = std::make_unique<Nfs3Server>(*std::move(exported), ServerLimits{},
                                           ExportOptions{.root_squash = false});
    Nfs3Server::Install(server_.get());
    client_ = std::make_unique<Nfs3Client>();
    ASSERT_TRUE(client_->Start()) << rdma_oncrpc_error();
    root_ = server_->exported().root_handle();
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) Nfs3Server::Install(nullptr);
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A new server on the same export with `options` (a restart, as far as
  // handles and the write verifier go).
  void Serve(const ExportOptions& options) {
    absl::StatusOr<std::unique_ptr<Export>> again =
        Export::Open(dir_ / "export");
    ASSERT_TRUE(again.ok()) << again.status();
    server_ = std::make_unique<Nfs3Server>(*std::move(again), ServerLimits{},
                                           options);
    Nfs3Server::Install(server_.get());
  }

  // `name` in the export, on the server's side.
  std::filesystem::path In(const std::string& name) const {
    return dir_ / "export" / name;
  }

  // The handle of `name` in the export's root.
  FileHandle HandleOf(const char* name) {
    FileHandle h;
    EXPECT_EQ(client_->Lookup(root_, name, h), NFS3_OK) << name;
    return h;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Nfs3Server> server_;
  std::unique_ptr<Nfs3Client> client_;
  FileHandle root_;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_TESTS_NFS3D_NFS3D_FIXTURE_H_
