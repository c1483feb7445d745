#include "worker/comm/cross_memory.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <gloo/common/error.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>


namespace ddp::comm {
namespace {

// Read by peers only (through process_vm_readv); volatile so that it is never folded away.
volatile uint64_t probeWord = kCrossMemoryProbe;

}  // namespace

std::string HostIdentity::encode() const {
  return bootId + " " + std::to_string(pidNamespace) + " " + std::to_string(pid) + " " + std::to_string(probeAddress);
}

Result<HostIdentity> HostIdentity::decode(const std::string& text) {
  std::istringstream in(text);
  HostIdentity id;
  std::string rest;
  if (!(in >> id.bootId >> id.pidNamespace >> id.pid >> id.probeAddress) || (in >> rest) || id.pid <= 0) {
    return invalidArgument("host identity '" + text + "': want '<boot id> <pid namespace> <pid> <probe address>'");
  }
  return id;
}

Result<HostIdentity> thisProcess() {
  HostIdentity id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  if (!(boot >> id.bootId)) return unavailable("cannot read /proc/sys/kernel/random/boot_id");
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) {
    return unavailable(std::string("cannot stat /proc/self/ns/pid: ") + std::strerror(errno));
  }
  id.pidNamespace = static_cast<uint64_t>(st.st_ino);
  id.pid = static_cast<int64_t>(::getpid());
  id.probeAddress = reinterpret_cast<uint64_t>(&probeWord);
  return id;
}

bool sameHost(const std::vector<HostIdentity>& ranks) {
  if (ranks.size() < 2) return false;
  for (const HostIdentity& r : ranks) {
    if (r.bootId.empty() || r.bootId != ranks[0].bootId || r.pidNamespace != ranks[0].pidNamespace) return false;
  }
  return true;
}

void CrossMemory::read(int peer, uint64_t remote, void* local, size_t bytes) const {
  char* out = static_cast<char*>(local);
  const pid_t pid = static_cast<pid_t>(ranks_.at(static_cast<size_t>(peer)).pid);
  while (bytes > 0) {
    struct iovec l {out, bytes};
    struct iovec r {reinterpret_cast<void*>(remote), bytes};
    const ssize_t got = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got <= 0) {
      const int err = got < 0 ? errno : EIO;
      if (err == EINTR) continue;
      throw ::gloo::IoException("cross-memory read of " + std::to_string(bytes) + " bytes from rank " +
                                std::to_string(peer) + " (pid " + std::to_string(pid) + ") failed: " +
                                (err == ESRCH ? std::string("the process has exited") : std::strerror(err)));
    }
    out += got;
    remote += static_cast<uint64_t>(got);
    bytes -= static_cast<size_t>(got);
  }
}

Status CrossMemory::probe(int self) const {
  for (size_t p = 0; p < ranks_.size(); ++p) {
    if (static_cast<int>(p) == self) continue;
    uint64_t v = 0;
    try {
      read(static_cast<int>(p), ranks_[p].probeAddress, &v, sizeof v);
    } catch (const std::exception& e) {
      return unavailable(e.what());
    }
    if (v != kCrossMemoryProbe) {
      return unavailable("cross-memory probe of rank " + std::to_string(p) + " read a wrong value");
    }
  }
  return Status::ok();
}

std::vector<int64_t> CrossMemory::pids() const {
  std::vector<int64_t> out;
  for (const HostIdentity& r : ranks_) out.push_back(r.pid);
  return out;
}

}  // namespace ddp::comm
