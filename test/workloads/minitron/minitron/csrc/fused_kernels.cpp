// Fused CPU kernels for minitron (optional native extension).
//
// Builds as the Python extension `minitron_fused_kernels` (torch cpp_extension).
// It fuses the scale -> causal mask -> softmax sequence of attention into one pass
// over each row, avoiding two temporaries the size of the score matrix.
// minitron/fused.py loads it by name and falls back to an equivalent
// pure-PyTorch implementation when it has not been built.

#include <torch/extension.h>

#include <cmath>
#include <limits>

namespace minitron {

// scores: [..., sq, sk] float32; mask: [sq, sk] bool (true = masked out).
torch::Tensor scale_mask_softmax_forward(torch::Tensor scores, torch::Tensor mask,
                                         double scale) {
  TORCH_CHECK(scores.scalar_type() == torch::kFloat, "scores must be float32");
  TORCH_CHECK(mask.dim() == 2, "mask must be [sq, sk]");
  auto input = scores.contiguous();
  auto output = torch::empty_like(input);
  const int64_t sk = input.size(-1);
  const int64_t sq = input.size(-2);
  const int64_t rows = input.numel() / sk;
  const float* in = input.data_ptr<float>();
  float* out = output.data_ptr<float>();
  auto mask_c = mask.contiguous();
  const bool* m = mask_c.data_ptr<bool>();

  for (int64_t r = 0; r < rows; ++r) {
    const bool* mrow = m + (r % sq) * sk;
    const float* irow = in + r * sk;
    float* orow = out + r * sk;
    float row_max = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < sk; ++k) {
      float v = mrow[k] ? std::numeric_limits<float>::lowest()
                        : irow[k] * static_cast<float>(scale);
      orow[k] = v;
      row_max = std::max(row_max, v);
    }
    float sum = 0.f;
    for (int64_t k = 0; k < sk; ++k) {
      orow[k] = std::exp(orow[k] - row_max);
      sum += orow[k];
    }
    for (int64_t k = 0; k < sk; ++k) orow[k] /= sum;
  }
  return output;
}

}  // namespace minitron

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale_mask_softmax_forward", &minitron::scale_mask_softmax_forward,
        "Fused scale + mask + softmax (forward)");
}
