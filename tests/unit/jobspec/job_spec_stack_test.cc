// spec.model.type sequential (Note [Declared layer stacks] in common/jobspec/layer_spec.h): the
// layer list read and written along the field table, each layer's parameters checked with its
// path, the shapes inferred from the dataset's sample shape and refused naming the layer and both
// shapes, the outputs against the classes, spec.loss, and the CRD schema of the list.
#include <gtest/gtest.h>

#include <string>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_schema.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::errorsOf;
using spec_test::find;

std::string sequentialJob(const std::string& stack, const std::string& data = "{dataset: fashion-mnist, dir: /d}",
                          const std::string& extra = "") {
  return spec_test::jobWithSpec("  model:\n    type: sequential\n    stack:\n" + stack + "  data: " + data +
                                "\n  epochs: 1\n" + extra);
}

const char* kConvStack = R"(      - {conv2d: {out: 4, kernel: 3, padding: 1}}
      - relu: {}
      - residual:
          layers: [{conv2d: {out: 4, kernel: 3, stride: 1, padding: 1}}, {gelu: {}}]
      - maxpool2d: {kernel: 2}
      - {avgpool2d: {kernel: 2, stride: 2}}
      - flatten:
      - layernorm: {eps: 0.001}
      - dropout: {p: 0.25}
      - {linear: {out: 16}}
      - tanh: {}
      - sigmoid: {}
      - linear: {out: 10}
)";

TEST(JobSpecStackTest, ReadsEveryLayerKindAndRoundTrips) {
  auto spec = parseJobSpec(sequentialJob(kConvStack));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  const std::vector<LayerSpec>& s = spec->model.stack;
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(s[0].kind, LayerKind::kConv2d);
  EXPECT_EQ(s[0].out, 4);
  EXPECT_EQ(s[0].padding, 1);
  EXPECT_EQ(effectiveStride(s[0]), 1);
  ASSERT_EQ(s[2].kind, LayerKind::kResidual);
  ASSERT_EQ(s[2].layers.size(), 2u);
  EXPECT_EQ(s[2].layers[1].kind, LayerKind::kGelu);
  EXPECT_EQ(effectiveStride(s[3]), 2);  // a pool's stride defaults to its kernel
  EXPECT_EQ(s[5].kind, LayerKind::kFlatten);  // `- flatten:` (null) reads as {}
  EXPECT_EQ(s[6].eps, 0.001);
  EXPECT_EQ(s[7].p, 0.25);
  EXPECT_EQ(s[11].out, 10);
  EXPECT_EQ(spec->loss, LossType::kCrossEntropy);
  auto again = parseJobSpec(spec->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status() << "\n" << spec->toYaml();
  EXPECT_EQ(*again, *spec);
}

TEST(JobSpecStackTest, InfersEveryShapeFromTheSampleShape) {
  auto spec = parseJobSpec(sequentialJob(kConvStack)).value();
  const StackShapes shapes = inferStackShapes(spec.model.stack, *datasetSampleShape(spec));
  ASSERT_TRUE(shapes.ok()) << shapes.error;
  const std::vector<std::vector<int64_t>> want = {{4, 28, 28}, {4, 28, 28}, {4, 28, 28}, {4, 14, 14},
                                                  {4, 7, 7},   {196},       {196},       {196},
                                                  {16},        {16},        {16},        {10}};
  EXPECT_EQ(shapes.outputs, want);
  // Strided, padded conv: (9 + 2 - 4) / 2 + 1 = 4.
  const StackShapes conv = inferStackShapes({{.kind = LayerKind::kConv2d, .out = 5, .kernel = 4, .stride = 2, .padding = 1}},
                                            {3, 9, 9});
  ASSERT_TRUE(conv.ok()) << conv.error;
  EXPECT_EQ(conv.output(), (std::vector<int64_t>{5, 4, 4}));
}

TEST(JobSpecStackTest, AShapeMismatchNamesTheLayerAndBothShapes) {
  // A linear fed [4, 28, 28] without a flatten.
  auto errors = errorsOf(sequentialJob("      - {conv2d: {out: 4, kernel: 3, padding: 1}}\n      - relu: {}\n"
                                       "      - linear: {out: 10}\n"));
  const SpecError* e = find(errors, "spec.model.stack[2].linear");
  ASSERT_NE(e, nullptr) << errors.front().toString();
  EXPECT_NE(e->message.find("[4, 28, 28]"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("[features]"), std::string::npos) << e->message;
  EXPECT_GT(e->line, 0);
  // A conv on synthetic [20] features.
  errors = errorsOf(sequentialJob("      - conv2d: {out: 4, kernel: 3}\n", "{dataset: synthetic, synthetic: {features: 20}}"));
  e = find(errors, "spec.model.stack[0].conv2d");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("[20]"), std::string::npos) << e->message;
  // A window larger than the input.
  errors = errorsOf(sequentialJob("      - maxpool2d: {kernel: 30}\n      - flatten: {}\n      - linear: {out: 10}\n"));
  e = find(errors, "spec.model.stack[0].maxpool2d");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("[1, 28, 28]"), std::string::npos) << e->message;
  // A residual block that changes the shape.
  errors = errorsOf(sequentialJob("      - flatten: {}\n      - residual: {layers: [{linear: {out: 8}}]}\n"
                                  "      - linear: {out: 10}\n"));
  e = find(errors, "spec.model.stack[1].residual");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("[8]"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("[784]"), std::string::npos) << e->message;
  // Inside a block: the inner layer's own path.
  errors = errorsOf(sequentialJob("      - residual: {layers: [{linear: {out: 8}}]}\n      - flatten: {}\n"
                                  "      - linear: {out: 10}\n"));
  EXPECT_NE(find(errors, "spec.model.stack[0].residual.layers[0].linear"), nullptr);
}

TEST(JobSpecStackTest, OutputsMustMatchTheClasses) {
  auto errors = errorsOf(sequentialJob("      - flatten: {}\n      - linear: {out: 12}\n"));
  const SpecError* e = find(errors, "spec.model.stack");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("10 classes"), std::string::npos) << e->message;
  errors = errorsOf(sequentialJob("      - linear: {out: 3}\n", "{dataset: synthetic, synthetic: {features: 6, classes: 4}}"));
  ASSERT_NE(find(errors, "spec.model.stack"), nullptr);
  EXPECT_TRUE(parseJobSpec(sequentialJob("      - linear: {out: 4}\n",
                                         "{dataset: synthetic, synthetic: {features: 6, classes: 4}}")).isOk());
  // Logits must be flat.
  errors = errorsOf(sequentialJob("      - conv2d: {out: 10, kernel: 28}\n"));
  e = find(errors, "spec.model.stack");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("[10, 1, 1]"), std::string::npos) << e->message;
}

TEST(JobSpecStackTest, LayerParametersAreCheckedWithTheirPaths) {
  auto errors = errorsOf(sequentialJob("      - flatten: {}\n      - linear: {out: 0}\n      - dropout: {p: 1}\n"
                                       "      - conv2d: {out: 2}\n      - maxpool2d: {kernel: 2, stride: 0}\n"
                                       "      - layernorm: {eps: -1}\n"));
  EXPECT_NE(find(errors, "spec.model.stack[1].linear.out"), nullptr);
  EXPECT_NE(find(errors, "spec.model.stack[2].dropout.p"), nullptr);
  EXPECT_NE(find(errors, "spec.model.stack[3].conv2d.kernel"), nullptr);  // required field is missing
  EXPECT_NE(find(errors, "spec.model.stack[5].layernorm.eps"), nullptr);
  // Unknown kinds and parameters, two kinds in one item, a nested residual, a wrong type.
  errors = errorsOf(sequentialJob("      - {conv3d: {out: 2}}\n      - {linear: {out: 2, bias: false}}\n"
                                  "      - {relu: {}, tanh: {}}\n"
                                  "      - residual: {layers: [{residual: {layers: []}}]}\n"
                                  "      - linear: {out: many}\n"));
  const SpecError* e = find(errors, "spec.model.stack[0].conv3d");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("linear, conv2d"), std::string::npos) << e->message;
  EXPECT_NE(find(errors, "spec.model.stack[1].linear.bias"), nullptr);
  EXPECT_NE(find(errors, "spec.model.stack[2]"), nullptr);
  EXPECT_NE(find(errors, "spec.model.stack[3].residual.layers[0].residual"), nullptr);
  EXPECT_NE(find(errors, "spec.model.stack[4].linear.out"), nullptr);
  // An empty stack, and a stack on another model type.
  errors = errorsOf(sequentialJob("      []\n"));
  EXPECT_NE(find(errors, "spec.model.stack"), nullptr);
  errors = errorsOf(spec_test::jobWithSpec("  model:\n    type: mlp\n    stack: [relu: {}]\n"
                                           "  data: {dataset: synthetic}\n  epochs: 1\n"));
  e = find(errors, "spec.model.stack");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("only valid when spec.model.type is sequential"), std::string::npos) << e->message;
}

TEST(JobSpecStackTest, MseNeedsFloatTargets) {
  auto errors = errorsOf(sequentialJob("      - flatten: {}\n      - linear: {out: 10}\n", "{dataset: fashion-mnist, dir: /d}",
                                       "  loss: mse\n"));
  const SpecError* e = find(errors, "spec.loss");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->message.find("float targets"), std::string::npos) << e->message;
  errors = errorsOf(spec_test::withSpec("  loss: hinge\n"));
  ASSERT_NE(find(errors, "spec.loss"), nullptr);
  // npy targets may be float: the gate lets mse through, the files decide (the controller's data
  // checks, the worker).
  auto npy = parseJobSpec(sequentialJob("      - linear: {out: 1}\n",
                                        "{dataset: npy, train: {features: /d/x.npy, targets: /d/y.npy}}", "  loss: mse\n"));
  EXPECT_TRUE(npy.isOk()) << npy.status();
}

TEST(JobSpecStackTest, TheCrdListsEveryKindAsOneKeyObjects) {
  auto crd = renderJobSpecCrd("x:\n  " + std::string(kCrdSpecPlaceholder) + "\n  " +
                              std::string(kCrdDocumentRulesPlaceholder) + "\n");
  ASSERT_TRUE(crd.isOk()) << crd.status();
  const std::string& text = *crd;
  const size_t stack = text.find("stack:");
  ASSERT_NE(stack, std::string::npos);
  const std::string tail = text.substr(stack);
  EXPECT_NE(tail.find("minProperties: 1"), std::string::npos);
  EXPECT_NE(tail.find("maxProperties: 1"), std::string::npos);
  for (const char* kind : {"linear:", "conv2d:", "maxpool2d:", "avgpool2d:", "flatten:", "layernorm:", "dropout:",
                           "relu:", "gelu:", "tanh:", "sigmoid:", "residual:"}) {
    EXPECT_NE(tail.find(kind), std::string::npos) << kind;
  }
  // The residual's inner list has every kind but residual: no recursion in a structural schema.
  const size_t inner = tail.find("layers:");
  ASSERT_NE(inner, std::string::npos);
  EXPECT_EQ(tail.find("residual:", inner), std::string::npos);
}

}  // namespace
}  // namespace ddp
