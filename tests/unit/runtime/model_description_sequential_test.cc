// A checkpoint's model description (worker/training/model_description.h) of a declared stack:
// toYaml and parseModelDescription are inverses, the described model is the trained one
// (the same parameter names and shapes), and a broken stack is refused naming the layer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "worker/model/sequential_builder.h"
#include "worker/training/model_description.h"

namespace ddp::runtime {
namespace {

std::vector<LayerSpec> stack() {
  using K = LayerKind;
  return {{.kind = K::kConv2d, .out = 3, .kernel = 3, .stride = 2, .padding = 1},
          {.kind = K::kResidual, .layers = {{.kind = K::kConv2d, .out = 3, .kernel = 3, .padding = 1}, {.kind = K::kGelu}}},
          {.kind = K::kAvgPool2d, .kernel = 2},
          {.kind = K::kFlatten},
          {.kind = K::kLayerNorm, .eps = 1e-3},
          {.kind = K::kDropout, .p = 0.25},
          {.kind = K::kLinear, .out = 4}};
}

TEST(ModelDescriptionSequentialTest, RoundTripsAndBuildsTheTrainedModel) {
  ModelDescription d;
  d.type = ModelType::kSequential;
  d.stack = stack();
  d.stackInput = {2, 9, 9};
  auto back = parseModelDescription(d.toYaml(), "model_spec");
  ASSERT_TRUE(back.isOk()) << back.status() << "\n" << d.toYaml();
  EXPECT_EQ(back->type, ModelType::kSequential);
  EXPECT_EQ(back->stack, d.stack);
  EXPECT_EQ(back->stackInput, d.stackInput);
  auto built = buildDescribedModel(*back);
  ASSERT_TRUE(built.isOk()) << built.status();
  auto trained = model::buildSequential(d.stack, d.stackInput, {}).value();
  ASSERT_EQ((*built)->parameters().size(), trained->parameters().size());
  for (size_t i = 0; i < trained->parameters().size(); ++i) {
    EXPECT_EQ((*built)->parameters()[i]->name, trained->parameters()[i]->name);
    EXPECT_EQ((*built)->parameters()[i]->shape, trained->parameters()[i]->shape);
  }
}

TEST(ModelDescriptionSequentialTest, ABrokenStackIsRefusedNamingTheLayer) {
  auto r = parseModelDescription("type: sequential\ninput: [4]\nstack: [{linear: {out: 0}}, {linear: {width: 3}}]\n",
                                 "ckpt model_spec");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("ckpt model_spec: stack[1].linear"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace ddp::runtime
