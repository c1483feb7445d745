#include "worker/model/pytorch_names.h"

#include <cctype>
#include <map>
#include <set>

namespace ddp::model {
namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "fc12.weight" -> layer "fc", index 12, rest "weight"; false when the name is not of that form.
bool splitLayer(const std::string& name, std::string* layer, int* index, std::string* rest) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return false;
  size_t digits = 0;
  while (digits < dot && std::isalpha(static_cast<unsigned char>(name[digits]))) ++digits;
  if (digits == 0 || digits == dot) return false;
  for (size_t i = digits; i < dot; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  *layer = name.substr(0, digits);
  *index = std::stoi(name.substr(digits, dot - digits));
  *rest = name.substr(dot + 1);
  return *layer == "fc" || *layer == "conv";
}

Result<std::string> gptName(const std::string& n) {
  static const std::map<std::string, std::string> kTop = {{"embed.tokens", "transformer.wte.weight"},
                                                          {"embed.positions", "transformer.wpe.weight"},
                                                          {"norm.weight", "transformer.ln_f.weight"},
                                                          {"norm.bias", "transformer.ln_f.bias"},
                                                          {"head.weight", "lm_head.weight"}};
  if (auto it = kTop.find(n); it != kTop.end()) return it->second;
  static const std::map<std::string, std::string> kBlock = {
      {"norm1", "ln_1"}, {"norm2", "ln_2"}, {"attn.qkv", "attn.c_attn"}, {"attn.proj", "attn.c_proj"},
      {"mlp.fc", "mlp.c_fc"}, {"mlp.proj", "mlp.c_proj"}};
  if (startsWith(n, "blocks.")) {
    const size_t dot = n.find('.', 7);
    const size_t last = n.rfind('.');
    if (dot != std::string::npos && last > dot) {
      auto it = kBlock.find(n.substr(dot + 1, last - dot - 1));
      if (it != kBlock.end()) return "transformer.h." + n.substr(7, dot - 7) + "." + it->second + n.substr(last);
    }
  }
  return invalidArgument("parameter '" + n + "' is not a GPT parameter");
}

}  // namespace

Result<std::vector<std::string>> pytorchNames(const std::vector<std::string>& ours) {
  std::vector<std::string> out;
  if (!ours.empty() && startsWith(ours[0], "embed.")) {
    for (const std::string& n : ours) {
      DDP_ASSIGN_OR_RETURN(std::string t, gptName(n));
      out.push_back(std::move(t));
    }
    return out;
  }
  if (!ours.empty() && std::isdigit(static_cast<unsigned char>(ours[0][0]))) return ours;  // a declared stack
  std::set<int> convs;
  for (const std::string& n : ours) {
    std::string layer, rest;
    int index = 0;
    if (!splitLayer(n, &layer, &index, &rest)) {
      return invalidArgument("parameter '" + n + "' is not an mlp, cnn, gpt or declared stack parameter");
    }
    if (layer == "conv") convs.insert(index);
  }
  const int c = static_cast<int>(convs.size());
  for (const std::string& n : ours) {
    std::string layer, rest;
    int index = 0;
    splitLayer(n, &layer, &index, &rest);
    const int at = layer == "conv" ? 3 * index : (c > 0 ? 3 * c + 1 : 0) + 2 * index;
    out.push_back(std::to_string(at) + "." + rest);
  }
  return out;
}

}  // namespace ddp::model
