#include "cuda/devices.hpp"

#include "util/error.hpp"

namespace kjit::cuda {

CUdevice device_at(const driver_api& api, int index, int device_count) {
    if (index < 0 || index >= device_count)
        throw error(error_kind::usage,
                    "--device " + std::to_string(index) + ": there are " + std::to_string(device_count) + " GPU(s)");
    CUdevice device = 0;
    api.check(api.cuDeviceGet(&device, index), "cuDeviceGet", "device " + std::to_string(index));
    return device;
}

run::device_info query_device(const driver_api& api, CUdevice device, int index, int driver_version) {
    run::device_info info;
    info.index = index;
    info.driver_version = driver_version;
    char name[256] = {};
    api.check(api.cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
    info.name = name;
    auto attribute = [&](CUdevice_attribute which, const char* what) {
        int value = 0;
        api.check(api.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute", what);
        return value;
    };
    info.arch = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major") * 10 +
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
    info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
    info.l2_bytes = static_cast<std::size_t>(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size"));
    info.clock_mhz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate") / 1000;
    info.memory_clock_mhz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate") / 1000;
    info.memory_bus_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width");
    info.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM");
    info.shared_per_block = static_cast<std::size_t>(
            attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared memory per block (opt-in)"));
    info.shared_per_sm = static_cast<std::size_t>(
            attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM"));
    info.registers_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
    api.check(api.cuDeviceTotalMem(&info.memory_bytes, device), "cuDeviceTotalMem");
    return info;
}

std::string pci_bus_id(const driver_api& api, CUdevice device) {
    char id[64] = {};
    api.check(api.cuDeviceGetPCIBusId(id, sizeof id, device), "cuDeviceGetPCIBusId");
    return id;
}

std::vector<run::device_info> list_devices(const probe_result& driver) {
    std::vector<run::device_info> devices;
    for (int i = 0; i < driver.device_count; ++i)
        devices.push_back(
            query_device(*driver.api, device_at(*driver.api, i, driver.device_count), i, driver.driver_version));
    return devices;
}

}  // namespace kjit::cuda
