// The MPI calls of `chakraflow run` under a launcher (mpirun, srun), in a plugin that the binary
// loads only when a launcher started it (pipeline/mpi_world.cc). Linking MPI into the binary cost
// every process start about 1.3 ms of dynamic linking (seven more libraries, 3,900 symbol
// relocations), a twentieth of a 10 MB rank's time, for the few runs that use it.
//
// The plugin, libchakraflow_mpi.so, lies next to the binary in the build tree and in
// lib/chakraflow/ of an installation; CHAKRAFLOW_MPI_PLUGIN names another. Its one export,
// chakraflow_mpi_plugin(), returns a table of C functions; `abi` changes with the table.
#pragma once

extern "C" {

struct ChakraflowMpi {
  int abi;
  // MPI_Init_thread (MPI_THREAD_FUNNELED), then this process's rank and the world's size.
  // Returns 0 on success.
  int (*init)(int* process, int* processes);
  void (*finalize)();
  // Collective: `value` of every process, in process order, into `all` on process 0 (ignored on
  // the others).
  void (*gather_int)(int value, int* all);
  // Collective: `size` bytes of every process into `all` on process 0, at `offsets`, `sizes`
  // bytes each (used on process 0 only).
  void (*gather_bytes)(const char* data, int size, char* all, const int* sizes, const int* offsets);
  // Collective: process 0's value, on every process.
  int (*broadcast_int)(int value);
};

const ChakraflowMpi* chakraflow_mpi_plugin();

}  // extern "C"

namespace chakraflow {
inline constexpr int kMpiPluginAbi = 1;
inline constexpr const char* kMpiPluginFile = "libchakraflow_mpi.so";
inline constexpr const char* kMpiPluginSymbol = "chakraflow_mpi_plugin";
}  // namespace chakraflow
