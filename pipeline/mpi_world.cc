#include "pipeline/mpi_world.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pipeline/mpi_plugin.h"

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

#ifdef CHAKRAFLOW_HAVE_MPI
// Where the plugin may be: CHAKRAFLOW_MPI_PLUGIN, else next to the binary (the build tree), else
// in lib/chakraflow/ beside the binary's bin/ (an installation).
// `exe`: the binary (empty: this process's).
std::vector<std::string> plugin_candidates(std::string exe) {
  if (const char* set = std::getenv("CHAKRAFLOW_MPI_PLUGIN"); set != nullptr && *set != '\0') {
    return {set};
  }
  if (exe.empty()) {
    exe.assign(4096, '\0');
    ssize_t n = ::readlink("/proc/self/exe", exe.data(), exe.size());
    if (n <= 0 || static_cast<size_t>(n) >= exe.size()) return {};
    exe.resize(static_cast<size_t>(n));
  }
  const std::string dir = exe.substr(0, exe.rfind('/') + 1);
  return {dir + kMpiPluginFile, dir + "../lib/chakraflow/" + kMpiPluginFile};
}

// The first of plugin_candidates(exe) that exists, or "".
std::string find_plugin(const std::string& exe, std::vector<std::string>* candidates) {
  *candidates = plugin_candidates(exe);
  for (const std::string& path : *candidates) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return path;
  }
  return "";
}

// Loads this binary's plugin (join calls it once; never unloaded: MPI libraries do not survive
// it). nullptr, with the reason in *why, when there is none or it does not load.
const ChakraflowMpi* load_plugin(std::string* why) {
  std::vector<std::string> candidates;
  const std::string path = find_plugin("", &candidates);
  if (path.empty()) {
    *why = candidates.empty()
               ? std::string("no path to look for it")
               : fmt::format("no {} in {}", kMpiPluginFile, fmt::join(candidates, " or "));
    return nullptr;
  }
  // RTLD_GLOBAL: MPI's own components (loaded by MPI_Init) resolve symbols of libmpi.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    *why = fmt::format("{} does not load: {}", path, err != nullptr ? err : "?");
    return nullptr;
  }
  auto entry = reinterpret_cast<const ChakraflowMpi* (*)()>(::dlsym(handle, kMpiPluginSymbol));
  const ChakraflowMpi* table = entry != nullptr ? entry() : nullptr;
  if (table == nullptr || table->abi != kMpiPluginAbi) {
    *why = fmt::format("{} is not this chakraflow's MPI plugin (abi {}, expected {})", path,
                       table != nullptr ? table->abi : -1, kMpiPluginAbi);
    return nullptr;
  }
  return table;
}

#endif  // CHAKRAFLOW_HAVE_MPI

}  // namespace

bool MpiWorld::available(const std::string& binary) {
#ifdef CHAKRAFLOW_HAVE_MPI
  std::vector<std::string> candidates;
  return !find_plugin(binary, &candidates).empty();
#else
  (void)binary;
  return false;
#endif
}

StatusOr<MpiWorld> MpiWorld::join() {
  int announced = launcher_world_size();
  if (announced == 0) return MpiWorld(0, 1, nullptr);
#ifdef CHAKRAFLOW_HAVE_MPI
  std::string why;
  const ChakraflowMpi* mpi = load_plugin(&why);
  if (mpi == nullptr && announced > 1) {
    return Status::errorf(
        "started by an MPI launcher with {} processes, but chakraflow's MPI plugin is missing "
        "({}; CHAKRAFLOW_MPI_PLUGIN names another): every process would run every rank",
        announced, why);
  }
  if (mpi == nullptr) return MpiWorld(0, 1, nullptr);  // one process: no need of MPI
  int process = 0, processes = 1;
  if (mpi->init(&process, &processes) != 0) return Status::error("MPI_Init_thread failed");
  return MpiWorld(process, processes, mpi);
#else
  if (announced > 1) {
    return Status::errorf(
        "started by an MPI launcher with {} processes, but this chakraflow was built without MPI "
        "(install libopenmpi-dev and rebuild; CMake prints 'chakraflow: MPI ...'): every process "
        "would run every rank",
        announced);
  }
  return MpiWorld(0, 1, nullptr);
#endif
}

MpiWorld::MpiWorld(MpiWorld&& other) noexcept
    : process_(other.process_), processes_(other.processes_), mpi_(other.mpi_) {
  other.mpi_ = nullptr;
}

MpiWorld::~MpiWorld() {
  if (mpi_ != nullptr) mpi_->finalize();
}

std::vector<std::string> MpiWorld::gather(const std::string& blob) const {
  if (mpi_ == nullptr) return {blob};
  // Sizes first, then the bytes in one gather. Blobs are summaries (kilobytes per rank), far
  // below MPI's int counts.
  int size = static_cast<int>(blob.size());
  std::vector<int> sizes(process_ == 0 ? processes_ : 0);
  mpi_->gather_int(size, sizes.data());
  std::vector<int> offsets(sizes.size());
  int total = 0;
  for (size_t p = 0; p < sizes.size(); ++p) {
    offsets[p] = total;
    total += sizes[p];
  }
  std::string all(static_cast<size_t>(total), '\0');
  mpi_->gather_bytes(blob.data(), size, all.data(), sizes.data(), offsets.data());
  std::vector<std::string> out;
  for (size_t p = 0; p < sizes.size(); ++p) out.push_back(all.substr(offsets[p], sizes[p]));
  return out;
}

int MpiWorld::broadcast(int value) const {
  return mpi_ != nullptr ? mpi_->broadcast_int(value) : value;
}

}  // namespace chakraflow
