// The processes of an `mpirun -n K chakraflow run ...` job, or a world of one.
//
// MPI is optional at build time (CHAKRAFLOW_MPI, on when CMake finds an MPI library) and at run
// time: MPI is loaded (the plugin of pipeline/mpi_plugin.h) and initialised only when the process
// was started by a launcher (mpirun, srun) that says so in the environment, so a plain
// `chakraflow run` never touches MPI, nor links it. A binary built without MPI, or whose plugin
// cannot be loaded, refuses to run under a launcher with K > 1, rather than run every rank K times.
//
// Not thread safe: call from the main thread only (MPI is initialised with MPI_THREAD_FUNNELED;
// the flow graph's worker threads never talk to MPI).
#pragma once

#include <string>
#include <vector>

#include "stages/common/status.h"

struct ChakraflowMpi;  // pipeline/mpi_plugin.h

namespace chakraflow {

class MpiWorld {
 public:
  // Joins the launcher's world when there is one (MPI_Init), else a world of one process.
  static StatusOr<MpiWorld> join();
  MpiWorld(MpiWorld&& other) noexcept;
  MpiWorld& operator=(MpiWorld&&) = delete;
  MpiWorld(const MpiWorld&) = delete;
  ~MpiWorld();  // MPI_Finalize when this object initialised MPI

  int process() const { return process_; }  // 0..processes()-1
  int processes() const { return processes_; }
  bool distributed() const { return processes_ > 1; }

  // Collective: every process passes its blob; process 0 gets all of them in process order,
  // the others get an empty vector.
  std::vector<std::string> gather(const std::string& blob) const;
  // Collective: process 0's value on every process.
  int broadcast(int value) const;

  // Whether chakraflow was built with MPI support and the plugin is where `binary` (this process's
  // when empty) looks for it.
  static bool available(const std::string& binary = "");

 private:
  MpiWorld(int process, int processes, const ChakraflowMpi* mpi)
      : process_(process), processes_(processes), mpi_(mpi) {}
  int process_ = 0;
  int processes_ = 1;
  const ChakraflowMpi* mpi_ = nullptr;  // set when this object initialised MPI
};

}  // namespace chakraflow
