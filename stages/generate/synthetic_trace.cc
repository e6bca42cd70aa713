#include "stages/generate/synthetic_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace chakraflow {
namespace {

using TimeNs = int64_t;

// splitmix64: small, fast, and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t s_;
};

constexpr int kComputeStream = 7;
constexpr int kNcclStream = 20;
constexpr size_t kFlush = 1 << 20;

void append_us(std::string& out, TimeNs ns) {
  out += std::to_string(ns / 1000);
  if (ns % 1000 != 0) {
    int frac = static_cast<int>(std::llabs(ns % 1000));
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03d", frac);
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
}

struct Tensor {
  uint64_t id, storage;
  int64_t rows, cols;
};

struct OpenOp {
  uint64_t id = 0;
  uint64_t rf = 0;
  uint64_t parent = 0;
  uint64_t external = 0;
  std::string name;
  std::string schema;
  std::string inputs_values, inputs_shapes, inputs_types, inputs_strides;
  std::string outputs_values, outputs_shapes, outputs_types, outputs_strides;
  std::string extra_attrs;  // already formatted ",{...}" entries (1.1.x comm attrs)
  bool annotation = false;  // user_annotation in the device trace
  TimeNs ts = 0;
  int64_t seq = -1;
};

class RankGenerator {
 public:
  RankGenerator(const SynthOptions& opt, int rank, const TextSink& host, const TextSink& device)
      : opt_(opt),
        rank_(rank),
        host_sink_(host),
        device_sink_(device),
        rng_(opt.seed * 1000003 + static_cast<uint64_t>(rank)),
        shared_rng_(opt.seed * 7919 + 17) {
    pid_ = 4000 + rank;
    os_tid_[0] = pid_;
    os_tid_[1] = pid_ + 211;
    clock_[0] = clock_[1] = TimeNs{1700000000000000} * 1000 + TimeNs{rank} * 1337;
  }

  SynthRankStats run() {
    host_ += "{\"schema\": \"";
    host_ += opt_.legacy ? "1.0.1" : "1.1.1-chakra.0.0.4";
    host_ += fmt::format(
        "\", \"pid\": {}, \"time\": \"2026-01-01 00:00:00\", \"start_ts\": {}, \"nodes\": [\n",
        pid_, clock_[0] / 1000000);
    device_ += fmt::format(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": \"Synthetic GPU\", "
        "\"totalGlobalMem\": 85899345920}}], \"distributedInfo\": {{\"backend\": \"nccl\", "
        "\"rank\": {}, "
        "\"world_size\": {}}}, \"traceEvents\": [\n",
        rank_, opt_.ranks);
    // Thread roots are written at the end (they exit last); their ids come first.
    thread_root_[0] = new_id();
    thread_root_[1] = new_id();
    pg_init();
    const int layers = synth_layers(opt_.scale);
    for (int it = 0; it < opt_.iterations; ++it) iteration(it, layers);
    // Roots: threads then the process, as the observer writes them.
    for (int t = 0; t < 2; ++t) {
      OpenOp root;
      root.id = thread_root_[t];
      root.parent = 1;
      root.name = "[pytorch|profiler|execution_trace|thread]";
      write_host(root, t, /*scope=*/7);
    }
    OpenOp process;
    process.id = 1;
    process.parent = 1;
    process.name = "[pytorch|profiler|execution_trace|process]";
    write_host(process, 0, 7, /*tid_override=*/0);
    host_ += fmt::format("\n], \"finish_ts\": {}}}\n", clock_[0] / 1000000 + 1);
    device_ += fmt::format("\n], \"traceName\": \"rank{}\"}}\n", rank_);
    flush(true);
    return stats_;
  }

 private:
  uint64_t new_id() { return next_id_++; }

  // ---------- host ET ----------
  void write_host(const OpenOp& op, int thread, int scope, int tid_override = -1) {
    if (host_nodes_ > 0) host_ += ",\n";
    ++host_nodes_;
    ++stats_.host_nodes;
    int tid = tid_override >= 0 ? tid_override : thread + 1;
    auto or_empty = [](const std::string& s) {
      return s.empty() ? std::string("[]") : "[" + s + "]";
    };
    if (opt_.legacy) {
      host_ += fmt::format(
          "{{\"name\": \"{}\", \"id\": {}, \"rf_id\": {}, \"parent\": {}, \"fw_parent\": 0, "
          "\"seq_id\": {}, "
          "\"scope\": {}, \"tid\": {}, \"fw_tid\": {}, \"op_schema\": \"{}\", \"inputs\": {}, "
          "\"input_shapes\": {}, "
          "\"input_types\": {}, \"outputs\": {}, \"output_shapes\": {}, \"output_types\": {}}}",
          op.name, op.id, op.rf, op.parent, op.seq, scope, tid, thread == 1 ? 1 : 0, op.schema,
          or_empty(op.inputs_values), or_empty(op.inputs_shapes), or_empty(op.inputs_types),
          or_empty(op.outputs_values), or_empty(op.outputs_shapes), or_empty(op.outputs_types));
    } else {
      host_ += fmt::format(
          "{{\"id\": {}, \"name\": \"{}\", \"ctrl_deps\": {}, \"inputs\": {{\"values\": {}, "
          "\"shapes\": {}, "
          "\"types\": {}, \"strides\": {}}}, \"outputs\": {{\"values\": {}, \"shapes\": {}, "
          "\"types\": {}, "
          "\"strides\": {}}}, \"attrs\": [{{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": "
          "{}}}, "
          "{{\"name\": \"fw_parent\", \"type\": \"uint64\", \"value\": 0}}, {{\"name\": "
          "\"seq_id\", \"type\": "
          "\"int64\", \"value\": {}}}, {{\"name\": \"scope\", \"type\": \"uint64\", \"value\": "
          "{}}}, {{\"name\": "
          "\"tid\", \"type\": \"uint64\", \"value\": {}}}, {{\"name\": \"fw_tid\", \"type\": "
          "\"uint64\", \"value\": "
          "{}}}, {{\"name\": \"op_schema\", \"type\": \"string\", \"value\": \"{}\"}}{}]}}",
          op.id, op.name, op.parent, or_empty(op.inputs_values), or_empty(op.inputs_shapes),
          or_empty(op.inputs_types), or_empty(op.inputs_strides), or_empty(op.outputs_values),
          or_empty(op.outputs_shapes), or_empty(op.outputs_types), or_empty(op.outputs_strides),
          op.rf, op.seq, scope, tid, thread == 1 ? 1 : 0, op.schema, op.extra_attrs);
    }
    flush(false);
  }

  // ---------- device trace ----------
  void event(const std::string& json) {
    if (device_events_ > 0) device_ += ",\n";
    ++device_events_;
    ++stats_.device_events;
    device_ += json;
    flush(false);
  }

  std::string times(TimeNs ts, TimeNs dur) {
    std::string s = "\"ts\": ";
    append_us(s, ts);
    s += ", \"dur\": ";
    append_us(s, dur);
    return s;
  }

  void flush(bool force) {
    if (force || host_.size() > kFlush) {
      host_sink_(host_);
      host_.clear();
    }
    if (force || device_.size() > kFlush) {
      device_sink_(device_);
      device_.clear();
    }
  }

  // ---------- ops ----------
  OpenOp& begin(int thread, std::string name, std::string schema = "", bool annotation = false) {
    auto& stack = stack_[thread];
    OpenOp op;
    op.id = new_id();
    op.rf = next_rf_++;
    op.parent = stack.empty() ? thread_root_[thread] : stack.back().id;
    op.external = next_external_++;
    op.name = std::move(name);
    op.schema = std::move(schema);
    op.annotation = annotation;
    op.ts = clock_[thread];
    op.seq = thread == 0 && !annotation ? static_cast<int64_t>(next_seq_++) : -1;
    clock_[thread] += rng_.range(1000, 4000);
    stack.push_back(std::move(op));
    return stack.back();
  }

  void end(int thread) {
    auto& stack = stack_[thread];
    clock_[thread] += rng_.range(1000, 3000);
    OpenOp op = std::move(stack.back());
    stack.pop_back();
    TimeNs dur = clock_[thread] - op.ts;
    event(fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, {}, "
        "\"args\": {{\"External id\": "
        "{}, \"Record function id\": {}, \"Ev Idx\": {}{}}}}}",
        op.annotation ? "user_annotation" : "cpu_op", op.name, pid_, os_tid_[thread],
        times(op.ts, dur), op.external, op.rf, op.rf - 1,
        op.seq >= 0 ? fmt::format(", \"Sequence number\": {}", op.seq) : std::string()));
    write_host(op, thread, op.annotation ? 7 : 0);
    clock_[thread] += rng_.range(500, 2000);
  }

  void add_tensor_input(OpenOp& op, const Tensor& t) {
    auto sep = [](std::string& s) {
      if (!s.empty()) s += ", ";
    };
    sep(op.inputs_values);
    op.inputs_values +=
        fmt::format("[{}, {}, 0, {}, 4, \"cuda:0\"]", t.id, t.storage, t.rows * t.cols);
    sep(op.inputs_shapes);
    op.inputs_shapes += fmt::format("[{}, {}]", t.rows, t.cols);
    sep(op.inputs_types);
    op.inputs_types += "\"Tensor(float)\"";
    sep(op.inputs_strides);
    op.inputs_strides += fmt::format("[{}, 1]", t.cols);
  }
  void set_tensor_output(OpenOp& op, const Tensor& t) {
    op.outputs_values =
        fmt::format("[{}, {}, 0, {}, 4, \"cuda:0\"]", t.id, t.storage, t.rows * t.cols);
    op.outputs_shapes = fmt::format("[{}, {}]", t.rows, t.cols);
    op.outputs_types = "\"Tensor(float)\"";
    op.outputs_strides = fmt::format("[{}, 1]", t.cols);
  }
  Tensor tensor(int64_t rows, int64_t cols) {
    uint64_t id = new_id();
    return Tensor{id, new_id(), rows, cols};
  }

  // A runtime call on `thread` inside the innermost open op; returns its correlation id.
  uint64_t runtime(int thread, const std::string& name, TimeNs dur, int cbid) {
    uint64_t corr = next_correlation_++;
    uint64_t ext = stack_[thread].empty() ? 0 : stack_[thread].back().external;
    TimeNs ts = clock_[thread];
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
                    "\"tid\": {}, {}, \"args\": "
                    "{{\"External id\": {}, \"cbid\": {}, \"correlation\": {}}}}}",
                    name, pid_, os_tid_[thread], times(ts, dur), ext, cbid, corr));
    last_runtime_end_ = ts + dur;
    clock_[thread] += dur + rng_.range(200, 800);
    return corr;
  }

  // Launches a GPU op (kernel, memcpy or memset) from the innermost open op of `thread`.
  TimeNs launch(int thread, const std::string& kernel, int stream, TimeNs gpu_dur,
                const char* cat = "kernel", const char* api = "cudaLaunchKernel",
                const std::string& extra_args = "") {
    uint64_t ext = stack_[thread].back().external;
    TimeNs launch_ts = clock_[thread];
    uint64_t corr = runtime(thread, api, rng_.range(3000, 9000), api[4] == 'L' ? 211 : 51);
    TimeNs start = std::max(stream_free(stream), last_runtime_end_ + rng_.range(2000, 6000));
    stream_free(stream) = start + gpu_dur;
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": 0, \"tid\": {}, "
                    "{}, \"args\": {{\"External id\": "
                    "{}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": {}, "
                    "\"correlation\": {}{}}}}}",
                    cat, kernel, stream, times(start, gpu_dur), ext, stream, corr, extra_args));
    // Flow arrows from the launch to the GPU op, as Kineto writes them.
    event(
        fmt::format("{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": "
                    "\"ac2g\", \"name\": \"ac2g\"}}",
                    corr, pid_, os_tid_[thread], launch_ts / 1000));
    event(
        fmt::format("{{\"ph\": \"f\", \"id\": {}, \"pid\": 0, \"tid\": {}, \"ts\": {}, \"cat\": "
                    "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                    corr, stream, start / 1000));
    ++stats_.kernels;
    return start + gpu_dur;
  }

  TimeNs& stream_free(int stream) { return stream == kNcclStream ? nccl_free_ : compute_free_; }

  // The compute stream waits for the NCCL stream (cudaEventRecord + cudaStreamWaitEvent), or the
  // reverse; written like Kineto's cuda_sync "Stream Wait Event".
  void stream_wait(int thread, int waiting_stream, int on_stream) {
    uint64_t record = runtime(thread, "cudaEventRecord", rng_.range(2000, 5000), 135);
    uint64_t event_id = next_event_++;
    TimeNs ts = clock_[thread];
    uint64_t corr = runtime(thread, "cudaStreamWaitEvent", rng_.range(2000, 4000), 147);
    TimeNs ready = stream_free(on_stream);
    stream_free(waiting_stream) = std::max(stream_free(waiting_stream), ready);
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", "
                    "\"pid\": 0, \"tid\": {}, {}, "
                    "\"args\": {{\"External id\": {}, \"cuda_sync_kind\": \"Stream Wait Event\", "
                    "\"wait_on_stream\": {}, "
                    "\"wait_on_cuda_event_record_corr_id\": {}, \"wait_on_cuda_event_id\": {}, "
                    "\"stream\": {}, \"correlation\": "
                    "{}, \"device\": 0, \"context\": 1}}}}",
                    waiting_stream, times(ts + 1000, 2000), stack_[thread].back().external,
                    on_stream, record, event_id, waiting_stream, corr));
  }

  void device_sync(int thread) {
    TimeNs ts = clock_[thread];
    TimeNs until = std::max({ts + 5000, compute_free_, nccl_free_});
    uint64_t corr = next_correlation_++;
    uint64_t ext = stack_[thread].back().external;
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                    "\"cudaDeviceSynchronize\", \"pid\": {}, \"tid\": {}, {}, "
                    "\"args\": {{\"External id\": {}, \"cbid\": 165, \"correlation\": {}}}}}",
                    pid_, os_tid_[thread], times(ts, until - ts), ext, corr));
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Context Sync\", \"pid\": "
                    "0, \"tid\": -1, {}, \"args\": "
                    "{{\"External id\": {}, \"cuda_sync_kind\": \"Context Sync\", \"stream\": -1, "
                    "\"correlation\": {}, \"device\": 0, "
                    "\"context\": 1}}}}",
                    times(ts + 1000, until - ts - 1000), ext, corr));
    clock_[thread] = until + rng_.range(1000, 3000);
  }

  TimeNs kernel_time(int64_t flops_scale) { return rng_.range(8000, 12000) * flops_scale / 10; }

  void pg_init() {
    OpenOp& op = begin(0, "## process_group:init ##", "", true);
    std::string ranks;
    for (int r = 0; r < opt_.ranks; ++r) ranks += (r ? ", " : "") + std::to_string(r);
    std::string desc = fmt::format(
        "[{{\\\"pg_name\\\": \\\"0\\\", \\\"pg_desc\\\": \\\"default_pg\\\", \\\"backend_id\\\": "
        "1, \\\"backend_config\\\": "
        "\\\"cuda:nccl\\\", \\\"ranks\\\": [{}], \\\"group_size\\\": {}, \\\"group_count\\\": 1}}]",
        ranks, opt_.ranks);
    op.inputs_values = "\"" + desc + "\"";
    op.inputs_shapes = "[]";
    op.inputs_types = "\"String\"";
    op.inputs_strides = "[]";
    end(0);
  }

  void iteration(int it, int layers) {
    // ProfilerStep annotation (device trace only): written when the step ends.
    TimeNs step_start = clock_[0];
    const int64_t batch = 64;
    const int64_t width = 1024;
    const std::vector<Tensor> activations = forward(layers, batch, width);
    // Backward on the autograd thread, after a gap (the engine picks the work up).
    clock_[1] = std::max(clock_[1], clock_[0]) + rng_.range(1500000, 2500000);
    backward(layers, width, activations);
    // Optimizer on the main thread, after the backward pass (and its gap).
    clock_[0] = std::max(clock_[0], clock_[1]) + rng_.range(1200000, 2000000);
    optimizer_step(layers);
    TimeNs step_end = clock_[0];
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
                    "\"pid\": {}, \"tid\": {}, {}, "
                    "\"args\": {{\"External id\": {}}}}}",
                    it, pid_, os_tid_[0], times(step_start - 500, step_end - step_start + 1000),
                    next_external_++));
    clock_[0] += rng_.range(2000000, 3000000);
    clock_[1] = std::max(clock_[1], clock_[0]);
  }

  // The forward pass on the main thread: per layer, linear then relu; then a zeroed buffer.
  // Returns each layer's linear output (what the backward pass reads).
  std::vector<Tensor> forward(int layers, int64_t batch, int64_t width) {
    std::vector<Tensor> activations;
    Tensor x = tensor(batch, width);
    begin(0, "## forward ##", "", true);
    for (int l = 0; l < layers; ++l) {
      x = linear(x, batch, width);
      OpenOp& relu = begin(0, "aten::relu", "aten::relu(Tensor self) -> Tensor");
      add_tensor_input(relu, x);
      Tensor r = tensor(batch, width);
      set_tensor_output(relu, r);
      launch(0,
             "void at::native::vectorized_elementwise_kernel<4, relu_functor<float>>(int, "
             "relu_functor<float>)",
             kComputeStream, kernel_time(3));
      end(0);
      activations.push_back(x);
      x = r;
    }
    {
      begin(0, "aten::zeros", "");
      begin(0, "aten::zero_", "");
      launch(0, "Memset (Device)", kComputeStream, rng_.range(1000, 2000), "gpu_memset",
             "cudaMemsetAsync");
      end(0);
      end(0);
    }
    end(0);  // forward
    return activations;
  }

  // aten::linear of `x` with a new weight and bias (transpose, then addmm and its GEMM kernel);
  // returns its output.
  Tensor linear(const Tensor& x, int64_t batch, int64_t width) {
    Tensor w = tensor(width, width), b = tensor(1, width);
    begin(0, "aten::linear",
          "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
    OpenOp& t = begin(0, "aten::t", "aten::t(Tensor(a) self) -> Tensor(a)");
    add_tensor_input(t, w);
    begin(0, "aten::transpose",
          "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
    begin(0, "aten::as_strided", "");
    end(0);
    end(0);
    end(0);
    Tensor y = tensor(batch, width);
    OpenOp& mm = begin(0, "aten::addmm",
                       "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                       "Scalar alpha=1) -> Tensor");
    add_tensor_input(mm, b);
    add_tensor_input(mm, x);
    add_tensor_input(mm, w);
    set_tensor_output(mm, y);
    launch(0, "void gemm_kernel<float, 128, 64>(GemmParams)", kComputeStream, kernel_time(40));
    end(0);
    end(0);  // linear
    return y;
  }

  // The backward pass on the autograd thread, last layer first, the gradients all-reduced in
  // buckets of a quarter of the layers.
  void backward(int layers, int64_t width, const std::vector<Tensor>& activations) {
    const int bucket = std::max(1, layers / 4);
    int pending = 0;
    for (int l = layers - 1; l >= 0; --l) {
      begin(1, "autograd::engine::evaluate_function: ReluBackward0");
      begin(1, "ReluBackward0");
      begin(1, "aten::threshold_backward", "");
      launch(1,
             "void at::native::vectorized_elementwise_kernel<4, threshold_backward<float>>(int, "
             "threshold_backward<float>)",
             kComputeStream, kernel_time(3));
      end(1);
      end(1);
      end(1);
      begin(1, "autograd::engine::evaluate_function: AddmmBackward0");
      begin(1, "AddmmBackward0");
      for (int k = 0; k < 2; ++k) {
        OpenOp& mm = begin(1, "aten::mm", "aten::mm(Tensor self, Tensor mat2) -> Tensor");
        add_tensor_input(mm, activations[static_cast<size_t>(l)]);
        launch(1, "void gemm_kernel<float, 128, 64>(GemmParams)", kComputeStream, kernel_time(40));
        end(1);
      }
      end(1);
      end(1);
      if (++pending == bucket || l == 0) {
        all_reduce(1, pending * (width * width + width));
        pending = 0;
      }
    }
  }

  // The optimizer step on the main thread (after the gradients' stream), then the loss read back
  // (a copy to the host and a device synchronization).
  void optimizer_step(int layers) {
    begin(0, "Optimizer.step#SGD.step", "", true);
    stream_wait(0, kComputeStream, kNcclStream);
    begin(0, "aten::_foreach_add_", "");
    launch(0, "void at::native::multi_tensor_apply_kernel<TensorListMetadata<3>>(...)",
           kComputeStream, kernel_time(static_cast<int64_t>(layers) * 2));
    end(0);
    end(0);
    begin(0, "aten::item", "");
    begin(0, "aten::_local_scalar_dense", "");
    launch(0, "Memcpy DtoH (Device -> Pinned)", kComputeStream, rng_.range(2000, 3000),
           "gpu_memcpy", "cudaMemcpyAsync");
    device_sync(0);
    end(0);
    end(0);
  }

  void all_reduce(int thread, int64_t numel) {
    ++stats_.collectives;
    uint64_t seq = next_collective_++;
    begin(thread, "c10d::allreduce_", "");
    OpenOp& rpc = begin(thread, "record_param_comms", "");
    // The bucket's tensor, [tensor id, storage id, offset, numel, element size, device]: on
    // record_param_comms and, as PyTorch records it, on the nccl: op below, whose GPU kernel
    // the converter sizes (comm_size = numel * 4 bytes).
    const std::string tensor =
        fmt::format("[{}, {}, 0, {}, 4, \"cuda:0\"]", new_id(), new_id(), numel);
    rpc.inputs_values = fmt::format("[{}], {}, [\"0\", \"default_pg\"]", tensor, seq);
    rpc.inputs_shapes = fmt::format("[[{}]], [], []", numel);
    rpc.inputs_types = "\"GenericList[Tensor(float)]\", \"Int\", \"Tuple[String,String]\"";
    rpc.inputs_strides = "[[1]], [], []";
    if (!opt_.legacy) {
      rpc.extra_attrs = fmt::format(
          ", {{\"name\": \"collective_name\", \"type\": \"string\", \"value\": \"allreduce\"}}, "
          "{{\"name\": \"dtype\", "
          "\"type\": \"string\", \"value\": \"Float\"}}, {{\"name\": \"in_msg_nelems\", \"type\": "
          "\"uint64\", \"value\": "
          "{0}}}, {{\"name\": \"out_msg_nelems\", \"type\": \"uint64\", \"value\": {0}}}, "
          "{{\"name\": \"in_split_size\", "
          "\"type\": \"string\", \"value\": \"[]\"}}, {{\"name\": \"out_split_size\", \"type\": "
          "\"string\", \"value\": "
          "\"[]\"}}, {{\"name\": \"global_rank_start\", \"type\": \"uint64\", \"value\": 0}}, "
          "{{\"name\": "
          "\"global_rank_stride\", \"type\": \"uint64\", \"value\": 1}}, {{\"name\": \"pg_name\", "
          "\"type\": \"string\", "
          "\"value\": \"0\"}}, {{\"name\": \"pg_desc\", \"type\": \"string\", \"value\": "
          "\"default_pg\"}}, {{\"name\": "
          "\"pg_size\", \"type\": \"uint64\", \"value\": {1}}}",
          numel, opt_.ranks);
    }
    stream_wait(thread, kNcclStream, kComputeStream);
    OpenOp& nccl = begin(thread, "nccl:all_reduce", "");
    nccl.inputs_values = tensor;  // the fields are lists of inputs: one tensor here
    nccl.inputs_shapes = fmt::format("[{}]", numel);
    nccl.inputs_types = "\"Tensor(float)\"";
    nccl.inputs_strides = "[1]";
    // The same duration on every rank: bandwidth-bound ring all-reduce plus a skew-absorbing wait.
    TimeNs bytes = numel * 4;
    TimeNs base = static_cast<TimeNs>(2.0 * (opt_.ranks - 1) / std::max(1, opt_.ranks) *
                                      static_cast<double>(bytes) / 100.0) +
                  20000;
    TimeNs wait = static_cast<TimeNs>(shared_rng_.range(0, 20000));
    launch(
        thread, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        kNcclStream, base + wait, "kernel", "cudaLaunchKernel", ", \"Process Group Name\": \"0\"");
    end(thread);
    end(thread);
    end(thread);
  }

  const SynthOptions& opt_;
  int rank_;
  const TextSink& host_sink_;
  const TextSink& device_sink_;
  Rng rng_;
  Rng shared_rng_;  // same sequence on every rank: collective sizes and durations
  int64_t pid_ = 0;
  int64_t os_tid_[2] = {0, 0};
  TimeNs clock_[2] = {0, 0};
  TimeNs compute_free_ = 0, nccl_free_ = 0, last_runtime_end_ = 0;
  uint64_t next_id_ = 2, next_rf_ = 1, next_external_ = 1, next_correlation_ = 1, next_seq_ = 1,
           next_event_ = 1;
  uint64_t next_collective_ = 0;
  uint64_t thread_root_[2] = {0, 0};
  std::vector<OpenOp> stack_[2];
  std::string host_, device_;
  uint64_t host_nodes_ = 0, device_events_ = 0;
  SynthRankStats stats_;
};

}  // namespace

int synth_layers(double scale) {
  return std::max(1, static_cast<int>(std::lround(330.0 * scale)));
}

SynthRankStats synthesize_rank(const SynthOptions& options, int rank, const TextSink& host,
                               const TextSink& device) {
  return RankGenerator(options, rank, host, device).run();
}

SynthRankText synthesize_rank_text(const SynthOptions& options, int rank) {
  SynthRankText out;
  out.stats = synthesize_rank(
      options, rank, [&out](std::string_view b) { out.host.append(b); },
      [&out](std::string_view b) { out.device.append(b); });
  return out;
}

}  // namespace chakraflow
