// runGlooAbortSelfTest against the Gloo this build links: abort must release a recv blocked in
// Gloo (the contract: within 1 s of abort), the self-test must be repeatable in one process
// (each run builds and tears down its own loopback pair), and a bad bound is a setup error, not
// a verdict. Nothing is faked: real Gloo over loopback TCP, as at worker start-up.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "worker/comm/gloo_abort_self_test.h"

namespace ddp::comm {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void expectReliable(const AbortSelfTestResult& r) {
  EXPECT_TRUE(r.reliable) << r.detail;
  EXPECT_GE(r.releaseSeconds, 0.0) << r.detail;
  EXPECT_LT(r.releaseSeconds, 1.0) << r.detail;
  EXPECT_TRUE(contains(r.detail, "a blocked recv was released")) << r.detail;
}

TEST(GlooAbortSelfTest, AbortReleasesABlockedRecvWithinTheBound) {
  expectReliable(runGlooAbortSelfTest(std::chrono::seconds(1)));
}

TEST(GlooAbortSelfTest, RunsTwiceInOneProcess) {
  expectReliable(runGlooAbortSelfTest());
  expectReliable(runGlooAbortSelfTest());
}

TEST(GlooAbortSelfTest, NonPositiveBoundIsASetupErrorNotAVerdict) {
  AbortSelfTestResult r = runGlooAbortSelfTest(Duration::zero());
  EXPECT_FALSE(r.reliable);
  EXPECT_EQ(r.releaseSeconds, 0.0);
  EXPECT_TRUE(contains(r.detail, "could not run")) << r.detail;
  EXPECT_TRUE(contains(r.detail, "bound must be positive")) << r.detail;
}

}  // namespace
}  // namespace ddp::comm
