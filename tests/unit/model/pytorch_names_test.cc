// PyTorch names of our parameters (Note [PyTorch names]): each built model's names map to the
// entries its nn.Sequential twin (or nanoGPT's GPT) has, and a name of no model is refused.
#include "worker/model/pytorch_names.h"

#include <gtest/gtest.h>

#include "worker/model/cnn.h"
#include "worker/model/gpt.h"
#include "worker/model/mlp.h"

namespace ddp::model {
namespace {

std::vector<std::string> namesOf(TrainableModel& m) {
  std::vector<std::string> out;
  for (const Parameter* p : m.parameters()) out.push_back(p->name);
  return out;
}

TEST(PytorchNamesTest, MlpLinearsAreEveryOtherEntry) {
  auto mlp = buildMlp({.inputs = 6, .hidden = {5, 4}, .classes = 3}, {});
  ASSERT_TRUE(mlp.isOk());
  auto names = pytorchNames(namesOf(**mlp));
  ASSERT_TRUE(names.isOk()) << names.status();
  EXPECT_EQ(*names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}));
}

TEST(PytorchNamesTest, CnnCountsPoolsActivationsAndFlatten) {
  CnnConfig c;
  c.input = {1, 8, 8};
  c.convChannels = {2, 3};
  c.hidden = {4};
  c.classes = 2;
  auto cnn = buildCnn(c, {});
  ASSERT_TRUE(cnn.isOk());
  auto names = pytorchNames(namesOf(**cnn));
  ASSERT_TRUE(names.isOk()) << names.status();
  // conv, pool, relu, conv, pool, relu, flatten, linear, act, linear
  EXPECT_EQ(*names, (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias",
                                              "9.weight", "9.bias"}));
}

TEST(PytorchNamesTest, GptTakesNanoGptNames) {
  GptConfig c;
  c.vocabSize = 11;
  c.contextLength = 4;
  c.layers = 1;
  c.heads = 1;
  c.dModel = 4;
  c.tiedEmbeddings = false;
  auto ops = makeLayerOps({});
  ASSERT_TRUE(ops.isOk());
  auto gpt = Gpt::create(c, std::move(*ops), 1);
  ASSERT_TRUE(gpt.isOk());
  auto names = pytorchNames(namesOf(**gpt));
  ASSERT_TRUE(names.isOk()) << names.status();
  EXPECT_EQ(*names, (std::vector<std::string>{
                        "transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                        "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight",
                        "transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_proj.weight",
                        "transformer.h.0.attn.c_proj.bias", "transformer.h.0.ln_2.weight", "transformer.h.0.ln_2.bias",
                        "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.bias",
                        "transformer.h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.bias",
                        "transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"}));
}

TEST(PytorchNamesTest, DeclaredStacksKeepTheirIndexNamesAndStrangersAreRefused) {
  const std::vector<std::string> declared = {"0.weight", "0.bias", "3.1.weight"};
  EXPECT_EQ(pytorchNames(declared).value(), declared);
  auto bad = pytorchNames({"fc0.weight", "encoder.weight"});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), "parameter 'encoder.weight' is not an mlp, cnn, gpt or declared stack parameter");
  EXPECT_FALSE(pytorchNames({"embed.tokens", "blocks.0.conv.weight"}).isOk());
}

}  // namespace
}  // namespace ddp::model
