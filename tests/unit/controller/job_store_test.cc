// The JobStore contract (job_store_conformance.h) run against every implementation.
// SQLite-specific behaviour (files, durability, corruption, locking) is in
// sqlite_job_store_test.cc.

#include <memory>

#include <gtest/gtest.h>

#include "controller/store/sqlite_job_store.h"
#include "tests/unit/controller/job_store_conformance.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

class SqliteUnderTest final : public conformance::JobStoreUnderTest {
 public:
  SqliteUnderTest() {
    Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(dir_.file("jobs.db"));
    EXPECT_TRUE(opened.isOk()) << opened.status();
    if (opened.isOk()) store_ = std::move(opened).value();
  }
  JobStore& store() override { return *store_; }

 private:
  testing::TempDir dir_;  // outlives store_ (declared first)
  std::unique_ptr<SqliteJobStore> store_;
};

std::unique_ptr<conformance::JobStoreUnderTest> makeSqlite() {
  auto sut = std::make_unique<SqliteUnderTest>();
  return sut;
}

DDP_JOB_STORE_CONFORMANCE_TESTS(SqliteJobStoreConformance, makeSqlite)

}  // namespace
}  // namespace ddp::controller
