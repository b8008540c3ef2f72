// kiln_bench: kiln's benchmark binary (Google Benchmark). Extra flag: --backend=CONFIG (else
// $KILN_BACKEND, else "cpu:threads=2"). Usually run through bench/run.py, which runs the same
// cases in PyTorch interleaved with these.

#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cases.h"

// Takes --backend= out of argv, registers every case and runs the selected ones.
int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--backend=", 10) == 0) {
      kiln::bench::SetBackendConfig(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  kiln::bench::RegisterMatmulCases();
  kiln::bench::RegisterConvCases();
  kiln::bench::RegisterElementwiseCases();
  kiln::bench::RegisterTinyCases();
  kiln::bench::RegisterModelCases();
  kiln::bench::RegisterTrainerCases();
  kiln::bench::RegisterInteropCases();
  kiln::bench::RegisterTeamCases();
  kiln::bench::RegisterDynamicCases();
  kiln::bench::RegisterQuantCases();
  kiln::bench::RegisterOnnxCases();
  benchmark::AddCustomContext("kiln_backend", kiln::bench::Backend()->Description());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
