// libchakraflow_mpi.so: the MPI side of pipeline/mpi_plugin.h, loaded by pipeline/mpi_world.cc.
#include "pipeline/mpi_plugin.h"

#include <mpi.h>

namespace {

int init(int* process, int* processes) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, process);
  MPI_Comm_size(MPI_COMM_WORLD, processes);
  return 0;
}

void finalize() {
  MPI_Finalize();
}

void gather_int(int value, int* all) {
  MPI_Gather(&value, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

void gather_bytes(const char* data, int size, char* all, const int* sizes, const int* offsets) {
  MPI_Gatherv(data, size, MPI_CHAR, all, sizes, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
}

int broadcast_int(int value) {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

constexpr ChakraflowMpi kTable = {
    chakraflow::kMpiPluginAbi, init, finalize, gather_int, gather_bytes, broadcast_int};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ChakraflowMpi* chakraflow_mpi_plugin() {
  return &kTable;
}
