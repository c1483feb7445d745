#pragma once
// The names PyTorch gives our models' parameters (docs/MODELS.md, "PyTorch names"): what the
// safetensors export writes and spec.init reads (Note [PyTorch names]).
//
// Note [PyTorch names]
// Each built-in model has a PyTorch twin whose state_dict holds the same tensors in the same
// layout (Linear weight [out, in], Conv2d weight [out, in, k, k]: ours already are):
//  - mlp: nn.Sequential(Linear, act, Linear, act, ..., Linear): fc{i} is entry 2i.
//  - cnn: nn.Sequential(per conv block Conv2d, MaxPool2d(2), ReLU; Flatten; then Linear, act per
//    hidden width; the last Linear): conv{i} is entry 3i, fc{j} entry 3C + 1 + 2j for C convs.
//  - a declared stack (parameters named by their index already: "3.weight", "4.1.bias"): as
//    named, which is what nn.Sequential names them.
//  - gpt: nanoGPT's names: embed.tokens -> transformer.wte.weight, embed.positions ->
//    transformer.wpe.weight, blocks.{i}.norm1/norm2 -> transformer.h.{i}.ln_1/ln_2,
//    attn.qkv -> attn.c_attn, attn.proj -> attn.c_proj, mlp.fc -> mlp.c_fc, mlp.proj ->
//    mlp.c_proj, norm -> transformer.ln_f, head.weight -> lm_head.weight (untied only; a tied
//    head is transformer.wte.weight itself). Every Linear is nn.Linear ([out, in]), not GPT-2's
//    transposed Conv1D.
// Thread model: pure functions.

#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::model {

// Our parameter names, in parameters() order, to PyTorch's; InvalidArgument naming the first
// name that fits no model above.
Result<std::vector<std::string>> pytorchNames(const std::vector<std::string>& ours);

}  // namespace ddp::model
