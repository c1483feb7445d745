#pragma once
// WorkerConfig: how one ddp-worker process is told who it is. Read from flags, falling back
// to environment variables (the only place the worker reads its environment):
//   --store HOST:PORT     DDP_STORE_ADDR    address of the HTTP store (rendezvous)
//   --job FILE            DDP_JOB_FILE      the JobSpec YAML
//   --rank N              DDP_RANK
//   --world-size N        DDP_WORLD_SIZE
//   --generation N        DDP_GENERATION    (default 0) namespaces store keys per restart
//   --log-format F        DDP_LOG_FORMAT    human (default) | json
//   --log-level L         DDP_LOG_LEVEL     debug | info (default) | warning | error
//   --checkpoint-dir DIR  DDP_CHECKPOINT_DIR  overrides the job's checkpoint directory
// Thread model: plain value.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/status.h"

namespace ddp::runtime {

enum class LogFormat { kHuman, kJson };
bool parseLogFormat(const std::string& text, LogFormat* out);

struct WorkerConfig {
  std::string storeHost;
  int storePort = 0;
  std::string jobFile;
  int rank = -1;
  int worldSize = -1;
  int64_t generation = 0;
  LogFormat logFormat = LogFormat::kHuman;
  log::Level logLevel = log::Level::kInfo;
  std::string checkpointDirOverride;  // empty: the job's own

  // InvalidArgument naming the flag / variable and the reason.
  Status validate() const;
};

// Environment lookup, injectable for tests (nullopt: unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnv();

// Parses argv (argv[0] is skipped) with `env` as fallback. "--help" yields NotFound with the
// usage text as message (the caller prints it and exits 0).
Result<WorkerConfig> parseWorkerConfig(const std::vector<std::string>& args, const EnvLookup& env);
std::string workerUsage();

// "host:port" -> parts; InvalidArgument naming `what` otherwise.
Status parseHostPort(const std::string& text, const std::string& what, std::string* host, int* port);

}  // namespace ddp::runtime
