#include "tools/ddpctl/checkpoint_source.h"

#include <nlohmann/json.hpp>

#include "common/checkpoint/atomic_file.h"
#include "common/checkpoint/checkpoint_format.h"
#include "tools/ddpctl/api_client.h"

namespace ddp::ddpctl {
namespace {

// The step directory of `job`'s checkpoint `step` (else its newest), from the catalog.
Result<std::string> catalogStepDir(const std::string& job, std::optional<int64_t> step,
                                   std::vector<std::string> clientArgs) {
  DDP_ASSIGN_OR_RETURN(ClientOptions options, takeClientOptions(&clientArgs, processEnvironment()));
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api, ApiClient::create(options));
  DDP_ASSIGN_OR_RETURN(ApiReply reply, api->get(jobPath(job) + "/checkpoints"));
  if (!reply.ok()) return notFound("job " + job + ": " + reply.error);
  const auto doc = nlohmann::json::parse(reply.body, nullptr, false);
  if (doc.is_discarded()) return unavailable("the controller's answer is not JSON");
  std::optional<std::pair<int64_t, std::string>> best;
  for (const auto& c : doc.value("checkpoints", nlohmann::json::array())) {
    const int64_t s = c.value("step", int64_t{-1});
    if (step ? s == *step : (!best || s > best->first)) best = {{s, c.value("path", std::string())}};
  }
  if (!best) {
    return notFound("job " + job + " has no committed checkpoint" + (step ? " of step " + std::to_string(*step) : ""));
  }
  return best->second;
}

}  // namespace

std::optional<std::string> ModelArgs::flag(const std::string& name) const {
  auto it = flags.find(name);
  if (it == flags.end()) return std::nullopt;
  return it->second;
}

Result<ModelArgs> parseModelArgs(const std::vector<std::string>& args, const std::vector<std::string>& valued) {
  ModelArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    std::optional<std::string> value;
    if (const size_t eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    std::string name;
    for (const std::string& v : valued) {
      const size_t eq = v.find('=');
      if (a == v || (eq != std::string::npos && (a == v.substr(0, eq) || a == v.substr(eq + 1)))) {
        name = eq == std::string::npos ? v : v.substr(eq + 1);
      }
    }
    if (name.empty()) return invalidArgument("unknown option " + a);
    if (!value) {
      if (i + 1 == args.size()) return invalidArgument(a + " needs a value");
      value = args[++i];
    }
    out.flags[name] = *value;
  }
  return out;
}

Result<runtime::CheckpointModel> loadNamedCheckpoint(const ModelArgs& args, std::vector<std::string> clientArgs) {
  std::optional<int64_t> step;
  if (auto s = args.flag("--step")) {
    char* end = nullptr;
    step = std::strtoll(s->c_str(), &end, 10);
    if (s->empty() || *end != '\0' || *step < 0) return invalidArgument("--step: '" + *s + "' is not a step number");
  }
  const auto dir = args.flag("--checkpoint-dir");
  if (dir.has_value() == (args.positional.size() == 1) || args.positional.size() > 1) {
    return invalidArgument("name a job or give --checkpoint-dir DIR (one of them)");
  }
  if (dir) return runtime::readCheckpointModel(*dir, step);
  const std::string& job = args.positional[0];
  DDP_ASSIGN_OR_RETURN(std::string stepDir, catalogStepDir(job, step, std::move(clientArgs)));
  if (!runtime::pathExists(stepDir)) {
    return notFound("job " + job + "'s checkpoint " + stepDir +
                    " is not visible on this machine (copy its directory here and use --checkpoint-dir)");
  }
  int64_t found = 0;
  const size_t slash = stepDir.find_last_of('/');
  if (slash == std::string::npos || !runtime::parseStepDirName(stepDir.substr(slash + 1), &found)) {
    return invalidArgument("the catalog's path " + stepDir + " is not a step directory");
  }
  return runtime::readCheckpointModel(stepDir.substr(0, slash), found);
}

Result<runtime::ModelDescription> describedModel(const runtime::CheckpointModel& m) {
  if (!m.modelSpec) {
    return failedPrecondition(m.path + " was written before checkpoints described their model (no " +
                              runtime::kModelSpecSection + " section)");
  }
  return runtime::parseModelDescription(*m.modelSpec, m.path + " " + runtime::kModelSpecSection);
}

Result<std::unique_ptr<model::TrainableModel>> loadCheckpointModel(const runtime::CheckpointModel& m,
                                                                    const runtime::ModelDescription& d) {
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::TrainableModel> built, runtime::buildDescribedModel(d));
  DDP_RETURN_IF_ERROR(model::loadSnapshot(m.params, built->parameters(), built->ops()).withContext(m.path));
  return built;
}

}  // namespace ddp::ddpctl
