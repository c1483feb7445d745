#include "worker/comm/shared_words.h"

#include <fcntl.h>
#include <gloo/common/error.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "common/process/pidfd.h"
#include "common/usable_cores.h"

namespace ddp::comm {

struct SharedWords::Page {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> abortedBy;  // 0, or the first rank to abort plus one
  char pad[56];
  uint64_t words[2][kSharedWordsMaxRanks][kSharedWordsPerRank];
};

namespace {

constexpr size_t kPageBytes = 8192;
static_assert(std::atomic<uint32_t>::is_always_lock_free, "a futex word");

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const struct timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

Status checkRanks(int rank, int size) {
  if (size < 1 || size > kSharedWordsMaxRanks || rank < 0 || rank >= size) {
    return invalidArgument("shared words for rank " + std::to_string(rank) + " of " + std::to_string(size) +
                           " ranks: want 1 to " + std::to_string(kSharedWordsMaxRanks) + " ranks");
  }
  return Status::ok();
}

}  // namespace

SharedWords::SharedWords(int fd, Page* page, int rank, int size)
    : fd_(fd), page_(page), rank_(rank), size_(size), spins_(size <= usableCores()) {}

Result<std::unique_ptr<SharedWords>> SharedWords::map(int fd, int rank, int size, bool init) {
  void* p = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const std::string msg = errnoText("mmap of the shared-words page");
    ::close(fd);
    return unavailable(msg);
  }
  static_assert(sizeof(Page) <= kPageBytes);
  auto* page = static_cast<Page*>(p);
  if (init) {
    new (&page->arrived) std::atomic<uint32_t>(0);
    new (&page->abortedBy) std::atomic<uint32_t>(0);
  }
  return std::unique_ptr<SharedWords>(new SharedWords(fd, page, rank, size));
}

Result<std::unique_ptr<SharedWords>> SharedWords::create(int rank, int size) {
  DDP_RETURN_IF_ERROR(checkRanks(rank, size));
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "ddp-shared-words", MFD_CLOEXEC));
  if (fd < 0) return unavailable(errnoText("memfd_create"));
  if (::ftruncate(fd, kPageBytes) != 0) {
    const std::string msg = errnoText("ftruncate of the shared-words page");
    ::close(fd);
    return unavailable(msg);
  }
  return map(fd, rank, size, true);
}

Result<std::unique_ptr<SharedWords>> SharedWords::open(int64_t ownerPid, int fd, int rank, int size) {
  DDP_RETURN_IF_ERROR(checkRanks(rank, size));
  const std::string path = "/proc/" + std::to_string(ownerPid) + "/fd/" + std::to_string(fd);
  const int own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) return unavailable(errnoText("cannot open rank 0's shared-words page " + path));
  return map(own, rank, size, false);
}

Status SharedWords::watch(const std::vector<int64_t>& pids) {
  if (pids.size() != static_cast<size_t>(size_)) {
    return invalidArgument("shared words: " + std::to_string(pids.size()) + " pids for " + std::to_string(size_) +
                           " ranks");
  }
  std::vector<int> fds(pids.size(), -1);
  for (size_t r = 0; r < pids.size(); ++r) {
    if (static_cast<int>(r) == rank_) continue;
    fds[r] = pidfdOpen(static_cast<pid_t>(pids[r]));
    if (fds[r] >= 0) continue;
    const Status st =
        unavailable(errnoText("pidfd_open of rank " + std::to_string(r) + " (pid " + std::to_string(pids[r]) + ")"));
    for (int f : fds) {
      if (f >= 0) ::close(f);
    }
    return st;
  }
  for (int f : pidfds_) {
    if (f >= 0) ::close(f);
  }
  pids_ = pids;
  pidfds_ = std::move(fds);
  return Status::ok();
}

SharedWords::~SharedWords() {
  if (page_) abort();  // a rank that leaves fails its peers' waits, as closing its sockets does
  for (int p : pidfds_) {
    if (p >= 0) ::close(p);
  }
  if (page_) ::munmap(page_, kPageBytes);
  if (fd_ >= 0) ::close(fd_);
}

void SharedWords::wake() { futex(&page_->arrived, FUTEX_WAKE, INT_MAX, nullptr); }

void SharedWords::abort() {
  uint32_t none = 0;
  page_->abortedBy.compare_exchange_strong(none, static_cast<uint32_t>(rank_) + 1, std::memory_order_acq_rel);
  wake();
}

void SharedWords::checkAborted() const {
  if (const uint32_t by = page_->abortedBy.load(std::memory_order_acquire); by != 0) {
    throw ::gloo::IoException("shared-memory exchange: rank " + std::to_string(by - 1) +
                              " aborted or closed the communicator");
  }
}

void SharedWords::checkPeers() const {
  for (size_t r = 0; r < pidfds_.size(); ++r) {
    if (pidfds_[r] < 0) continue;
    struct pollfd pfd {
      pidfds_[r], POLLIN, 0
    };
    if (::poll(&pfd, 1, 0) > 0) {
      throw ::gloo::IoException("shared-memory exchange: rank " + std::to_string(r) + " (pid " +
                                std::to_string(pids_[r]) + ") has exited");
    }
  }
}

uint32_t SharedWords::spin(uint32_t seen, uint32_t target) const {
  if (!spins_) return seen;
  // Between polls the core goes to any other runnable thread on it (Note [Shared-memory phases]:
  // the scheduler may have put this executor beside a peer's compute thread).
  const Deadline until = Deadline::after(kSharedWordsSpin);
  while (static_cast<int32_t>(seen - target) < 0 && !until.expired()) {
    ::sched_yield();
    seen = page_->arrived.load(std::memory_order_acquire);
  }
  return seen;
}

void SharedWords::allgather(std::vector<uint64_t>& words, Deadline deadline, const std::function<bool()>& abandon) {
  const size_t slot = exchanges_ % 2;
  const auto n = static_cast<uint32_t>(size_);
  const size_t per = words.size() / n;
  if (per < 1 || per > kSharedWordsPerRank || per * n != words.size()) {
    throw std::invalid_argument("shared words: an allgather of " + std::to_string(words.size()) + " words over " +
                                std::to_string(n) + " ranks (want 1 to " + std::to_string(kSharedWordsPerRank) +
                                " per rank)");
  }
  if (broken_) throw ::gloo::IoException("shared-memory exchange: an earlier exchange on this page failed");
  broken_ = true;  // until this exchange completes
  checkAborted();
  const uint32_t target = (exchanges_ + 1) * n;
  for (size_t k = 0; k < per; ++k) page_->words[slot][rank_][k] = words[static_cast<size_t>(rank_) * per + k];
  uint32_t seen = page_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (seen == target) wake();
  seen = spin(seen, target);
  while (static_cast<int32_t>(seen - target) < 0) {
    if (abandon && abandon())
      throw ::gloo::IoException("shared-memory exchange abandoned: the communicator was aborted");
    checkAborted();
    checkPeers();
    const Duration left = deadline.remaining();
    if (left <= Duration::zero()) {
      throw ::gloo::IoException("shared-memory exchange timed out: " + std::to_string(target - seen) +
                                " rank(s) did not arrive");
    }
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::min<Duration>(left, kSharedWordsSlice)).count();
    const struct timespec slice { static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000) };
    futex(&page_->arrived, FUTEX_WAIT, seen, &slice);
    seen = page_->arrived.load(std::memory_order_acquire);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < per; ++k) words[r * per + k] = page_->words[slot][r][k];
  }
  ++exchanges_;
  broken_ = false;
}

}  // namespace ddp::comm
