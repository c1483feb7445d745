// One rank of the multi-process GlooBackend tests (spawned by gloo_multiprocess_test).
//   gloo_rank_proc --store HOST:PORT --rank R --size N --prefix P --scenario S
// Exit status 0 when every check of the scenario passed; otherwise 1 with the reasons on stderr.
// Scenarios:
//   collectives  every collective, several dtypes, p2p ring and a coalesced batch, checked
//                against closed forms
//   mismatch     ranks disagree on an allreduce's size: every rank must get InvalidArgument,
//                and the next allreduce must succeed
//   timeout      rank 0 runs an allreduce that rank 1 never joins (1 s op timeout): rank 0 must
//                get Timeout, rank 1's next op must fail fast instead of hanging
//   peer_exit    the last rank exits abruptly while the others are in an allreduce: they must
//                get a failed Work (no crash, no hang)
//   same_host    large allreduces (f32 sum and average over uneven chunks, bf16 sum) that read
//                peers' memory (Note [Same-host allreduce]), checked against closed forms
//   same_host_exit  the last rank exits abruptly while the others are in a large allreduce:
//                they must get a failed Work (no crash, no hang)
//   stuck_send   2 ranks, a 128 MiB-per-rank allgather: rank 1 stops itself (SIGSTOP) once rank
//                0's block has started to arrive, so rank 0's send sits in the transmit queue
//                with its socket full; rank 0 aborts and its backend must be destroyed (its
//                executor thread released from the send) within 3 s, far inside the 30 s op
//                timeout (Note [Abortable waits]). The test kills the stopped rank 1.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "worker/comm/gloo_backend.h"
#include "common/store/http_store_client.h"

namespace ddp::comm {
namespace {

int gFailures = 0;

#define CHECK_THAT(cond, msg)                                                         \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      ++gFailures;                                                                    \
      std::fprintf(stderr, "rank check failed at line %d: %s: %s\n", __LINE__, #cond, \
                   std::string(msg).c_str());                                         \
    }                                                                                 \
  } while (0)

void collectives(Backend& b) {
  const int r = b.rank(), n = b.size();
  const double tri = n * (n + 1) / 2.0;
  std::vector<float> f(1001);
  for (size_t i = 0; i < f.size(); ++i) f[i] = float(r + 1) * float(i % 13);
  Status st = b.allreduce(viewOf(f.data(), f.size()), ReduceOp::kSum)->wait();
  CHECK_THAT(st.isOk(), st.toString());
  for (size_t i = 0; i < f.size(); ++i) CHECK_THAT(f[i] == float(tri * (i % 13)), "f32 sum at " + std::to_string(i));

  std::vector<uint16_t> h(257);
  for (size_t i = 0; i < h.size(); ++i) h[i] = floatToBf16(float(1 + (r + i) % 3));
  st = b.allreduce(viewOf(h.data(), h.size(), DType::kBF16), ReduceOp::kMax)->wait();
  CHECK_THAT(st.isOk(), st.toString());
  for (size_t i = 0; i < h.size(); ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want = std::max(want, float(1 + (q + i) % 3));
    CHECK_THAT(bf16ToFloat(h[i]) == want, "bf16 max at " + std::to_string(i));
  }

  std::vector<int64_t> bc(33, r == 0 ? 77 : -1);
  CHECK_THAT(b.broadcast(viewOf(bc.data(), bc.size()), 0)->wait().isOk(), "broadcast");
  for (auto v : bc) CHECK_THAT(v == 77, "broadcast value");

  std::vector<double> in(5, r + 0.25), out(5 * n, -1);
  CHECK_THAT(b.allgather(viewOf(in.data(), in.size()), viewOf(out.data(), out.size()))->wait().isOk(), "allgather");
  for (size_t i = 0; i < out.size(); ++i) CHECK_THAT(out[i] == double(i / 5) + 0.25, "allgather value");

  std::vector<uint16_t> rsIn(7 * n), rsOut(7);
  for (size_t i = 0; i < rsIn.size(); ++i) rsIn[i] = floatToHalf(float(i % 4 + r));
  CHECK_THAT(b.reduceScatter(viewOf(rsIn.data(), rsIn.size(), DType::kF16), viewOf(rsOut.data(), rsOut.size(), DType::kF16),
                             ReduceOp::kSum)->wait().isOk(), "reduce_scatter");
  for (size_t i = 0; i < rsOut.size(); ++i) {
    const size_t g = r * 7 + i;
    CHECK_THAT(halfToFloat(rsOut[i]) == float(n * (g % 4) + tri - n), "reduce_scatter value");
  }

  std::vector<int32_t> gin(3, r), gout(r == n - 1 ? 3 * n : 0);
  CHECK_THAT(b.gather(viewOf(gin.data(), gin.size()), viewOf(gout.data(), gout.size()), n - 1)->wait().isOk(), "gather");
  for (size_t i = 0; i < gout.size(); ++i) CHECK_THAT(gout[i] == int32_t(i / 3), "gather value");

  // Ring exchange as a batched send/recv, plus two allreduces fused in one batch.
  std::vector<int32_t> toNext(100, r), fromPrev(100, -1);
  std::vector<float> c1(10, 1.f), c2(20, float(r));
  {
    CoalescingScope scope(b);
    b.recv(viewOf(fromPrev.data(), fromPrev.size()), (r + n - 1) % n, 0);
    b.send(viewOf(toNext.data(), toNext.size()), (r + 1) % n, 0);
    b.allreduce(viewOf(c1.data(), c1.size()), ReduceOp::kSum);
    b.allreduce(viewOf(c2.data(), c2.size()), ReduceOp::kSum);
    st = scope.end()->wait();
    CHECK_THAT(st.isOk(), st.toString());
  }
  for (auto v : fromPrev) CHECK_THAT(v == (r + n - 1) % n, "ring value");
  for (auto v : c1) CHECK_THAT(v == float(n), "coalesced c1");
  for (auto v : c2) CHECK_THAT(v == float(tri - n), "coalesced c2");
  CHECK_THAT(b.barrier()->wait().isOk(), "barrier");
}

void mismatch(Backend& b) {
  std::vector<float> x(b.rank() == 0 ? 100 : 101, 1.f);
  Status st = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait();
  CHECK_THAT(st.code() == StatusCode::kInvalidArgument, st.toString());
  CHECK_THAT(st.message().find("ranks disagree") != std::string::npos, st.toString());
  std::vector<float> y(64, 2.f);
  st = b.allreduce(viewOf(y.data(), y.size()), ReduceOp::kSum)->wait();
  CHECK_THAT(st.isOk(), st.toString());
  CHECK_THAT(y[0] == 2.f * b.size(), "sum after mismatch");
  CHECK_THAT(b.barrier()->wait().isOk(), "barrier");
}

void timeoutScenario(Backend& b) {
  std::vector<float> x(1000, 1.f);
  if (b.rank() == 0) {
    OpOptions o;
    o.timeout = std::chrono::seconds(1);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum, o)->wait(Deadline::after(std::chrono::seconds(20)));
    CHECK_THAT(st.code() == StatusCode::kTimeout, st.toString());
    CHECK_THAT(st.message().find("allreduce seq 1 (4000 bytes)") != std::string::npos, st.toString());
    CHECK_THAT(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5), "timeout took too long");
    CHECK_THAT(b.isAborted(), "aborted after timeout");
    return;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // never joins; rank 0 times out and aborts
  const auto t0 = std::chrono::steady_clock::now();
  Status st = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(std::chrono::seconds(20)));
  CHECK_THAT(!st.isOk() && st.code() != StatusCode::kTimeout, st.toString());
  CHECK_THAT(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5), "failing took too long");
}

void peerExit(Backend& b) {
  if (b.rank() == b.size() - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::_Exit(0);  // dies without closing anything gracefully
  }
  std::vector<float> x(1000, 1.f);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(std::chrono::seconds(20)));
  CHECK_THAT(!st.isOk() && st.code() != StatusCode::kTimeout, st.toString());
  CHECK_THAT(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10), "failing took too long");
}

void sameHost(GlooBackend& b) {
  const int r = b.rank(), n = b.size();
  CHECK_THAT(b.readsPeerMemory(), "ranks on one host should read each other's memory");
  CHECK_THAT(b.sharesPage(), "ranks on one host should share the futex page");
  constexpr size_t kCount = (size_t{6} << 20) / sizeof(float) + 3;  // uneven chunks, above the threshold
  std::vector<float> sum(kCount), avg(kCount);
  for (size_t i = 0; i < kCount; ++i) sum[i] = avg[i] = float((i * 5 + static_cast<size_t>(r)) % 1000);
  auto ws = b.allreduce(viewOf(sum.data(), sum.size()), ReduceOp::kSum);
  auto wa = b.allreduce(viewOf(avg.data(), avg.size()), ReduceOp::kAvg);
  std::vector<uint16_t> h(kCount);
  for (size_t i = 0; i < kCount; ++i) h[i] = floatToBf16(float(1 + (static_cast<size_t>(r) + i) % 3));
  auto wh = b.allreduce(viewOf(h.data(), h.size(), DType::kBF16), ReduceOp::kSum);
  // 1.2 MB: below kCrossMemoryMinBytes, so it takes the same-host path only because the ranks
  // share the futex page (Note [Shared-memory phases]).
  std::vector<float> mid(300007);
  for (size_t i = 0; i < mid.size(); ++i) mid[i] = float((i * 3 + static_cast<size_t>(r)) % 500);
  auto wm = b.allreduce(viewOf(mid.data(), mid.size()), ReduceOp::kSum);
  for (auto* w : {&ws, &wa, &wh, &wm}) {
    const Status st = (*w)->wait();
    CHECK_THAT(st.isOk(), st.toString());
  }
  size_t wrongSum = 0, wrongAvg = 0, wrongHalf = 0;
  for (size_t i = 0; i < kCount; ++i) {
    double total = 0, halves = 0;
    for (int q = 0; q < n; ++q) {
      total += double((i * 5 + static_cast<size_t>(q)) % 1000);
      halves += double(1 + (static_cast<size_t>(q) + i) % 3);
    }
    wrongSum += sum[i] != float(total);
    wrongAvg += avg[i] != float(total) / float(n);
    wrongHalf += bf16ToFloat(h[i]) != float(halves);  // small integers: exact in bf16
  }
  CHECK_THAT(wrongSum == 0, std::to_string(wrongSum) + " wrong f32 sums");
  CHECK_THAT(wrongAvg == 0, std::to_string(wrongAvg) + " wrong f32 averages");
  CHECK_THAT(wrongHalf == 0, std::to_string(wrongHalf) + " wrong bf16 sums");
  size_t wrongMid = 0;
  for (size_t i = 0; i < mid.size(); ++i) {
    double total = 0;
    for (int q = 0; q < n; ++q) total += double((i * 3 + static_cast<size_t>(q)) % 500);
    wrongMid += mid[i] != float(total);
  }
  CHECK_THAT(wrongMid == 0, std::to_string(wrongMid) + " wrong f32 sums of the 1.2 MB buffer");
  CHECK_THAT(b.barrier()->wait().isOk(), "barrier");
}

void sameHostExit(GlooBackend& b) {
  std::vector<float> x((size_t{8} << 20) / sizeof(float), 1.f);
  if (b.rank() == b.size() - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::_Exit(0);  // dies without closing anything gracefully
  }
  const auto t0 = std::chrono::steady_clock::now();
  Status st = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(std::chrono::seconds(20)));
  CHECK_THAT(!st.isOk() && st.code() != StatusCode::kTimeout, st.toString());
  CHECK_THAT(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10), "failing took too long");
}

void stuckSend(std::unique_ptr<GlooBackend>& b) {
  constexpr size_t kBlock = size_t{32} << 20;  // floats: 128 MiB per rank
  const int r = b->rank();
  std::vector<float> in(kBlock, float(r + 7)), out(2 * kBlock, -1.f);
  auto w = b->allgather(viewOf(in.data(), in.size()), viewOf(out.data(), out.size()));
  if (r == 1) {
    // Rank 0's block lands at out[0]: once its first bytes are here, stop reading.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    volatile float* first = out.data();
    while (*first != 7.f && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    ::raise(SIGSTOP);
    return;  // not reached: the test kills this rank
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK_THAT(!w->isCompleted(), "the allgather finished although rank 1 stopped reading");
  const auto t0 = std::chrono::steady_clock::now();
  b->abort(abortedError("stuck_send scenario"));
  Status st = w->wait(Deadline::after(std::chrono::seconds(5)));
  CHECK_THAT(st.code() == StatusCode::kAborted, st.toString());
  b.reset();  // joins the executor: it must have left the send
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "rank 0: abort to backend destroyed: %.3f s\n", took);
  CHECK_THAT(took < 3.0, "the executor stayed in the send for " + std::to_string(took) + " s");
}

}  // namespace
}  // namespace ddp::comm

int main(int argc, char** argv) {
  using namespace ddp;
  std::string store, prefix, scenario;
  int rank = -1, size = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--store") store = v;
    else if (k == "--rank") rank = std::atoi(v.c_str());
    else if (k == "--size") size = std::atoi(v.c_str());
    else if (k == "--prefix") prefix = v;
    else if (k == "--scenario") scenario = v;
  }
  auto client = comm::HttpStoreClient::connect(store);
  if (!client.isOk()) {
    std::fprintf(stderr, "rank %d: store: %s\n", rank, client.status().toString().c_str());
    return 2;
  }
  comm::GlooOptions o;
  o.rank = rank;
  o.size = size;
  o.prefix = prefix;
  o.connectTimeout = std::chrono::seconds(30);
  o.timeout = std::chrono::seconds(30);
  auto backend = comm::GlooBackend::create(o, **client);
  if (!backend.isOk()) {
    std::fprintf(stderr, "rank %d: create: %s\n", rank, backend.status().toString().c_str());
    return 2;
  }
  if (scenario == "collectives") comm::collectives(**backend);
  else if (scenario == "mismatch") comm::mismatch(**backend);
  else if (scenario == "timeout") comm::timeoutScenario(**backend);
  else if (scenario == "peer_exit") comm::peerExit(**backend);
  else if (scenario == "stuck_send") comm::stuckSend(*backend);
  else if (scenario == "same_host") comm::sameHost(**backend);
  else if (scenario == "same_host_exit") comm::sameHostExit(**backend);
  else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  if (*backend) backend->reset();
  if (comm::gFailures > 0) {
    std::fprintf(stderr, "rank %d: %d checks failed\n", rank, comm::gFailures);
    return 1;
  }
  return 0;
}
