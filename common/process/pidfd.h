#pragma once
// pidfd system calls, called through syscall(2): glibc 2.36's <sys/pidfd.h> declares them
// without C linkage, so C++ code cannot link against that header (fixed in later glibc).
// Thread model: free functions, no shared state.

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace ddp {

// A descriptor for process `pid` (close-on-exec), or -1 with errno set.
inline int pidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
// Sends `signal` to the process behind `pidfd`; 0, or -1 with errno set (ESRCH: it is gone).
inline int pidfdSendSignal(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace ddp
