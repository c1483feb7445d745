#pragma once
// The fixture of the tests that talk HTTP to a stand-in controller (stand_in_controller.h): a
// temporary directory, the controller, a loopback client and the controller token's header.
// Base is the GoogleTest class to derive from (::testing::Test, or TestWithParam<P>).
// Thread model: the test's thread.

#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "tests/support/stand_in_controller.h"
#include "tests/support/temp_dir.h"

namespace ddp::test {

template <typename Base = ::testing::Test>
class StandInControllerTest : public Base {
 protected:
  // Starts the controller (from SetUp); `configure` changes its configuration.
  void startController(const std::function<void(controller::ControllerConfig&)>& configure = nullptr) {
    auto ctl = startStandInController(dir_.path(), configure);
    ASSERT_TRUE(ctl.isOk()) << ctl.status().toString();
    ctl_ = std::move(*ctl);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", ctl_->port());
    client_->set_read_timeout(10, 0);
    auth_ = {{"Authorization", "Bearer " + ctl_->token()}};
  }
  void TearDown() override {
    if (ctl_) stopStandInController(*ctl_);  // its stand-in workers, by pid
  }

  TempDir dir_{"stand_in_controller"};
  std::unique_ptr<controller::Controller> ctl_;
  std::unique_ptr<httplib::Client> client_;
  httplib::Headers auth_;
};

}  // namespace ddp::test
