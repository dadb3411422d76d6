// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// driver: the table of device entry points the CUDA/HIP adapter calls,
// loaded at run time, so that a binary never links libcuda, starts on a
// machine without a GPU, and can be driven by a fake device in tests.
//
// Model. `driver_table` is a struct of function pointers with vendor-
// neutral signatures: each returns the native status as an `int` (0 =
// success). `native_driver()` returns the real one: runtime calls through
// thin wrappers, driver calls (cuStreamWaitValue64 with GEQ,
// cuStreamWriteValue64, cuStreamBatchMemOp, cuDeviceGetAttribute) through
// pointers fetched once with cudaGetDriverEntryPointByVersion; an entry
// point the installed driver lacks (or no driver at all) answers with a
// failure status instead of crashing (a missing cuStreamBatchMemOp falls
// back to one cuStreamWriteValue64 per write). Every adapter object takes a `const driver_table&`, so tests
// inject a fake (adapters/cuda/test/fake_driver.hpp) and exercise the
// adapter's host logic on a machine with no GPU.
//
// `to_error(code, what)` turns a native status into a causal::error:
// out-of-memory is `errc::resource_exhausted`, everything else
// `errc::device_lost`; the message names the call, the position holds the
// native code.
//
// "No device" is one status only: `api::no_device` (cudaErrorNoDevice), or
// no driver installed at all (see driver_table::device_count).
// `device_count()` answers 0 for exactly that, so a program can skip
// (exit 77); any other failure, e.g. cudaErrorInsufficientDriver from a
// driver older than the runtime, is an error the program must report.
//
// Streams, events and pools are created on the calling thread's *current*
// device; `scoped_device` makes the adapter's device current for such a
// call, from any thread, and restores the caller's device afterwards.
//
// Thread safety: native_driver() is safe to call from any thread (the
//                entry points are fetched once, in a function-local static).
// Memory order:  the table is immutable after construction.
// Blocking/allocation: loading calls into the runtime once; the table's
//                entries are as blocking as the calls they wrap (only
//                stream_synchronize blocks). Nothing here allocates.
// Size:          ~30 pointers.
// Configuration: CAUSAL_CUDA_USE_HIP (<causal/adapters/cuda/api.hpp>).
// See also:      docs/adapters.md, <causal/adapters/cuda/api.hpp>,
//                <causal/adapters/cuda/device.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// Entry points the adapter calls; every one returns the native status
/// (0 = success). Pointers are never null in a table from native_driver();
/// a fake may leave unused ones null (calling them is the fake's bug).
struct driver_table {
  /// How many devices; returns api::no_device (and *count = 0) when there
  /// is no device *or no driver at all* (the native table maps the
  /// runtime's "insufficient driver" to no_device only when
  /// cudaDriverGetVersion reports no driver installed). Anything else is a
  /// real failure (device_count() reports it).
  int (*device_count)(int* count) noexcept = nullptr;
  /// Makes `ordinal` the calling thread's current device (streams, events
  /// and pools are created on the current device).
  int (*set_device)(int ordinal) noexcept = nullptr;
  /// The calling thread's current device.
  int (*get_device)(int* ordinal) noexcept = nullptr;
  /// Whether `ordinal` can run 64-bit stream memory operations
  /// (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS): *supported = 0/1.
  int (*mem_ops_64)(int ordinal, int* supported) noexcept = nullptr;
  /// Writes the device's name into `name` (NUL-terminated, at most `size`).
  int (*device_name)(int ordinal, char* name, std::size_t size) noexcept = nullptr;
  /// Writes the device's 16-byte UUID (cudaDeviceProp::uuid; the value
  /// Vulkan reports as VkPhysicalDeviceIDProperties::deviceUUID for the
  /// same device) into `uuid`.
  int (*device_uuid)(int ordinal, std::uint8_t* uuid) noexcept = nullptr;

  /// Creates a non-blocking stream (no implicit sync with the null stream).
  int (*stream_create)(api::stream_t* stream) noexcept = nullptr;
  int (*stream_destroy)(api::stream_t stream) noexcept = nullptr;
  int (*stream_synchronize)(api::stream_t stream) noexcept = nullptr;

  /// Creates an event without timing (the cheapest kind).
  int (*event_create)(api::event_t* event) noexcept = nullptr;
  int (*event_destroy)(api::event_t event) noexcept = nullptr;
  int (*event_record)(api::event_t event, api::stream_t stream) noexcept = nullptr;
  int (*stream_wait_event)(api::stream_t stream, api::event_t event) noexcept = nullptr;

  /// Stream memory operations on a 64-bit word at device address `word`:
  /// wait until *word >= value (GEQ), and write value (with the default
  /// memory barrier: work before it is visible before the write).
  int (*wait_value64)(api::stream_t stream, std::uint64_t* word, std::uint64_t value) noexcept =
      nullptr;
  int (*write_value64)(api::stream_t stream, std::uint64_t* word, std::uint64_t value) noexcept =
      nullptr;
  /// Writes values[i] into words[i], i < count, in order, as one batch
  /// (cuStreamBatchMemOp; one write_value64 each where there is none).
  /// Null: the adapter calls write_value64 for each.
  int (*write_values64)(api::stream_t stream, std::uint64_t* const* words,
                        const std::uint64_t* values, std::size_t count) noexcept = nullptr;

  /// Enqueues fn(data) on the host, in stream order. fn must not call the
  /// runtime or block (cudaLaunchHostFunc's rule).
  int (*launch_host_func)(api::stream_t stream, void (*fn)(void*) noexcept, void* data) noexcept =
      nullptr;

  /// Page-locked host memory mapped into the device's address space.
  int (*host_alloc_mapped)(void** host, std::size_t bytes) noexcept = nullptr;
  int (*host_free)(void* host) noexcept = nullptr;
  int (*host_device_pointer)(void** device, void* host) noexcept = nullptr;

  /// Stream-ordered allocation pools (cudaMemPoolCreate on `ordinal`).
  int (*pool_create)(api::mem_pool_t* pool, int ordinal) noexcept = nullptr;
  int (*pool_destroy)(api::mem_pool_t pool) noexcept = nullptr;
  int (*malloc_from_pool_async)(void** ptr, std::size_t bytes, api::mem_pool_t pool,
                                api::stream_t stream) noexcept = nullptr;
  int (*free_async)(void* ptr, api::stream_t stream) noexcept = nullptr;

  /// External (Vulkan) timeline semaphores: import from an opaque fd
  /// (ownership of the fd passes to the runtime on success), signal or
  /// wait a value from a stream.
  int (*import_timeline_fd)(api::external_semaphore_t* out, int fd) noexcept = nullptr;
  int (*destroy_external_semaphore)(api::external_semaphore_t sem) noexcept = nullptr;
  int (*signal_external)(api::external_semaphore_t sem, std::uint64_t value,
                         api::stream_t stream) noexcept = nullptr;
  int (*wait_external)(api::external_semaphore_t sem, std::uint64_t value,
                       api::stream_t stream) noexcept = nullptr;

  /// A static description of a native status.
  const char* (*error_string)(int code) noexcept = nullptr;
  /// The status's enumerator name ("cudaErrorInsufficientDriver").
  const char* (*error_name)(int code) noexcept = nullptr;
};

/// Turns native status `code` from call `what` (a string literal) into an
/// error; ok when code is 0.
[[nodiscard]] inline status to_status(int code, const char* what) noexcept {
  if (code == 0) return status{};
  const errc e = code == api::out_of_memory ? errc::resource_exhausted : errc::device_lost;
  return status{error{e, what, static_cast<std::uint64_t>(static_cast<unsigned>(code))}};
}

/// Returns how many devices the table's runtime sees: 0 (not an error)
/// only when it answers api::no_device (no device, or no driver installed),
/// so callers skip cleanly exactly then. Any other failure (a driver older
/// than the runtime, a broken install, a device in a bad state) is
/// `errc::device_lost` with the native code as position: report it with
/// native_error_name / native_error_string, never as a skip.
[[nodiscard]] inline result<int> device_count(const driver_table& t) noexcept {
  if (t.device_count == nullptr) {
    return error{errc::failed_precondition, "device_count: the driver table has no device_count"};
  }
  int n = 0;
  const int code = t.device_count(&n);
  if (code == api::no_device) return 0;
  if (code != 0) {
    return error{errc::device_lost,
                 "cudaGetDeviceCount failed with an error other than 'no device' (position: the "
                 "native code)",
                 static_cast<std::uint64_t>(static_cast<unsigned>(code))};
  }
  return n < 0 ? 0 : n;
}

/// The enumerator name of native status `code` ("unknown" if the table
/// cannot name it).
[[nodiscard]] inline const char* native_error_name(const driver_table& t, int code) noexcept {
  const char* name = t.error_name != nullptr ? t.error_name(code) : nullptr;
  return name != nullptr ? name : "unknown";
}

/// The description of native status `code` ("unknown" if none).
[[nodiscard]] inline const char* native_error_string(const driver_table& t, int code) noexcept {
  const char* text = t.error_string != nullptr ? t.error_string(code) : nullptr;
  return text != nullptr ? text : "unknown";
}

/// What a program that needs a CUDA device should do, decided once at
/// start-up: returns 0 when there is a device, 77 (the conventional
/// "skipped" exit status, which Meson reports as SKIP) when there is none
/// (cudaErrorNoDevice, or no driver installed), and 1 on any other failure.
/// The non-zero answers write the reason for a person into `why` (at most
/// `why_size` bytes, terminated), for the caller to print after "SKIP: " or
/// "FAIL: ".
[[nodiscard]] inline int device_gate(const driver_table& t, char* why, std::size_t why_size) noexcept {
  const result<int> count = device_count(t);
  if (!count) {
    const int code = static_cast<int>(count.error_value().position());
    std::snprintf(why, why_size, "cudaGetDeviceCount: %s (%s), native code %d: not a missing device",
                  native_error_name(t, code), native_error_string(t, code), code);
    return 1;
  }
  if (*count == 0) {
    std::snprintf(why, why_size, "no CUDA device: cudaErrorNoDevice or no driver installed");
    return 77;
  }
  return 0;
}

/// Makes `ordinal` the calling thread's current device for the life of
/// the guard, then restores the thread's previous device, so creating a
/// stream, event or pool for device `ordinal` works from any thread and
/// leaves the caller's current device as it was.
class scoped_device {
 public:
  scoped_device(const driver_table& t, int ordinal) noexcept : table_(&t) {
    int current = -1;
    const bool known = t.get_device != nullptr && t.get_device(&current) == 0;
    status_ = to_status(t.set_device(ordinal), "cudaSetDevice");
    if (status_ && known && current != ordinal) previous_ = current;  // else nothing to restore
  }
  ~scoped_device() {
    if (previous_ >= 0) (void)table_->set_device(previous_);
  }
  scoped_device(const scoped_device&) = delete;
  scoped_device& operator=(const scoped_device&) = delete;

  /// Ok, or why the device could not be made current.
  [[nodiscard]] status status_value() const noexcept { return status_; }

 private:
  const driver_table* table_;
  int previous_ = -1;
  status status_{};
};

namespace detail {

#if CAUSAL_CUDA_IS_HIP()

// HIP exports everything from its runtime; no entry-point lookup.
inline constexpr int not_supported = static_cast<int>(hipErrorNotSupported);

struct native {
  static int device_count(int* n) noexcept {
    *n = 0;
    const hipError_t e = hipGetDeviceCount(n);
    if (e == hipSuccess && *n == 0) return api::no_device;
    return static_cast<int>(e);
  }
  static int set_device(int o) noexcept { return static_cast<int>(hipSetDevice(o)); }
  static int get_device(int* o) noexcept { return static_cast<int>(hipGetDevice(o)); }
  static int mem_ops_64(int o, int* s) noexcept {
    return static_cast<int>(hipDeviceGetAttribute(s, hipDeviceAttributeCanUseStreamWaitValue, o));
  }
  static int device_name(int o, char* name, std::size_t size) noexcept {
    return static_cast<int>(hipDeviceGetName(name, static_cast<int>(size), o));
  }
  static int device_uuid(int o, std::uint8_t* uuid) noexcept {
    hipDevice_t dev{};
    if (const hipError_t e = hipDeviceGet(&dev, o); e != hipSuccess) return static_cast<int>(e);
    hipUUID id{};
    if (const hipError_t e = hipDeviceGetUuid(&id, dev); e != hipSuccess) return static_cast<int>(e);
    for (std::size_t i = 0; i < sizeof(id.bytes); ++i) uuid[i] = static_cast<std::uint8_t>(id.bytes[i]);
    return 0;
  }
  static int stream_create(api::stream_t* s) noexcept {
    return static_cast<int>(hipStreamCreateWithFlags(s, hipStreamNonBlocking));
  }
  static int stream_destroy(api::stream_t s) noexcept { return static_cast<int>(hipStreamDestroy(s)); }
  static int stream_synchronize(api::stream_t s) noexcept {
    return static_cast<int>(hipStreamSynchronize(s));
  }
  static int event_create(api::event_t* e) noexcept {
    return static_cast<int>(hipEventCreateWithFlags(e, hipEventDisableTiming));
  }
  static int event_destroy(api::event_t e) noexcept { return static_cast<int>(hipEventDestroy(e)); }
  static int event_record(api::event_t e, api::stream_t s) noexcept {
    return static_cast<int>(hipEventRecord(e, s));
  }
  static int stream_wait_event(api::stream_t s, api::event_t e) noexcept {
    return static_cast<int>(hipStreamWaitEvent(s, e, 0));
  }
  static int wait_value64(api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
    return static_cast<int>(hipStreamWaitValue64(s, w, v, hipStreamWaitValueGte, ~std::uint64_t{0}));
  }
  static int write_value64(api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
    return static_cast<int>(hipStreamWriteValue64(s, w, v, 0));
  }
  // HIP 5.2 has no batch of stream memory operations: one write each.
  static int write_values64(api::stream_t s, std::uint64_t* const* w, const std::uint64_t* v,
                            std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      if (const int e = write_value64(s, w[i], v[i]); e != 0) return e;
    }
    return 0;
  }
  // HIP 5.2 has no hipLaunchHostFunc; hipStreamAddCallback stands in. Its
  // callback has another signature and only one data pointer, so the host
  // function travels through one process-wide slot: the adapter only ever
  // passes one (the stream backend's completion function). The slot is
  // set once (a CAS from null), read with acquire on the callback thread;
  // a different function is refused (not_supported) rather than letting
  // one callback run another's function.
  // The adapter passes one function only (detail::complete_epoch in
  // stream_queue.hpp, shared by every mode and semaphore type), so one
  // process may run every kind of stream queue.
  static std::atomic<void (*)(void*) noexcept>& relay_fn() noexcept {
    static std::atomic<void (*)(void*) noexcept> fn{nullptr};
    return fn;
  }
  // A callback that reports an error (the stream faulted) does not run
  // the function: cudaLaunchHostFunc's rule (unlike cuStreamAddCallback,
  // its function is not called when the context has an error), so the
  // work before it never reads as complete; the stream's synchronize
  // reports the error instead.
  static void callback_thunk(hipStream_t, hipError_t status, void* data) {
    if (status != hipSuccess) return;
    // acquire: pairs with the release of the CAS in launch_host_func.
    relay_fn().load(std::memory_order_acquire)(data);
  }
  static int launch_host_func(api::stream_t s, void (*fn)(void*) noexcept, void* data) noexcept {
    void (*expected)(void*) noexcept = nullptr;
    if (!relay_fn().compare_exchange_strong(expected, fn, std::memory_order_acq_rel) &&
        expected != fn) {
      return not_supported;
    }
    return static_cast<int>(hipStreamAddCallback(s, &callback_thunk, data, 0));
  }
  static int host_alloc_mapped(void** h, std::size_t bytes) noexcept {
    return static_cast<int>(hipHostMalloc(h, bytes, hipHostMallocMapped | hipHostMallocPortable));
  }
  static int host_free(void* h) noexcept { return static_cast<int>(hipHostFree(h)); }
  static int host_device_pointer(void** d, void* h) noexcept {
    return static_cast<int>(hipHostGetDevicePointer(d, h, 0));
  }
  // The stream-ordered allocator (beta in HIP 5.2; devices without it,
  // hipDeviceAttributeMemoryPoolsSupported = 0, fail hipMemPoolCreate).
  static int pool_create(api::mem_pool_t* pool, int ordinal) noexcept {
    hipMemPoolProps props{};
    props.allocType = hipMemAllocationTypePinned;
    props.handleTypes = hipMemHandleTypeNone;
    props.location.type = hipMemLocationTypeDevice;
    props.location.id = ordinal;
    return static_cast<int>(hipMemPoolCreate(pool, &props));
  }
  static int pool_destroy(api::mem_pool_t pool) noexcept {
    return static_cast<int>(hipMemPoolDestroy(pool));
  }
  static int malloc_from_pool_async(void** p, std::size_t bytes, api::mem_pool_t pool,
                                    api::stream_t s) noexcept {
    return static_cast<int>(hipMallocFromPoolAsync(p, bytes, pool, s));
  }
  static int free_async(void* p, api::stream_t s) noexcept {
    return static_cast<int>(hipFreeAsync(p, s));
  }
  // External semaphores: HIP 5.2 imports only binary ones (OpaqueFd,
  // Win32, D3D12 fences); it has no timeline-semaphore handle type, so a
  // Vulkan timeline cannot be imported: not supported.
  static int import_timeline_fd(api::external_semaphore_t*, int) noexcept { return not_supported; }
  static int destroy_external_semaphore(api::external_semaphore_t) noexcept { return not_supported; }
  static int signal_external(api::external_semaphore_t, std::uint64_t, api::stream_t) noexcept {
    return not_supported;
  }
  static int wait_external(api::external_semaphore_t, std::uint64_t, api::stream_t) noexcept {
    return not_supported;
  }
  static const char* error_string(int code) noexcept {
    return hipGetErrorString(static_cast<hipError_t>(code));
  }
  static const char* error_name(int code) noexcept {
    return hipGetErrorName(static_cast<hipError_t>(code));
  }
};

#else

// What a missing driver entry point answers: cudaErrorNotSupported.
inline constexpr int not_supported = static_cast<int>(cudaErrorNotSupported);

// Driver entry points, fetched once. Their signatures are the driver's
// (cudaTypedefs.h's PFN_* for the requested version): CUDA 12.0 asks for
// the v2 stream memory operations (cuStreamWaitValue64_v2, ..._v11070).
struct driver_entry_points {
  CUresult (*wait_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
  CUresult (*write_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
  CUresult (*batch_mem_op)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
};

template <class Fn>
inline void fetch_entry_point(const char* symbol, Fn& out) noexcept {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess) {
    out = reinterpret_cast<Fn>(fn);
  }
}

inline const driver_entry_points& entry_points() noexcept {
  // Thread-safe once-only initialisation (a function-local static). The
  // runtime must be initialised first; cudaGetDeviceCount does that, and
  // without a driver it fails and every pointer stays null.
  static const driver_entry_points table = [] {
    driver_entry_points t;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return t;
    fetch_entry_point("cuStreamWaitValue64", t.wait_value64);
    fetch_entry_point("cuStreamWriteValue64", t.write_value64);
    fetch_entry_point("cuStreamBatchMemOp", t.batch_mem_op);
    fetch_entry_point("cuDeviceGet", t.device_get);
    fetch_entry_point("cuDeviceGetAttribute", t.device_get_attribute);
    return t;
  }();
  return table;
}

struct native {
  static int device_count(int* n) noexcept {
    *n = 0;
    const cudaError_t e = cudaGetDeviceCount(n);
    if (e == cudaSuccess && *n == 0) return api::no_device;
    if (e == cudaErrorInsufficientDriver) {
      // Without libcuda at all the runtime also answers "insufficient
      // driver"; cudaDriverGetVersion then reports 0 ("no driver is
      // installed"). That machine has no device. A driver that exists but
      // is older than the runtime is a real error and stays one.
      int version = -1;
      if (cudaDriverGetVersion(&version) == cudaSuccess && version == 0) {
        *n = 0;
        return api::no_device;
      }
    }
    return static_cast<int>(e);
  }
  static int set_device(int o) noexcept { return static_cast<int>(cudaSetDevice(o)); }
  static int get_device(int* o) noexcept { return static_cast<int>(cudaGetDevice(o)); }
  static int mem_ops_64(int o, int* s) noexcept {
    *s = 0;
    const driver_entry_points& ep = entry_points();
    if (ep.device_get == nullptr || ep.device_get_attribute == nullptr ||
        ep.wait_value64 == nullptr || ep.write_value64 == nullptr) {
      return 0;  // no entry points: report "unsupported", which is true
    }
    CUdevice dev = 0;
    if (const CUresult r = ep.device_get(&dev, o); r != CUDA_SUCCESS) return static_cast<int>(r);
    return static_cast<int>(
        ep.device_get_attribute(s, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
  }
  static int device_name(int o, char* name, std::size_t size) noexcept {
    cudaDeviceProp prop{};
    if (const cudaError_t e = cudaGetDeviceProperties(&prop, o); e != cudaSuccess) return e;
    std::size_t i = 0;
    for (; i + 1 < size && prop.name[i] != '\0'; ++i) name[i] = prop.name[i];
    if (size != 0) name[i] = '\0';
    return 0;
  }
  static int device_uuid(int o, std::uint8_t* uuid) noexcept {
    cudaDeviceProp prop{};
    if (const cudaError_t e = cudaGetDeviceProperties(&prop, o); e != cudaSuccess) return e;
    for (std::size_t i = 0; i < sizeof(prop.uuid.bytes); ++i) {
      uuid[i] = static_cast<std::uint8_t>(prop.uuid.bytes[i]);
    }
    return 0;
  }
  static int stream_create(api::stream_t* s) noexcept {
    return static_cast<int>(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  }
  static int stream_destroy(api::stream_t s) noexcept { return static_cast<int>(cudaStreamDestroy(s)); }
  static int stream_synchronize(api::stream_t s) noexcept {
    return static_cast<int>(cudaStreamSynchronize(s));
  }
  static int event_create(api::event_t* e) noexcept {
    return static_cast<int>(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
  static int event_destroy(api::event_t e) noexcept { return static_cast<int>(cudaEventDestroy(e)); }
  static int event_record(api::event_t e, api::stream_t s) noexcept {
    return static_cast<int>(cudaEventRecord(e, s));
  }
  static int stream_wait_event(api::stream_t s, api::event_t e) noexcept {
    return static_cast<int>(cudaStreamWaitEvent(s, e, 0));
  }
  static int wait_value64(api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
    const driver_entry_points& ep = entry_points();
    if (ep.wait_value64 == nullptr) return not_supported;
    return static_cast<int>(ep.wait_value64(s, reinterpret_cast<CUdeviceptr>(w), v,
                                            CU_STREAM_WAIT_VALUE_GEQ));
  }
  static int write_value64(api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
    const driver_entry_points& ep = entry_points();
    if (ep.write_value64 == nullptr) return not_supported;
    return static_cast<int>(ep.write_value64(s, reinterpret_cast<CUdeviceptr>(w), v,
                                             CU_STREAM_WRITE_VALUE_DEFAULT));
  }
  // One cuStreamBatchMemOp per `chunk` writes (a stack array; the adapter
  // never asks for more than ~20), or one write each without the entry.
  static int write_values64(api::stream_t s, std::uint64_t* const* w, const std::uint64_t* v,
                            std::size_t n) noexcept {
    const driver_entry_points& ep = entry_points();
    if (ep.batch_mem_op == nullptr) {
      for (std::size_t i = 0; i < n; ++i) {
        if (const int e = write_value64(s, w[i], v[i]); e != 0) return e;
      }
      return 0;
    }
    constexpr std::size_t chunk = 32;
    for (std::size_t first = 0; first < n; first += chunk) {
      const std::size_t count = n - first < chunk ? n - first : chunk;
      CUstreamBatchMemOpParams params[chunk] = {};
      for (std::size_t i = 0; i < count; ++i) {
        CUstreamBatchMemOpParams& p = params[i];
        p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        p.writeValue.address = reinterpret_cast<CUdeviceptr>(w[first + i]);
        p.writeValue.value64 = v[first + i];
        p.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      }
      if (const CUresult r = ep.batch_mem_op(s, static_cast<unsigned>(count), params, 0);
          r != CUDA_SUCCESS) {
        return static_cast<int>(r);
      }
    }
    return 0;
  }
  static int launch_host_func(api::stream_t s, void (*fn)(void*) noexcept, void* data) noexcept {
    return static_cast<int>(cudaLaunchHostFunc(s, fn, data));
  }
  static int host_alloc_mapped(void** h, std::size_t bytes) noexcept {
    return static_cast<int>(cudaHostAlloc(h, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  }
  static int host_free(void* h) noexcept { return static_cast<int>(cudaFreeHost(h)); }
  static int host_device_pointer(void** d, void* h) noexcept {
    return static_cast<int>(cudaHostGetDevicePointer(d, h, 0));
  }
  static int pool_create(api::mem_pool_t* pool, int ordinal) noexcept {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ordinal;
    return static_cast<int>(cudaMemPoolCreate(pool, &props));
  }
  static int pool_destroy(api::mem_pool_t pool) noexcept {
    return static_cast<int>(cudaMemPoolDestroy(pool));
  }
  static int malloc_from_pool_async(void** p, std::size_t bytes, api::mem_pool_t pool,
                                    api::stream_t s) noexcept {
    return static_cast<int>(cudaMallocFromPoolAsync(p, bytes, pool, s));
  }
  static int free_async(void* p, api::stream_t s) noexcept {
    return static_cast<int>(cudaFreeAsync(p, s));
  }
  static int import_timeline_fd(api::external_semaphore_t* out, int fd) noexcept {
    cudaExternalSemaphoreHandleDesc desc{};
    desc.type = cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd;
    desc.handle.fd = fd;
    return static_cast<int>(cudaImportExternalSemaphore(out, &desc));
  }
  static int destroy_external_semaphore(api::external_semaphore_t sem) noexcept {
    return static_cast<int>(cudaDestroyExternalSemaphore(sem));
  }
  static int signal_external(api::external_semaphore_t sem, std::uint64_t value,
                             api::stream_t s) noexcept {
    cudaExternalSemaphoreSignalParams params{};
    params.params.fence.value = value;
    return static_cast<int>(cudaSignalExternalSemaphoresAsync(&sem, &params, 1, s));
  }
  static int wait_external(api::external_semaphore_t sem, std::uint64_t value,
                           api::stream_t s) noexcept {
    cudaExternalSemaphoreWaitParams params{};
    params.params.fence.value = value;
    return static_cast<int>(cudaWaitExternalSemaphoresAsync(&sem, &params, 1, s));
  }
  static const char* error_string(int code) noexcept {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
  }
  static const char* error_name(int code) noexcept {
    return cudaGetErrorName(static_cast<cudaError_t>(code));
  }
};

#endif

}  // namespace detail

/// Returns the real runtime's table (see the file comment). The first
/// call fetches the driver entry points.
[[nodiscard]] inline const driver_table& native_driver() noexcept {
  using n = detail::native;
  static const driver_table table = [] {
    driver_table t;
    t.device_count = &n::device_count;
    t.set_device = &n::set_device;
    t.get_device = &n::get_device;
    t.mem_ops_64 = &n::mem_ops_64;
    t.device_name = &n::device_name;
    t.device_uuid = &n::device_uuid;
    t.stream_create = &n::stream_create;
    t.stream_destroy = &n::stream_destroy;
    t.stream_synchronize = &n::stream_synchronize;
    t.event_create = &n::event_create;
    t.event_destroy = &n::event_destroy;
    t.event_record = &n::event_record;
    t.stream_wait_event = &n::stream_wait_event;
    t.wait_value64 = &n::wait_value64;
    t.write_value64 = &n::write_value64;
    t.write_values64 = &n::write_values64;
    t.launch_host_func = &n::launch_host_func;
    t.host_alloc_mapped = &n::host_alloc_mapped;
    t.host_free = &n::host_free;
    t.host_device_pointer = &n::host_device_pointer;
    t.pool_create = &n::pool_create;
    t.pool_destroy = &n::pool_destroy;
    t.malloc_from_pool_async = &n::malloc_from_pool_async;
    t.free_async = &n::free_async;
    t.import_timeline_fd = &n::import_timeline_fd;
    t.destroy_external_semaphore = &n::destroy_external_semaphore;
    t.signal_external = &n::signal_external;
    t.wait_external = &n::wait_external;
    t.error_string = &n::error_string;
    t.error_name = &n::error_name;
    return t;
  }();
  return table;
}

}  // namespace cuda

CAUSAL_END_NAMESPACE
