// Pipeline → CUDA C++ source, rendered from the mustache templates in kernel_templates/ (embedded
// at build time, or read from --templates DIR). Each stage's expression tree is spelled as CUDA
// for the compute type. Pure host code: no CUDA headers, no GPU.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kjit::codegen {

/// The kernel templates in use and where they came from (for messages and reports).
struct template_set {
    std::string elementwise;  ///< elementwise.cu.mustache
    std::string rows;         ///< rows.cu.mustache (pipelines with reduce stages)
    std::string copy;         ///< copy.cu.mustache (the bandwidth probe)
    std::string origin;       ///< "embedded" or the directory

    [[nodiscard]] static template_set embedded();
    /// Reads DIR/elementwise.cu.mustache, DIR/rows.cu.mustache and DIR/copy.cu.mustache; a missing
    /// file is a usage error.
    [[nodiscard]] static template_set from_directory(const std::filesystem::path& dir);
};

/// One kernel of the generated program and what launching it takes. Its parameters are, in
/// order: `reads` (arrays), `row_reads` (row values, one per row), the buffer it `writes`, the
/// row values it `also_writes`, `scalars` (in the compute type), then n — or, for a row kernel,
/// rows and cols.
struct kernel_plan {
    std::string name;  ///< extern "C", so it needs no name lowering
    std::vector<std::string> reads;
    std::vector<std::string> row_reads;
    std::string writes;
    std::vector<std::string> scalars;
    /// A row kernel: one block per row, launched on `rows` blocks of launch.block threads.
    bool per_row = false;
    /// What it writes: an element per element (n), or one per row — of the storage type for the
    /// output, of the compute type for a row value another kernel reads.
    enum class result { elements, row_output, row_value } output = result::elements;
    /// Row values it writes besides `writes`: an online sum, computed in its max's kernel.
    std::vector<std::string> also_writes;
    /// How many times it reads its arrays: 1, or with launch.row_cache "none" once per pass
    /// over the row (each reduce, an online max and sum together, and the store).
    int passes = 1;
    /// Dynamic shared memory per block: the row, with launch.row_cache "shared".
    std::size_t shared_bytes = 0;
    std::vector<std::size_t> stages;  ///< the stages it computes, in order
    std::string what;                 ///< "stages[1]: weigh, a kernel of its own" or "normalize → …, fused"
};

struct generated_source {
    std::string source;
    std::vector<kernel_plan> kernels;      ///< in launch order
    std::vector<std::string> temporaries;  ///< intermediate arrays (separate stages only)
    std::vector<std::string> row_values;   ///< row values kernels pass on in memory (separate only)
    std::vector<std::string> headers;      ///< toolkit headers it includes (float16, bfloat16)
    int vector_width = 1;
};

/// Name of the buffer that holds the pipeline's result.
inline constexpr const char* k_output_buffer = "out";

/// Renders the source for one variant. Throws kjit::error(config) when a user template is broken.
[[nodiscard]] generated_source generate(const config::pipeline& p, const template_set& templates);

/// The copy kernel used to measure the device's bandwidth ceiling.
[[nodiscard]] std::string copy_probe_source(const template_set& templates);
inline constexpr const char* k_copy_probe_kernel = "kjit_copy_probe";

}  // namespace kjit::codegen
