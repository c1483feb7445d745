#pragma once
// The cores this process may run on. Thread model: asks the kernel each call; safe from any thread.

namespace ddp {

// Cores in this process's affinity mask (so a container's cpuset counts); at least 1.
int usableCores();

}  // namespace ddp
