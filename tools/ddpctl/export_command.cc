#include "tools/ddpctl/export_command.h"

#include <ostream>

#include "tools/ddpctl/checkpoint_source.h"

namespace ddp::ddpctl {

std::string exportUsage() {
  return "usage: ddpctl export (JOB | --checkpoint-dir DIR) [-o FILE] [--step N]\n"
         "The model of a job's last committed checkpoint (or of step N) as a safetensors file, its\n"
         "tensors named as PyTorch names the same model (docs/MODELS.md) and its model spec in\n"
         "the metadata. JOB asks the controller (--server, --token-file, --timeout) for the\n"
         "checkpoint directory, which must be visible here; DIR reads one directly.\n"
         "  -o, --output FILE   where to write (default JOB-stepN.safetensors)\n";
}

int exportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parseModelArgs(args, {"-o=--output", "--step", "--checkpoint-dir", "--server", "--token-file",
                                      "--timeout"});
  if (!parsed.isOk()) {
    err << "ddpctl export: " << parsed.status().message() << "\n" << exportUsage();
    return 2;
  }
  auto m = loadNamedCheckpoint(*parsed, args);
  if (!m.isOk()) {
    err << "ddpctl export: " << m.status().message() << "\n";
    return m.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (!m->modelSpec) err << "ddpctl export: " << m->path << " does not describe its model: no model metadata\n";
  auto file = runtime::exportWeights(*m, m->modelSpec.value_or(""));
  const std::string path = parsed->flag("--output").value_or(m->job + "-step" + std::to_string(m->step) + ".safetensors");
  Status written = file.isOk() ? safetensors::writeFile(path, *file) : file.status();
  if (!written.isOk()) {
    err << "ddpctl export: " << written.message() << "\n";
    return 1;
  }
  out << "wrote " << path << ": " << file->tensors.size() << " tensors of job " << m->job << ", step " << m->step
      << "\n";
  return 0;
}

}  // namespace ddp::ddpctl
