#include "tools/ddpctl/generate_command.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>

#include "tools/ddpctl/checkpoint_source.h"
#include "worker/model/gpt.h"

namespace ddp::ddpctl {
namespace {

struct GenerateOptions {
  std::vector<int32_t> prompt;
  bool text = false;  // print the result as bytes
  int tokens = 64;
  double temperature = 1.0;
  int topK = 0;
  uint64_t seed = 0;
};

Result<double> number(const ModelArgs& a, const std::string& flag, double fallback, double min) {
  const auto v = a.flag(flag);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !(x >= min)) return invalidArgument(flag + ": '" + *v + "' is not a number >= " + std::to_string(static_cast<int64_t>(min)));
  return x;
}

Result<std::vector<int32_t>> promptTokens(const std::string& list, int vocab) {
  std::vector<int32_t> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') return invalidArgument("--prompt-tokens: '" + item + "' is not a token id");
    if (v < 0 || v >= vocab) {
      return invalidArgument("--prompt-tokens: token " + item + " is outside the vocabulary [0, " +
                             std::to_string(vocab) + ")");
    }
    out.push_back(static_cast<int32_t>(v));
    at = comma + 1;
  }
  return out;
}

Result<GenerateOptions> generateOptions(const ModelArgs& a, const runtime::ModelDescription& d) {
  GenerateOptions o;
  const auto text = a.flag("--prompt");
  const auto ids = a.flag("--prompt-tokens");
  if (text.has_value() == ids.has_value()) return invalidArgument("give --prompt TEXT or --prompt-tokens IDS (one of them)");
  if (text) {
    if (!d.byteText) {
      return invalidArgument("--prompt: this model was not trained on text as bytes (use --prompt-tokens)");
    }
    for (unsigned char c : *text) o.prompt.push_back(c);
    o.text = true;
  } else {
    DDP_ASSIGN_OR_RETURN(o.prompt, promptTokens(*ids, d.gpt.vocabSize));
  }
  if (o.prompt.empty()) return invalidArgument("the prompt is empty");
  DDP_ASSIGN_OR_RETURN(double n, number(a, "--tokens", 64, 0));
  DDP_ASSIGN_OR_RETURN(o.temperature, number(a, "--temperature", 1.0, 0));
  DDP_ASSIGN_OR_RETURN(double k, number(a, "--top-k", 0, 0));
  DDP_ASSIGN_OR_RETURN(double seed, number(a, "--seed", 0, 0));
  o.tokens = static_cast<int>(n);
  o.topK = static_cast<int>(k);
  o.seed = static_cast<uint64_t>(seed);
  return o;
}

// The prompt and `o.tokens` sampled tokens after it.
Result<std::vector<int32_t>> generate(model::Gpt& gpt, const GenerateOptions& o) {
  const int t = gpt.config().contextLength, v = gpt.config().vocabSize;
  std::vector<int32_t> seq = o.prompt;
  SplitMixRng rng(o.seed);
  for (int i = 0; i < o.tokens; ++i) {
    const int len = std::min(t, static_cast<int>(seq.size()));
    std::vector<int32_t> window(seq.end() - len, seq.end());
    window.resize(static_cast<size_t>(t), 0);  // padding after the last token: unseen (causal)
    DDP_ASSIGN_OR_RETURN(std::vector<float> logits, gpt.logits(window.data(), 1));
    const auto row = logits.begin() + static_cast<std::ptrdiff_t>(len - 1) * v;
    seq.push_back(sampleToken(std::vector<float>(row, row + v), o.temperature, o.topK, rng));
  }
  return seq;
}

}  // namespace

int32_t sampleToken(const std::vector<float>& logits, double temperature, int topK, SplitMixRng& rng) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (temperature == 0 || topK == 1) return order[0];
  const size_t k = topK > 0 ? std::min(order.size(), static_cast<size_t>(topK)) : order.size();
  std::vector<double> p(k);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += p[i] = std::exp((logits[order[i]] - logits[order[0]]) / temperature);
  double u = (static_cast<double>(rng.next() >> 11) * (1.0 / 9007199254740992.0)) * sum;
  for (size_t i = 0; i < k; ++i) {
    if ((u -= p[i]) < 0) return order[i];
  }
  return order[k - 1];
}

std::string generateUsage() {
  return "usage: ddpctl generate (JOB | --checkpoint-dir DIR) (--prompt TEXT | --prompt-tokens 1,2,3)\n"
         "                       [--tokens N] [--temperature T] [--top-k K] [--seed S] [--step N]\n"
         "Samples N tokens (default 64) after the prompt from a job's GPT on this machine's CPU.\n"
         "--prompt is text, for a model trained on text as bytes; --prompt-tokens token ids.\n"
         "Temperature (default 1; 0 greedy), top-k (default 0: every token; 1 greedy), seed\n"
         "(default 0: the same seed, the same output). Prints the prompt and its continuation: text\n"
         "for a text prompt, else comma-separated token ids.\n";
}

int generateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parseModelArgs(args, {"--prompt", "--prompt-tokens", "--tokens", "--temperature", "--top-k",
                                      "--seed", "--step", "--checkpoint-dir", "--server", "--token-file", "--timeout"});
  Status s = parsed.status();
  if (s.isOk()) {
    s = [&]() -> Status {
      DDP_ASSIGN_OR_RETURN(runtime::CheckpointModel m, loadNamedCheckpoint(*parsed, args));
      DDP_ASSIGN_OR_RETURN(runtime::ModelDescription d, describedModel(m));
      if (d.type != ModelType::kGpt) return invalidArgument(m.path + " holds a classifier, not a language model");
      DDP_ASSIGN_OR_RETURN(GenerateOptions o, generateOptions(*parsed, d));
      DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::TrainableModel> built, loadCheckpointModel(m, d));
      DDP_ASSIGN_OR_RETURN(std::vector<int32_t> seq, generate(dynamic_cast<model::Gpt&>(*built), o));
      for (size_t i = 0; i < seq.size(); ++i) {
        if (o.text) {
          out << static_cast<char>(seq[i]);
        } else {
          out << (i ? "," : "") << seq[i];
        }
      }
      out << "\n";
      return Status::ok();
    }();
  }
  if (s.isOk()) return 0;
  err << "ddpctl generate: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace ddp::ddpctl
