// NcclOptions validation and createNcclBackend's answer in builds or machines without NCCL/GPU.
// (The GPU tests are in nccl_backend_cuda_test.cc.)
#include "worker/comm/nccl_backend.h"

#include <gtest/gtest.h>

#include "common/store/in_memory_store.h"

namespace ddp::comm {
namespace {

TEST(NcclOptionsTest, ValidateNamesTheField) {
  NcclOptions o;
  EXPECT_TRUE(o.validate().isOk());
  o.rank = 2;
  o.size = 2;
  EXPECT_NE(o.validate().message().find("rank 2 out of range"), std::string::npos);
  o = {};
  o.prefix = "";
  EXPECT_NE(o.validate().message().find("prefix"), std::string::npos);
  o = {};
  o.timeout = Duration::zero();
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
  o = {};
  o.device = -1;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
}

TEST(NcclBackendFactoryTest, CpuOnlyBuildAnswersUnimplemented) {
  InMemoryStore store;
  NcclOptions bad;
  bad.size = 0;
  EXPECT_EQ(createNcclBackend(bad, store).status().code(), StatusCode::kInvalidArgument);
  if (ncclBackendAvailable()) GTEST_SKIP() << "this build has the NCCL backend";
  auto b = createNcclBackend(NcclOptions{}, store);
  EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(b.status().message().find("DDP_WITH_CUDA"), std::string::npos);
}

}  // namespace
}  // namespace ddp::comm
