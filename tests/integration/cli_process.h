#pragma once
// Runs a program (ddpctl) as a real child process for the integration tests: captures stdout
// and stderr, calls a callback on each stdout line (to send signals mid-run), and enforces a
// time limit (SIGKILL, reported as timedOut). Header-only; used by tests/integration only.
// Thread model: one call at a time on the test's thread.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ddp::test {

struct CliResult {
  int exitCode = -1;   // exit status, or 128 + signal when killed
  bool timedOut = false;
  double seconds = 0;
  std::string out, err;
  std::vector<std::string> outLines() const {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(out.substr(start, nl - start));
    }
    return lines;
  }
};

// onLine(pid, line) is called for each complete stdout line.
inline CliResult runCli(const std::vector<std::string>& argv, double timeLimitSeconds,
                        const std::function<void(pid_t, const std::string&)>& onLine = nullptr,
                        const std::vector<std::string>& extraEnv = {}) {
  CliResult res;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return res;
  std::vector<std::string> store = argv;
  std::vector<char*> args;
  for (auto& a : store) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> envStore;
  for (char** e = environ; *e; ++e) envStore.emplace_back(*e);
  envStore.insert(envStore.end(), extraEnv.begin(), extraEnv.end());
  std::vector<char*> envp;
  for (auto& e : envStore) envp.push_back(e.data());
  envp.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  int fds[2] = {out[0], err[0]};
  std::string partial;
  const auto limit = start + std::chrono::duration<double>(timeLimitSeconds);
  while (fds[0] >= 0 || fds[1] >= 0) {
    if (std::chrono::steady_clock::now() > limit && !res.timedOut) {
      res.timedOut = true;
      ::kill(pid, SIGKILL);
    }
    pollfd p[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) {
        p[n] = {fds[i], POLLIN, 0};
        which[n++] = i;
      }
    }
    if (::poll(p, static_cast<nfds_t>(n), 100) <= 0) continue;
    for (int k = 0; k < n; ++k) {
      if (p[k].revents == 0) continue;
      char buf[8192];
      ssize_t got = ::read(fds[which[k]], buf, sizeof(buf));
      if (got <= 0) {
        ::close(fds[which[k]]);
        fds[which[k]] = -1;
        continue;
      }
      if (which[k] == 1) {
        res.err.append(buf, static_cast<size_t>(got));
        continue;
      }
      res.out.append(buf, static_cast<size_t>(got));
      partial.append(buf, static_cast<size_t>(got));
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        std::string line = partial.substr(0, nl);
        partial.erase(0, nl + 1);
        if (onLine) onLine(pid, line);
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  res.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

// Last value of a numeric JSON field on lines containing `event`, or -1.
inline double lastJsonNumber(const CliResult& r, const std::string& event, const std::string& field) {
  double v = -1;
  for (const auto& line : r.outLines()) {
    if (line.find("\"event\":\"" + event + "\"") == std::string::npos) continue;
    auto pos = line.find("\"" + field + "\":");
    if (pos == std::string::npos) continue;
    v = std::strtod(line.c_str() + pos + field.size() + 3, nullptr);
  }
  return v;
}

}  // namespace ddp::test
