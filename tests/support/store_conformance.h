#pragma once
// Store conformance: one set of checks every comm::Store implementation must pass (c10d Store
// semantics: binary-safe values, blocking get/wait with deadlines naming the keys, atomic add,
// compareSet, check, deleteKey). Each implementation's test file instantiates them with
// DDP_STORE_CONFORMANCE_TESTS(SuiteName, factory), where `factory` makes a fresh, empty store
// under test. Checks that need two clients (a blocking get released by another client's set)
// open a second client with StoreUnderTest::connect().
// Thread model: the checks start and join their own threads.

#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "common/store/store.h"

namespace ddp::comm::conformance {

// A fresh store and a way to open more clients to the same keys.
class StoreUnderTest {
 public:
  virtual ~StoreUnderTest() = default;
  // A client to this store; every client sees the same keys. Clients may be used concurrently.
  virtual std::shared_ptr<Store> connect() = 0;
};
using StoreFactory = std::function<std::unique_ptr<StoreUnderTest>()>;

// Wraps one shared Store (an in-process store: every "client" is the store itself).
std::unique_ptr<StoreUnderTest> sharedStore(std::shared_ptr<Store> store);

void checkSetGetBinarySafe(StoreUnderTest& s);
void checkOverwriteAndDelete(StoreUnderTest& s);
void checkGetBlocksUntilAnotherClientSets(StoreUnderTest& s);
void checkGetTimesOutNamingTheKey(StoreUnderTest& s);
void checkAdd(StoreUnderTest& s);
void checkConcurrentAddsAreAtomic(StoreUnderTest& s);
void checkCompareSet(StoreUnderTest& s);
void checkCheck(StoreUnderTest& s);
void checkWaitReleasedAndTimesOutNamingMissingKeys(StoreUnderTest& s);

}  // namespace ddp::comm::conformance

#define DDP_STORE_CONFORMANCE_TEST_(Suite, factory, Name)                         \
  TEST(Suite, Name) {                                                              \
    auto _sut = (factory)();                                                       \
    ASSERT_NE(_sut, nullptr);                                                      \
    ::ddp::comm::conformance::check##Name(*_sut);                                  \
  }

// Defines one TEST per conformance check in test suite `Suite`.
#define DDP_STORE_CONFORMANCE_TESTS(Suite, factory)                                      \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, SetGetBinarySafe)                          \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, OverwriteAndDelete)                        \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, GetBlocksUntilAnotherClientSets)           \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, GetTimesOutNamingTheKey)                   \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, Add)                                       \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, ConcurrentAddsAreAtomic)                   \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, CompareSet)                                \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, Check)                                     \
  DDP_STORE_CONFORMANCE_TEST_(Suite, factory, WaitReleasedAndTimesOutNamingMissingKeys)
