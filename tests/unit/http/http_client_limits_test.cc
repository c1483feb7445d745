// ClientConnectionLimit: per-address counts admit up to the cap, release frees a place, and 0
// means no cap; the host part of IPv4 and IPv6 remotes is the key.
#include "common/http/http_client_limits.h"

#include <gtest/gtest.h>

namespace ddp::http::detail {
namespace {

TEST(ClientConnectionLimitTest, AnAddressIsAdmittedUpToItsCapAndAgainAfterARelease) {
  ClientConnectionLimit limit(2);
  EXPECT_TRUE(limit.admit("10.0.0.1"));
  EXPECT_TRUE(limit.admit("10.0.0.1"));
  EXPECT_FALSE(limit.admit("10.0.0.1"));
  EXPECT_TRUE(limit.admit("10.0.0.2")) << "another address has its own count";
  EXPECT_EQ(limit.count("10.0.0.1"), 2u);
  limit.release("10.0.0.1");
  EXPECT_TRUE(limit.admit("10.0.0.1"));
  limit.release("10.0.0.2");
  EXPECT_EQ(limit.clients(), 1u) << "an address with no connection is forgotten";
  limit.release("10.0.0.9");  // never admitted: nothing happens
  EXPECT_EQ(limit.clients(), 1u);
}

TEST(ClientConnectionLimitTest, ZeroMeansNoCap) {
  ClientConnectionLimit none(0);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(none.admit("127.0.0.1"));
  EXPECT_EQ(none.clients(), 0u);
}

TEST(ClientConnectionLimitTest, TheHostOfARemoteDropsOnlyThePort) {
  EXPECT_EQ(hostOfRemote("127.0.0.1:5555"), "127.0.0.1");
  EXPECT_EQ(hostOfRemote("[::1]:80"), "[::1]");
  EXPECT_EQ(hostOfRemote("?"), "?");
}

}  // namespace
}  // namespace ddp::http::detail
