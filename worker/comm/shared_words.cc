#include "worker/comm/shared_words.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gloo/common/error.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "common/process/pidfd.h"
#include "common/store/store.h"
#include "worker/comm/cross_memory.h"

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

Status checkRanks(const std::vector<int64_t>& pids, int rank) {
  if (pids.empty() || pids.size() > static_cast<size_t>(kSharedWordsMaxRanks) || rank < 0 ||
      rank >= static_cast<int>(pids.size())) {
    return invalidArgument("shared words for rank " + std::to_string(rank) + " of " + std::to_string(pids.size()) +
                           " ranks: want 1 to " + std::to_string(kSharedWordsMaxRanks) + " ranks");
  }
  return Status::ok();
}

}  // namespace

SharedWords::SharedWords(int fd, Page* page, int rank, std::vector<int64_t> pids, std::vector<int> pidfds)
    : fd_(fd), page_(page), rank_(rank), pids_(std::move(pids)), pidfds_(std::move(pidfds)) {}

Result<std::unique_ptr<SharedWords>> SharedWords::map(int fd, const std::vector<int64_t>& pids, int rank, bool init) {
  std::vector<int> pidfds(pids.size(), -1);
  auto fail = [&](const std::string& msg) {
    for (int p : pidfds) {
      if (p >= 0) ::close(p);
    }
    ::close(fd);
    return unavailable(msg);
  };
  for (size_t r = 0; r < pids.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    pidfds[r] = pidfdOpen(static_cast<pid_t>(pids[r]));
    if (pidfds[r] < 0) return fail(errnoText("pidfd_open of rank " + std::to_string(r) + " (pid " + std::to_string(pids[r]) + ")"));
  }
  void* p = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail(errnoText("mmap of the shared-words page"));
  static_assert(sizeof(Page) <= kPageBytes);
  auto* page = static_cast<Page*>(p);
  if (init) {
    new (&page->arrived) std::atomic<uint32_t>(0);
    new (&page->abortedBy) std::atomic<uint32_t>(0);
  }
  return std::unique_ptr<SharedWords>(new SharedWords(fd, page, rank, pids, std::move(pidfds)));
}

Result<std::unique_ptr<SharedWords>> SharedWords::create(const std::vector<int64_t>& pids, int rank) {
  DDP_RETURN_IF_ERROR(checkRanks(pids, rank));
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "ddp-shared-words", MFD_CLOEXEC));
  if (fd < 0) return unavailable(errnoText("memfd_create"));
  if (::ftruncate(fd, kPageBytes) != 0) {
    const std::string msg = errnoText("ftruncate of the shared-words page");
    ::close(fd);
    return unavailable(msg);
  }
  return map(fd, pids, rank, true);
}

Result<std::unique_ptr<SharedWords>> SharedWords::open(const std::vector<int64_t>& pids, int rank, int fd) {
  DDP_RETURN_IF_ERROR(checkRanks(pids, rank));
  const std::string path = "/proc/" + std::to_string(pids[0]) + "/fd/" + std::to_string(fd);
  const int own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) return unavailable(errnoText("cannot open rank 0's shared-words page " + path));
  return map(own, pids, rank, false);
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
    struct pollfd pfd {pidfds_[r], POLLIN, 0};
    if (::poll(&pfd, 1, 0) > 0) {
      throw ::gloo::IoException("shared-memory exchange: rank " + std::to_string(r) + " (pid " +
                                std::to_string(pids_[r]) + ") has exited");
    }
  }
}

void SharedWords::allgather(std::vector<uint64_t>& words, Deadline deadline, const std::function<bool()>& abandon) {
  const size_t slot = exchanges_ % 2;
  const auto n = static_cast<uint32_t>(pids_.size());
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
  while (static_cast<int32_t>(seen - target) < 0) {
    if (abandon && abandon()) throw ::gloo::IoException("shared-memory exchange abandoned: the communicator was aborted");
    checkAborted();
    checkPeers();
    const Duration left = deadline.remaining();
    if (left <= Duration::zero()) {
      throw ::gloo::IoException("shared-memory exchange timed out: " + std::to_string(target - seen) +
                                " rank(s) did not arrive");
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::min<Duration>(left, kSharedWordsSlice)).count();
    const struct timespec slice {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    futex(&page_->arrived, FUTEX_WAIT, seen, &slice);
    seen = page_->arrived.load(std::memory_order_acquire);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < per; ++k) words[r * per + k] = page_->words[slot][r][k];
  }
  ++exchanges_;
  broken_ = false;
}

Result<std::shared_ptr<SharedWords>> agreeSharedWords(Store& store, const std::string& prefix, int rank,
                                                      const std::vector<int64_t>& pids, Deadline deadline,
                                                      std::string* why) {
  const std::string base = prefix + "/xmem/";
  Result<std::unique_ptr<SharedWords>> mine = unavailable("rank 0 has no shared-words page");
  if (rank == 0) {
    mine = SharedWords::create(pids, rank);
    DDP_RETURN_IF_ERROR(store.set(base + "words", mine.isOk() ? std::to_string((*mine)->fd()) : "none"));
  } else {
    DDP_ASSIGN_OR_RETURN(std::string text, store.get(base + "words", deadline));
    char* end = nullptr;
    const long fd = std::strtol(text.c_str(), &end, 10);
    if (end != text.c_str() && *end == '\0' && fd >= 0) mine = SharedWords::open(pids, rank, static_cast<int>(fd));
  }
  const std::string verdict = mine.isOk() ? "ok" : mine.status().message();
  DDP_RETURN_IF_ERROR(store.set(base + "words-ok/" + std::to_string(rank), verdict));
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> verdicts, gatherAll(store, base + "words-ok/", static_cast<int>(pids.size()), deadline));
  for (size_t r = 0; r < verdicts.size(); ++r) {
    if (verdicts[r] != "ok") {
      *why = "rank " + std::to_string(r) + " cannot map the shared-words page: " + verdicts[r];
      return std::shared_ptr<SharedWords>();
    }
  }
  return std::shared_ptr<SharedWords>(std::move(*mine));
}

}  // namespace ddp::comm
