#include "tools/ddpctl/tokenize_command.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <span>

#include "common/tokens/byte_tokens.h"
#include "common/tokens/token_file.h"
#include "tools/ddpctl/run_command.h"

namespace ddp::ddpctl {
namespace {

struct TokenizeArgs {
  std::vector<std::string> files;
  bool bytes = false;
  std::string outDir;
  double valFraction = kDefaultValFraction;
  bool help = false;
};

// Options take "--flag value" or "--flag=value"; the files follow --bytes up to the next option.
Result<TokenizeArgs> parseTokenizeArgs(const std::vector<std::string>& args) {
  TokenizeArgs a;
  bool inFiles = false;  // after --bytes: plain arguments are its files
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string inlineValue;
    bool hasInline = false;
    if (flag.rfind("--", 0) == 0 && flag.find('=') != std::string::npos) {
      inlineValue = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
      hasInline = true;
    }
    auto value = [&]() -> Result<std::string> {
      if (hasInline) return inlineValue;
      if (i + 1 >= args.size()) return invalidArgument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      a.help = true;
    } else if (flag == "--bytes") {
      if (hasInline) return invalidArgument("--bytes takes its files as separate arguments: --bytes FILE...");
      a.bytes = true;
      inFiles = true;
      continue;
    } else if (flag == "-o" || flag == "--output") {
      DDP_ASSIGN_OR_RETURN(a.outDir, value());
      if (a.outDir.empty()) return invalidArgument(flag + ": the output directory is empty");
    } else if (flag == "--val-fraction") {
      DDP_ASSIGN_OR_RETURN(std::string v, value());
      char* end = nullptr;
      const double f = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(f) || f < 0 || f >= 1) {
        return invalidArgument("--val-fraction: '" + v + "' is not a number in [0, 1)");
      }
      a.valFraction = f;
    } else if (!flag.empty() && flag[0] == '-' && flag != "-") {
      return invalidArgument("unknown option '" + args[i] + "'");
    } else if (inFiles) {
      a.files.push_back(args[i]);
      continue;
    } else {
      return invalidArgument("unexpected argument '" + args[i] + "' (the text files go after --bytes)");
    }
    inFiles = false;
  }
  if (a.help) return a;
  if (!a.bytes) return invalidArgument("give --bytes FILE... (the tokenizer: one token per byte, vocabulary 256)");
  if (a.files.empty()) return invalidArgument("--bytes needs at least one FILE");
  if (a.outDir.empty()) return invalidArgument("give the output directory: -o DIR");
  return a;
}

int failed(std::ostream& err, const std::string& message) {
  err << "ddpctl tokenize: " << message << "\n";
  return kExitFailed;
}

}  // namespace

std::string tokenizeUsage() {
  return "usage: ddpctl tokenize --bytes FILE... -o DIR [--val-fraction F]\n"
         "Writes the token files of a language-model job from text: the bytes of the FILEs,\n"
         "concatenated in the order given, one token per byte (vocabulary 256). The last F of\n"
         "the tokens go to DIR/val.bin, the rest to DIR/train.bin (llm.c format, uint16 tokens;\n"
         "docs/DATA.md). DIR is created if needed; existing files there are replaced atomically.\n"
         "\n"
         "options:\n"
         "  --bytes FILE...        the text files (one token per byte)\n"
         "  -o, --output DIR       where train.bin and val.bin go\n"
         "  --val-fraction F       the validation part, in [0, 1) (default 0.1; 0: val.bin empty)\n"
         "  -h, --help             this text\n"
         "\n"
         "exit status: 0 written, 1 a file could not be read or written, 2 bad arguments.\n";
}

int tokenizeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parseTokenizeArgs(args);
  if (!parsed.isOk()) {
    err << "ddpctl tokenize: " << parsed.status().message() << " (see `ddpctl tokenize --help`)\n";
    return kExitUsage;
  }
  const TokenizeArgs& a = *parsed;
  if (a.help) {
    out << tokenizeUsage();
    return kExitOk;
  }
  auto tokens = tokens::bytesToTokens(a.files);
  if (!tokens.isOk()) return failed(err, tokens.status().message());
  if (tokens->empty()) return failed(err, "the files hold no bytes: nothing to tokenize");

  std::error_code ec;
  std::filesystem::create_directories(a.outDir, ec);
  if (ec) return failed(err, "cannot create directory " + a.outDir + ": " + ec.message());
  if (!std::filesystem::is_directory(a.outDir, ec)) return failed(err, a.outDir + " is not a directory");

  const auto total = static_cast<int64_t>(tokens->size());
  const int64_t valCount = tokens::valTokenCount(total, a.valFraction);
  const std::span<const int32_t> all(*tokens);
  const std::span<const int32_t> train = all.first(static_cast<size_t>(total - valCount));
  const std::span<const int32_t> val = all.last(static_cast<size_t>(valCount));
  const std::string trainPath = a.outDir + "/train.bin";
  const std::string valPath = a.outDir + "/val.bin";
  if (Status s = tokens::writeTokenFile(trainPath, train, tokens::TokenDType::kUint16); !s.isOk()) {
    return failed(err, s.message());
  }
  if (Status s = tokens::writeTokenFile(valPath, val, tokens::TokenDType::kUint16); !s.isOk()) {
    return failed(err, s.message());
  }
  out << "tokenized " << a.files.size() << (a.files.size() == 1 ? " file" : " files") << ": " << total
      << " tokens (bytes, vocabulary " << tokens::kByteVocabSize << ")\n"
      << "  " << trainPath << ": " << train.size() << " tokens\n"
      << "  " << valPath << ": " << val.size() << " tokens\n";
  return kExitOk;
}

}  // namespace ddp::ddpctl
