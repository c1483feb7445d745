// loadJobSpecFile() (job_spec_file.cc): regular files and pipes / FIFOs are read once and at
// most kMaxJobDocumentBytes; directories, devices and longer files are refused with a message
// that says which.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"
#include "tests/support/temp_dir.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::kMinimal;

// A fresh directory, removed with its contents on destruction.
using test::TempDir;

// Writes `text` into a pipe's write end and closes it (a pipe has no size; the reader sees EOF).
// With `forever`, writes `text` until the reader is gone (SIGPIPE blocked in this thread only).
void writeAndClose(int fd, std::string text, bool forever) {
  sigset_t pipeSignal;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);
  do {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0) {
        forever = false;  // EPIPE: the reader closed its end
        break;
      }
      done += static_cast<size_t>(n);
    }
  } while (forever);
  ::close(fd);
  const timespec now{0, 0};
  (void)sigtimedwait(&pipeSignal, nullptr, &now);  // the SIGPIPE the write raised, if any
}

TEST(JobSpecFileTest, ReadsARegularFile) {
  TempDir dir;
  auto r = loadJobSpecFile(dir.write("job.yaml", kMinimal));
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->name, "mini");
}

TEST(JobSpecFileTest, RefusesADirectory) {
  TempDir dir;
  std::vector<SpecError> errors;
  auto r = loadJobSpecFile(dir.path(), &errors);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), dir.path() + ": is a directory, not a job file")) << r.status();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0].message, "is a directory")) << errors[0].toString();
}

TEST(JobSpecFileTest, RefusesADeviceWithoutReadingIt) {
  for (const char* device : {"/dev/zero", "/dev/null", "/dev/urandom"}) {
    SCOPED_TRACE(device);
    const auto start = std::chrono::steady_clock::now();
    auto r = loadJobSpecFile(device);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(r.status().message(), "is not a regular file")) << r.status();
    EXPECT_TRUE(contains(r.status().message(), "character device")) << r.status();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

TEST(JobSpecFileTest, RefusesAFileOverTheLimitNamingIt) {
  static_assert(kMaxJobDocumentBytes == 1 << 20);
  TempDir dir;
  std::string doc = kMinimal;
  doc += "#" + std::string(kMaxJobDocumentBytes - doc.size() - 2, 'x') + "\n";
  ASSERT_EQ(doc.size(), kMaxJobDocumentBytes);
  auto atLimit = loadJobSpecFile(dir.write("at-limit.yaml", doc));
  EXPECT_TRUE(atLimit.isOk()) << atLimit.status();
  std::vector<SpecError> errors;
  auto over = loadJobSpecFile(dir.write("over.yaml", doc + "\n"), &errors);
  ASSERT_FALSE(over.isOk());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(over.status().message(), "larger than 1048576 bytes")) << over.status();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
}

// <(...) in a shell is such a path: /dev/fd/N of a pipe.
TEST(JobSpecFileTest, ReadsAPipeOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer(writeAndClose, fds[1], std::string(kMinimal), false);
  auto r = loadJobSpecFile("/dev/fd/" + std::to_string(fds[0]));
  writer.join();
  ::close(fds[0]);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->name, "mini");
}

TEST(JobSpecFileTest, ReadsStdinWhenItIsAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int savedStdin = ::dup(0);
  ASSERT_GE(savedStdin, 0);
  ASSERT_EQ(::dup2(fds[0], 0), 0);
  ::close(fds[0]);
  std::thread writer(writeAndClose, fds[1], std::string(kMinimal), false);
  auto r = loadJobSpecFile("/dev/stdin");
  writer.join();
  ::dup2(savedStdin, 0);
  ::close(savedStdin);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->name, "mini");
}

TEST(JobSpecFileTest, ReadsANamedFifo) {
  TempDir dir;
  const std::string fifo = dir.path() + "/job.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // waits for the reader
    if (fd >= 0) writeAndClose(fd, kMinimal, false);
  });
  auto r = loadJobSpecFile(fifo);
  writer.join();
  ASSERT_TRUE(r.isOk()) << r.status();
}

// A writer that never stops: the reader stops one byte past the limit and refuses the file.
TEST(JobSpecFileTest, AnEndlessPipeIsCutAtTheLimit) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer(writeAndClose, fds[1], "# " + std::string(4094, 'x') + "\n", true);
  auto r = loadJobSpecFile("/dev/fd/" + std::to_string(fds[0]));
  ::close(fds[0]);  // the last read end: the writer's next write fails and it stops
  writer.join();
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(r.status().message(), "larger than 1048576 bytes")) << r.status();
}

}  // namespace
}  // namespace ddp
