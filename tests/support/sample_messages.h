#pragma once
// Sample messages of the worker <-> controller protocol (common/protocol/worker_messages.h), most
// fields set to a value other than their default, for the codec and client tests.
// Thread model: pure functions.

#include "common/protocol/worker_messages.h"

namespace ddp::testing {

using protocol::Assignment;
using protocol::HeartbeatCheckpoint;
using protocol::Heartbeat;
using protocol::WorkerState;

inline Assignment sampleAssignment() {
  Assignment a;
  a.rank = 1;
  a.worldSize = 2;
  a.generation = 3;
  a.specYaml = "apiVersion: ddp/v1\nkind: DDPJob\nmetadata:\n  name: fmnist\n";
  a.specSchema = 7;
  a.peers = {{0, "fmnist-w0", "10.0.0.1"}, {1, "fmnist-w1", "10.0.0.2"}};
  return a;
}

inline Heartbeat sampleReport() {
  Heartbeat r;
  r.workerId = "fmnist-w1";
  r.rank = 1;
  r.state = WorkerState::kRunning;
  r.step = 120;
  r.totalSteps = 2814;
  r.epoch = 0;
  r.epochs = 3;
  r.loss = 0.52;
  r.samplesPerSecond = 9000;
  r.counters = {7680, 120, 1.9, 123456, 0.12, 4000, 400};
  r.collectives = {{"gloo", 415, 412, "allreduce", 0.01, 1048576}};
  r.checkpoint = HeartbeatCheckpoint{100, 2345678, "/ckpt/fmnist/step-100"};
  r.message = "all \"fine\"\n";
  r.ext = {{"gpuUtil", 0.75}};
  return r;
}

}  // namespace ddp::testing
