// Whose an object is (object_ownership.h, Note [Object ownership]): the DDPJob's uid decides;
// without one, the launcher's labels and no controller reference; a DDPJob of the job's name
// with another uid is an earlier incarnation; anything else is another's.
#include "controller/launch/kubernetes/object_ownership.h"

#include <gtest/gtest.h>

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

json withOwner(const std::string& kind, const std::string& name, const std::string& uid, bool controller = true) {
  return {{"metadata", {{"name", "x"}, {"ownerReferences", json::array({{{"apiVersion", kind == "DDPJob" ? "ddp.dev/v1" : "apps/v1"},
                                                                          {"kind", kind}, {"name", name}, {"uid", uid},
                                                                          {"controller", controller}}})}}}};
}

json labelled(const std::string& job) {
  return {{"metadata", {{"name", "x"}, {"labels", {{"ddp.dev/job", job}, {"app.kubernetes.io/managed-by", "ddp-controller"}}}}}};
}

TEST(KubernetesObjectOwnershipTest, TheDdpJobsUidDecides) {
  const JobOwner owner{"fm", "uid-1"};
  EXPECT_EQ(ownershipOf(withOwner("DDPJob", "fm", "uid-1"), "fm", owner), Ownership::kJobs);
  EXPECT_EQ(ownershipOf(withOwner("DDPJob", "fm", "uid-0"), "fm", owner), Ownership::kEarlierIncarnation);
  EXPECT_EQ(ownershipOf(withOwner("DDPJob", "other", "uid-2"), "fm", owner), Ownership::kAnother);
  EXPECT_EQ(ownershipOf(withOwner("Deployment", "fm", "uid-3"), "fm", owner), Ownership::kAnother);
  // A job's label does not make an object the job's when another controls it.
  json both = withOwner("Deployment", "web", "uid-3");
  both["metadata"]["labels"] = labelled("fm")["metadata"]["labels"];
  EXPECT_EQ(ownershipOf(both, "fm", owner), Ownership::kAnother);
}

TEST(KubernetesObjectOwnershipTest, WithoutAnOwnerTheLaunchersLabelsDecide) {
  EXPECT_EQ(ownershipOf(labelled("fm"), "fm", std::nullopt), Ownership::kJobs);
  EXPECT_EQ(ownershipOf(labelled("fm"), "fm", JobOwner{"fm", "uid-1"}), Ownership::kJobs);
  EXPECT_EQ(ownershipOf(labelled("other"), "fm", std::nullopt), Ownership::kAnother);
  json helm = {{"metadata", {{"name", "ddp"}, {"labels", {{"app.kubernetes.io/managed-by", "Helm"}}}}}};
  EXPECT_EQ(ownershipOf(helm, "ddp", std::nullopt), Ownership::kAnother);
  EXPECT_EQ(ownershipOf(json{{"metadata", {{"name", "ddp"}}}}, "ddp", std::nullopt), Ownership::kAnother);
  EXPECT_EQ(ownershipOf(withOwner("DDPJob", "fm", "uid-0"), "fm", std::nullopt), Ownership::kEarlierIncarnation);
}

TEST(KubernetesObjectOwnershipTest, TheOwnerIsDescribedForTheError) {
  EXPECT_EQ(describeOwner(withOwner("Deployment", "web", "u")), "owned by Deployment web");
  EXPECT_EQ(describeOwner(json{{"metadata", {{"labels", {{"app", "ddp"}}}}}}), "no owner reference, labels {app=ddp}");
}

}  // namespace
}  // namespace ddp::controller::kube
