#include "tools/ddpctl/model_commands.h"

#include <ostream>

#include "tools/ddpctl/export_command.h"
#include "tools/ddpctl/generate_command.h"
#include "tools/ddpctl/predict_command.h"

namespace ddp::ddpctl {
namespace {

struct ModelCommand {
  const char* name;
  std::string (*usage)();
  int (*run)(const std::vector<std::string>&, std::ostream&, std::ostream&);
};

const ModelCommand* find(const std::string& name) {
  static const ModelCommand kCommands[] = {{"export", exportUsage, exportCommand},
                                           {"predict", predictUsage, predictCommand},
                                           {"generate", generateUsage, generateCommand}};
  for (const ModelCommand& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

bool isModelCommand(const std::string& name) { return find(name) != nullptr; }

std::string modelCommandUsage(const std::string& name) {
  const ModelCommand* c = find(name);
  return c == nullptr ? "" : c->usage();
}

int modelCommand(const std::string& name, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ModelCommand* c = find(name);
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      out << c->usage();
      return 0;
    }
  }
  return c->run(args, out, err);
}

}  // namespace ddp::ddpctl
