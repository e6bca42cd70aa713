// A user's files are sacred (docs/bad_input.md): outputs that are not regular files are written
// to, never replaced; an output is never one of the inputs; an interrupted command leaves no
// temporary file, and the next one removes what a killed one left; endless input stops; flags that
// name nothing or too much are usage errors; `run` checks its whole configuration before any work.
// Special files are made in a temporary directory (mkfifo, mknod, symlink), never in /dev.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/testing/test_util.h"
#include "tests/testing/trace_builder.h"

extern char** environ;

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::TempDir;

const std::string kBin = CHAKRAFLOW_BINARY;
const std::string kBadInputs = std::string(CHAKRAFLOW_SOURCE_DIR) + "/tests/bad_inputs";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Names in `dir` that are temporary outputs ("<name>.tmp.<pid>.<n>").
std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) out.push_back(name);
  }
  return out;
}

// Reads a FIFO to its end on a thread (a writer blocks in open() until a reader is there).
class FifoReader {
 public:
  explicit FifoReader(std::string path)
      : thread_([this, path] {
          std::ifstream in(path, std::ios::binary);
          bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }) {}
  std::string get() {
    thread_.join();
    return bytes_;
  }

 private:
  std::string bytes_;
  std::thread thread_;
};

// A linked pair, its ET+, its .et and the .et as JSON: the reference bytes of each verb.
struct Fixture {
  TempDir dir;
  std::string host, device, et_plus, et, json;
  Fixture() {
    host = dir.file("host.json");
    device = dir.file("device.json");
    testing::write_text(host,
                        testing::HostBuilder().roots({{2, 1}}).node(3, "aten::mm", 2, 1, 1).json());
    testing::write_text(device, testing::KinetoBuilder()
                                    .cpu_op("aten::mm", 9, 10, 20, 1)
                                    .runtime("cudaLaunchKernel", 9, 12, 1, 4)
                                    .gpu("gemm", 15, 3, 4)
                                    .json());
    et_plus = dir.file("ref_et_plus.json");
    et = dir.file("ref.et");
    json = dir.file("ref.et.json");
    std::string out;
    EXPECT_EQ(run_command(link_to(et_plus), &out), 0) << out;
    EXPECT_EQ(run_command(kBin + " convert --input " + et_plus + " --output " + et, &out), 0)
        << out;
    EXPECT_EQ(run_command(kBin + " jsonize --input " + et + " --output " + json, &out), 0) << out;
  }
  std::string link_to(const std::string& output) const {
    return kBin + " link --chakra-host-trace " + host + " --chakra-device-trace " + device +
           " --output-file '" + output + "' --log-level ERROR";
  }
};

TEST(FileSafety, AFifoOutputIsWrittenToAndStaysAFifo) {
  Fixture f;
  const std::string fifo = f.dir.file("out.et");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  FifoReader reader(fifo);
  std::string out;
  ASSERT_EQ(run_command(kBin + " convert --quiet --input " + f.et_plus + " --output " + fifo, &out),
            0)
      << out;
  EXPECT_EQ(reader.get(), read_bytes(f.et));
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(temp_files(f.dir.path().string()).empty());
}

TEST(FileSafety, ADeviceOutputIsWrittenToAndStaysADevice) {
  Fixture f;
  // A null device of our own (mknod needs CAP_MKNOD: as root, as CI runs).
  const std::string null_dev = f.dir.file("null");
  if (::mknod(null_dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot make a character device here (" << std::strerror(errno)
                 << "): the FIFO and stream tests cover the same path";
  }
  std::string out;
  for (const std::string& cmd :
       {f.link_to(null_dev),
        kBin + " convert --quiet --input " + f.et_plus + " --output " + null_dev,
        kBin + " jsonize --quiet --input " + f.et + " --output " + null_dev}) {
    ASSERT_EQ(run_command(cmd, &out), 0) << cmd << "\n" << out;
    struct stat st {};
    ASSERT_EQ(::stat(null_dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << cmd << " replaced the device";
  }
  EXPECT_TRUE(temp_files(f.dir.path().string()).empty());
  // A device that refuses the bytes (a full device of our own): the write's own cause.
  const std::string full_dev = f.dir.file("full");
  ASSERT_EQ(::mknod(full_dev.c_str(), S_IFCHR | 0666, ::makedev(1, 7)), 0);
  EXPECT_EQ(run_command(kBin + " jsonize --quiet --input " + f.et + " --output " + full_dev, &out),
            1)
      << out;
  EXPECT_NE(out.find("full: write failed (No space left on device)"), std::string::npos) << out;
}

TEST(FileSafety, StandardOutputIsStreamedTo) {
  Fixture f;
  std::string out;
  // "-" and /dev/stdout, with the shell's redirection (the descriptor's file is written, as is).
  for (const std::string target : {"-", "/dev/stdout"}) {
    const std::string file = f.dir.file("stdout.json");
    ASSERT_EQ(run_command("(" + kBin + " jsonize --quiet --input " + f.et + " --output " + target +
                              " > " + file + ")",
                          &out),
              0)
        << out;
    EXPECT_EQ(read_bytes(file), read_bytes(f.json)) << target;
  }
  // Appending through `>>` appends.
  const std::string appended = f.dir.file("appended.json");
  testing::write_text(appended, "head\n");
  ASSERT_EQ(run_command("(" + kBin + " jsonize --quiet --input " + f.et +
                            " --output /dev/stdout >> " + appended + ")",
                        &out),
            0)
      << out;
  EXPECT_EQ(read_bytes(appended), "head\n" + read_bytes(f.json));
}

TEST(FileSafety, ASymlinkIsFollowedAndItsTargetReplaced) {
  Fixture f;
  const std::string target = f.dir.file("target.et");
  testing::write_text(target, "old bytes");
  const std::string link = f.dir.file("link.et");
  ASSERT_EQ(::symlink("target.et", link.c_str()), 0);  // relative, as users make them
  std::string out;
  ASSERT_EQ(run_command(kBin + " convert --quiet --input " + f.et_plus + " --output " + link, &out),
            0)
      << out;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_bytes(target), read_bytes(f.et));
  // A dangling link: its target is created.
  const std::string dangling = f.dir.file("dangling.et");
  ASSERT_EQ(::symlink("created.et", dangling.c_str()), 0);
  ASSERT_EQ(
      run_command(kBin + " convert --quiet --input " + f.et_plus + " --output " + dangling, &out),
      0)
      << out;
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_bytes(f.dir.file("created.et")), read_bytes(f.et));
  EXPECT_TRUE(temp_files(f.dir.path().string()).empty());
}

TEST(FileSafety, AnOutputThatIsAnInputIsRefused) {
  Fixture f;
  const std::string host_before = read_bytes(f.host);
  std::string out;
  // The host trace itself, by its own name and through a hard link.
  EXPECT_EQ(run_command(f.link_to(f.host), &out), 2) << out;
  EXPECT_NE(out.find("refusing to overwrite an input"), std::string::npos) << out;
  const std::string hard = f.dir.file("hard.json");
  ASSERT_EQ(::link(f.device.c_str(), hard.c_str()), 0);
  EXPECT_EQ(run_command(f.link_to(hard), &out), 2) << out;
  EXPECT_EQ(read_bytes(f.host), host_before);
  EXPECT_EQ(read_bytes(f.device), read_bytes(hard));
  // convert, jsonize and simulate.
  const std::string et_before = read_bytes(f.et);
  EXPECT_EQ(run_command(kBin + " convert --input " + f.et_plus + " --output " + f.et_plus, &out), 2)
      << out;
  EXPECT_EQ(run_command(kBin + " jsonize --input " + f.et + " --output " + f.et, &out), 2) << out;
  fs::copy_file(f.et, f.dir.file("t.0.et"));
  EXPECT_EQ(run_command(kBin + " simulate --traces " + f.dir.file("t.{rank}.et") +
                            " --ranks 1 --report-json " + f.dir.file("t.0.et"),
                        &out),
            2)
      << out;
  EXPECT_NE(out.find("refusing to overwrite an input"), std::string::npos) << out;
  EXPECT_EQ(read_bytes(f.et), et_before);
  // run: an ET+ output template that lands on the host traces.
  fs::create_directories(f.dir.path() / "out" / "et_plus");
  fs::copy_file(f.host, f.dir.file("out/et_plus/trace.0.json.gz"));
  fs::copy_file(f.device, f.dir.file("out/device.0.json"));
  testing::write_text(f.dir.file("run.yaml"),
                      "inputs:\n  host: out/et_plus/trace.{rank}.json.gz\n"
                      "  device: out/device.{rank}.json\n  ranks: 0\nstages: [link]\n"
                      "outputs:\n  dir: out\n  prefix: trace\n");
  const std::string run_host_before = read_bytes(f.dir.file("out/et_plus/trace.0.json.gz"));
  EXPECT_EQ(run_command(kBin + " run " + f.dir.file("run.yaml"), &out), 2) << out;
  EXPECT_NE(out.find("rank 0"), std::string::npos) << out;
  EXPECT_EQ(read_bytes(f.dir.file("out/et_plus/trace.0.json.gz")), run_host_before);
}

// Spawns `argv` with default signal actions (a test runner may ignore SIGINT), its output to
// /dev/null.
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// jsonize reading a FIFO that is fed half a trace and then kept open: the command waits for more
// with its temporary output on disk. Returns the jsonize pid and the FIFO's write end.
struct StuckJsonize {
  pid_t pid = -1;
  int fifo_fd = -1;
};

StuckJsonize start_stuck_jsonize(const Fixture& f, const std::string& input_fifo,
                                 const std::string& output) {
  StuckJsonize s;
  ::signal(SIGPIPE, SIG_IGN);  // a jsonize that died early fails the test, not the test binary
  if (::mkfifo(input_fifo.c_str(), 0644) != 0) return s;
  s.pid = spawn({kBin, "jsonize", "--input", input_fifo, "--output", output});
  s.fifo_fd = ::open(input_fifo.c_str(), O_WRONLY);  // waits for jsonize to open it
  // The GlobalMetadata, then the nodes again and again: more than the reader's first read of 64 KB
  // (zlib reads a pipe until its buffer is full), so that jsonize opens its output and waits.
  const std::string et = read_bytes(f.et);
  size_t metadata = 0, length = 0;  // the first record's length varint, then its bytes
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(et[metadata++]);
    length |= static_cast<size_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) break;
  }
  metadata += length;
  std::string bytes = et.substr(0, metadata);
  while (bytes.size() < (size_t{256} << 10)) bytes += et.substr(metadata);
  EXPECT_EQ(::write(s.fifo_fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return s;
}

bool wait_for_temp(const std::string& dir) {
  for (int i = 0; i < 1000; ++i) {
    if (!temp_files(dir).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(FileSafety, SignalsRemoveTheTemporaryOutput) {
  Fixture f;
  const std::string dir = f.dir.path().string();
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string fifo = f.dir.file("in.fifo");
    StuckJsonize s = start_stuck_jsonize(f, fifo, f.dir.file("out.json"));
    ASSERT_GT(s.pid, 0);
    ASSERT_TRUE(wait_for_temp(dir)) << "jsonize never opened its output";
    ASSERT_EQ(::kill(s.pid, sig), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(s.pid, &status, 0), s.pid);
    ::close(s.fifo_fd);
    // Dies of the signal (the shell reports 128 + n), and leaves nothing.
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_TRUE(temp_files(dir).empty());
    EXPECT_FALSE(fs::exists(f.dir.file("out.json")));
    fs::remove(fifo);
  }
}

TEST(FileSafety, TheNextRunRemovesWhatAKilledOneLeft) {
  Fixture f;
  const std::string dir = f.dir.path().string();
  const std::string fifo = f.dir.file("in.fifo");
  StuckJsonize s = start_stuck_jsonize(f, fifo, f.dir.file("out.json"));
  ASSERT_GT(s.pid, 0);
  ASSERT_TRUE(wait_for_temp(dir));
  ASSERT_EQ(::kill(s.pid, SIGKILL), 0);
  ::waitpid(s.pid, nullptr, 0);
  ::close(s.fifo_fd);
  ASSERT_EQ(temp_files(dir).size(), 1u) << "SIGKILL cannot be caught: its temporary file stays";
  // Files that only look alike are not ours, or belong to a live process: they stay.
  const std::string user_file = f.dir.file("out.json.tmp.notes");
  const std::string live = f.dir.file(fmt::format("out.json.tmp.{}.0", ::getpid()));
  testing::write_text(user_file, "mine");
  testing::write_text(live, "a live process's");
  std::string out;
  ASSERT_EQ(
      run_command(kBin + " jsonize --quiet --input " + f.et + " --output " + f.dir.file("out.json"),
                  &out),
      0)
      << out;
  std::vector<std::string> left = temp_files(dir);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{fs::path(live).filename().string(),
                                            fs::path(user_file).filename().string()}));
  EXPECT_EQ(read_bytes(f.dir.file("out.json")), read_bytes(f.json));
}

TEST(FileSafety, RunResumeRemovesStaleTemporaryFiles) {
  Fixture f;
  fs::create_directories(f.dir.path() / "traces");
  fs::copy_file(f.host, f.dir.file("traces/host.0.json"));
  fs::copy_file(f.device, f.dir.file("traces/device.0.json"));
  testing::write_text(
      f.dir.file("run.yaml"),
      "inputs:\n  host: traces/host.{rank}.json\n  device: traces/device.{rank}.json\n"
      "  ranks: 0\nstages: [link, convert]\noutputs:\n  dir: out\n  prefix: trace\n"
      "  keep_et_plus: true\n");
  std::string out;
  ASSERT_EQ(run_command(kBin + " run --quiet " + f.dir.file("run.yaml"), &out), 0) << out;
  // What a process killed with SIGKILL leaves: a pid that has exited.
  const pid_t gone = spawn({"/bin/true"});
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale_et = f.dir.file(fmt::format("out/trace.0.et.tmp.{}.3", gone));
  const std::string stale_plus =
      f.dir.file(fmt::format("out/et_plus/trace.0.json.gz.tmp.{}.0", gone));
  testing::write_text(stale_et, "partial");
  testing::write_text(stale_plus, "partial");
  // The rank is up to date and skipped; its stale files go all the same.
  ASSERT_EQ(run_command(kBin + " run --resume " + f.dir.file("run.yaml"), &out), 0) << out;
  EXPECT_NE(out.find("1 skipped"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(stale_et));
  EXPECT_FALSE(fs::exists(stale_plus));
}

TEST(FileSafety, EndlessInputStopsWithALocatedError) {
  Fixture f;
  std::string out;
  // A zero device of our own (as root, as CI runs; else the system's, which is only read).
  std::string zero = f.dir.file("zero");
  if (::mknod(zero.c_str(), S_IFCHR | 0444, ::makedev(1, 5)) != 0) zero = "/dev/zero";
  // `timeout` turns a hang into a failure of this test, not of CI.
  const std::string t = "timeout 60 ";
  EXPECT_EQ(run_command(t + kBin + " jsonize --input " + zero + " --output " + f.dir.file("z.json"),
                        &out),
            1)
      << out;
  EXPECT_NE(out.find(zero + ": record #2 at byte 2: a second empty record"), std::string::npos)
      << out;
  EXPECT_EQ(run_command(t + kBin + " link --chakra-host-trace " + zero + " --chakra-device-trace " +
                            f.device + " --output-file " + f.dir.file("z_plus.json"),
                        &out),
            1)
      << out;
  EXPECT_NE(out.find(zero + ": byte 0: a NUL byte: not a text file"), std::string::npos) << out;
  EXPECT_EQ(
      run_command(t + kBin + " convert --input " + zero + " --output " + f.dir.file("z.et"), &out),
      1)
      << out;
  EXPECT_NE(out.find(zero + ": byte 0"), std::string::npos) << out;
  EXPECT_EQ(run_command(t + kBin + " run " + zero, &out), 2) << out;
  EXPECT_NE(out.find(zero + ": byte 0"), std::string::npos) << out;
  fs::remove(f.dir.file("zero"));
  EXPECT_TRUE(temp_files(f.dir.path().string()).empty());
  // A pipe that ends is read to its end: the host trace from a FIFO links as from its file.
  const std::string fifo = f.dir.file("host.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << read_bytes(f.host); });
  const int rc = run_command(kBin + " link --chakra-host-trace " + fifo +
                                 " --chakra-device-trace " + f.device + " --output-file " +
                                 f.dir.file("from_fifo.json") + " --log-level ERROR",
                             &out);
  writer.join();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(read_bytes(f.dir.file("from_fifo.json")), read_bytes(f.et_plus));
}

TEST(FileSafety, FlagsThatNameNothingOrTooMuchAreUsageErrors) {
  Fixture f;
  std::string out;
  EXPECT_EQ(run_command(f.link_to(""), &out), 2) << out;
  EXPECT_NE(out.find("'--output-file': the file name is empty"), std::string::npos) << out;
  EXPECT_EQ(run_command(kBin + " convert --input " + f.et_plus + " --output ''", &out), 2) << out;
  EXPECT_EQ(run_command(kBin + " jsonize --input '' --output x.json", &out), 2) << out;
  EXPECT_EQ(run_command(f.link_to(f.dir.file("t.json")) + " --threads 100000", &out), 2) << out;
  EXPECT_NE(out.find("'--threads': 100000 is out of range (between 0 and 4096)"), std::string::npos)
      << out;
  EXPECT_EQ(run_command(f.link_to(f.dir.file("t.json")) + " --threads -1", &out), 2) << out;
  EXPECT_EQ(run_command(kBin + " convert --input " + f.et_plus + " --output " + f.dir.file("t.et") +
                            " --threads 100000",
                        &out),
            2)
      << out;
  EXPECT_NE(out.find("'--threads': 100000 is out of range (between 0 and 4096)"), std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(f.dir.file("t.et")));
  EXPECT_EQ(run_command(kBin + " simulate --traces " + f.et + " --ranks 1 --threads 100000", &out),
            2)
      << out;
  EXPECT_FALSE(fs::exists(f.dir.file("t.json")));
}

TEST(FileSafety, EtWithoutMetadataOrWithAnUnknownTypeIsTreatedAlikeByEveryReader) {
  TempDir dir;
  std::string out;
  // No GlobalMetadata: every reader takes all the nodes and says so.
  const std::string missing = kBadInputs + "/et/missing_metadata.et";
  ASSERT_EQ(
      run_command(kBin + " jsonize --input " + missing + " --output " + dir.file("m.json"), &out),
      0)
      << out;
  EXPECT_NE(out.find("no GlobalMetadata record"), std::string::npos) << out;
  EXPECT_NE(out.find("4 nodes"), std::string::npos) << out;
  EXPECT_EQ(testing::read_text(dir.file("m.json")).find("globalMetadata"), std::string::npos);
  ASSERT_EQ(run_command(kBin + " feed " + missing, &out), 0) << out;
  EXPECT_NE(out.find("no GlobalMetadata record"), std::string::npos) << out;
  fs::copy_file(missing, dir.file("m.0.et"));
  ASSERT_EQ(
      run_command(kBin + " simulate --traces " + dir.file("m.{rank}.et") + " --ranks 1", &out), 0)
      << out;
  EXPECT_NE(out.find("without a GlobalMetadata record"), std::string::npos) << out;
  // A node type the schema does not have: an error everywhere, naming the node's record.
  const std::string bad_type = kBadInputs + "/et/node_type_999.et";
  EXPECT_EQ(
      run_command(kBin + " jsonize --input " + bad_type + " --output " + dir.file("t.json"), &out),
      1)
      << out;
  EXPECT_NE(out.find("record #2 at byte"), std::string::npos) << out;
  EXPECT_NE(out.find("type 999 is not a NodeType"), std::string::npos) << out;
  EXPECT_NE(run_command(kBin + " feed " + bad_type, &out), 0) << out;
  EXPECT_NE(out.find("(type) is 999, not a NodeType"), std::string::npos) << out;
  fs::copy_file(bad_type, dir.file("b.0.et"));
  EXPECT_NE(
      run_command(kBin + " simulate --traces " + dir.file("b.{rank}.et") + " --ranks 1", &out), 0)
      << out;
  EXPECT_NE(out.find("(type) is 999, not a NodeType"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir.file("t.json")));
}

TEST(FileSafety, RunChecksItsWholeConfigurationBeforeAnyWork) {
  Fixture f;
  fs::create_directories(f.dir.path() / "traces");
  fs::copy_file(f.host, f.dir.file("traces/host.0.json"));
  fs::copy_file(f.device, f.dir.file("traces/device.0.json"));
  const std::string inputs =
      "inputs:\n  host: traces/host.{rank}.json\n  device: traces/device.{rank}.json\n  ranks: 0\n";
  std::string out;
  // A simulator configuration that is not there: exit 2, a line that names it, nothing written.
  testing::write_text(f.dir.file("sim.yaml"), inputs +
                                                  "stages: [link, convert, simulate]\n"
                                                  "simulate:\n  config: missing_sim.yaml\n"
                                                  "outputs:\n  dir: out\n");
  EXPECT_EQ(run_command(kBin + " run " + f.dir.file("sim.yaml"), &out), 2) << out;
  EXPECT_NE(out.find("simulate.config"), std::string::npos) << out;
  EXPECT_NE(out.find("missing_sim.yaml: cannot open"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(f.dir.file("out/trace.0.et")));
  // An output directory that cannot be made: the real cause, once, before any rank.
  testing::write_text(f.dir.file("a_file"), "");
  testing::write_text(f.dir.file("blocked.yaml"),
                      inputs + "stages: [link, convert]\noutputs:\n  dir: a_file/out\n");
  EXPECT_EQ(run_command(kBin + " run " + f.dir.file("blocked.yaml"), &out), 2) << out;
  EXPECT_NE(out.find("cannot create the output directory: Not a directory"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("rank 0"), std::string::npos) << out;
  EXPECT_EQ(out.find("No such file or directory"), std::string::npos) << out;
  if (::geteuid() != 0) {  // root writes into read-only directories
    fs::create_directories(f.dir.path() / "ro");
    fs::permissions(f.dir.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    testing::write_text(f.dir.file("ro.yaml"),
                        inputs + "stages: [link, convert]\noutputs:\n  dir: ro/out\n");
    EXPECT_EQ(run_command(kBin + " run " + f.dir.file("ro.yaml"), &out), 2) << out;
    EXPECT_NE(out.find("Permission denied"), std::string::npos) << out;
    fs::permissions(f.dir.path() / "ro", fs::perms::owner_all);
  }
}

}  // namespace
}  // namespace chakraflow
