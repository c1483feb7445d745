#include "common/protocol/vocabulary.h"

namespace ddp::protocol {

const char* workerStateName(WorkerState s) {
  switch (s) {
    case WorkerState::kRunning: return "Running";
    case WorkerState::kSucceeded: return "Succeeded";
    case WorkerState::kFailed: return "Failed";
    case WorkerState::kStopped: return "Stopped";
  }
  return "Running";
}

bool parseWorkerState(std::string_view text, WorkerState* out) {
  for (WorkerState s : {WorkerState::kRunning, WorkerState::kSucceeded, WorkerState::kFailed, WorkerState::kStopped}) {
    if (text == workerStateName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const char* commandTypeName(CommandType t) {
  switch (t) {
    case CommandType::kNone: return "none";
    case CommandType::kCheckpoint: return "checkpoint";
    case CommandType::kStop: return "stop";
    case CommandType::kAbort: return "abort";
    case CommandType::kFlightRecord: return "flightRecord";
  }
  return "none";
}

bool parseCommandType(std::string_view text, CommandType* out) {
  for (CommandType t : {CommandType::kNone, CommandType::kCheckpoint, CommandType::kStop, CommandType::kAbort,
                        CommandType::kFlightRecord}) {
    if (text == commandTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace ddp::protocol
