#pragma once
// The benchmark groups of kiln_bench; main registers each (names are shared with
// torch_bench.py and run.py: group/shape).

namespace kiln::bench {

/// matmul/..., matmul_dw/..., matmul_dx/... and their matmul_onednn* counterparts.
void RegisterMatmulCases();
/// conv_fwd/..., conv_bwd_data/..., conv_bwd_weights/... and conv_onednn_*.
void RegisterConvCases();
/// elementwise/fixed_chain, elementwise/random_chain1..2 and limit/handfused_chain.
void RegisterElementwiseCases();
/// tiny/ten_ops: time per Exec::Call of a ten-op graph on 4-element tensors.
void RegisterTinyCases();
/// train/..., infer/..., compile/..., memory/... of the MLP and the CNN; limit/fma_peak.
void RegisterModelCases();
void RegisterTrainerCases();
void RegisterInteropCases();
/// team/mlp_products: the MLP step's large products on a persistent team against OpenMP regions.
void RegisterTeamCases();
/// dynamic/...: the batch axis dynamic against the static build, side by side; first-call cost.
void RegisterDynamicCases();
void RegisterQuantCases();
/// onnx/...: published ONNX models imported (bench/onnx_vs_ort.py times ONNX Runtime beside them).
void RegisterOnnxCases();

}  // namespace kiln::bench
