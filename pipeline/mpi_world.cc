#include "pipeline/mpi_world.h"

#include <cstdlib>
#include <string_view>

#ifdef CHAKRAFLOW_HAVE_MPI
#include <mpi.h>
#endif

namespace chakraflow {
namespace {

// The world size a launcher announced in the environment: 0 when not started by one.
// OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; MPICH's hydra and Slurm's PMI set PMI_SIZE; PMIx
// launchers set PMIX_RANK (size unknown before MPI_Init: reported as 1, MPI tells the truth).
int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return std::getenv("PMIX_RANK") != nullptr ? 1 : 0;
}

}  // namespace

bool MpiWorld::available() {
#ifdef CHAKRAFLOW_HAVE_MPI
  return true;
#else
  return false;
#endif
}

StatusOr<MpiWorld> MpiWorld::join() {
  int announced = launcher_world_size();
  if (announced == 0) return MpiWorld(0, 1, false);
#ifdef CHAKRAFLOW_HAVE_MPI
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return Status::error("MPI_Init_thread failed");
  }
  int process = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  return MpiWorld(process, processes, true);
#else
  if (announced > 1) {
    return Status::errorf(
        "started by an MPI launcher with {} processes, but this chakraflow was built without MPI "
        "(install libopenmpi-dev and rebuild; CMake prints 'chakraflow: MPI ...'): every process "
        "would run every rank",
        announced);
  }
  return MpiWorld(0, 1, false);
#endif
}

MpiWorld::MpiWorld(MpiWorld&& other) noexcept
    : process_(other.process_), processes_(other.processes_), initialized_(other.initialized_) {
  other.initialized_ = false;
}

MpiWorld::~MpiWorld() {
#ifdef CHAKRAFLOW_HAVE_MPI
  if (initialized_) MPI_Finalize();
#endif
}

std::vector<std::string> MpiWorld::gather(const std::string& blob) const {
  if (!initialized_) return {blob};
#ifdef CHAKRAFLOW_HAVE_MPI
  // Sizes first, then the bytes in one MPI_Gatherv. Blobs are summaries (kilobytes per rank), far
  // below MPI's int counts.
  int size = static_cast<int>(blob.size());
  std::vector<int> sizes(process_ == 0 ? processes_ : 0);
  MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(sizes.size());
  int total = 0;
  for (size_t p = 0; p < sizes.size(); ++p) {
    offsets[p] = total;
    total += sizes[p];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Gatherv(blob.data(), size, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t p = 0; p < sizes.size(); ++p) out.push_back(all.substr(offsets[p], sizes[p]));
  return out;
#else
  return {blob};
#endif
}

int MpiWorld::broadcast(int value) const {
#ifdef CHAKRAFLOW_HAVE_MPI
  if (initialized_) MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  return value;
}

}  // namespace chakraflow
