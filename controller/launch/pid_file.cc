#include "controller/launch/pid_file.h"

#include <cstdlib>
#include <sstream>

#include "common/checkpoint/atomic_file.h"

namespace ddp::controller {

Result<ProcStat> readProcStat(int64_t pid) {
  if (pid <= 0) return invalidArgument("pid " + std::to_string(pid));
  auto text = runtime::readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.isOk()) return notFound("no process " + std::to_string(pid));
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields resume after
  // the last ')'. The field after it is field 3 (state); start time is field 22.
  const std::string& s = *text;
  const auto close = s.rfind(')');
  if (close == std::string::npos) return dataLoss("malformed /proc/" + std::to_string(pid) + "/stat");
  std::istringstream in(s.substr(close + 1));
  ProcStat st;
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(in >> field)) return dataLoss("short /proc/" + std::to_string(pid) + "/stat");
    if (i == 3) st.state = field.empty() ? '?' : field[0];
    if (i == 22) st.startTime = std::strtoll(field.c_str(), nullptr, 10);
  }
  return st;
}

bool isSameLiveProcess(const ProcessIdentity& id) {
  auto st = readProcStat(id.pid);
  return st.isOk() && st->alive() && st->startTime == id.startTime;
}

Status writePidFile(const std::string& path, const ProcessIdentity& id) {
  const std::string text = "pid=" + std::to_string(id.pid) + "\nstart_time=" + std::to_string(id.startTime) + "\n";
  return runtime::writeFileAtomic(path, text).withContext("pid file");
}

Result<ProcessIdentity> readPidFile(const std::string& path) {
  DDP_ASSIGN_OR_RETURN(std::string text, runtime::readFile(path));
  ProcessIdentity id;
  std::istringstream in(text);
  std::string line;
  bool havePid = false, haveStart = false;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return dataLoss("pid file " + path + ": bad value in '" + line + "'");
    if (key == "pid") {
      id.pid = v;
      havePid = true;
    } else if (key == "start_time") {
      id.startTime = v;
      haveStart = true;
    }
  }
  if (!havePid || !haveStart || id.pid <= 0) return dataLoss("pid file " + path + " is incomplete");
  return id;
}

}  // namespace ddp::controller
