#include "worker/comm/same_host_agreement.h"

#include <cstdlib>
#include <vector>

#include "common/store/store.h"
#include "worker/comm/cross_memory_allreduce.h"

namespace ddp::comm {
namespace {

// Every rank's value of `key`<rank>, in rank order.
Result<std::vector<std::string>> gatherAll(Store& store, const std::string& key, int size, Deadline deadline) {
  std::vector<std::string> all;
  for (int r = 0; r < size; ++r) {
    DDP_ASSIGN_OR_RETURN(std::string v, store.get(key + std::to_string(r), deadline));
    all.push_back(std::move(v));
  }
  return all;
}

// Rank 0's page as published under "words", opened by `rank` and watching `pids`.
Result<std::unique_ptr<SharedWords>> openPage(const std::string& published, const std::vector<int64_t>& pids,
                                              int rank) {
  char* end = nullptr;
  const long fd = std::strtol(published.c_str(), &end, 10);
  if (published.empty() || *end != '\0' || fd < 0) return unavailable("rank 0 has no page (" + published + ")");
  DDP_ASSIGN_OR_RETURN(auto words,
                       SharedWords::open(pids[0], static_cast<int>(fd), rank, static_cast<int>(pids.size())));
  DDP_RETURN_IF_ERROR(words->watch(pids));
  return words;
}

// This rank's round-2 verdict: the probe's, then the page's (`page` is set when both work).
std::string verdictOf(const CrossMemory& memory, Store& store, const std::string& base, int rank,
                      std::unique_ptr<SharedWords>& page, Deadline deadline) {
  const Status probe = memory.probe(rank);
  if (!probe.isOk()) return probe.message();
  Status mapped = Status::ok();
  if (rank == 0) {
    mapped = page ? page->watch(memory.pids()) : unavailable("no page");
  } else {
    auto published = store.get(base + "words", deadline);  // set before host/0: present
    auto opened = published.isOk() ? openPage(*published, memory.pids(), rank)
                                   : Result<std::unique_ptr<SharedWords>>(published.status());
    if (opened.isOk()) page = std::move(*opened);
    mapped = opened.status();
  }
  if (!mapped.isOk()) page.reset();
  return mapped.isOk() ? "ok" : "ok " + mapped.message();
}

}  // namespace

Result<SameHostPaths> agreeSameHost(Store& store, const std::string& prefix, int rank, int size, Deadline deadline) {
  const std::string base = prefix + "/xmem/";
  SameHostPaths out;
  std::unique_ptr<SharedWords> page;
  if (rank == 0) {
    auto created = SharedWords::create(0, size);
    if (created.isOk()) page = std::move(*created);
    DDP_RETURN_IF_ERROR(
        store.set(base + "words", page ? std::to_string(page->fd()) : "none " + created.status().message()));
  }
  auto self = thisProcess();
  DDP_RETURN_IF_ERROR(store.set(base + "host/" + std::to_string(rank), self.isOk() ? self->encode() : "none"));
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> texts, gatherAll(store, base + "host/", size, deadline));
  std::vector<HostIdentity> ranks;
  for (const std::string& t : texts) {
    auto id = HostIdentity::decode(t);
    if (!id.isOk()) {
      out.summary = "allreduce over TCP only: a rank cannot name its host (" + t + ")";
      return out;
    }
    ranks.push_back(*id);
  }
  if (!sameHost(ranks)) {
    out.summary = "allreduce over TCP only: the ranks do not share one host and PID namespace";
    return out;
  }
  auto memory = std::make_shared<const CrossMemory>(ranks);
  DDP_RETURN_IF_ERROR(
      store.set(base + "probe/" + std::to_string(rank), verdictOf(*memory, store, base, rank, page, deadline)));
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> verdicts, gatherAll(store, base + "probe/", size, deadline));
  std::string pageWhy;
  for (size_t r = 0; r < verdicts.size(); ++r) {
    if (verdicts[r] != "ok" && verdicts[r].rfind("ok ", 0) != 0) {
      out.summary =
          "allreduce over TCP only: rank " + std::to_string(r) + " cannot read its peers' memory: " + verdicts[r];
      return out;
    }
    if (verdicts[r] != "ok" && pageWhy.empty())
      pageWhy = "rank " + std::to_string(r) + " cannot map the shared page: " + verdicts[r].substr(3);
  }
  out.memory = std::move(memory);
  if (pageWhy.empty()) out.words = std::shared_ptr<SharedWords>(std::move(page));
  out.summary = out.words ? "allreduces from " + std::to_string(kSharedWordsMinBytes >> 10) +
                                " KiB read peers' memory, in phases over shared memory (one host)"
                          : "allreduces from " + std::to_string(kCrossMemoryMinBytes >> 20) +
                                " MiB read peers' memory, in phases over TCP (one host; " + pageWhy + ")";
  return out;
}

}  // namespace ddp::comm
